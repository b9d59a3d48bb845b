// The CUDA built-ins the CUDA printer uses, for compiling its output as ordinary host C++ (the cuda_host harness).
//
// tests/cuda_host prepends this file (g++ -include) to the CUDA C that
// jit/cuda/cuda_kernel.cc writes, so the printed kernels run on the CPU
// without a GPU or a CUDA toolkit:
//   __global__, __device__, __forceinline__   plain (inline) functions.
//   threadIdx, blockIdx, blockDim, gridDim    variables of this translation
//                                             unit; the launcher the harness
//                                             appends sets them and calls the
//                                             entry point once per (block,
//                                             thread) in turn, as loop
//                                             variables.
//   expf, tanh, fmaf, ...                     the host's C math library, so a
//                                             printed call is the same glibc
//                                             function the interpreter calls
//                                             (results compare bitwise).
//   __int_as_float, __longlong_as_double      bit casts (non-finite literals).
// What is deliberately missing: shared memory, __syncthreads, warp shuffles
// and atomics. Forward kernels (one independent grid-stride loop per thread)
// use none of them, so running threads one after another is exact. When the
// printer starts emitting reductions, they fail to compile here (undeclared
// identifier) until this shim runs a block's threads in phases between
// barriers and emulates a 32-lane warp; nothing passes by accident.
#pragma once

#include <math.h>
#include <string.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
// __restrict__ is a GNU C++ keyword already.

struct dc_host_dim3 {
  unsigned int x = 0, y = 0, z = 0;
};
static dc_host_dim3 threadIdx, blockIdx, blockDim, gridDim;

static inline float __int_as_float(int bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
static inline double __longlong_as_double(long long bits) {
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}
