// Element helpers for runtime tests that build arrays by hand: count, read, write, and fill by formula.
//
// Example:
//   auto a = test::FilledWith(DType::kF32, {2, 3}, [](int64_t i) { return 0.5 * i; });
//   double v = test::At(*a, 4);   // 2.0
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dualcast/detail/array_impl.hpp"

namespace dualcast::test {

inline int64_t Count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Element `i` of a's storage (no strides: a flat offset), widened to double.
inline double At(const detail::ArrayImpl& a, int64_t i) {
  return a.dtype == detail::DType::kF32 ? static_cast<const float*>(a.data())[i]
                                        : static_cast<const double*>(a.data())[i];
}

// Stores v (rounded to a's type) at flat offset i.
inline void Set(detail::ArrayImpl& a, int64_t i, double v) {
  if (a.dtype == detail::DType::kF32) {
    static_cast<float*>(a.data())[i] = static_cast<float>(v);
  } else {
    static_cast<double*>(a.data())[i] = v;
  }
}

// A new contiguous CPU array of `shape` with element i = value(i).
template <class Value>
std::shared_ptr<detail::ArrayImpl> FilledWith(detail::DType dtype, const std::vector<int64_t>& shape,
                                              Value&& value) {
  auto a = detail::NewArray(dtype, shape, Device::cpu());
  for (int64_t i = 0; i < Count(shape); ++i) Set(*a, i, value(i));
  return a;
}

}  // namespace dualcast::test
