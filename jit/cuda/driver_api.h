// The CUDA Driver API entry points dualcast uses, as a table filled at run time (jit/cuda internal).
//
// libcuda is never linked (a binary linked to the toolkit's stub does not
// start on a machine without a driver). driver.cc dlopens libcuda.so.1, finds
// cuGetProcAddress_v2 and asks it for every entry point below at the ABI of
// the headers we compiled against (CUDA_VERSION), so `cuMemAlloc` is the _v2
// function cuda.h declares. Only files in jit/cuda include this header (it
// needs <cuda.h>, a private include of the jit library).
//
// Example:
//   const DriverApi* cu = LoadedDriver();          // null when there is none
//   if (cu == nullptr) return DriverStatus();      // "no CUDA device: ..."
//   DC_RETURN_IF_CU_ERROR(cu->cuCtxSynchronize(), "cuCtxSynchronize", "cuda:0");
#pragma once

#include <cuda.h>

#include <string>

#include "absl/status/status.h"

namespace dualcast::jit::cuda {

#define DUALCAST_CU_FUNCTIONS(X)                                                             \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) \
  X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem)             \
  X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuModuleLoadData)    \
  X(cuModuleUnload) X(cuModuleGetFunction) X(cuOccupancyMaxPotentialBlockSize)             \
  X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemGetInfo) X(cuMemcpyHtoDAsync)         \
  X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD8Async) X(cuStreamCreate)            \
  X(cuStreamSynchronize)

struct DriverApi {
#define DUALCAST_CU_MEMBER(name) decltype(&::name) name = nullptr;
  DUALCAST_CU_FUNCTIONS(DUALCAST_CU_MEMBER)
#undef DUALCAST_CU_MEMBER
};

// The loaded table, or null when there is no usable driver (see DriverStatus()).
const DriverApi* LoadedDriver();

// OK for CUDA_SUCCESS; otherwise kDevice (kMemory for out-of-memory) naming
// the call, the driver's error name and text, and `context` (what we were
// doing, e.g. "kernel 'cell' on cuda:0").
absl::Status CheckCu(CUresult result, const char* call, const std::string& context);

#define DC_RETURN_IF_CU_ERROR(expr, call, context)                                  \
  do {                                                                              \
    if (CUresult dc_cu_result_ = (expr); dc_cu_result_ != CUDA_SUCCESS) {           \
      return ::dualcast::jit::cuda::CheckCu(dc_cu_result_, call, context);          \
    }                                                                               \
  } while (false)

}  // namespace dualcast::jit::cuda
