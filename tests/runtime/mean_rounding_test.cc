// A mean is its sum divided by the count in double, rounded once: the same bits on every path.
//
// Before: the sum was rounded to the element type, then multiplied by the
// count's reciprocal rounded to that type, so mean(ones(49)) was
// 0.99999999999999989 (float32: mean(ones(41)) 0.99999994), a float32 mean of
// 3e38s overflowed to inf, and the one-pass gradient's loss value (which
// scaled each element by 1/count before the sum) had other bits than the
// same mean without a tape. The reference is a long double sum divided by the
// count and rounded once.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "dualcast/dualcast.hpp"

namespace dualcast {
namespace {

template <class T>
T Reference(const std::vector<T>& v) {
  long double s = 0;
  for (T x : v) s += x;
  return static_cast<T>(s / static_cast<long double>(v.size()));
}

template <class T>
bool SameBits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// The mean of `values` through every path: computed operand, pending operand
// (fused into its kernel), the one-pass gradient's value, the sweep's.
template <class T>
void CheckAllPaths(const std::vector<T>& values, T want) {
  const auto n = static_cast<int64_t>(values.size());
  const Array<T> x = Array<T>::from(values, {n});
  CHECK(SameBits(mean(x).item(), want));
  CHECK(SameBits(mean(x * T(1)).item(), want));  // pending: the reduction joins the kernel
  {
    Tape tape;
    auto [value, grads] = tape.value_and_gradient(mean(x * T(1)), {x});
    CHECK(SameBits(value.item(), want));
    // d mean / d x_i = 1 / n, rounded once.
    CHECK(SameBits(grads[0].to_vector()[0], static_cast<T>(1.0 / static_cast<double>(n))));
  }
  {
    Tape tape(PartialsMode::kCache);
    auto [value, grads] = tape.value_and_gradient(mean(x * T(1)), {x});
    CHECK(SameBits(value.item(), want));
  }
}

TEST_CASE_TEMPLATE("mean of n ones is 1 for every n, on every path", T, float, double) {
  for (int n = 1; n <= 200; ++n) {
    CAPTURE(n);
    CheckAllPaths(std::vector<T>(static_cast<size_t>(n), T(1)), T(1));
  }
}

TEST_CASE_TEMPLATE("mean of random values: rounded once from the exact sum's quotient", T, float, double) {
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<T>(static_cast<double>(state >> 11) * 0x1p-53);
  };
  for (int n : {3, 7, 41, 49, 98, 1000, 4097}) {
    CAPTURE(n);
    std::vector<T> v(static_cast<size_t>(n));
    for (T& e : v) e = next();
    // The kernel sums in double: for float that sum is far more accurate
    // than the result's one rounding, so within one float ulp of the
    // reference. For double the sum's own rounding shows: at most (n - 1)
    // roundings of a partial sum, each within half an ulp of sum |x| (the
    // recursive-summation bound, for any order and lane split: on a 4-lane
    // host n = 1000 came out 2 ulp off), plus the final rounding. Every path
    // must give the same bits as the first.
    const T first = mean(Array<T>::from(v, {n})).item();
    const T want = Reference(v);
    const double eps = std::numeric_limits<T>::epsilon();
    double sum_abs = 0;
    for (T e : v) sum_abs += std::abs(static_cast<double>(e));
    const double sum_error = std::is_same_v<T, double> ? (n - 1) * (eps / 2) * sum_abs / n : 0.0;
    CHECK(std::abs(first - want) <= std::abs(want) * eps + sum_error);
    CheckAllPaths(v, first);
  }
}

TEST_CASE("float32 mean and var of large values: no overflow on the way when the result fits") {
  const std::vector<float> big(4, 3e38f);
  CheckAllPaths(big, 3e38f);
  const Array<float> pair = Array<float>::from({-1.5e19f, 1.5e19f}, {2});
  // var = (2 v^2) / 2 = v^2, about 2.25e38, less than FLT_MAX (3.4e38); the
  // sum of squares (4.5e38) exceeds it only before the division.
  const double v = 1.5e19f;  // the float input, exactly
  CHECK(var(pair).item() == static_cast<float>(v * v));
  CHECK(std::isinf(sum(Array<float>::from(big, {4})).item()));  // the sum itself does overflow
}

TEST_CASE("empty mean: NaN, as NumPy") {
  CHECK(std::isnan(mean(Array<double>::zeros({0})).item()));
  const std::vector<double> cols = mean(Array<double>::zeros({0, 3}), {0}).to_vector();
  REQUIRE(cols.size() == 3);
  for (double c : cols) CHECK(std::isnan(c));
}

TEST_CASE("axis means: each slot divided once") {
  // Rows of 49 ones and of 41 threes: means exactly 1 and 3.
  const Array<double> ones = Array<double>::ones({5, 49});
  for (double m : mean(ones, {1}).to_vector()) CHECK(m == 1.0);
  for (double m : mean(ones * 1.0, {1}).to_vector()) CHECK(m == 1.0);
  const Array<float> threes = Array<float>::full({41, 6}, 3.0f);
  for (float m : mean(threes, {0}).to_vector()) CHECK(m == 3.0f);
  for (float m : mean(threes + 0.0f, {0}).to_vector()) CHECK(m == 3.0f);
}

}  // namespace
}  // namespace dualcast
