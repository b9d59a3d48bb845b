// A hand-written CUDA C kernel, compiled by NVRTC for a device and launched by name: the benchmark's comparators.
//
// dualcast's own kernels go through KernelSpec and the kernel cache; this is
// for code a person wrote (the GPU benchmark's hand-written HM-LSTM kernel),
// so that it is compiled with the same NVRTC and options (nvrtc_compile.h),
// loaded into the same context and queued on the same stream as dualcast's
// launches, and timed the same way. Every parameter is 8 bytes (a device
// address or a long long), as MarshalCudaLaunch passes dualcast's.
//
// Example:
//   absl::StatusOr<std::unique_ptr<RawCudaKernel>> k =
//       RawCudaKernel::Compile(0, source, "hmlstm_partials");
//   absl::Status s = (*k)->Launch(grid, 256, {a, b, uint64_t(n)});
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dualcast::jit::cuda {

class RawCudaKernel {
 public:
  // Compiles `source` for device `ordinal` (a CUBIN for its architecture, or
  // PTX the driver finishes) and finds `entry` (an extern "C" __global__).
  // Errors: kDevice without a device, kCompile with NVRTC's log.
  static absl::StatusOr<std::unique_ptr<RawCudaKernel>> Compile(int ordinal,
                                                                const std::string& source,
                                                                const std::string& entry);
  ~RawCudaKernel();
  RawCudaKernel(const RawCudaKernel&) = delete;
  RawCudaKernel& operator=(const RawCudaKernel&) = delete;

  // Queues one launch on the device's stream (DeviceStream); does not wait.
  absl::Status Launch(int64_t grid, int block, std::vector<uint64_t> params) const;

 private:
  RawCudaKernel() = default;
  int ordinal_ = 0;
  std::string entry_;
  void* module_ = nullptr;
  void* function_ = nullptr;
};

}  // namespace dualcast::jit::cuda
