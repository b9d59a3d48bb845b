// Non-broadcast array operations the tape knows: sum, mean, matmul, and recorded reshape/transpose.
//
// Broadcasts are elementwise; these are the operations around them in a
// model (a loss is a sum, a layer is a matmul). sum and mean of a pending
// array are pending too: computed when read, inside the kernel that produces
// their argument (which is then written only if still held); a broadcast
// reading one computes it first. The others compute their result now (a
// pending argument is computed first, fused as usual). While a Tape records
// on this thread, each records one node, when it is computed, with its
// reverse rule:
//   sum:       ā = broadcast of ḡ over the summed axes (a stride-0 view, no copy)
//   mean:      ā = broadcast of ḡ / count
//   matmul:    ā = ḡ·bᵀ, b̄ = aᵀ·ḡ (BLAS gemm: OpenBLAS when the build found it)
//   reshape:   ā = ḡ reshaped back;  transpose: ā = ḡ with the inverse permutation
// Sums accumulate in double (float arrays too) in fixed blocks, so a result
// does not depend on the number of threads.
//
// reshape/transpose here are the Array methods `a.reshape(s)` /
// `a.transpose(p)` under their NumPy spelling: both record the same node
// (as does `a.copy()`), so gradients flow through either.
//
// Axes are 0-based; negative axes count from the end (-1 is the last), as in
// NumPy. An axis out of range or repeated throws Error(kShape).
//
// Example:
//   dc::Tape tape;
//   auto h = dc::matmul(x, w);                          // (batch, k) x (k, n)
//   auto loss = dc::mean(dc::broadcast(act, h));        // rank-0
//   auto g = tape.gradient(loss, {w});
//   auto col = dc::sum(h, {0}, /*keepdims=*/true);      // shape (1, n)
#pragma once

#include <utility>
#include <vector>

#include "dualcast/array.hpp"

namespace dualcast {

// Sum of every element (a rank-0 array).
template <ElementType T>
Array<T> sum(const Array<T>& a);
// Sum over `axes`; those dims are dropped, or kept with size 1 when `keepdims`.
// An empty list sums over nothing (NumPy's axis=()): a's values. The same
// holds for mean and for every reduction of array_ops.hpp.
template <ElementType T>
Array<T> sum(const Array<T>& a, const std::vector<int>& axes, bool keepdims = false);

// Arithmetic mean; the mean of zero elements is NaN.
template <ElementType T>
Array<T> mean(const Array<T>& a);
template <ElementType T>
Array<T> mean(const Array<T>& a, const std::vector<int>& axes, bool keepdims = false);

// The lazy reductions (these two, and max, min and prod of array_ops.hpp)
// of a temporary or std::move'd argument: the same result, and the argument
// is released on return (its handle left empty), so that it does not count
// as held (broadcast.hpp): `tape.gradient(sum(x * w), {x})` never stores
// x * w, as when the loss is formed in a statement of its own.
#define DUALCAST_RVALUE_REDUCTION(name)                                              \
  template <ElementType T>                                                           \
  Array<T> name(Array<T>&& a) {                                                      \
    Array<T> r = name(std::as_const(a));                                             \
    a = Array<T>();                                                                  \
    return r;                                                                        \
  }                                                                                  \
  template <ElementType T>                                                           \
  Array<T> name(Array<T>&& a, const std::vector<int>& axes, bool keepdims = false) { \
    Array<T> r = name(std::as_const(a), axes, keepdims);                             \
    a = Array<T>();                                                                  \
    return r;                                                                        \
  }
DUALCAST_RVALUE_REDUCTION(sum)
DUALCAST_RVALUE_REDUCTION(mean)

// Matrix product of 2-D arrays: (m, k) x (k, n) -> (m, n). Any strides
// (transposed views are passed to BLAS without a copy where possible).
template <ElementType T>
Array<T> matmul(const Array<T>& a, const Array<T>& b);

// a.reshape(shape) (one dim may be -1).
template <ElementType T>
Array<T> reshape(const Array<T>& a, Shape shape);

// a.transpose(perm) (no perm reverses the axes).
template <ElementType T>
Array<T> transpose(const Array<T>& a, std::vector<int> perm = {});

#define DUALCAST_REDUCTIONS_EXTERN(T)                                                       \
  extern template Array<T> sum(const Array<T>&);                                            \
  extern template Array<T> sum(const Array<T>&, const std::vector<int>&, bool);             \
  extern template Array<T> mean(const Array<T>&);                                           \
  extern template Array<T> mean(const Array<T>&, const std::vector<int>&, bool);            \
  extern template Array<T> matmul(const Array<T>&, const Array<T>&);                        \
  extern template Array<T> reshape(const Array<T>&, Shape);                                 \
  extern template Array<T> transpose(const Array<T>&, std::vector<int>);
DUALCAST_REDUCTIONS_EXTERN(float)
DUALCAST_REDUCTIONS_EXTERN(double)
#undef DUALCAST_REDUCTIONS_EXTERN

}  // namespace dualcast
