// max/min/prod/logsumexp/var/norm/argmax/argmin/slice/concat/stack/clip: values against hand-written loops, gradients against central differences.
//
// Values: each reduction is recomputed here by a plain loop over the
// row-major data (an independent path: no permutation helper, no tape).
// Gradients: loss = sum(w ⊙ op(x)) with random weights w, differentiated by
// the tape and by float64 central differences of the same loss (h = 1e-6;
// the ops are smooth away from ties and kinks, which the random data avoids),
// accepted at 1e-6 relative. Edge cases (ties, NaN, zeros, empty slices,
// bad axes) are checked against their documented conventions.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dualcast/array.hpp"
#include "dualcast/array_ops.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "jit/error.h"

namespace dualcast {
namespace {

using D = Array<double>;
using Op = std::function<D(const D&)>;

// loss(x) = sum(w * op(x)) evaluated without a tape.
double Loss(const Op& op, const D& x, const D& w) { return sum(op(x) * w).item(); }

// Checks the tape's d loss / dx against central differences at every element of x.
void CheckGradient(const char* name, const Op& op, const D& x0) {
  const D probe = op(x0);
  const D w = D::uniform(probe.shape(), 77, -1, 1);
  std::vector<double> grad;
  {
    Tape tape;
    D x = D::from(x0.to_vector(), x0.shape());
    D loss = sum(op(x) * w);
    grad = tape.gradient(loss, {x})[0].to_vector();
  }
  std::vector<double> base = x0.to_vector();
  const double h = 1e-6;
  for (size_t k = 0; k < base.size(); ++k) {
    std::vector<double> plus = base, minus = base;
    plus[k] += h;
    minus[k] -= h;
    const double fd = (Loss(op, D::from(plus, x0.shape()), w) - Loss(op, D::from(minus, x0.shape()), w)) / (2 * h);
    CHECK_MESSAGE(grad[k] == doctest::Approx(fd).epsilon(1e-6).scale(1), name, " element ", k);
  }
}

// Row-major reference: reduce axis `axis` of a (rows, cols) matrix with `f` over each line.
std::vector<double> ReduceRef(const std::vector<double>& v, int rows, int cols, int axis,
                              const std::function<double(const std::vector<double>&)>& f) {
  std::vector<double> out;
  if (axis == 1) {
    for (int r = 0; r < rows; ++r) out.push_back(f(std::vector<double>(v.begin() + r * cols, v.begin() + (r + 1) * cols)));
  } else {
    for (int c = 0; c < cols; ++c) {
      std::vector<double> line;
      for (int r = 0; r < rows; ++r) line.push_back(v[static_cast<size_t>(r * cols + c)]);
      out.push_back(f(line));
    }
  }
  return out;
}

TEST_CASE("array ops: reduction values match plain loops over either axis and over all") {
  const D x = D::uniform({3, 5}, 11, -2, 2);
  const std::vector<double> v = x.to_vector();
  auto maxf = [](const std::vector<double>& l) { return *std::max_element(l.begin(), l.end()); };
  auto minf = [](const std::vector<double>& l) { return *std::min_element(l.begin(), l.end()); };
  auto prodf = [](const std::vector<double>& l) { double p = 1; for (double e : l) p *= e; return p; };
  auto lsef = [](const std::vector<double>& l) { double s = 0; for (double e : l) s += std::exp(e); return std::log(s); };
  auto varf = [](const std::vector<double>& l) {
    double m = 0; for (double e : l) m += e; m /= static_cast<double>(l.size());
    double s = 0; for (double e : l) s += (e - m) * (e - m); return s / static_cast<double>(l.size());
  };
  auto normf = [](const std::vector<double>& l) { double s = 0; for (double e : l) s += e * e; return std::sqrt(s); };
  for (int axis : {0, 1}) {
    auto near = [](const std::vector<double>& a, const std::vector<double>& b) {
      REQUIRE(a.size() == b.size());
      for (size_t k = 0; k < a.size(); ++k) CHECK(a[k] == doctest::Approx(b[k]).epsilon(1e-13));
    };
    near(max(x, {axis}).to_vector(), ReduceRef(v, 3, 5, axis, maxf));
    near(min(x, {axis}).to_vector(), ReduceRef(v, 3, 5, axis, minf));
    near(prod(x, {axis}).to_vector(), ReduceRef(v, 3, 5, axis, prodf));
    near(logsumexp(x, {axis}).to_vector(), ReduceRef(v, 3, 5, axis, lsef));
    near(var(x, {axis}).to_vector(), ReduceRef(v, 3, 5, axis, varf));
    near(norm(x, {axis}).to_vector(), ReduceRef(v, 3, 5, axis, normf));
  }
  CHECK(max(x).item() == maxf(v));
  CHECK(norm(x).item() == doctest::Approx(normf(v)).epsilon(1e-14));
  CHECK(max(x, {1}, true).shape() == Shape{3, 1});
  CHECK(var(x, {-1}, false, 1).to_vector()[0] ==
        doctest::Approx(varf(std::vector<double>(v.begin(), v.begin() + 5)) * 5 / 4).epsilon(1e-13));
  // argmax/argmin: indices of the first extreme element.
  const std::vector<double> am = argmax(x, 1).to_vector();
  for (int r = 0; r < 3; ++r) {
    const auto row = v.begin() + r * 5;
    CHECK(am[static_cast<size_t>(r)] == static_cast<double>(std::max_element(row, row + 5) - row));
  }
  CHECK(argmin(x).item() == static_cast<double>(std::min_element(v.begin(), v.end()) - v.begin()));
}

TEST_CASE("array ops: every reduction without axes reduces all, with an empty list none (as sum, mean)") {
  // NumPy: np.max(x) (axis=None) is over every element, np.max(x, axis=()) is x
  // itself; np.var(x, axis=()) zeros, np.var(x, axis=(), ddof=1) nan,
  // np.linalg.norm of one element its absolute value.
  const D x = D::from({1, -2, 3, 0.5, 4, -1}, {2, 3});
  const std::vector<double> v = x.to_vector();
  std::vector<double> absv;
  for (double e : v) absv.push_back(std::abs(e));
  double s = 0, p = 1, sq = 0, es = 0;
  for (double e : v) {
    s += e;
    p *= e;
    sq += e * e;
    es += std::exp(e);
  }
  const double m = s / 6;
  double dev = 0;
  for (double e : v) dev += (e - m) * (e - m);
  for (bool pending : {false, true}) {
    CAPTURE(pending);
    auto arg = [&] { return pending ? x * 1.0 : x; };
    CHECK(sum(arg(), {}).to_vector() == v);
    CHECK(mean(arg(), {}).to_vector() == v);
    CHECK(max(arg(), {}).to_vector() == v);
    CHECK(min(arg(), {}).to_vector() == v);
    CHECK(prod(arg(), {}).to_vector() == v);
    CHECK(norm(arg(), {}).to_vector() == absv);
    CHECK(var(arg(), {}).to_vector() == std::vector<double>(6, 0.0));
    for (double e : var(arg(), {}, false, 1).to_vector()) CHECK(std::isnan(e));
    const std::vector<double> lse = logsumexp(arg(), {}).to_vector();
    REQUIRE(lse.size() == 6);
    for (size_t k = 0; k < 6; ++k) CHECK(lse[k] == doctest::Approx(v[k]).epsilon(1e-15));
    CHECK(max(arg(), {}, true).shape() == Shape{2, 3});
    // Without axes: a rank-0 result over all six.
    CHECK(sum(arg()).shape() == Shape{});
    CHECK(max(arg()).shape() == Shape{});
    CHECK(max(arg()).item() == 4);
    CHECK(min(arg()).item() == -2);
    CHECK(prod(arg()).item() == doctest::Approx(p).epsilon(1e-15));
    CHECK(sum(arg()).item() == doctest::Approx(s).epsilon(1e-15));
    CHECK(logsumexp(arg()).item() == doctest::Approx(std::log(es)).epsilon(1e-14));
    CHECK(var(arg()).item() == doctest::Approx(dev / 6).epsilon(1e-14));
    CHECK(norm(arg()).item() == doctest::Approx(std::sqrt(sq)).epsilon(1e-14));
  }
  {  // Under a tape: the reduction over no axes passes the adjoint through.
    Tape tape;
    D y = D::from({1, 3, 2}, {3});
    CHECK(tape.gradient(sum(max(y, {}) * 2.0), {y})[0].to_vector() == std::vector<double>{2, 2, 2});
  }
}

TEST_CASE("array ops: gradients of every reduction, over each axis set, match central differences") {
  const D x = D::uniform({3, 4}, 5, 0.5, 2.0);  // positive, distinct: no ties, no kinks
  for (std::vector<int> axes : {std::vector<int>{0}, std::vector<int>{1}, std::vector<int>{0, 1}}) {
    CheckGradient("max", [&](const D& a) { return max(a, axes); }, x);
    CheckGradient("min", [&](const D& a) { return min(a, axes, true); }, x);
    CheckGradient("prod", [&](const D& a) { return prod(a, axes); }, x);
    CheckGradient("logsumexp", [&](const D& a) { return logsumexp(a, axes); }, x);
    CheckGradient("var", [&](const D& a) { return var(a, axes); }, x);
    CheckGradient("var ddof=1", [&](const D& a) { return var(a, axes, false, 1); }, x);
    CheckGradient("norm", [&](const D& a) { return norm(a, axes); }, x);
  }
  // Without axes: over all of them.
  CheckGradient("max()", [](const D& a) { return max(a); }, x);
  CheckGradient("prod()", [](const D& a) { return prod(a); }, x);
  CheckGradient("var()", [](const D& a) { return var(a); }, x);
  CheckGradient("norm()", [](const D& a) { return norm(a); }, x);
  // Through a fused broadcast on both sides: softmax written with logsumexp.
  CheckGradient("softmax", [](const D& a) { return exp(a - logsumexp(a, {1}, true)) * a; }, x);
}

TEST_CASE("array ops: documented edge cases — ties, zeros, NaN, empty slices") {
  {  // max ties split the adjoint evenly.
    Tape tape;
    D x = D::from({1, 3, 3, 2}, {4});
    auto g = tape.gradient(max(x), {x})[0].to_vector();
    CHECK(g == std::vector<double>{0, 0.5, 0.5, 0});
  }
  {  // prod with a zero: the exact gradient (product of the others), no 0/0.
    Tape tape;
    D x = D::from({2, 0, 5}, {3});
    auto g = tape.gradient(prod(x), {x})[0].to_vector();
    CHECK(g == std::vector<double>{0, 10, 0});
  }
  {  // NaN propagates to the value and to every adjoint of its slice.
    Tape tape;
    D x = D::from({1, std::nan(""), 2, 4}, {2, 2});
    D m = max(x, {1});
    CHECK(std::isnan(m.to_vector()[0]));
    CHECK(m.to_vector()[1] == 4);
    auto g = tape.gradient(sum(m), {x})[0].to_vector();
    CHECK(std::isnan(g[0]));
    CHECK(std::isnan(g[1]));
    CHECK(g[2] == 0);
    CHECK(g[3] == 1);
  }
  {  // norm at zero: value 0, gradient 0 (the minimum-norm subgradient).
    Tape tape;
    D x = D::from({0, 0}, {2});
    CHECK(norm(x).item() == 0);
    CHECK(tape.gradient(norm(x), {x})[0].to_vector() == std::vector<double>{0, 0});
  }
  // norm does not overflow where the squares would.
  CHECK(norm(D::from({3e200, 4e200}, {2})).item() == doctest::Approx(5e200));
  // logsumexp is stable for large inputs and -inf for an empty slice.
  CHECK(logsumexp(D::from({1000, 1000}, {2})).item() == doctest::Approx(1000 + std::log(2.0)));
  CHECK(logsumexp(D::from(std::vector<double>{}, {0})).item() == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(var(D::from({1.0}, {1}), {0}, false, 1).item()));  // N - ddof = 0
  CHECK_THROWS_WITH_AS(max(D::from(std::vector<double>{}, {0})), doctest::Contains("empty slice"), Error);
  CHECK_THROWS_WITH_AS(max(D::zeros({2, 3}), {2}), doctest::Contains("axis 2 is out of range"), Error);
  CHECK_THROWS_WITH_AS(prod(D::zeros({2, 3}), {1, -1}), doctest::Contains("repeated"), Error);
  CHECK(argmax(D::from({1, std::nan(""), 5}, {3})).item() == 1);  // NumPy: a NaN is the extreme
}

// The tape's gradient of `loss(a)` for a of type T, widened.
template <class T>
std::vector<long double> GradientOf(const std::vector<T>& v, const std::vector<int64_t>& shape,
                                    const std::function<Array<T>(const Array<T>&)>& loss) {
  Tape tape;
  Array<T> a = Array<T>::from(v, shape);
  const std::vector<T> g = tape.gradient(loss(a), {a})[0].to_vector();
  return {g.begin(), g.end()};
}

// exp(a_k - max) / sum_j exp(a_j - max) in long double, over `n` consecutive elements from `first`.
std::vector<long double> SoftmaxRef(const std::vector<long double>& a, size_t first, size_t n) {
  long double m = -INFINITY, s = 0;
  for (size_t k = first; k < first + n; ++k) m = std::max(m, a[k]);
  for (size_t k = first; k < first + n; ++k) s += std::exp(a[k] - m);
  std::vector<long double> r;
  for (size_t k = first; k < first + n; ++k) r.push_back(std::exp(a[k] - m) / s);
  return r;
}

template <class T>
void CheckSoftmax(const std::vector<double>& vd, double ulps) {
  const std::vector<T> v(vd.begin(), vd.end());
  const std::vector<long double> a(v.begin(), v.end());
  const long double eps = std::numeric_limits<T>::epsilon();
  const std::vector<long double> want = SoftmaxRef(a, 0, a.size());
  const int64_t n = static_cast<int64_t>(v.size());
  for (const auto& g : {GradientOf<T>(v, {n}, [](const Array<T>& x) { return logsumexp(x); }),
                        // an axis reduction of a pending operand
                        GradientOf<T>(v, {1, n}, [](const Array<T>& x) { return sum(logsumexp(x * T(1), {1})); })}) {
    for (size_t k = 0; k < v.size(); ++k) {
      CAPTURE(k);
      CHECK(std::abs(g[k] - want[k]) <= ulps * eps * want[k]);
    }
  }
}

TEST_CASE("array ops: logsumexp's gradient is the softmax to a few ulp however large |a| is") {
  // It was exp(a - result), result rounded to T: |a| eps lost in the exponent (f32 [1e5, 1e5]:
  // 0.4989 each, f64 [1e15, 1e15]: 0.472; the weights did not sum to 1).
  CheckSoftmax<float>({1000, 1000}, 2);
  CheckSoftmax<float>({1e5, 1e5}, 2);
  CheckSoftmax<float>({1e5, 1e5 + 1}, 4);
  CheckSoftmax<float>({-3e4, -3e4, -3e4}, 2);
  CheckSoftmax<double>({1000, 1000}, 2);
  CheckSoftmax<double>({1e12, 1e12}, 2);
  CheckSoftmax<double>({1e15, 1e15}, 2);
  // Random rows around large offsets (the spread keeps a - max exact and the weights normal).
  for (double offset : {-3e4, 0.0, 1e5}) {
    CAPTURE(offset);
    const std::vector<double> r = Array<double>::uniform({6}, 11, -8, 8).to_vector();
    std::vector<double> v;
    for (double x : r) v.push_back(offset + x);
    CheckSoftmax<double>(v, 12);
    std::vector<double> vf;
    for (double x : v) vf.push_back(static_cast<float>(x));
    CheckSoftmax<float>(vf, 12);
  }
  // Axis 1 of a (2, 3) matrix, each row its own softmax.
  const std::vector<double> m{1e5, 1e5 + 1, 1e5 - 2, -7, 3, 0.5};
  const std::vector<long double> ml(m.begin(), m.end());
  const std::vector<long double> g = GradientOf<double>(m, {2, 3}, [](const D& x) { return sum(logsumexp(x, {1})); });
  for (size_t row = 0; row < 2; ++row) {
    const std::vector<long double> want = SoftmaxRef(ml, 3 * row, 3);
    for (size_t k = 0; k < 3; ++k) CHECK(std::abs(g[3 * row + k] - want[k]) <= 4 * 2.2e-16L * want[k]);
  }
}

TEST_CASE("array ops: norm's gradient a/norm where the norm overflows or is subnormal; sign at an infinity") {
  // It was a / norm: 0 at an overflowed norm ([1.5e308, 1.5e308]), 1 at [5e-324, 5e-324], and
  // NaN for an infinite element, where hypot documents and gives sign(a). Reference:
  // a / sqrt(sum a^2) in long double.
  auto check = [](const auto& v, double rel) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    long double s = 0;
    for (T x : v) s += static_cast<long double>(x) * x;
    const std::vector<long double> g =
        GradientOf<T>(v, {static_cast<int64_t>(v.size())}, [](const Array<T>& a) { return norm(a); });
    for (size_t k = 0; k < v.size(); ++k) {
      CAPTURE(k);
      const long double want = v[k] / std::sqrt(s);
      CHECK(std::abs(g[k] - want) <= rel * std::abs(want));
    }
  };
  check(std::vector<double>{1.5e308, 1.5e308}, 4e-16);
  check(std::vector<double>{1e308, -1.5e308, 3e307}, 4e-16);
  check(std::vector<double>{5e-324, 5e-324}, 4e-16);
  check(std::vector<double>{1e-310, 3e-311}, 4e-16);
  check(std::vector<double>{1e-310, -1e-310, 2e-312}, 4e-16);
  check(std::vector<float>{2e38f, 3e38f}, 4.8e-7);
  check(std::vector<float>{7e-45f, 7e-45f}, 4.8e-7);
  // Normal norms keep a / norm (moderate values: against central differences elsewhere).
  check(std::vector<double>{3, -4, 12}, 4e-16);
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(GradientOf<double>({inf, 1}, {2}, [](const D& a) { return norm(a); }) == std::vector<long double>{1, 0});
  CHECK(GradientOf<double>({-inf, 2, inf}, {3}, [](const D& a) { return norm(a); }) ==
        std::vector<long double>{-1, 0, 1});
}

TEST_CASE("array ops: a NaN variance (N - ddof <= 0) and empty-slice reductions are on the tape") {
  {  // torch.var(x, dim=1, correction=1) of a (3, 1) x: NaN, and x.grad all NaN (JAX too).
    Tape tape;
    D x = D::from({1, 2, 4}, {3, 1});
    const std::vector<double> g = tape.gradient(sum(var(x, {1}, false, 1)), {x})[0].to_vector();
    REQUIRE(g.size() == 3);
    for (double e : g) CHECK(std::isnan(e));
  }
  {  // N - ddof < 0 too, where 2 (x - mean) / (N - ddof) would be a silent 0.
    Tape tape;
    D x = D::from({1, 2}, {2, 1});
    const std::vector<double> g = tape.gradient(sum(var(x, {1}, false, 3)), {x})[0].to_vector();
    for (double e : g) CHECK(std::isnan(e));
  }
  {  // The NaN path once went unrecorded: sum(x)'s 1 came back as the whole gradient.
    Tape tape;
    D x = D::from({1, 2, 4}, {3, 1});
    const std::vector<double> g =
        tape.gradient(sum(x) + sum(var(x, {1}, false, 1)), {x})[0].to_vector();
    REQUIRE(g.size() == 3);
    for (double e : g) CHECK(std::isnan(e));
  }
  // Over an empty axis: the gradient is an empty array of the input's
  // shape (there is nothing to differentiate), not "does not reach the loss".
  using R = std::function<D(const D&)>;
  for (const auto& [name, reduce] : std::vector<std::pair<const char*, R>>{
           {"logsumexp", [](const D& a) { return logsumexp(a, {1}); }},
           {"norm", [](const D& a) { return norm(a, {1}); }},
           {"var", [](const D& a) { return var(a, {1}); }},
           {"prod", [](const D& a) { return prod(a, {1}); }}}) {
    CAPTURE(name);
    Tape tape;
    D x = D::zeros({2, 0});
    const D loss = sum(reduce(x));
    const D g = tape.gradient(loss, {x})[0];
    CHECK(g.shape() == Shape{2, 0});
  }
}

TEST_CASE("array ops: every reduction of a pending operand with a size-0 dim, over each axis") {
  // A pending (2, 0, 3) operand: reduced inside the kernel that produces it
  // (sum, mean, max, min, prod) or with a first pass there (the others).
  // Shapes as NumPy gives them, e.g. np.sum(np.zeros((2, 0, 3)), axis=2).shape
  // == (2, 0); over the empty axis 1 the documented empty values: sum 0,
  // prod 1, mean and var NaN (0 / 0), norm 0, logsumexp -inf, max/min an
  // error (NumPy raises too).
  using R = std::function<D(const D&, std::vector<int>)>;
  const std::vector<std::pair<const char*, R>> all = {
      {"sum", [](const D& a, std::vector<int> ax) { return sum(a, ax); }},
      {"mean", [](const D& a, std::vector<int> ax) { return mean(a, ax); }},
      {"max", [](const D& a, std::vector<int> ax) { return max(a, ax); }},
      {"min", [](const D& a, std::vector<int> ax) { return min(a, ax); }},
      {"prod", [](const D& a, std::vector<int> ax) { return prod(a, ax); }},
      {"logsumexp", [](const D& a, std::vector<int> ax) { return logsumexp(a, ax); }},
      {"var", [](const D& a, std::vector<int> ax) { return var(a, ax); }},
      {"norm", [](const D& a, std::vector<int> ax) { return norm(a, ax); }},
  };
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<const char*, double>> empty_value = {
      {"sum", 0}, {"mean", NAN}, {"prod", 1}, {"logsumexp", -inf}, {"var", NAN}, {"norm", 0}};
  for (const auto& [name, reduce] : all) {
    CAPTURE(name);
    CHECK(reduce(D::zeros({2, 0, 3}) * 1.0, {0}).shape() == Shape{0, 3});
    CHECK(reduce(D::zeros({2, 0, 3}) * 1.0, {2}).shape() == Shape{2, 0});
    CHECK(reduce(D::zeros({2, 0, 3}) * 1.0, {0, 2}).shape() == Shape{0});
    const std::string n = name;
    if (n == "max" || n == "min") {
      CHECK_THROWS_WITH_AS(reduce(D::zeros({2, 0, 3}) * 1.0, {1}).eval(), doctest::Contains("empty slice"),
                           Error);
      continue;
    }
    double expect = 0;
    for (const auto& [m, v] : empty_value) {
      if (n == m) expect = v;
    }
    const D r = reduce(D::zeros({2, 0, 3}) * 1.0, {1});
    REQUIRE(r.shape() == Shape{2, 3});
    for (double e : r.to_vector()) {
      if (std::isnan(expect)) {
        CHECK(std::isnan(e));
      } else {
        CHECK(e == expect);
      }
    }
  }
  CHECK(sum(D::zeros({2, 0, 3}) * 1.0, {2}, true).shape() == Shape{2, 0, 1});
  CHECK(prod(D::zeros({2, 0, 3}) * 1.0, {1}, true).to_vector() == std::vector<double>(6, 1.0));
}

TEST_CASE("array ops: slice is a view with NumPy bounds; its gradient scatters back") {
  D x = D::from({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  D s = slice(x, {{1, Slice::kEnd}, {0, 4, 2}});  // rows 1..2, columns 0 and 2
  CHECK(s.shape() == Shape{2, 2});
  CHECK(s.to_vector() == std::vector<double>{4, 6, 8, 10});
  CHECK(slice(x, {{-1}}).to_vector() == std::vector<double>{8, 9, 10, 11});    // negative start
  CHECK(slice(x, {{5, 9}}).shape() == Shape{0, 4});                             // clamped: empty
  {  // Huge steps: NumPy's np.arange(10, 15)[::sys.maxsize] is [10], [1::2**62] is [11].
    const D r = D::from({10, 11, 12, 13, 14}, {5});
    CHECK(slice(r, {{0, Slice::kEnd, Slice::kEnd}}).to_vector() == std::vector<double>{10});
    CHECK(slice(r, {{0, Slice::kEnd, int64_t{1} << 62}}).to_vector() == std::vector<double>{10});
    CHECK(slice(r, {{1, Slice::kEnd, int64_t{1} << 62}}).to_vector() == std::vector<double>{11});
    CHECK(slice(r, {{4, 2, Slice::kEnd}}).shape() == Shape{0});
    // x[::sys.maxsize, 1::2**62] of the 3x4 x above: [[1]].
    CHECK(slice(x, {{0, Slice::kEnd, Slice::kEnd}, {1, Slice::kEnd, int64_t{1} << 62}}).to_vector() ==
          std::vector<double>{1});
    Tape tape;
    D y = D::from({10, 11, 12, 13, 14}, {5});
    CHECK(tape.gradient(sum(slice(y, {{1, Slice::kEnd, Slice::kEnd}})), {y})[0].to_vector() ==
          std::vector<double>{0, 1, 0, 0, 0});
  }
  CHECK_THROWS_WITH_AS(slice(x, {{0, 3, 0}}), doctest::Contains("must be positive"), Error);
  CHECK_THROWS_WITH_AS(slice(x, {{}, {}, {}}), doctest::Contains("3 slices for an array of shape"), Error);
  // Two overlapping slices of one array multiplied: both adjoints accumulate into it.
  CheckGradient("slice",
                [](const D& a) { return slice(a, {{1, 3}, {1, 4, 2}}) * slice(a, {{0, 2}, {0, 3, 2}}); },
                D::uniform({3, 4}, 3));
  {
    Tape tape;
    D y = D::uniform({3, 4}, 4);
    auto g = tape.gradient(sum(slice(y, {{0, 3, 2}})), {y})[0].to_vector();  // rows 0 and 2
    CHECK(g == std::vector<double>{1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1});
  }
  {  // The sweep adds a slice's adjoint into its region of the input's adjoint. Here that
     // adjoint is a view of t's (reshape's reverse rule), and t's gradient is asked for
     // too: the add must not write into t's. References by hand: dt = w2; da = w2 as
     // (3, 4) plus w1 at the slice's positions.
    Tape tape;
    D a = D::uniform({3, 4}, 5);
    const D w1 = D::uniform({2, 2}, 6, -1, 1), w2 = D::uniform({12}, 7, -1, 1);
    const D s = slice(a, {{1, 3}, {0, 4, 2}});  // rows 1, 2; columns 0, 2
    const D t = a.reshape({12});
    const auto g = tape.gradient(sum(s * w1) + sum(t * w2), {a, t});
    const std::vector<double> v1 = w1.to_vector(), v2 = w2.to_vector();
    std::vector<double> da = v2;
    da[4] += v1[0], da[6] += v1[1], da[8] += v1[2], da[10] += v1[3];
    CHECK(g[1].to_vector() == v2);
    CHECK(g[0].to_vector() == da);
  }
}

TEST_CASE("array ops: concat and stack values, errors and gradients") {
  D a = D::from({1, 2, 3, 4}, {2, 2});
  D b = D::from({5, 6}, {1, 2});
  CHECK(concat({a, b}, 0).to_vector() == std::vector<double>{1, 2, 3, 4, 5, 6});  // T deduced
  CHECK(concat<double>({a, transpose(b)}, 1).to_vector() == std::vector<double>{1, 2, 5, 3, 4, 6});
  CHECK(stack({a, a}).shape() == Shape{2, 2, 2});
  CHECK(stack<double>({a, a * 2.0}, 2).to_vector() == std::vector<double>{1, 2, 2, 4, 3, 6, 4, 8});
  CHECK_THROWS_WITH_AS(concat<double>({a, b}, 1), doctest::Contains("array 2 has shape [1, 2]"), Error);
  CHECK_THROWS_WITH_AS(stack<double>({a, b}, 0), doctest::Contains("stack needs equal shapes"), Error);
  {  // NumPy keeps the sign of zero: np.concatenate([[-0.0], [0.0]]) is [-0., 0.], np.stack too.
    const D nz = D::from({-0.0, 0.0}, {2});
    const std::vector<double> c = concat<double>({nz, nz}, 0).to_vector();
    const std::vector<double> st = stack<double>({nz, nz}, 1).to_vector();
    REQUIRE(c.size() == 4);
    REQUIRE(st.size() == 4);
    CHECK(std::signbit(c[0]));
    CHECK(!std::signbit(c[1]));
    CHECK(std::signbit(c[2]));
    CHECK(!std::signbit(c[3]));
    CHECK(std::signbit(st[0]));  // [[-0, -0], [0, 0]]
    CHECK(std::signbit(st[1]));
    CHECK(!std::signbit(st[2]));
    CHECK(!std::signbit(st[3]));
    Tape tape;  // one input twice: both of its adjoint views add up
    D t = D::from({1, 2}, {2});
    CHECK(tape.gradient(sum(concat<double>({t, t * 3.0}, 0)), {t})[0].to_vector() == std::vector<double>{4, 4});
  }
  {  // Along the last axis the inputs are written in one pass (up to 16), else one by one.
    const D t = D::from({1, 2, 3, 4, 5, 6}, {3, 2});
    const D row = D::from({7, 8, 9}, {3});
    std::vector<D> many;
    for (int k = 0; k < 17; ++k) many.push_back(t * static_cast<double>(k));
    for (const size_t count : {size_t{3}, size_t{17}}) {
      std::vector<D> ins = {t.transpose(), row.reshape({1, 3}) * D::from({1, 1}, {2, 1}), t.transpose() * -1.0};
      for (size_t k = 3; k < count; ++k) ins.push_back(many[k].transpose());
      const std::vector<double> got = stack<double>(ins, -1).to_vector();
      REQUIRE(got.size() == 6 * count);
      for (size_t e = 0; e < 6; ++e) {  // element e of the (2, 3) inputs
        const size_t i = e / 3, j = e % 3;
        const double tv = 1 + static_cast<double>(j * 2 + i);  // t.transpose()[i][j] = t[j][i]
        CHECK(got[e * count + 0] == tv);
        CHECK(got[e * count + 1] == 7 + static_cast<double>(j));
        CHECK(got[e * count + 2] == -tv);
        for (size_t k = 3; k < count; ++k) CHECK(got[e * count + k] == tv * static_cast<double>(k));
      }
    }
  }
  const D x = D::uniform({2, 3}, 9, -1, 1);
  CheckGradient("concat", [](const D& t) { return concat<double>({t * t, exp(t)}, 1); }, x);
  CheckGradient("stack", [](const D& t) { return stack<double>({t, sin(t)}, 1); }, x);
}

TEST_CASE("array ops: clip is a fused branchy broadcast with d/dx = 1 inside [lo, hi]") {
  D x = D::from({-2, -1, 0, 1, 2, std::nan("")}, {6});
  const std::vector<double> c = clip(x, -1.0, 1.0).to_vector();
  CHECK(std::vector<double>(c.begin(), c.begin() + 5) == std::vector<double>{-1, -1, 0, 1, 1});
  CHECK(std::isnan(c[5]));
  Tape tape;
  D y = D::from({-2, -1, 0, 1, 2}, {5});
  D lo = D::scalar(-1), hi = D::scalar(1);
  auto g = tape.gradient(sum(clip(y, lo, hi)), {y, lo, hi});
  CHECK(g[0].to_vector() == std::vector<double>{0, 1, 1, 1, 0});
  CHECK(g[1].item() == 1);  // only y = -2 is below lo
  CHECK(g[2].item() == 1);  // only y = 2 is above hi
}

TEST_CASE("array ops: clip with lo > hi or a NaN operand is NumPy's min(max(x, lo), hi)") {
  const double nan = std::nan("");
  // np.clip(0, 2, 1) == 1, np.clip(5, 2, 1) == 1, np.clip(1.5, 2, 1) == 1: hi wherever lo > hi.
  CHECK(clip(D::from({0, 5, 1.5}, {3}), 2.0, 1.0).to_vector() == std::vector<double>{1, 1, 1});
  // np.clip(0, nan, 1), np.clip(0, -1, nan), np.clip(nan, 2, 1): all nan.
  CHECK(std::isnan(clip(D::scalar(0), nan, 1.0).item()));
  CHECK(std::isnan(clip(D::scalar(0), -1.0, nan).item()));
  CHECK(std::isnan(clip(D::scalar(nan), 2.0, 1.0).item()));
  // d/dx of min(max(x, lo), hi) with lo > hi: the result is hi, so only hi's adjoint is 1.
  Tape tape;
  D y = D::from({0, 5, 1.5}, {3});
  D lo = D::scalar(2), hi = D::scalar(1);
  auto g = tape.gradient(sum(clip(y, lo, hi)), {y, lo, hi});
  CHECK(g[0].to_vector() == std::vector<double>{0, 0, 0});
  CHECK(g[1].item() == 0);
  CHECK(g[2].item() == 3);
}

TEST_CASE("array ops: clip with lo == hi is constant in x, also at x == lo == hi") {
  // clip(x, c, c) = c for every x: d/dx = 0 and d/dc = 1 everywhere. Returning
  // x at the tie (as for lo < hi) gave d/dx = 1 there.
  Tape tape;
  D x = D::from({0.5, 0.5, 0.25, 0.75}, {4});
  D c = D::scalar(0.5);
  D y = clip(x, c, c);
  CHECK(y.to_vector() == std::vector<double>{0.5, 0.5, 0.5, 0.5});
  auto g = tape.gradient(sum(y), {x, c});
  CHECK(g[0].to_vector() == std::vector<double>{0, 0, 0, 0});
  CHECK(g[1].item() == 4);
  // Central differences of the loss in x[0] (at the tie) and in c agree.
  auto loss = [](double x0, double cv) {
    return sum(clip(D::from({x0, 0.5, 0.25, 0.75}, {4}), D::scalar(cv), D::scalar(cv))).item();
  };
  const double h = 1e-6;
  CHECK((loss(0.5 + h, 0.5) - loss(0.5 - h, 0.5)) / (2 * h) == doctest::Approx(0.0));
  CHECK((loss(0.5, 0.5 + h) - loss(0.5, 0.5 - h)) / (2 * h) == doctest::Approx(4.0));
}

}  // namespace
}  // namespace dualcast
