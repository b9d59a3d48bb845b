// More reductions (max, min, prod, logsumexp, var, norm, argmax, argmin) and array assembly (slice, concat, stack, clip), each with its reverse rule.
//
// They complete sum/mean/matmul/reshape/transpose (reductions.hpp) with what
// ported NumPy code reaches for. Every reduction is generated code, on any
// device. Of a pending argument on the CPU: max, min and prod are pending
// like sum (computed inside the kernel that produces the argument);
// logsumexp, var, norm, argmax and argmin run their first pass (max, mean,
// max|a|, the extreme) inside that kernel, which writes the argument for the
// second pass (off the tape; under a tape the argument is computed and
// recorded first). While a Tape records on this thread, each records one
// node with its reverse rule:
//   max, min:   ḡ goes to the elements equal to the result, split evenly
//               between ties (as PyTorch and JAX do); a slice holding NaN has
//               result NaN and NaN adjoints (never a silent number)
//   prod:       the plain product (0 · inf and NaN give NaN, as NumPy);
//               āᵢ = ḡ · Πₖ≠ᵢ aₖ in IEEE arithmetic: P / aᵢ where aᵢ is
//               finite and nonzero; where aᵢ is 0, ±inf or NaN, the product
//               of the finite nonzero others times the rest's zeros,
//               infinities and NaNs (counted, never 0/0 or inf/inf). With
//               no special value, a P that overflowed or underflowed gives
//               P / aᵢ (inf or 0), not the others' product
//   logsumexp:  computed as m + log Σ exp(a - m) with m the slice's max (no
//               overflow); ā = ḡ · exp(a - m) / Σ exp(a - m) (the softmax; not
//               exp(a - result), which cancels: |a| eps lost). An empty
//               slice gives -inf; a non-finite result gives NaN adjoints.
//   var:        Σ (a - mean)² / (N - ddof); ā = ḡ · 2 (a - mean) / (N - ddof);
//               N - ddof <= 0 gives NaN, value and adjoint, for any data
//               (NumPy divides by max(N - ddof, 0) instead: inf, or NaN for
//               constant data, with a warning)
//   norm:       the 2-norm, scaled by max|a| so it neither overflows nor
//               underflows; ā = ḡ · a / norm, and 0 where the norm is 0 (the
//               minimum-norm subgradient); a / norm from the scaled terms
//               where the norm overflowed or is subnormal; an infinite element
//               gets sign(a), the others 0 (as hypot)
//   argmax/argmin: indices (first occurrence; a NaN counts as the extreme, as
//               in NumPy), stored as numbers of the array's type, no gradient;
//               float32 refuses slices of more than 2^24 elements (indices
//               would not be exact)
//   slice:      a strided VIEW (no copy; writes through it reach the parent);
//               ā = ḡ scattered into zeros of the input's shape
//   concat, stack: a new array; each input's adjoint is a view of ḡ
//   clip:       a fused broadcast, NumPy's min(max(x, lo), hi): x below lo
//               gives lo, above hi gives hi, else x; lo > hi gives hi; a NaN
//               x, lo or hi gives NaN. The adjoint goes to the operand returned
//               (d/dx = 1 on [lo, hi] including the bounds while lo < hi;
//               where lo >= hi the result is hi and only hi gets the adjoint:
//               clip(x, c, c) is constant in x, so d/dx = 0 even at x == c)
// Axes are 0-based, negative axes count from the end; an axis out of range
// or repeated throws Error(kShape). A reduction called without axes reduces
// over all of them; with an empty list, over none (as sum and mean, and
// NumPy's axis=None and axis=()). The reductions accumulate in double (float
// arrays too).
//
// Example:
//   auto p = dc::exp(x - dc::logsumexp(x, {1}, /*keepdims=*/true));  // softmax rows
//   auto top = dc::slice(x, {{0, 2}, {}});                            // rows 0..1, a view
//   auto both = dc::concat({a, b}, /*axis=*/0);
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

#include "dualcast/array.hpp"
#include "dualcast/reductions.hpp"

namespace dualcast {

// Each reduction over every element (a rank-0 result, NumPy's axis=None),
// or over `axes`, as sum and mean: those dims dropped, or kept with size 1
// when `keepdims`. An empty `axes` list reduces over nothing (NumPy's
// axis=()): max(a, {}) is a's values, var(a, {}) zeros.
template <ElementType T>
Array<T> max(const Array<T>& a);
template <ElementType T>
Array<T> max(const Array<T>& a, const std::vector<int>& axes, bool keepdims = false);
template <ElementType T>
Array<T> min(const Array<T>& a);
template <ElementType T>
Array<T> min(const Array<T>& a, const std::vector<int>& axes, bool keepdims = false);
template <ElementType T>
Array<T> prod(const Array<T>& a);
template <ElementType T>
Array<T> prod(const Array<T>& a, const std::vector<int>& axes, bool keepdims = false);
// max, min and prod are lazy like sum: of a temporary argument, see
// DUALCAST_RVALUE_REDUCTION (reductions.hpp).
DUALCAST_RVALUE_REDUCTION(max)
DUALCAST_RVALUE_REDUCTION(min)
DUALCAST_RVALUE_REDUCTION(prod)
template <ElementType T>
Array<T> logsumexp(const Array<T>& a);
template <ElementType T>
Array<T> logsumexp(const Array<T>& a, const std::vector<int>& axes, bool keepdims = false);
template <ElementType T>
Array<T> var(const Array<T>& a);
template <ElementType T>
Array<T> var(const Array<T>& a, const std::vector<int>& axes, bool keepdims = false, int ddof = 0);
template <ElementType T>
Array<T> norm(const Array<T>& a);
template <ElementType T>
Array<T> norm(const Array<T>& a, const std::vector<int>& axes, bool keepdims = false);

// Index of the largest (smallest) element along `axis`, or of the flattened
// array (a rank-0 result) when `axis` is absent. Throws Error(kShape) on an
// empty slice, and for float arrays when an index would exceed 2^24 (not exact).
template <ElementType T>
Array<T> argmax(const Array<T>& a);
template <ElementType T>
Array<T> argmax(const Array<T>& a, int axis, bool keepdims = false);
template <ElementType T>
Array<T> argmin(const Array<T>& a);
template <ElementType T>
Array<T> argmin(const Array<T>& a, int axis, bool keepdims = false);

// One dimension of a slice: elements start, start+step, ... before stop, with
// NumPy's rules (negative start/stop count from the end, out-of-range bounds
// are clamped). step must be positive.
struct Slice {
  static constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
  int64_t start = 0;
  int64_t stop = kEnd;
  int64_t step = 1;
};
// A view of `a`: one Slice per leading dimension (missing trailing ones take everything).
template <ElementType T>
Array<T> slice(const Array<T>& a, const std::vector<Slice>& dims);

// Joins arrays along an existing axis (concat) or a new one (stack). Shapes
// must match except along `axis` (concat) or entirely (stack), and the arrays
// must be on one device (the result is there).
template <ElementType T>
Array<T> concat(const std::vector<Array<T>>& arrays, int axis = 0);
template <ElementType T>
Array<T> stack(const std::vector<Array<T>>& arrays, int axis = 0);
// The same for a braced list, `dc::concat({a, b}, 1)`: T is deduced from the
// elements (a std::vector parameter cannot deduce it from braces).
template <ElementType T>
Array<T> concat(std::initializer_list<Array<T>> arrays, int axis = 0) {
  return concat(std::vector<Array<T>>(arrays), axis);
}
template <ElementType T>
Array<T> stack(std::initializer_list<Array<T>> arrays, int axis = 0) {
  return stack(std::vector<Array<T>>(arrays), axis);
}

// Elementwise clamp into [lo, hi] (lo and hi broadcast; numbers or arrays),
// as np.clip: hi where lo > hi, NaN where any of x, lo, hi is NaN.
template <ElementType T>
Array<T> clip(const Array<T>& a, const Array<T>& lo, const Array<T>& hi);
template <ElementType T>
Array<T> clip(const Array<T>& a, double lo, double hi);
// clip of a temporary or std::move'd `a`: the same, and `a` is released on
// return so that it does not count as held, as by the operators (broadcast.hpp).
template <ElementType T>
Array<T> clip(Array<T>&& a, const Array<T>& lo, const Array<T>& hi) {
  Array<T> r = clip(std::as_const(a), lo, hi);
  a = Array<T>();
  return r;
}
template <ElementType T>
Array<T> clip(Array<T>&& a, double lo, double hi) {
  Array<T> r = clip(std::as_const(a), lo, hi);
  a = Array<T>();
  return r;
}

#define DUALCAST_ARRAY_OPS_EXTERN(T)                                                        \
  extern template Array<T> max(const Array<T>&);                                            \
  extern template Array<T> max(const Array<T>&, const std::vector<int>&, bool);             \
  extern template Array<T> min(const Array<T>&);                                            \
  extern template Array<T> min(const Array<T>&, const std::vector<int>&, bool);             \
  extern template Array<T> prod(const Array<T>&);                                           \
  extern template Array<T> prod(const Array<T>&, const std::vector<int>&, bool);            \
  extern template Array<T> logsumexp(const Array<T>&);                                      \
  extern template Array<T> logsumexp(const Array<T>&, const std::vector<int>&, bool);       \
  extern template Array<T> var(const Array<T>&);                                            \
  extern template Array<T> var(const Array<T>&, const std::vector<int>&, bool, int);        \
  extern template Array<T> norm(const Array<T>&);                                           \
  extern template Array<T> norm(const Array<T>&, const std::vector<int>&, bool);            \
  extern template Array<T> argmax(const Array<T>&);                                         \
  extern template Array<T> argmax(const Array<T>&, int, bool);                              \
  extern template Array<T> argmin(const Array<T>&);                                         \
  extern template Array<T> argmin(const Array<T>&, int, bool);                              \
  extern template Array<T> slice(const Array<T>&, const std::vector<Slice>&);               \
  extern template Array<T> concat(const std::vector<Array<T>>&, int);                       \
  extern template Array<T> stack(const std::vector<Array<T>>&, int);                        \
  extern template Array<T> clip(const Array<T>&, const Array<T>&, const Array<T>&);         \
  extern template Array<T> clip(const Array<T>&, double, double);
DUALCAST_ARRAY_OPS_EXTERN(float)
DUALCAST_ARRAY_OPS_EXTERN(double)
#undef DUALCAST_ARRAY_OPS_EXTERN

}  // namespace dualcast
