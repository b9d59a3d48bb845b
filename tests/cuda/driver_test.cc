// The runtime-loaded CUDA driver: a clear "no CUDA device: <reason>" without one, and CPU work unaffected.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cuda/cuda_test_support.h"
#include "dualcast/array.hpp"
#include "dualcast/device.hpp"
#include "jit/error.h"

#ifdef DUALCAST_HAVE_NVRTC
#include "jit/cuda/cuda_backend.h"
#include "jit/cuda/driver.h"
#endif

namespace dualcast::testing {
namespace {

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

TEST_CASE("Device::cuda() answers with the driver's real status") {
  const Device gpu = Device::cuda();
  if (gpu.available()) {
    MESSAGE("a CUDA device is present: " << gpu.name());
    CHECK(gpu.unavailable_reason().empty());
    CHECK(!Device::cuda(1000).available());
    CHECK(StartsWith(Device::cuda(1000).unavailable_reason(), "no CUDA device:"));
    return;
  }
  const std::string why = gpu.unavailable_reason();
  MESSAGE("Device::cuda(): " << why);
  CHECK(StartsWith(why, "no CUDA device: "));
  CHECK(why.size() > std::string("no CUDA device: ").size() + 10);  // says why
  CHECK(NoGpuReason() == why);
  CHECK(!Device::cuda(3).available());
  CHECK(Device::cpu().available());
}

#ifdef DUALCAST_HAVE_NVRTC
TEST_CASE("without a driver every driver entry point returns the same kDevice reason") {
  if (jit::cuda::DriverStatus().ok()) {
    MESSAGE("SKIPPED (needs a machine WITHOUT a GPU): a CUDA driver and device are present");
    return;
  }
  const std::string why(jit::cuda::DriverStatus().message());
  // On CI the driver library itself is absent; elsewhere cuInit or the device count says why.
  if (StartsWith(why, "no CUDA device: the CUDA driver library")) CHECK(why.find("libcuda.so.1") != std::string::npos);
  CHECK(jit::cuda::DeviceCount() == 0);
  CHECK(jit::cuda::DriverDescription() == why);
  CHECK(jit::cuda::DeviceAlloc(0, 1024).status() == jit::cuda::DriverStatus());
  CHECK(jit::cuda::MakeCurrent(0) == jit::cuda::DriverStatus());
  CHECK(jit::cuda::GetDeviceInfo(0).status() == jit::cuda::DriverStatus());
  CHECK(jit::cuda::DeviceAllocCalls() == 0);
  jit::cuda::DeviceFree(0, 0, 0);  // harmless
  jit::cuda::ReleaseCachedDeviceMemory();
  auto f = SuiteJvp<HmLstmCell>(jit::Type::kF32);
  absl::StatusOr<std::shared_ptr<const jit::cuda::CudaKernel>> k =
      jit::cuda::GetCudaKernel(MakeSpec(f, jit::Type::kF32, 1, {}), 0);
  REQUIRE(!k.ok());
  CHECK(StartsWith(std::string(k.status().message()), "no CUDA device:"));
}
#endif

TEST_CASE("without a device, CUDA arrays fail with kDevice and the reason; CPU arrays keep working") {
  if (Device::cuda().available()) {
    MESSAGE("SKIPPED (needs a machine WITHOUT a GPU)");
    return;
  }
  const std::string why = Device::cuda().unavailable_reason();
  auto a = Array<float>::from({1, 2, 3}, {3});
  try {
    (void)a.to(Device::cuda());
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kDevice);
    CHECK(std::string(e.what()).find(why) != std::string::npos);
    CHECK(std::string(e.what()).find("cuda:0") != std::string::npos);
  }
  try {
    (void)Array<double>::zeros({2, 2}, Device::cuda());
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kDevice);
    CHECK(std::string(e.what()).find("no CUDA device:") != std::string::npos);
  }
  CHECK(a.to(Device::cpu()).to_vector() == std::vector<float>{1, 2, 3});
}

}  // namespace
}  // namespace dualcast::testing
