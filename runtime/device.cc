// Device names, availability (the CUDA driver is probed with dlopen), and the default device.
#include "dualcast/device.hpp"

#include <dlfcn.h>

#include <atomic>

#include "absl/strings/str_cat.h"

namespace dualcast {

namespace {
std::atomic<int> g_default_kind{0};  // 0 = cpu, 1 + i = cuda:i

// Probed once per process; the CUDA backend issue replaces the second half of
// this with a real cuInit/cuDeviceGetCount through the loaded driver.
std::string ProbeCuda() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::StrCat("no CUDA device: the CUDA driver (libcuda.so.1) could not be loaded (",
                        why ? why : "unknown reason", ")");
  }
  dlclose(handle);
  return "no CUDA device: the CUDA execution backend is not built into this version";
}

const std::string& CudaReason() {
  static const std::string reason = ProbeCuda();
  return reason;
}
}  // namespace

std::string Device::name() const {
  return is_cpu() ? std::string("cpu") : absl::StrCat("cuda:", index_);
}

bool Device::available() const { return is_cpu() || CudaReason().empty(); }

std::string Device::unavailable_reason() const { return is_cpu() ? "" : CudaReason(); }

Device default_device() {
  int k = g_default_kind.load();
  return k == 0 ? Device::cpu() : Device::cuda(k - 1);
}

void set_default_device(Device device) {
  g_default_kind.store(device.is_cpu() ? 0 : 1 + device.index());
}

}  // namespace dualcast
