// Strided test views, sentinels and NumPy-broadcast index helpers shared by the cuda_host tests.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

namespace dualcast::testing {

// A strided view into a buffer: element (i_0..i_{r-1}) lives at offset + sum i_d * strides[d].
template <class T>
struct View {
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
  std::vector<T> buffer;
};

// kShifted: contiguous, one element into its buffer (unit strides, rows not
// 16-byte aligned: the launcher must decline the 16-byte loop).
enum class Layout { kContiguous, kTransposed, kStrided, kShifted };

// Strides and buffer size for `shape` laid out as `layout`.
template <class T>
View<T> MakeView(const std::vector<int64_t>& shape, Layout layout) {
  View<T> v;
  v.shape = shape;
  const size_t r = shape.size();
  v.strides.assign(r, 0);
  int64_t step = layout == Layout::kStrided ? 2 : 1;
  // Transposed: dim 0 fastest (column-major); else the last dim fastest.
  for (size_t k = 0; k < r; ++k) {
    const size_t d = layout == Layout::kTransposed ? k : r - 1 - k;
    v.strides[d] = step;
    step *= std::max<int64_t>(shape[d], 1);
  }
  v.offset = layout == Layout::kStrided || layout == Layout::kShifted ? 1 : 0;
  v.buffer.resize(static_cast<size_t>(v.offset + step + 1));
  return v;
}

// Sentinel bits a kernel never writes (a NaN with an odd payload).
template <class T>
T Sentinel() {
  if constexpr (sizeof(T) == 4)
    return std::bit_cast<T>(uint32_t{0x7fa5a5a5u});
  else
    return std::bit_cast<T>(uint64_t{0x7ff4a5a5a5a5a5a5ull});
}
template <class T>
bool IsSentinel(T v) {
  return std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(v) ==
         std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(Sentinel<T>());
}

template <class T>
bool SameBits(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(a) ==
         std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(b);
}

// Broadcast shape (NumPy rules, right-aligned).
inline std::vector<int64_t> BroadcastShape(const std::vector<std::vector<int64_t>>& shapes) {
  size_t r = 0;
  for (const auto& s : shapes) r = std::max(r, s.size());
  std::vector<int64_t> out(r, 1);
  for (const auto& s : shapes) {
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t& o = out[r - s.size() + k];
      if (s[k] != 1) o = s[k];
    }
  }
  return out;
}

// The buffer offset of output element `idx` (full shape) in a right-aligned, broadcast view.
template <class T>
int64_t OffsetOf(const View<T>& v, const std::vector<int64_t>& idx) {
  int64_t o = v.offset;
  const size_t pad = idx.size() - v.shape.size();
  for (size_t k = 0; k < v.shape.size(); ++k) {
    if (v.shape[k] != 1) o += idx[pad + k] * v.strides[k];
  }
  return o;
}

// Every multi-index of `shape`, row-major.
inline void ForEachIndex(const std::vector<int64_t>& shape,
                  const std::function<void(const std::vector<int64_t>&)>& fn) {
  int64_t total = 1;
  for (int64_t s : shape) total *= s;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t e = 0; e < total; ++e) {
    int64_t rem = e;
    for (size_t d = shape.size(); d-- > 0;) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    fn(idx);
  }
}

}  // namespace dualcast::testing
