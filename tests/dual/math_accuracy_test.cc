// Every math function on random points: Dual values vs the scalar code and long double, partials
// vs long-double finite differences, mixed Dual/constant forms, and the float path vs double.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include <dualcast/dual.hpp>

#include "dual/dual_test_support.hpp"

namespace {

using dualcast::Dual;
using namespace dualcast::dual_testing;

constexpr int kPoints = 200;

struct Opts {
  double rel = 1e-7;         // partials vs finite differences (double)
  double value_rel = 1e-14;  // double value vs long double reference
  bool fd = true;            // false for piecewise-constant functions: partials must be exactly 0
  double float_rel = 64;     // float partials vs double partials, in float epsilons (relative)
  double float_abs = 0;      // ... plus this many float epsilons absolute (cancellation in 1 - y*y)
};

template <std::size_t K>
std::string describe(const char* name, const std::array<double, K>& x) {
  std::ostringstream os;
  os.precision(17);
  os << name << "(";
  for (std::size_t k = 0; k < K; ++k) os << (k ? ", " : "") << x[k];
  os << ")";
  return os.str();
}

// f called with argument k as a one-lane Dual variable and the others as plain doubles.
template <std::size_t k, class F, std::size_t K, std::size_t... J>
auto call_single(F& f, const std::array<double, K>& x, std::index_sequence<J...>) {
  auto pick = [&]<std::size_t j>(std::integral_constant<std::size_t, j>) {
    if constexpr (j == k)
      return Dual<double, 1>::variable(x[j], 0);
    else
      return x[j];
  };
  return f(pick(std::integral_constant<std::size_t, J>{})...);
}

template <class T, std::size_t K>
auto seeded(const std::array<T, K>& x) {
  std::array<Dual<T, static_cast<int>(K)>, K> d{};
  for (std::size_t k = 0; k < K; ++k) d[k] = Dual<T, static_cast<int>(K)>::variable(x[k], static_cast<int>(k));
  return d;
}

template <std::size_t K, class F, class Ref>
void check_fn(const char* name, F f, Ref ref, std::array<Domain, K> dom, Opts o = {}) {
  std::mt19937_64 rng(seed_for(name));
  for (int it = 0; it < kPoints; ++it) {
    std::array<double, K> x{};
    std::array<float, K> xf{};
    for (std::size_t k = 0; k < K; ++k) {
      xf[k] = static_cast<float>(dom[k].sample(rng));  // float-representable: one point for both runs
      x[k] = xf[k];
    }
    INFO(describe(name, x));

    // Values: Dual == scalar code bit for bit, and the scalar code is accurate.
    const auto r = std::apply(f, seeded(x));
    const double y = std::apply(f, x);
    CHECK(same_or_both_nan(r.value(), y));
    auto ref_at = [&](std::array<long double, K> p) { return std::apply(ref, p); };
    std::array<long double, K> xl{};
    for (std::size_t k = 0; k < K; ++k) xl[k] = x[k];
    CHECK(close(y, ref_at(xl), o.value_rel, 1e-300));

    // Partials: lane k against a finite difference in argument k.
    for (std::size_t k = 0; k < K; ++k) {
      CAPTURE(k);
      if (!o.fd) {
        CHECK(r.partial(static_cast<int>(k)) == 0.0);
        continue;
      }
      const long double fd = richardson(
          [&](long double t) {
            auto p = xl;
            p[k] = t;
            return ref_at(p);
          },
          xl[k], dom[k].step(x[k]));
      CAPTURE(r.partial(static_cast<int>(k)));
      CAPTURE(static_cast<double>(fd));
      CHECK(close(r.partial(static_cast<int>(k)), fd, o.rel, 1e-12 * std::fabs(y)));
    }

    // Mixed forms: one Dual argument among constants gives exactly that lane of the full run.
    if constexpr (K > 1) {
      [&]<std::size_t... k>(std::index_sequence<k...>) {
        (
            [&] {
              const auto s = call_single<k>(f, x, std::make_index_sequence<K>{});
              CAPTURE(k);
              CHECK(same_or_both_nan(s.value(), r.value()));
              CHECK(same_or_both_nan(s.partial(0), r.partial(static_cast<int>(k))));
            }(),
            ...);
      }(std::make_index_sequence<K>{});
    }

    // float: the same code in float precision, close to the double result.
    const auto rf = std::apply(f, seeded(xf));
    const float yf = std::apply(f, xf);
    CHECK(same_or_both_nan(rf.value(), yf));
    CHECK(close(rf.value(), r.value(), 8 * kFloatEps, 1e-300));
    for (std::size_t k = 0; k < K; ++k) {
      CAPTURE(k);
      CAPTURE(rf.partial(static_cast<int>(k)));
      CAPTURE(r.partial(static_cast<int>(k)));
      CHECK(close(rf.partial(static_cast<int>(k)), r.partial(static_cast<int>(k)), o.float_rel * kFloatEps,
                  o.float_abs * kFloatEps));
    }
  }
}

#define UNARY(fn, ref_expr, domain, ...)                                                              \
  check_fn<1>(#fn, [](auto x) { return dualcast::math::fn(x); }, [](long double x) { return ref_expr; }, \
              {domain}, Opts{__VA_ARGS__})

using D = Domain;

TEST_CASE("math accuracy: exponentials and logarithms") {
  UNARY(exp, std::exp(x), D::uniform(-20, 20));
  UNARY(expm1, std::expm1(x), D::uniform(-5, 5));
  UNARY(log, std::log(x), D::log(1e-3, 1e3));
  UNARY(log1p, std::log1p(x), D::uniform(-0.9, 10));
  UNARY(log2, std::log2(x), D::log(1e-3, 1e3));
  UNARY(log10, std::log10(x), D::log(1e-3, 1e3));
  UNARY(sqrt, std::sqrt(x), D::log(1e-3, 1e3));
  UNARY(cbrt, std::cbrt(x), D::signed_log(1e-3, 1e3));
}

TEST_CASE("math accuracy: trigonometric") {
  UNARY(sin, std::sin(x), D::uniform(-10, 10), .float_abs = 4);
  UNARY(cos, std::cos(x), D::uniform(-10, 10), .float_abs = 4);
  UNARY(tan, std::tan(x), D::uniform(-1.5, 1.5));
  UNARY(asin, std::asin(x), D::uniform(-0.95, 0.95));
  UNARY(acos, std::acos(x), D::uniform(-0.95, 0.95));
  UNARY(atan, std::atan(x), D::uniform(-10, 10));
}

TEST_CASE("math accuracy: hyperbolic") {
  UNARY(sinh, std::sinh(x), D::uniform(-10, 10));
  UNARY(cosh, std::cosh(x), D::uniform(-10, 10));
  UNARY(tanh, std::tanh(x), D::uniform(-5, 5), .float_abs = 4);
  UNARY(asinh, std::asinh(x), D::uniform(-100, 100));
  UNARY(acosh, std::acosh(x), D::uniform(1.05, 100));
  UNARY(atanh, std::atanh(x), D::uniform(-0.95, 0.95));
}

TEST_CASE("math accuracy: special and piecewise functions") {
  // exp(-v*v) in float: the rounding of v*v is amplified by v^2.
  UNARY(erf, std::erf(x), D::uniform(-3.5, 3.5), .float_rel = 256);
  UNARY(erfc, std::erfc(x), D::uniform(-3, 8), .float_rel = 512);
  UNARY(abs, std::fabs(x), D::uniform(-10, 10));
  UNARY(fabs, std::fabs(x), D::uniform(-10, 10));
  UNARY(floor, std::floor(x), D::uniform(-10, 10), .fd = false);
  UNARY(ceil, std::ceil(x), D::uniform(-10, 10), .fd = false);
  UNARY(round, std::round(x), D::uniform(-10, 10), .fd = false);
  UNARY(trunc, std::trunc(x), D::uniform(-10, 10), .fd = false);
}

TEST_CASE("math accuracy: activations") {
  UNARY(sigmoid, 1 / (1 + std::exp(-x)), D::uniform(-10, 10), .float_abs = 4);
  UNARY(softplus, x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)), D::uniform(-20, 20));
  UNARY(relu, x > 0 ? x : 0.0L, D::uniform(-10, 10));
}

#define BINARY(fn, ref_expr, da, db, ...)                                             \
  check_fn<2>(#fn, [](auto a, auto b) { return dualcast::math::fn(a, b); },             \
              [](long double a, long double b) { return ref_expr; }, {da, db}, Opts{__VA_ARGS__})

TEST_CASE("math accuracy: binary functions") {
  BINARY(pow, std::pow(a, b), D::log(0.1, 10), D::uniform(-3, 3));
  BINARY(atan2, std::atan2(a, b), D::signed_log(0.1, 10), D::signed_log(0.1, 10));
  BINARY(hypot, std::hypot(a, b), D::signed_log(0.1, 10), D::signed_log(0.1, 10));
  BINARY(copysign, std::copysign(a, b), D::uniform(-10, 10), D::signed_log(0.01, 10));
  BINARY(min, (b < a) ? b : a, D::uniform(-10, 10), D::uniform(-10, 10));
  BINARY(max, (a < b) ? b : a, D::uniform(-10, 10), D::uniform(-10, 10));
  BINARY(fmin, (b < a) ? b : a, D::uniform(-10, 10), D::uniform(-10, 10));
  BINARY(fmax, (a < b) ? b : a, D::uniform(-10, 10), D::uniform(-10, 10));
}

TEST_CASE("math accuracy: fma and arithmetic") {
  const auto dom = D::uniform(-10, 10);
  check_fn<3>("fma", [](auto a, auto b, auto c) { return dualcast::math::fma(a, b, c); },
              [](long double a, long double b, long double c) { return a * b + c; }, {dom, dom, dom},
              // the fma value is exact-rounded; a*b+c in long double is its reference
              Opts{.value_rel = 1e-13, .float_abs = 4});
  const auto pos = D::signed_log(0.1, 10);
  check_fn<2>("add", [](auto a, auto b) { return a + b; }, [](long double a, long double b) { return a + b; },
              {dom, dom}, Opts{.value_rel = 1e-13, .float_abs = 4});
  check_fn<2>("sub", [](auto a, auto b) { return a - b; }, [](long double a, long double b) { return a - b; },
              {dom, dom}, Opts{.value_rel = 1e-13, .float_abs = 4});
  check_fn<2>("mul", [](auto a, auto b) { return a * b; }, [](long double a, long double b) { return a * b; },
              {dom, dom});
  check_fn<2>("div", [](auto a, auto b) { return a / b; }, [](long double a, long double b) { return a / b; },
              {dom, pos});
}

}  // namespace
