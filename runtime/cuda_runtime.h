// The runtime's GPU path (private): device storage, host<->device transfers and kernel launches on cuda:i.
//
// array.cc, execute.cc and device.cc call these at the few places where a
// CUDA array takes a different road than a CPU one; everything else in the
// runtime is device-neutral. In a build without the CUDA toolkit, or on a
// machine without a driver, every function here throws Error(kDevice) whose
// message starts "no CUDA device: " and says why.
//
// Example:
//   auto storage = CudaAllocate(bytes, Device::cuda(0));       // caching allocator
//   auto on_gpu = CudaTransfer(*cpu_impl, Device::cuda(0));    // contiguous copy
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dualcast/detail/array_impl.hpp"
#include "jit/codegen/kernel_abi.h"
#include "jit/codegen/kernel_spec.h"

namespace dualcast::detail {

// "" when `device` (a CUDA device) can run kernels and hold memory, else the reason.
std::string CudaUnavailableReason(const Device& device);

// Device memory from the caching allocator; CudaRelease gives it back (Storage's destructor).
std::shared_ptr<Storage> CudaAllocate(size_t bytes, Device device);
void CudaRelease(Storage& storage);

// A new contiguous array on `to` with the elements of `src` (either side may
// be the CPU; CPU -> CPU is not handled here). Waits until the data is there.
std::shared_ptr<ArrayImpl> CudaTransfer(const ArrayImpl& src, Device to);

// Compiles (once per spec and device) and launches `spec`'s kernel on
// `device` over `args` (device addresses). Asynchronous on dualcast's stream.
// Reduced output m's total is divided by divisors[m] (none: 1) before its
// rounding to the element type.
void CudaExecute(const std::string& kernel_name, const jit::KernelSpec& spec,
                 const jit::KernelArgs& args, Device device, std::span<const double> divisors = {});

// A new contiguous (m, n) CUDA array a·b for 2-D CUDA arrays a (m, k) and b
// (k, n), any strides, through cuBLAS (jit/cuda/cublas_api.h). Row- or
// column-major views go to cuBLAS as they are; other views are first copied
// by a generated kernel. Errors: kDevice when there is no GPU or no cuBLAS.
std::shared_ptr<ArrayImpl> CudaGemm(const std::shared_ptr<ArrayImpl>& a,
                                    const std::shared_ptr<ArrayImpl>& b);

// Zeros into every element of `dest` (a CUDA array, any strides): a sum over
// nothing. Runs a generated kernel through Execute, never a host write.
void CudaStoreZeros(const std::shared_ptr<ArrayImpl>& dest);

}  // namespace dualcast::detail
