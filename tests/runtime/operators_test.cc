// Tests of Array operators, comparisons, math functions and where(): values against std:: references, fusion.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "dualcast/array.hpp"
#include "dualcast/array_ops.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/partials.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "jit/stats.h"

namespace dualcast {
namespace {

template <class T, class F>
void CheckElementwise(const Array<T>& got, const std::vector<double>& x, F ref, double tol) {
  std::vector<T> g = got.to_vector();
  REQUIRE(g.size() == x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = ref(x[i]);
    INFO("x = " << x[i] << ", want " << want << ", got " << g[i]);
    if (std::isnan(want)) {
      CHECK(std::isnan(static_cast<double>(g[i])));
    } else {
      CHECK(static_cast<double>(g[i]) == doctest::Approx(want).epsilon(tol).scale(1));
    }
  }
}

TEST_CASE("arithmetic operators: Array with Array (broadcasting) and numbers on either side") {
  auto a = Array<double>::uniform({3, 4}, 1, -2, 2);
  auto b = Array<double>::uniform({4}, 2, 0.5, 2);
  std::vector<double> as = a.to_vector(), bs = b.to_vector();
  jit::ResetStats();
  Array<double> r = (a + b) * 2.0 - 1.0 / b + (-a) / 4.0 - (3.0 - a);
  std::vector<double> rs = r.to_vector();
  CHECK(jit::GetStats().launches == 1);  // the whole expression is one kernel
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      const double x = as[i * 4 + j], y = bs[j];
      CHECK(rs[i * 4 + j] == doctest::Approx((x + y) * 2 - 1 / y + (-x) / 4 - (3 - x)).epsilon(1e-15));
    }
  }
  auto f = Array<float>::from({1, 2, 3}, {3});
  CHECK((f * 2 + 0.5).to_vector() == std::vector<float>{2.5f, 4.5f, 6.5f});
  CHECK((1 - f).to_vector() == std::vector<float>{0, -1, -2});
}

TEST_CASE("comparisons give 0/1 and have structurally zero partials") {
  auto a = Array<double>::from({1, 2, 3, std::nan("")}, {4});
  auto b = Array<double>::from({2, 2, 2, 2}, {4});
  CHECK((a == b).to_vector() == std::vector<double>{0, 1, 0, 0});
  CHECK((a != b).to_vector() == std::vector<double>{1, 0, 1, 1});
  CHECK((a < b).to_vector() == std::vector<double>{1, 0, 0, 0});
  CHECK((a <= b).to_vector() == std::vector<double>{1, 1, 0, 0});
  CHECK((a > b).to_vector() == std::vector<double>{0, 0, 1, 0});
  CHECK((a >= b).to_vector() == std::vector<double>{0, 1, 1, 0});
  CHECK((a > 1.5).to_vector() == std::vector<double>{0, 1, 1, 0});
  CHECK((2.5 > a).to_vector() == std::vector<double>{1, 1, 0, 0});
  Partials<double> p = partials(detail::BuiltinKernel(detail::Builtin::kLt), {a, b});
  CHECK(p.structurally_zero(0, 0));
  CHECK(p.structurally_zero(0, 1));
}

TEST_CASE_TEMPLATE("unary math functions match the std:: / dualcast::math definitions", T, float,
                   double) {
  const double tol = sizeof(T) == 4 ? 2e-6 : 1e-13;
  std::vector<double> wide = {-3.5, -1.25, -0.5, -0.0, 0.0, 0.3, 0.75, 1.5, 2.5, 4.0};
  std::vector<double> unit = {-0.9, -0.5, -0.1, 0.0, 0.2, 0.6, 0.95};
  std::vector<double> pos = {0.01, 0.5, 1.0, 1.5, 3.0, 10.0, 100.0};
  std::vector<double> ge1 = {1.0, 1.1, 2.0, 5.0, 50.0};
  auto arr = [](const std::vector<double>& v) {
    return Array<T>::from(std::vector<T>(v.begin(), v.end()), {static_cast<int64_t>(v.size())});
  };
  auto round_to_t = [](const std::vector<double>& v) {
    std::vector<double> r;
    for (double d : v) r.push_back(static_cast<double>(static_cast<T>(d)));
    return r;
  };
  auto check = [&](auto fn, const std::vector<double>& dom, double (*ref)(double)) {
    std::vector<double> d = round_to_t(dom);
    CheckElementwise<T>(fn(arr(d)), d, ref, tol);
  };
#define UNARY(name, dom) check([](const Array<T>& x) { return dualcast::name(x); }, dom, \
                               [](double v) { return std::name(v); })
  UNARY(exp, wide); UNARY(expm1, wide); UNARY(log, pos); UNARY(log1p, pos); UNARY(log2, pos);
  UNARY(log10, pos); UNARY(sqrt, pos); UNARY(cbrt, wide); UNARY(sin, wide); UNARY(cos, wide);
  UNARY(tan, unit); UNARY(asin, unit); UNARY(acos, unit); UNARY(atan, wide); UNARY(sinh, wide);
  UNARY(cosh, wide); UNARY(tanh, wide); UNARY(asinh, wide); UNARY(acosh, ge1); UNARY(atanh, unit);
  UNARY(erf, wide); UNARY(erfc, wide); UNARY(fabs, wide); UNARY(floor, wide); UNARY(ceil, wide);
  UNARY(round, wide); UNARY(trunc, wide); UNARY(abs, wide);
#undef UNARY
  check([](const Array<T>& x) { return dualcast::sigmoid(x); }, wide,
        [](double v) { return 1 / (1 + std::exp(-v)); });
  check([](const Array<T>& x) { return dualcast::softplus(x); }, wide,
        [](double v) { return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); });
  check([](const Array<T>& x) { return dualcast::relu(x); }, wide,
        [](double v) { return v > 0 ? v : 0.0; });
}

TEST_CASE("binary math functions and fma with arrays and numbers") {
  auto a = Array<double>::from({0.5, 2.0, -1.5, 3.0, 0.0}, {5});
  auto b = Array<double>::from({2.0, 0.5, -1.5, -3.0, 1.0}, {5});
  std::vector<double> as = a.to_vector(), bs = b.to_vector();
  auto pairwise = [&](const Array<double>& got, double (*ref)(double, double)) {
    std::vector<double> g = got.to_vector();
    for (size_t i = 0; i < as.size(); ++i) {
      CHECK(g[i] == doctest::Approx(ref(as[i], bs[i])).epsilon(1e-14));
    }
  };
  pairwise(pow(abs(a), b), [](double x, double y) { return std::pow(std::fabs(x), y); });
  pairwise(atan2(a, b), [](double x, double y) { return std::atan2(x, y); });
  pairwise(min(a, b), [](double x, double y) { return y < x ? y : x; });
  pairwise(max(a, b), [](double x, double y) { return x < y ? y : x; });
  pairwise(fmin(a, b), [](double x, double y) { return std::fmin(x, y); });
  pairwise(fmax(a, b), [](double x, double y) { return std::fmax(x, y); });
  pairwise(hypot(a, b), [](double x, double y) { return std::hypot(x, y); });
  pairwise(copysign(a, b), [](double x, double y) { return std::copysign(x, y); });
  pairwise(fma(a, b, 1.0), [](double x, double y) { return std::fma(x, y, 1.0); });
  CHECK(pow(a, 2.0).to_vector() == std::vector<double>{0.25, 4, 2.25, 9, 0});
  CHECK(pow(2.0, b).to_vector() == std::vector<double>{4, std::sqrt(2.0), std::pow(2, -1.5), 0.125, 2});
}

TEST_CASE("elementwise min and max are std::min/std::max: a NaN first argument is returned, a second dropped") {
  // Documented (docs/ops.md, operators.hpp) against NumPy's maximum, which propagates both; the
  // reductions max(A)/min(A) propagate NaN and fmin/fmax drop it on either side.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto a = Array<double>::from({1, nan, nan, 2}, {4});
  auto b = Array<double>::from({nan, 1, nan, 3}, {4});
  const std::vector<double> as = a.to_vector(), bs = b.to_vector();
  const std::vector<double> mx = max(a, b).to_vector(), mn = min(a, b).to_vector();
  const std::vector<double> fx = fmax(a, b).to_vector();
  for (size_t i = 0; i < as.size(); ++i) {
    CAPTURE(i);
    const double want_max = std::max(as[i], bs[i]), want_min = std::min(as[i], bs[i]);
    CHECK((mx[i] == want_max || (std::isnan(mx[i]) && std::isnan(want_max))));
    CHECK((mn[i] == want_min || (std::isnan(mn[i]) && std::isnan(want_min))));
    const double want_fmax = std::fmax(as[i], bs[i]);
    CHECK((fx[i] == want_fmax || (std::isnan(fx[i]) && std::isnan(want_fmax))));
  }
  CHECK(std::isnan(max(b).item()));  // the reduction propagates
}

TEST_CASE("where(c, a, b) equals select(c != 0, a, b) and computes both sides") {
  auto x = Array<double>::from({-4, -1, 0, 1, 4}, {5});
  Array<double> w = where(x > 0.0, sqrt(x), 0.0);
  std::vector<double> ws = w.to_vector();
  CHECK(ws == std::vector<double>{0, 0, 0, 1, 2});
  Kernel sel = kernel("sel", [](auto c, auto a, auto b) { return select(c != 0, a, b); });
  auto c = Array<double>::from({1, 0, 2, 0, -1}, {5});
  auto a = Array<double>::arange(5);
  CHECK(where(c, a, -a).to_vector() == broadcast(sel, c, a, -a).to_vector());
  // Both branches are evaluated. In reverse mode (the unfused comparator)
  // the untaken sqrt(-4) sends 0 * NaN into the gradient; a kernel with a real
  // `if` gives exactly 0 there.
  auto xs = Array<double>::from({-4, 4}, {2});
  std::vector<double> g_where, g_if;
  {
    Tape tape;
    Unfused unfused;
    Array<double> loss = sum(where(xs > 0.0, sqrt(xs), 0.0));
    g_where = tape.gradient(loss, {xs})[0].to_vector();
  }
  {
    Kernel safe = kernel("safe_sqrt", [](auto v) {
      using namespace dualcast::math;
      if (v > 0) return sqrt(v);
      return v * 0;
    });
    Tape tape;
    Array<double> loss = sum(broadcast(safe, xs));
    g_if = tape.gradient(loss, {xs})[0].to_vector();
  }
  CHECK(std::isnan(g_where[0]));
  CHECK(g_where[1] == 0.25);
  CHECK(g_if == std::vector<double>{0, 0.25});
}

}  // namespace
}  // namespace dualcast
