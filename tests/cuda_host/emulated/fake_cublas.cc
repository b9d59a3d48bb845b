// An emulated cuBLAS for the emulated CUDA driver (tests only): column-major gemm as a plain double-accumulating loop over host memory.
#include <cublas_v2.h>

struct cublasContext {};

namespace {

template <class T>
cublasStatus_t Gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const T* alpha,
                    const T* a, int lda, const T* b, int ldb, const T* beta, T* c, int ldc) {
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double s = 0;
      for (int l = 0; l < k; ++l) {
        const T x = ta == CUBLAS_OP_N ? a[i + l * lda] : a[l + i * lda];
        const T y = tb == CUBLAS_OP_N ? b[l + j * ldb] : b[j + l * ldb];
        s += static_cast<double>(x) * y;
      }
      const double old = *beta == T(0) ? 0.0 : static_cast<double>(*beta) * c[i + j * ldc];
      c[i + j * ldc] = static_cast<T>(*alpha * s + old);
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  *h = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSgemm_v2(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const float* alpha, const float* a, int lda,
                              const float* b, int ldb, const float* beta, float* c, int ldc) {
  return Gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
cublasStatus_t cublasDgemm_v2(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const double* alpha, const double* a, int lda,
                              const double* b, int ldb, const double* beta, double* c, int ldc) {
  return Gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // extern "C"
