// Closed forms at special points and the conventions at kinks (the table in dual_math.hpp),
// plus how the math functions are found: qualified, `using namespace`, ADL, never hijacking.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <type_traits>

#include <dualcast/dual.hpp>

namespace {

using dualcast::Dual;
using D1 = Dual<double, 1>;
using D2 = Dual<double, 2>;
namespace m = dualcast::math;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

D1 var(double x) { return D1::variable(x, 0); }

TEST_CASE("closed forms at special points") {
  CHECK(m::exp(var(0)).value() == 1.0);
  CHECK(m::exp(var(0)).partial(0) == 1.0);
  CHECK(m::expm1(var(0)).partial(0) == 1.0);
  CHECK(m::log(var(1)).partial(0) == 1.0);
  CHECK(m::log1p(var(0)).partial(0) == 1.0);
  CHECK(m::log2(var(1)).partial(0) == doctest::Approx(1 / std::numbers::ln2).epsilon(1e-15));
  CHECK(m::log10(var(1)).partial(0) == doctest::Approx(1 / std::numbers::ln10).epsilon(1e-15));
  CHECK(m::sqrt(var(4)).partial(0) == 0.25);
  CHECK(m::cbrt(var(8)).partial(0) == doctest::Approx(1.0 / 12).epsilon(1e-15));
  CHECK(m::sin(var(0)).partial(0) == 1.0);
  CHECK(m::cos(var(0)).partial(0) == 0.0);
  CHECK(m::tan(var(0)).partial(0) == 1.0);
  CHECK(m::asin(var(0)).partial(0) == 1.0);
  CHECK(m::acos(var(0)).partial(0) == -1.0);
  CHECK(m::atan(var(1)).partial(0) == 0.5);
  CHECK(m::sinh(var(0)).partial(0) == 1.0);
  CHECK(m::cosh(var(0)).partial(0) == 0.0);
  CHECK(m::tanh(var(0)).value() == 0.0);
  CHECK(m::tanh(var(0)).partial(0) == 1.0);
  CHECK(m::asinh(var(0)).partial(0) == 1.0);
  CHECK(m::atanh(var(0)).partial(0) == 1.0);
  CHECK(m::erf(var(0)).partial(0) == doctest::Approx(2 / std::sqrt(std::numbers::pi)).epsilon(1e-15));
  CHECK(m::erfc(var(0)).partial(0) == doctest::Approx(-2 / std::sqrt(std::numbers::pi)).epsilon(1e-15));
  CHECK(m::sigmoid(var(0)).value() == 0.5);
  CHECK(m::sigmoid(var(0)).partial(0) == 0.25);
  CHECK(m::softplus(var(0)).value() == std::log(2.0));
  CHECK(m::softplus(var(0)).partial(0) == 0.5);
  CHECK(m::sigmoid(0.0f) == 0.5f);
  static_assert(std::is_same_v<decltype(m::sigmoid(0.0f)), float>);
}

TEST_CASE("singular points: honest infinities") {
  CHECK(m::sqrt(var(0)).partial(0) == kInf);
  CHECK(m::cbrt(var(0)).partial(0) == kInf);
  CHECK(m::log(var(0)).value() == -kInf);
  CHECK(m::log(var(0)).partial(0) == kInf);
  CHECK(std::isnan(m::sqrt(var(-1)).partial(0)));
  CHECK(m::acosh(var(1)).partial(0) == kInf);
  CHECK(m::atanh(var(1)).partial(0) == kInf);
}

TEST_CASE("kinks: abs, fabs, relu") {
  for (double z : {0.0, -0.0}) {
    CAPTURE(z);
    CHECK(m::abs(var(z)).value() == 0.0);
    CHECK(m::abs(var(z)).partial(0) == 0.0);
    CHECK(m::fabs(var(z)).partial(0) == 0.0);
    CHECK(m::relu(var(z)).partial(0) == 0.0);
    CHECK_FALSE(std::signbit(m::relu(var(z)).value()));  // relu(-0) is +0
    CHECK_FALSE(std::signbit(m::relu(z)));
  }
  CHECK(m::abs(var(-2)).partial(0) == -1.0);
  CHECK(m::abs(var(2)).partial(0) == 1.0);
  CHECK(std::isnan(m::abs(var(kNaN)).partial(0)));
  CHECK(m::relu(var(2)).partial(0) == 1.0);
  CHECK(m::relu(var(-2)).value() == 0.0);
  CHECK(m::relu(var(-2)).partial(0) == 0.0);
  CHECK(std::isnan(m::relu(kNaN)));
  CHECK(std::isnan(m::relu(var(kNaN)).value()));
  CHECK(m::relu(-3.0f) == 0.0f);
}

TEST_CASE("kinks: min and max ties take the first argument, value and derivative") {
  const D2 a = D2::variable(1.0, 0), b = D2::variable(1.0, 1);
  CHECK(m::min(a, b).partial(0) == 1.0);
  CHECK(m::min(a, b).partial(1) == 0.0);
  CHECK(m::max(a, b).partial(0) == 1.0);
  CHECK(m::max(b, a).partial(1) == 1.0);
  CHECK(m::fmin(a, b).partial(0) == 1.0);
  CHECK(m::fmax(b, a).partial(1) == 1.0);
  const D2 c = D2::variable(0.5, 1);
  CHECK(m::min(a, c).partial(1) == 1.0);
  CHECK(m::max(c, a).partial(0) == 1.0);
  // min(a, constant) with a tie: a wins, so the derivative is a's.
  CHECK(m::min(a, 1.0).partial(0) == 1.0);
  CHECK(m::max(1, a).partial(0) == 0.0);
  // Signed zeros: the first argument, like std::min.
  CHECK_FALSE(std::signbit(m::min(0.0, -0.0)));
  CHECK(std::signbit(m::max(-0.0, 0.0)));
  CHECK(std::signbit(m::fmin(-0.0, 0.0)));
  // Mixed arithmetic promotes: max(float, int) is a float.
  static_assert(std::is_same_v<decltype(m::max(1.0f, 0)), float>);
  CHECK(m::max(-1.0f, 0) == 0.0f);
}

TEST_CASE("kinks: fmin/fmax follow IEEE, a NaN loses with its derivative") {
  const D2 nan(kNaN, 5.0, 5.0);
  const D2 b = D2::variable(2.0, 1);
  CHECK(m::fmin(nan, b).value() == 2.0);
  CHECK(m::fmin(nan, b).partial(1) == 1.0);
  CHECK(m::fmin(nan, b).partial(0) == 0.0);
  CHECK(m::fmin(b, nan).partial(1) == 1.0);
  CHECK(m::fmax(nan, b).value() == 2.0);
  CHECK(m::fmax(b, nan).partial(0) == 0.0);
  CHECK(m::fmax(b, kNaN).value() == 2.0);
  CHECK(std::isnan(m::fmin(nan, nan).value()));
  CHECK(m::fmin(kNaN, 3.0) == 3.0);
  CHECK(m::fmax(3.0f, std::numeric_limits<float>::quiet_NaN()) == 3.0f);
  // min/max are not IEEE: a NaN first argument is returned.
  CHECK(std::isnan(m::min(nan, b).value()));
  CHECK(m::min(b, nan).value() == 2.0);
}

TEST_CASE("kinks: floor, ceil, round, trunc have derivative 0") {
  for (double x : {2.5, -2.5, 3.0, -0.4}) {
    CAPTURE(x);
    CHECK(m::floor(var(x)).value() == std::floor(x));
    CHECK(m::ceil(var(x)).value() == std::ceil(x));
    CHECK(m::round(var(x)).value() == std::round(x));
    CHECK(m::trunc(var(x)).value() == std::trunc(x));
    CHECK(m::floor(var(x)).partial(0) == 0.0);
    CHECK(m::ceil(var(x)).partial(0) == 0.0);
    CHECK(m::round(var(x)).partial(0) == 0.0);
    CHECK(m::trunc(var(x)).partial(0) == 0.0);
  }
  CHECK(m::round(2.5) == 3.0);   // half away from zero
  CHECK(m::round(-2.5) == -3.0);
}

TEST_CASE("copysign: d/dx is the sign flip, d/dy is 0") {
  const D2 x = D2::variable(2.0, 0);
  CHECK(m::copysign(x, D2::variable(-1.0, 1)).value() == -2.0);
  CHECK(m::copysign(x, D2::variable(-1.0, 1)).partial(0) == -1.0);
  CHECK(m::copysign(x, D2::variable(-1.0, 1)).partial(1) == 0.0);
  CHECK(m::copysign(x, 1.0).partial(0) == 1.0);
  CHECK(m::copysign(-x, -0.0).partial(0) == -1.0);  // signbits equal: +1 times d(-x) = -1
  CHECK(m::copysign(x, -0.0).partial(0) == -1.0);
  CHECK(m::copysign(D1(3.0), var(-1.0)).partial(0) == 0.0);
}

TEST_CASE("atan2 in all four quadrants") {
  const double pi = std::numbers::pi;
  struct Q {
    double y, x, angle;
  };
  for (Q q : {Q{1, 1, pi / 4}, Q{1, -1, 3 * pi / 4}, Q{-1, -1, -3 * pi / 4}, Q{-1, 1, -pi / 4}, Q{0, -1, pi},
              Q{2, 0, pi / 2}}) {
    CAPTURE(q.y);
    CAPTURE(q.x);
    const D2 r = m::atan2(D2::variable(q.y, 0), D2::variable(q.x, 1));
    const double r2 = q.x * q.x + q.y * q.y;
    CHECK(r.value() == doctest::Approx(q.angle).epsilon(1e-15));
    CHECK(r.partial(0) == doctest::Approx(q.x / r2).epsilon(1e-15));
    CHECK(r.partial(1) == doctest::Approx(-q.y / r2).epsilon(1e-15));
  }
  const D2 o = m::atan2(D2::variable(0.0, 0), D2::variable(0.0, 1));
  CHECK(o.value() == 0.0);
  CHECK(std::isnan(o.partial(0)));
}

TEST_CASE("hypot: derivative 0 at the origin") {
  const D2 r = m::hypot(D2::variable(3.0, 0), D2::variable(4.0, 1));
  CHECK(r.value() == 5.0);
  CHECK(r.partial(0) == 0.6);
  CHECK(r.partial(1) == 0.8);
  const D2 o = m::hypot(D2::variable(0.0, 0), D2::variable(0.0, 1));
  CHECK(o.partial(0) == 0.0);
  CHECK(o.partial(1) == 0.0);
}

// a / sqrt(a^2 + b^2) in long double: its range holds the squares of every double, subnormal
// and near-overflow ones included.
long double HypotPartialRef(long double a, long double b) { return a / std::sqrt(a * a + b * b); }

TEST_CASE("hypot: partials a/h, b/h where h overflows from finite arguments or is subnormal") {
  // Were 0 (h = inf), 1 (h = 1.5 5e-324 rounded to 5e-324) or 150 ulp off (h subnormal).
  struct P {
    double a, b;
  };
  for (P p : {P{1.5e308, 1.5e308}, P{1e308, 1.5e308}, P{-1.7e308, 1e308}, P{1e-310, 3e-311},
              P{5e-324, 5e-324}, P{3e-320, -4e-320}, P{2e-308, 2e-308}, P{1e-310, 0.0}}) {
    CAPTURE(p.a);
    CAPTURE(p.b);
    const D2 r = m::hypot(D2::variable(p.a, 0), D2::variable(p.b, 1));
    CHECK(r.value() == std::hypot(p.a, p.b));
    for (int k = 0; k < 2; ++k) {
      const long double want = k == 0 ? HypotPartialRef(p.a, p.b) : HypotPartialRef(p.b, p.a);
      CHECK(std::abs(r.partial(k) - want) <= 2e-16L * std::abs(want));
    }
  }
  // float: hypot(2e38, 3e38) = inf, partials (0.5547, 0.8321).
  using F2 = Dual<float, 2>;
  struct Pf {
    float a, b;
  };
  for (Pf p : {Pf{2e38f, 3e38f}, Pf{3e38f, -3e38f}, Pf{7e-45f, 7e-45f}, Pf{1e-40f, 3e-41f}}) {
    CAPTURE(p.a);
    CAPTURE(p.b);
    const F2 r = m::hypot(F2::variable(p.a, 0), F2::variable(p.b, 1));
    for (int k = 0; k < 2; ++k) {
      const long double want = k == 0 ? HypotPartialRef(p.a, p.b) : HypotPartialRef(p.b, p.a);
      CHECK(std::abs(r.partial(k) - want) <= 2.4e-7L * std::abs(want));
    }
  }
  // A nested level (second derivatives) takes the same rule: d2/da2 hypot = b^2 / h^3.
  using DD = Dual<D1, 1, struct OuterTag>;
  const double a = 1.5e308, b = 1.5e308;
  const auto nested = m::hypot(DD::variable(D1::variable(a, 0), 0), DD(D1(b)));
  CHECK(std::abs(nested.partial(0).value() - HypotPartialRef(a, b)) <= 2e-16L * HypotPartialRef(a, b));
  // An infinite argument still decides: (1, 0) and NaN partials for a NaN value.
  D2 r = m::hypot(D2::variable(kInf, 0), D2::variable(1e308, 1));
  CHECK((r.partial(0) == 1.0 && r.partial(1) == 0.0));
  r = m::hypot(D2::variable(kNaN, 0), D2::variable(1e308, 1));
  CHECK((std::isnan(r.partial(0)) && std::isnan(r.partial(1))));
}

TEST_CASE("digamma, lgamma', tgamma' just below 0: -1/x - gamma, +inf where it overflows (were NaN)") {
  const long double euler = 0.577215664901532860606512090082402431L;
  // psi(x) = -1/x - gamma + (pi^2/6) x + O(x^2) near 0 (mpmath: psi(-1e-310) = 1.0e310).
  for (double x : {-1e-300, -1e-305, -2.2250738585072014e-308, -1e-308, -0x1p-59, -0x1p-60, -0x1p-61, -1e-20}) {
    CAPTURE(x);
    const long double want = -1.0L / x - euler + 1.6449340668482264365L * x;
    CHECK(std::abs(m::digamma(x) - want) <= 2.3e-16L * std::abs(want));
    CHECK(std::abs(m::lgamma(var(x)).partial(0) - want) <= 2.3e-16L * std::abs(want));
  }
  // Where -1/x overflows the double range: +inf, and tgamma' = tgamma psi = (-inf)(+inf).
  for (double x : {-5.5626846462680035e-309, -1e-310, -5e-324}) {
    CAPTURE(x);
    CHECK(m::digamma(x) == kInf);
    CHECK(m::digamma(var(x)).value() == kInf);
    CHECK(m::lgamma(var(x)).partial(0) == kInf);
    CHECK(m::tgamma(var(x)).value() == -kInf);
    CHECK(m::tgamma(var(x)).partial(0) == -kInf);
  }
  CHECK(m::digamma(-1e-40f) == std::numeric_limits<float>::infinity());  // 1e40 is beyond float
  CHECK(m::lgamma(Dual<float, 1>::variable(-1e-30f, 0)).partial(0) == doctest::Approx(1e30).epsilon(1e-7));
  // The pole at -0 stays NaN (the documented convention).
  CHECK(std::isnan(m::digamma(-0.0)));
}

TEST_CASE("pow: the special cases") {
  // dual ^ constant
  CHECK(m::pow(var(0), 0).value() == 1.0);
  CHECK(m::pow(var(0), 0).partial(0) == 0.0);  // p == 0: constant, no 0 * inf
  CHECK(m::pow(var(0), 2).partial(0) == 0.0);
  CHECK(m::pow(var(0), 1).partial(0) == 1.0);
  CHECK(m::pow(var(0), 0.5).partial(0) == kInf);
  CHECK(m::pow(var(3), 2).partial(0) == 6.0);
  CHECK(m::pow(var(-2), 3).value() == -8.0);
  CHECK(m::pow(var(-2), 3).partial(0) == 12.0);
  CHECK(m::pow(var(4), -0.5).partial(0) == -1.0 / 16);
  // constant ^ dual
  CHECK(m::pow(2, var(3)).value() == 8.0);
  CHECK(m::pow(2, var(3)).partial(0) == doctest::Approx(8 * std::numbers::ln2).epsilon(1e-15));
  CHECK(m::pow(0.0, var(2)).value() == 0.0);
  CHECK(m::pow(0.0, var(2)).partial(0) == 0.0);  // log(0) * 0^y defined as 0 for y > 0
  CHECK(std::isnan(m::pow(-2.0, var(3)).partial(0)));  // no real derivative in y
  // dual ^ dual
  const D2 r = m::pow(D2::variable(2.0, 0), D2::variable(3.0, 1));
  CHECK(r.value() == 8.0);
  CHECK(r.partial(0) == 12.0);
  CHECK(r.partial(1) == doctest::Approx(8 * std::numbers::ln2).epsilon(1e-15));
  const D2 z = m::pow(D2::variable(0.0, 0), D2::variable(2.0, 1));
  CHECK(z.partial(0) == 0.0);
  CHECK(z.partial(1) == 0.0);
  // A constant exponent never evaluates log(x): x < 0 with an integer power is fine.
  const D2 n = m::pow(D2::variable(-2.0, 0), 2.0);
  CHECK(n.partial(0) == -4.0);
  CHECK(n.partial(1) == 0.0);
  // Mixed scalar arithmetic keeps the float type.
  static_assert(std::is_same_v<decltype(m::pow(2.0f, 2)), float>);
  static_assert(std::is_same_v<decltype(m::pow(2, 2.0)), double>);
}

TEST_CASE("fma and select") {
  const Dual<double, 3> a = Dual<double, 3>::variable(2.0, 0), b = Dual<double, 3>::variable(3.0, 1),
                        c = Dual<double, 3>::variable(1.0, 2);
  const auto f = m::fma(a, b, c);
  CHECK(f.value() == 7.0);
  CHECK(f.partial(0) == 3.0);
  CHECK(f.partial(1) == 2.0);
  CHECK(f.partial(2) == 1.0);
  CHECK(m::fma(a, 3, 1).partial(0) == 3.0);
  CHECK(m::fma(2.0, 3.0f, 1) == 7.0);

  const D2 x = D2::variable(1.0, 0);
  const D2 poisoned(kNaN, kNaN, kNaN);
  CHECK(m::select(true, x, poisoned).partial(0) == 1.0);
  CHECK(m::select(false, poisoned, x).value() == 1.0);
  CHECK(m::select(x > 0, x * 2, 0).partial(0) == 2.0);
  CHECK(m::select(x < 0, x * 2, 0).partial(0) == 0.0);
  CHECK(m::select(false, 1.0f, 2.0f) == 2.0f);
  CHECK(m::select(true, 1.0, 2) == 1.0);
}

// A stand-in for jit::Var: a number-like type with its own math, even convertible to double.
namespace traced {
struct Var {
  double v;
  operator double() const { return v; }  // NOLINT: deliberately implicit, the worst case
};
inline int tanh(Var) { return 42; }
inline int pow(Var, double) { return 43; }
inline int sigmoid(Var) { return 44; }
}  // namespace traced

template <class T>
concept math_tanh_accepts = requires(T t) { dualcast::math::tanh(t); };
template <class T>
concept math_min_accepts = requires(T t) { dualcast::math::min(t, t); };

TEST_CASE("lookup: qualified, using namespace, ADL; no hijacking of other types") {
  const D1 d = var(0.5);
  const D1 q = dualcast::math::tanh(d);
  const D1 adl = tanh(d);  // argument-dependent lookup on a Dual
  D1 u;
  {
    using namespace dualcast::math;
    u = tanh(d);
    CHECK(sigmoid(traced::Var{1.0}) == 44);  // the traced type's own overloads win
    CHECK(tanh(traced::Var{1.0}) == 42);
    CHECK(pow(traced::Var{1.0}, 2.0) == 43);
    CHECK(tanh(0.5f) == std::tanh(0.5f));
    static_assert(std::is_same_v<decltype(tanh(0.5f)), float>);
    static_assert(std::is_same_v<decltype(softplus(0.5f)), float>);
  }
  CHECK(q.value() == adl.value());
  CHECK(q.partial(0) == u.partial(0));
  CHECK(q.value() == dualcast::math::tanh(0.5));
  // The scalar overloads are constrained to floating point: they never take a Var, an int or
  // a bool, even though Var converts to double.
  static_assert(!math_tanh_accepts<traced::Var>);
  static_assert(!math_tanh_accepts<int>);
  static_assert(!math_min_accepts<traced::Var>);
  static_assert(math_tanh_accepts<long double>);
}

}  // namespace
