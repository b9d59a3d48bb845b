// Device names, availability (the CUDA driver is probed with dlopen), and the default device.
#include "dualcast/device.hpp"

#include <atomic>

#include "absl/strings/str_cat.h"
#include "dualcast/error.hpp"
#include "runtime/backend.h"

namespace dualcast {

namespace {
std::atomic<int> g_default_kind{0};  // 0 = cpu, 1 + i = cuda:i

// Probed once per process: the CUDA backend's answer (with the toolkit built
// in, the runtime-loaded driver's: dlopen, cuInit and a device count; without
// it, whether a driver could be loaded at all, and that the backend is absent).
std::string ProbeCuda() { return detail::CudaBackend().UnavailableReason(Device::cuda(0)); }

const std::string& CudaReason() {
  static const std::string reason = ProbeCuda();
  return reason;
}
}  // namespace

std::string Device::name() const {
  return is_cpu() ? std::string("cpu") : absl::StrCat("cuda:", index_);
}

bool Device::available() const { return unavailable_reason().empty(); }

// cuda:i for i > 0 also needs that many devices (asked of the backend each time).
std::string Device::unavailable_reason() const {
  if (is_cpu()) return "";
  if (index_ < 0) {
    return absl::StrCat("invalid CUDA device index ", index_, ": device indices start at 0");
  }
  if (!CudaReason().empty() || index_ == 0) return CudaReason();
  return detail::BackendFor(*this).UnavailableReason(*this);
}

Device default_device() {
  int k = g_default_kind.load();
  return k == 0 ? Device::cpu() : Device::cuda(k - 1);
}

// Checked now, not at the next array creation: a default device that cannot
// be used would make every later creation fail, far from this call. (Device
// availability is fixed for the life of the process: the driver is probed once.)
void set_default_device(Device device) {
  if (device.is_cuda()) {
    const std::string why = device.unavailable_reason();
    if (!why.empty()) {
      throw Error(device.index() < 0 ? ErrorKind::kInvalidArgument : ErrorKind::kDevice,
                  absl::StrCat("set_default_device(", device.name(), "): ", why,
                               "; the default device is unchanged"));
    }
  }
  g_default_kind.store(device.is_cpu() ? 0 : 1 + device.index());
}

}  // namespace dualcast
