// cuBLAS gemm on dualcast's stream, with libcublas loaded at run time (dlopen, like the driver and NVRTC).
//
// libdualcast never links cuBLAS: a machine without the CUDA toolkit's
// libcublas.so.<major> (or without a GPU) loads the library fine, and only a
// matmul on CUDA arrays fails, with kDevice naming what is missing.
// DUALCAST_CUBLAS_LIBRARY overrides the library path. One handle per device,
// bound to that device's primary context and dualcast's stream (so a gemm is
// ordered with every kernel and copy); math mode CUBLAS_DEFAULT_MATH (no TF32:
// f32 products are f32 FMAs, as OpenBLAS's on the CPU).
//
// Example:
//   if (!CublasStatus().ok()) return CublasStatus();   // "cuBLAS could not be loaded ..."
//   // Row-major C (m x n, ld n) = A (m x k, ld k) * B (k x n, ld n), all device addresses:
//   CublasGemm(0, /*f64=*/false, {a, k, false}, {b, n, false}, m, n, k, c, n);
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace dualcast::jit::cuda {

// OK when libcublas is loaded with every entry point used; else kDevice saying why.
const absl::Status& CublasStatus();

// One operand of a row-major gemm: its device address, leading dimension and
// whether its memory holds it column-major (a transposed view).
struct GemmMatrix {
  uint64_t address = 0;
  int64_t ld = 1;
  bool transposed = false;
};

// Row-major C (m x n, leading dimension ldc) = A (m x k) * B (k x n) on
// device `ordinal`, queued on dualcast's stream. Sizes and leading dimensions
// must fit in int (the caller checks); m, n, k > 0.
absl::Status CublasGemm(int ordinal, bool f64, const GemmMatrix& a, const GemmMatrix& b,
                        int64_t m, int64_t n, int64_t k, uint64_t c, int64_t ldc);

}  // namespace dualcast::jit::cuda
