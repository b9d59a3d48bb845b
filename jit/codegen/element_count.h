// Overflow-checked element counts of shapes: the one rule for "this shape is too big".
//
// A shape's element count is a product of int64 sizes, and a plain `n *= s`
// wraps silently: {3, 6148914691236517206} would count 2 elements. Every
// place that makes a shape (new arrays, views, reshape, concat, the broadcast
// rule) counts it with ElementCount instead.
//
// The product of the NONZERO sizes must fit in int64, as in NumPy ("array is
// too big"): a size-0 array of such a shape is refused too, because its
// row-major strides (which count a size-0 dim as 1) would not fit. The answer
// does not depend on the order of the dims, so a transpose of a valid shape
// stays valid.
//
// Example:
//   ElementCount({2, 3})                       // 6
//   ElementCount({0, 5})                       // 0
//   ElementCount({3, 6148914691236517206})     // nullopt: 2^64 + 2 elements
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace dualcast::jit {

// `*out = a * b`; false when the product does not fit in int64.
inline bool CheckedMul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
// `*out = a + b`; false when the sum does not fit in int64.
inline bool CheckedAdd(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

// The number of elements of `shape` (every size >= 0: callers check that
// first), or nullopt when the product of its nonzero sizes exceeds 2^63 - 1.
inline std::optional<int64_t> ElementCount(std::span<const int64_t> shape) {
  int64_t nonzero = 1;
  bool empty = false;
  for (int64_t s : shape) {
    if (s == 0) {
      empty = true;
    } else if (!CheckedMul(nonzero, s, &nonzero)) {
      return std::nullopt;
    }
  }
  return empty ? 0 : nonzero;
}

}  // namespace dualcast::jit
