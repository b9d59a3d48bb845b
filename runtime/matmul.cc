// matmul: 2-D matrix product through BLAS gemm (OpenBLAS), and its tape node (ā = ḡ·bᵀ, b̄ = aᵀ·ḡ).
//
// Strided operands go to BLAS without a copy when their memory is row-major
// (unit inner stride) or column-major (a transposed view: passed with
// CblasTrans); anything else (stride-0 broadcast views such as the adjoint
// of a sum) is copied to a contiguous array first. Without OpenBLAS at build
// time a plain loop (double accumulation) stands in, correct but slow.
// CUDA arrays go to cuBLAS, loaded at run time (the CUDA backend, runtime/backend.h).
#include <algorithm>
#include <climits>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "dualcast/detail/grad_node.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "jit/codegen/broadcast_layout.h"
#include "jit/error.h"
#include "runtime/backend.h"
#include "runtime/grad_kernels.h"
#include "runtime/in_place.h"

#if DUALCAST_HAVE_CBLAS
// The two CBLAS entry points we use (declared here so no particular cblas.h
// variant is needed); enums are passed as ints, as the C ABI does.
extern "C" {
void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                 const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);
void cblas_dgemm(int order, int trans_a, int trans_b, int m, int n, int k, double alpha,
                 const double* a, int lda, const double* b, int ldb, double beta, double* c,
                 int ldc);
}
#endif

namespace dualcast {
namespace {

using detail::ArrayImpl;

constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

// How BLAS reads one operand.
struct GemmOperand {
  std::shared_ptr<ArrayImpl> keep;  // a contiguous copy, when one was needed
  const void* data = nullptr;
  bool trans = false;
  int64_t ld = 1;
};

// The array as BLAS reads it: in place when one of its strides is 1 and the
// other (the leading dimension, unused along a size-1 dim) fits BLAS's int,
// else a contiguous copy.
GemmOperand Describe(const std::shared_ptr<ArrayImpl>& a) {
  const int64_t r = a->shape[0], c = a->shape[1], s0 = a->strides[0], s1 = a->strides[1];
  GemmOperand op;
  op.data = a->data();
  if (c <= 1 || s1 == 1) {
    op.ld = r <= 1 ? std::max<int64_t>(c, 1) : s0;
    if (op.ld >= std::max<int64_t>(c, 1) && op.ld <= INT_MAX) return op;
  }
  if (r <= 1 || s0 == 1) {
    op.trans = true;
    op.ld = c <= 1 ? std::max<int64_t>(r, 1) : s1;
    if (op.ld >= std::max<int64_t>(r, 1) && op.ld <= INT_MAX) return op;
  }
  op.keep = detail::CopyArray(*a);
  op.data = op.keep->data();
  op.trans = false;
  op.ld = std::max<int64_t>(c, 1);
  return op;
}

template <class T>
void GemmTyped(int64_t m, int64_t n, int64_t k, const GemmOperand& a, const GemmOperand& b, T* c) {
#if DUALCAST_HAVE_CBLAS
  const int ta = a.trans ? kTrans : kNoTrans, tb = b.trans ? kTrans : kNoTrans;
  const auto* pa = static_cast<const T*>(a.data);
  const auto* pb = static_cast<const T*>(b.data);
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(kRowMajor, ta, tb, int(m), int(n), int(k), 1.0f, pa, int(a.ld), pb, int(b.ld), 0.0f,
                c, int(std::max<int64_t>(n, 1)));
  } else {
    cblas_dgemm(kRowMajor, ta, tb, int(m), int(n), int(k), 1.0, pa, int(a.ld), pb, int(b.ld), 0.0, c,
                int(std::max<int64_t>(n, 1)));
  }
#else
  (void)kRowMajor, (void)kNoTrans, (void)kTrans;
  auto at = [&](const GemmOperand& op, int64_t i, int64_t j) {
    const T* p = static_cast<const T*>(op.data);
    return double(op.trans ? p[j * op.ld + i] : p[i * op.ld + j]);
  };
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t l = 0; l < k; ++l) s += at(a, i, l) * at(b, l, j);
      c[i * n + j] = static_cast<T>(s);
    }
  }
#endif
}

// a·b on the arrays' backend (BLAS on the CPU, cuBLAS on a GPU).
std::shared_ptr<ArrayImpl> Gemm(const std::shared_ptr<ArrayImpl>& a, const std::shared_ptr<ArrayImpl>& b) {
  return detail::BackendFor(a->device).Gemm(a, b);
}

}  // namespace

// A new (m, n) array a·b for 2-D host arrays a (m, k) and b (k, n), any strides.
std::shared_ptr<ArrayImpl> detail::CpuGemm(const std::shared_ptr<ArrayImpl>& a,
                                           const std::shared_ptr<ArrayImpl>& b) {
  const int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
  auto out = detail::NewArray(a->dtype, {m, n}, a->device);
  if (m == 0 || n == 0) return out;
  if (k == 0) {
    std::memset(out->data(), 0, static_cast<size_t>(m * n) * detail::SizeOf(a->dtype));
    return out;
  }
  // Strides need no check: an operand BLAS cannot read in place is copied (Describe).
  for (int64_t s : {m, n, k}) {
    if (s > INT_MAX) {
      throw Error(ErrorKind::kShape,
                  absl::StrCat("matmul: cannot multiply shape ", jit::FormatShape(a->shape), " by shape ",
                               jit::FormatShape(b->shape), ": size ", s,
                               " exceeds the 32-bit BLAS interface (2^31 - 1); multiply blocks of "
                               "at most that size and concat() them"));
    }
  }
  GemmOperand pa = Describe(a), pb = Describe(b);
  if (a->dtype == detail::DType::kF32) {
    GemmTyped<float>(m, n, k, pa, pb, static_cast<float*>(out->data()));
  } else {
    GemmTyped<double>(m, n, k, pa, pb, static_cast<double*>(out->data()));
  }
  return out;
}

namespace {

std::shared_ptr<ArrayImpl> Transposed(const ArrayImpl& a) {
  return detail::ViewOf(a, {a.shape[1], a.shape[0]}, {a.strides[1], a.strides[0]});
}

struct MatmulNode final : detail::GradNode {
  // Per argument: a copy taken when recorded where it is a view of the
  // user's writable memory (CopyIfUserMemory), else null (it is read again).
  std::shared_ptr<ArrayImpl> kept[2];

  std::vector<std::shared_ptr<ArrayImpl>> Backward(
      const std::vector<std::shared_ptr<ArrayImpl>>& outs) override {
    if (outs.empty() || outs[0] == nullptr) return {nullptr, nullptr};
    const std::shared_ptr<ArrayImpl>& g = outs[0];
    // Each input's gradient reads the other one.
    const uint64_t epoch = detail::SweptNodeEpoch();
    auto value = [&](int j, const char* what) -> const ArrayImpl& {
      if (kept[j] != nullptr) return *kept[j];
      detail::CheckNotWrittenSince(epoch, *inputs[static_cast<size_t>(j)], what, name);
      return *inputs[static_cast<size_t>(j)];
    };
    // Both checked before either product runs.
    const ArrayImpl* b = detail::InputNeeded(0) ? &value(1, "argument 2 of 'matmul'") : nullptr;
    const ArrayImpl* a = detail::InputNeeded(1) ? &value(0, "argument 1 of 'matmul'") : nullptr;
    return {b != nullptr ? Gemm(g, Transposed(*b)) : nullptr, a != nullptr ? Gemm(Transposed(*a), g) : nullptr};
  }
};

}  // namespace

template <ElementType T>
Array<T> matmul(const Array<T>& a, const Array<T>& b) {
  if (a.rank() != 2 || b.rank() != 2 || a.shape()[1] != b.shape()[0]) {
    throw Error(ErrorKind::kShape,
                absl::StrCat("matmul: cannot multiply shape ", jit::FormatShape(a.shape()),
                             " by shape ", jit::FormatShape(b.shape()),
                             a.rank() != 2 || b.rank() != 2
                                 ? "; both arguments must be 2-D (reshape vectors to (1, k) or (k, 1))"
                                 : "; the first's columns must equal the second's rows"));
  }
  if (a.device() != b.device()) {
    throw Error(ErrorKind::kDevice, absl::StrCat("matmul: arguments live on ", a.device().name(),
                                                 " and ", b.device().name(), "; move one with .to()"));
  }
  a.eval();
  b.eval();
  detail::CheckComputed(*a.impl(), "matmul");
  detail::CheckComputed(*b.impl(), "matmul");
  std::shared_ptr<ArrayImpl> out = Gemm(a.impl(), b.impl());
  detail::NoteOrigin("matmul", {a.impl(), b.impl()}, {out});
  if (detail::TapeActive()) {
    auto node = std::make_shared<MatmulNode>();
    node->name = "matmul";
    node->inputs = {a.impl(), b.impl()};
    node->kept[0] = detail::CopyIfUserMemory(a.impl());
    node->kept[1] = detail::CopyIfUserMemory(b.impl());
    detail::Record(node, {out});
  }
  return Array<T>(std::move(out));
}

template Array<float> matmul(const Array<float>&, const Array<float>&);
template Array<double> matmul(const Array<double>&, const Array<double>&);

}  // namespace dualcast
