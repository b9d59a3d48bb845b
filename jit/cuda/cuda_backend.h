// The CUDA backend's entry points: KernelSpec -> CUDA C -> NVRTC image -> loaded module -> launch.
//
// Two halves, so that everything but the last step runs on machines without
// a GPU (CI compiles every kernel to PTX/CUBIN):
//   CompileCudaImage   spec -> source (cuda_kernel.h) -> NVRTC (nvrtc_compile.h),
//                      consulting and filling an ObjectStore under
//                      CudaObjectKey (format, NVRTC version, options, arch,
//                      symbol), so a second process skips NVRTC entirely.
//   CompileCudaKernel  the image for device `ordinal`'s architecture, loaded
//                      into its primary context (cuModuleLoadData), both entry
//                      points looked up, and their block sizes chosen by the
//                      occupancy calculator (cuOccupancyMaxPotentialBlockSize).
//   GetCudaKernel      CompileCudaKernel through a per-device KernelCache (a
//                      CUfunction belongs to one context, and the in-memory
//                      key must include the device's architecture).
//   LaunchCudaKernel   marshals KernelArgs (device addresses in `inputs` and
//                      `outputs`) into the kernel's parameters and launches it
//                      on dualcast's stream of that device; asynchronous.
//
// Grid size: min(ceil(n / block), 4 * the occupancy calculator's minimum grid
// that fills the GPU); the grid-stride loop covers the rest. The 32-bit entry
// point runs when n < 2^31.
//
// Example:
//   absl::StatusOr<std::shared_ptr<const CudaKernel>> k = GetCudaKernel(spec, /*ordinal=*/0);
//   KernelArgs args{sizes, device_inputs, in_strides, device_outputs, out_strides, 0, sizes[0]};
//   ThrowIfError(LaunchCudaKernel(**k, args));
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jit/codegen/kernel_abi.h"
#include "jit/codegen/kernel_cache.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/codegen/object_store.h"
#include "jit/cuda/cuda_kernel.h"
#include "jit/cuda/nvrtc_compile.h"

namespace dualcast::jit::cuda {

struct CudaImage {
  std::string bytes;               // CUBIN or PTX
  NvrtcTarget target;
  std::string symbol;              // entry points symbol + "_i32" / "_i64"
  std::vector<CudaParam> params;
  std::vector<uint32_t> output_reduce;  // per output (CudaKernelSource)
  bool has_finish = false;              // entry point symbol + "_fin" (reduced outputs)
  std::string source;              // the CUDA C (empty when loaded from the store)
  double compile_ms = 0;           // source generation + NVRTC; 0 from the store
  bool from_object_store = false;
};

// The ObjectStore key of a spec's image for `target`.
std::string CudaObjectKey(const KernelSpec& spec, const NvrtcTarget& target);

// Source + NVRTC (no driver needed). `store` may be null.
absl::StatusOr<CudaImage> CompileCudaImage(const KernelSpec& spec, const NvrtcTarget& target,
                                           ObjectStore* store);

// A kernel loaded on one device.
struct CudaKernel {
  int ordinal = 0;
  int element_bytes = 4;  // of the spec's dtype
  std::string symbol;
  std::vector<CudaParam> params;
  std::vector<uint32_t> output_reduce;
  void* function_i32 = nullptr;  // CUfunction
  void* function_i64 = nullptr;
  void* function_fin = nullptr;  // reduced outputs' finish (null when none)
  int block_i32 = 0, block_i64 = 0;        // threads per block (occupancy-chosen)
  int min_grid_i32 = 0, min_grid_i64 = 0;  // blocks that fill the device
  NvrtcTarget target;
  std::shared_ptr<void> module;  // the CUmodule, unloaded with the last reference
};

// Compiles (or loads from `store`) and loads the kernel on device `ordinal`.
// Errors: kDevice "no CUDA device: ..." without a driver; kCompile from NVRTC;
// kDevice naming the driver call that failed.
absl::StatusOr<CompiledKernel> CompileCudaKernel(const KernelSpec& spec, ObjectStore* store,
                                                 int ordinal = 0);

// The kernel of `spec` on device `ordinal`, compiled once per process (and
// from the DiskCache across processes), through a bounded per-device cache:
// the returned pointer keeps the module loaded even if the cache evicts it.
absl::StatusOr<std::shared_ptr<const CudaKernel>> GetCudaKernel(const KernelSpec& spec,
                                                                int ordinal);

// Launches over the whole index space described by `args` (sizes, and
// begin/end along the outermost merged dim; rank from the spec the kernel was
// built for). Pointers in `args` are device addresses. A kernel with reduced
// outputs takes a scratch buffer from the caching allocator (returned after
// the launches are queued: every use is ordered on dualcast's one stream),
// launches its main entry point (skipped when there are no elements) and its
// finish, and must be given the whole of dim 0. The finish divides reduced
// output m's double total by divisors[m] (none given: 1) before rounding it
// to the element type, as the CPU launcher does (a mean's count).
absl::Status LaunchCudaKernel(const CudaKernel& kernel, const KernelArgs& args, int rank,
                              std::span<const double> divisors = {});

}  // namespace dualcast::jit::cuda
