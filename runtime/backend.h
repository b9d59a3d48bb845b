// The seam between the runtime and a kind of device: memory, copies, compiled kernels, matmul.
//
// Every array operation in the runtime is written once, device-neutral; what
// differs between the CPU and a GPU goes through this interface (the shape of
// Dr.Jit's per-backend state). `BackendFor(device)` gives the one instance
// for the device's kind: the CPU backend (runtime/backend.cc: aligned blocks
// with per-thread and process caches, LLVM kernels through the kernel cache
// and the thread pool, BLAS) or the CUDA backend (runtime/cuda_runtime.cc:
// the driver's caching allocator, NVRTC kernels cached per device, cuBLAS;
// without a GPU every call throws kDevice saying why). Both backends compile
// through the same codegen walk (jit/codegen/codegen.h); they differ in the
// printer and in where the code runs.
//
// What stays outside on purpose: the per-thread launch plans (launch_plan.h)
// are the CPU's fast path, taken before a KernelSpec exists, so Execute asks
// for them only on the CPU; a CUDA launch is asynchronous and its kernel cache
// is per device, so it returns no kernel handle to plan with.
//
// Example:
//   detail::Backend& backend = detail::BackendFor(a.device);
//   std::shared_ptr<Storage> s = backend.Allocate(bytes, a.device);
//   backend.Run(name, spec, args, reduced, a.device);  // compile (cached), launch
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "dualcast/detail/array_impl.hpp"
#include "jit/codegen/kernel_abi.h"
#include "jit/codegen/kernel_cache.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/cpu/launch.h"

namespace dualcast::detail {

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const char* name() const = 0;
  // The code generator kernels for this backend are specialised for.
  virtual jit::Target target() const = 0;
  // "" when `device` can hold memory and run kernels now, else why not.
  virtual std::string UnavailableReason(const Device& device) const = 0;

  // Memory for `bytes` on `device` (Release gives it back: Storage's destructor).
  virtual std::shared_ptr<Storage> Allocate(size_t bytes, Device device) = 0;
  virtual void Release(Storage& storage) noexcept = 0;
  // A new contiguous array on `to` with the elements of `src` (any strides);
  // one of the two devices is this backend's.
  virtual std::shared_ptr<ArrayImpl> Transfer(const ArrayImpl& src, Device to) = 0;
  // Zeros into every element of `dest` (any strides): a sum over nothing.
  virtual void StoreZeros(const std::shared_ptr<ArrayImpl>& dest) = 0;

  // Whether an output summed over axes is laid out as the contiguous scratch
  // the kernel adds into (CPU: double partials, combined by the launcher) or
  // as its destination itself (CUDA: the kernel's finishing pass stores it).
  // Either way the launch divides a reduced output by its divisor
  // (ReducedDestination::divisor) before the one rounding.
  virtual bool SumsIntoScratch() const = 0;
  // Compiles `spec` (memory and disk caches behind it, one compile per key)
  // and runs it over `args`; outputs summed over axes go to `reduced`. The
  // compiled kernel for the CPU's launch plans, null where the backend keeps
  // its own (CUDA).
  virtual jit::KernelCache::Ref Run(const std::string& kernel_name, const jit::KernelSpec& spec,
                                    const jit::KernelArgs& args,
                                    std::span<const jit::ReducedDestination> reduced,
                                    Device device) = 0;
  // A new contiguous (m, n) array a·b for 2-D a (m, k), b (k, n), any strides.
  virtual std::shared_ptr<ArrayImpl> Gemm(const std::shared_ptr<ArrayImpl>& a,
                                          const std::shared_ptr<ArrayImpl>& b) = 0;
};

// The backend of `device`'s kind.
Backend& BackendFor(const Device& device);

// The implementations' entry points (one file per backend).
Backend& CpuBackend();
Backend& CudaBackend();

// CPU pieces the CPU backend is made of, kept beside what they serve.
std::shared_ptr<Storage> CpuAllocate(size_t bytes);  // array.cc: block caches
void CpuRelease(Storage& storage) noexcept;          // array.cc
void CpuStoreZeros(ArrayImpl& a);                    // execute.cc
std::shared_ptr<ArrayImpl> CpuGemm(const std::shared_ptr<ArrayImpl>& a,
                                   const std::shared_ptr<ArrayImpl>& b);  // matmul.cc: BLAS

}  // namespace dualcast::detail
