// Printed CUDA kernels compiled as host C++ with the system compiler and loaded with dlopen (the
// cuda_host harness).
//
// HostCudaModule takes the CudaKernelSource of several specs, writes them as
// ONE translation unit (the printed sources one after another, behind
// cuda_host_shim.h) into a fresh temporary folder, appends one launcher per
// entry point, compiles it with the compiler that built this test
// (`-O1 -shared -fPIC`, no fast math, no contraction, no builtins: every
// printed math call reaches the host libm), and dlopens the result. One
// compile for a whole batch keeps the test fast: g++ start-up and <math.h>
// dominate, not the kernels.
//
// A launcher takes what cuLaunchKernel would: a grid and a block size and the
// parameter values in plan order (MarshalCudaLaunch), and runs the entry
// point for every (block, thread) pair, blocks in reverse order (a GPU gives
// no order either); a kernel with barriers or shuffles runs each block's
// threads as fibers (cuda_host_shim.h), and a barrier misuse the shim detects
// (deadlock, partial warp) makes Launch throw with its message. DUALCAST_CUDA_HOST_KEEP=1 keeps the folder (source,
// library, compiler log) for inspection; a source that fails to compile is
// always kept.
//
// Example:
//   HostCudaModule module({source_a, source_b}, "f32");      // throws on a compile error
//   CudaLaunchValues v = MarshalCudaLaunch(source_a.params, 4, args, rank);
//   module.Launch(source_a.symbol, /*wide=*/false, grid, 32, v.values);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jit/cuda/cuda_kernel.h"

namespace dualcast::testing {

class HostCudaModule {
 public:
  // `tag` names the batch in the temp folder and in errors. Throws
  // std::runtime_error with the compiler's output when the source does not compile.
  HostCudaModule(const std::vector<jit::cuda::CudaKernelSource>& sources, jit::Type dtype,
                 const std::string& tag);
  ~HostCudaModule();
  HostCudaModule(const HostCudaModule&) = delete;
  HostCudaModule& operator=(const HostCudaModule&) = delete;

  // Runs entry point symbol + (wide ? "_i64" : "_i32") over grid x block threads;
  // throws std::runtime_error when the shim reports a barrier misuse.
  void Launch(const std::string& symbol, bool wide, int64_t grid, int block,
              const std::vector<uint64_t>& values) const;

  // Runs any entry point by its full name (e.g. symbol + "_fin").
  void LaunchEntry(const std::string& entry, int64_t grid, int block,
                   const std::vector<uint64_t>& values) const;

  double compile_seconds() const { return compile_seconds_; }

 private:
  void* handle_ = nullptr;
  std::string dir_;
  double compile_seconds_ = 0;
};

}  // namespace dualcast::testing
