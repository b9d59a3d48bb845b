// The rest of <cmath> and the staples on float/double and Dual: values against std::, the
// documented conventions (kinks, bounds, ties, poles, limits at inf, NaN => NaN partials),
// finite differences for the smooth ones, and how std:: spellings behave.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <type_traits>

#include <dualcast/dual.hpp>

#include "dual/dual_test_support.hpp"

namespace {

using dualcast::Dual;
using D1 = Dual<double, 1>;
using D2 = Dual<double, 2>;
namespace m = dualcast::math;
using namespace dualcast::dual_testing;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

D1 var(double x) { return D1::variable(x, 0); }

TEST_CASE("scalar values equal the C++ library's") {
  for (double x : {-7.25, -0.5, 0.3, 2.0, 13.75}) {
    CAPTURE(x);
    CHECK(m::exp2(x) == std::exp2(x));
    CHECK(m::fmod(x, 2.5) == std::fmod(x, 2.5));
    CHECK(m::remainder(x, 2.5) == std::remainder(x, 2.5));
    CHECK(m::fdim(x, 1.0) == std::fdim(x, 1.0));
    CHECK(m::nextafter(x, 0.0) == std::nextafter(x, 0.0));
    CHECK(m::tgamma(x) == std::tgamma(x));
    CHECK(m::lgamma(x) == std::lgamma(x));
    CHECK(m::rint(x) == std::rint(x));
    CHECK(m::nearbyint(x) == std::nearbyint(x));
    CHECK(m::logb(x) == std::logb(x));
    CHECK(m::ilogb(x) == std::ilogb(x));
    CHECK(m::ldexp(x, 5) == std::ldexp(x, 5));
    CHECK(m::scalbn(x, -3) == std::scalbn(x, -3));
    int e1 = 0, e2 = 0;
    CHECK(m::frexp(x, &e1) == std::frexp(x, &e2));
    CHECK(e1 == e2);
    double i1 = 0, i2 = 0;
    CHECK(m::modf(x, &i1) == std::modf(x, &i2));
    CHECK(i1 == i2);
    CHECK(m::lerp(x, 4.0, 0.3) == std::lerp(x, 4.0, 0.3));
    CHECK(m::clamp(x, -1.0, 3.0) == std::clamp(x, -1.0, 3.0));
    CHECK(m::powi(x, 3) == std::pow(x, 3.0));
    CHECK(m::square(x) == x * x);
    CHECK(m::rsqrt(std::fabs(x)) == doctest::Approx(1 / std::sqrt(std::fabs(x))).epsilon(2e-16));
    CHECK(m::sign(x) == (x > 0 ? 1.0 : -1.0));
    int q1 = 0, q2 = 0;
    CHECK(m::remquo(x, 2.5, &q1) == std::remquo(x, 2.5, &q2));
    CHECK(q1 == q2);
    CHECK(m::lround(x) == std::lround(x));
    CHECK(m::llround(x) == std::llround(x));
    CHECK(m::lrint(x) == std::lrint(x));
    CHECK(m::llrint(x) == std::llrint(x));
    CHECK(m::lround(var(x)) == std::lround(x));
  }
  CHECK(m::exp2(3.0f) == 8.0f);
  static_assert(std::is_same_v<decltype(m::erfinv(0.5f)), float>);
  static_assert(std::is_same_v<decltype(m::clamp(1.0f, 0, 2)), float>);
}

TEST_CASE("classification and sign: values and signed zeros") {
  CHECK(m::isnan(kNaN));
  CHECK(!m::isnan(kInf));
  CHECK(m::isinf(-kInf));
  CHECK(!m::isinf(kNaN));
  CHECK(m::isfinite(1e308));
  CHECK(!m::isfinite(kNaN));
  CHECK(m::isnormal(1.0f));
  CHECK(!m::isnormal(1e-40f));
  CHECK(!m::isnormal(0.0));
  CHECK(m::signbit(-0.0));
  CHECK(std::signbit(m::sign(-0.0)));
  CHECK(m::sign(0.0) == 0.0);
  CHECK(std::isnan(m::sign(kNaN)));
  // On Duals: the value decides.
  CHECK(m::isnan(var(kNaN)));
  CHECK(m::isinf(D2(kInf, 1.0, 2.0)));
  CHECK(m::signbit(var(-0.0)));
  CHECK(m::ilogb(var(10.0)) == 3);
  // Every value-only wrapper, on one level and on nested levels, against std:: on the primal.
  using DD = Dual<D1, 1>;
  for (double x : {2.5, -3.5, 0.0, -0.0, 1e-310, kInf, kNaN}) {
    CAPTURE(x);
    const DD nested(var(x));
    CHECK(m::isnan(nested) == std::isnan(x));
    CHECK(m::isinf(nested) == std::isinf(x));
    CHECK(m::isfinite(nested) == std::isfinite(x));
    CHECK(m::isnormal(var(x)) == std::isnormal(x));
    CHECK(m::isnormal(nested) == std::isnormal(x));
    CHECK(m::signbit(nested) == std::signbit(x));
    if (!std::isfinite(x)) continue;  // the integer conversions are unspecified there
    CHECK(m::ilogb(nested) == std::ilogb(x));
    CHECK(m::lround(var(x)) == std::lround(x));
    CHECK(m::llround(nested) == std::llround(x));
    CHECK(m::lrint(nested) == std::lrint(x));
    CHECK(m::llrint(var(x)) == std::llrint(x));
  }
}

TEST_CASE("the special functions at known points") {
  CHECK(m::erfinv(0.0) == 0.0);
  CHECK(std::signbit(m::erfinv(-0.0)));
  CHECK(m::erfinv(1.0) == kInf);
  CHECK(m::erfinv(-1.0) == -kInf);
  CHECK(std::isnan(m::erfinv(1.5)));
  for (double y : {1e-300, 1e-5, 0.1, 0.5, 0.9, 0.999, 1 - 1e-12}) {
    CAPTURE(y);
    CHECK(std::erf(m::erfinv(y)) == doctest::Approx(y).epsilon(4e-16));
    CHECK(std::erf(m::erfinv(-y)) == doctest::Approx(-y).epsilon(4e-16));
  }
  CHECK(m::erfinv(0.5) == doctest::Approx(0.47693627620446987338).epsilon(1e-16));
  CHECK(m::erfinv(0.5f) == doctest::Approx(0.476936276f).epsilon(1e-7));
  // digamma(1) = -gamma, digamma(1/2) = -gamma - 2 ln 2, trigamma(1) = pi^2/6.
  constexpr double kEuler = 0.57721566490153286061;
  CHECK(m::digamma(1.0) == doctest::Approx(-kEuler).epsilon(1e-16));
  CHECK(m::digamma(0.5) == doctest::Approx(-kEuler - 2 * std::numbers::ln2).epsilon(1e-16));
  CHECK(m::trigamma(1.0) == doctest::Approx(std::numbers::pi * std::numbers::pi / 6).epsilon(1e-15));
  CHECK(std::isnan(m::digamma(0.0)));
  CHECK(std::isnan(m::digamma(-3.0)));
  CHECK(m::logaddexp(0.0, 0.0) == std::numbers::ln2);
  CHECK(m::logaddexp(1000.0, 0.0) == 1000.0);
  CHECK(m::logaddexp(-kInf, -kInf) == -kInf);
  CHECK(m::logaddexp(kInf, kInf) == kInf);
  CHECK(m::logaddexp(kInf, 1.0) == kInf);
  CHECK(std::isnan(m::logaddexp(kNaN, 1.0)));
}

TEST_CASE("smooth new functions: partials against finite differences") {
  std::mt19937_64 rng(seed_for("cmath fd"));
  std::uniform_real_distribution<double> u(0.2, 3.0);
  auto fd = [](auto f, double x) {
    return static_cast<double>(richardson([&](long double t) { return f(t); }, x, 1e-4L));
  };
  for (int i = 0; i < 50; ++i) {
    const double x = u(rng), y = u(rng) - 1.6;
    CAPTURE(x);
    CAPTURE(y);
    CHECK(m::exp2(var(x)).partial(0) == doctest::Approx(fd([](long double t) { return std::exp2(t); }, x)).epsilon(1e-9));
    CHECK(m::lgamma(var(x)).partial(0) == doctest::Approx(fd([](long double t) { return std::lgamma(t); }, x)).epsilon(1e-8));
    CHECK(m::tgamma(var(x)).partial(0) == doctest::Approx(fd([](long double t) { return std::tgamma(t); }, x)).epsilon(1e-8));
    CHECK(m::digamma(var(x)).partial(0) ==
          doctest::Approx(fd([](long double t) { return static_cast<long double>(m::digamma(double(t))); }, x)).epsilon(1e-6));
    CHECK(m::rsqrt(var(x)).partial(0) == doctest::Approx(-0.5 * std::pow(x, -1.5)).epsilon(1e-15));
    CHECK(m::square(var(y)).partial(0) == 2 * y);
    CHECK(m::powi(var(y), 5).partial(0) == doctest::Approx(5 * std::pow(y, 4)).epsilon(1e-15));
    CHECK(m::powi(var(y), -2).partial(0) == doctest::Approx(-2 / (y * y * y)).epsilon(1e-15));
    const double e = y / 2;  // in (-0.7, 0.7)
    CHECK(m::erfinv(var(e)).partial(0) ==
          doctest::Approx(std::sqrt(std::numbers::pi) / 2 * std::exp(m::erfinv(e) * m::erfinv(e))).epsilon(1e-15));
    const D2 l = m::logaddexp(D2::variable(x, 0), D2::variable(y, 1));
    CHECK(l.partial(0) == doctest::Approx(1 / (1 + std::exp(y - x))).epsilon(1e-15));
    CHECK(l.partial(1) == doctest::Approx(1 / (1 + std::exp(x - y))).epsilon(1e-15));
    // lerp(a, b, t): (1 - t, t, b - a)
    const Dual<double, 3> a = Dual<double, 3>::variable(x, 0), b = Dual<double, 3>::variable(y, 1),
                          t = Dual<double, 3>::variable(0.3, 2);
    const auto r = m::lerp(a, b, t);
    CHECK(r.value() == std::lerp(x, y, 0.3));
    CHECK(r.partial(0) == doctest::Approx(0.7));
    CHECK(r.partial(1) == doctest::Approx(0.3));
    CHECK(r.partial(2) == doctest::Approx(y - x));
  }
}

TEST_CASE("conventions: fmod, remainder, fdim, nextafter, sign, rounding") {
  // fmod(7.5, 2) = 1.5 = 7.5 - 3 * 2: d/da = 1, d/db = -3.
  D2 r = m::fmod(D2::variable(7.5, 0), D2::variable(2.0, 1));
  CHECK(r.value() == 1.5);
  CHECK(r.partial(0) == 1.0);
  CHECK(r.partial(1) == -3.0);
  r = m::fmod(D2::variable(-7.5, 0), D2::variable(2.0, 1));  // -1.5 = -7.5 - (-3) * 2
  CHECK(r.value() == -1.5);
  CHECK(r.partial(1) == 3.0);
  // remainder(7.5, 2) = -0.5 = 7.5 - 4 * 2 (quotient rounded to even): d/db = -4.
  r = m::remainder(D2::variable(7.5, 0), D2::variable(2.0, 1));
  CHECK(r.value() == -0.5);
  CHECK(r.partial(0) == 1.0);
  CHECK(r.partial(1) == -4.0);
  // A quotient far beyond 2^24 still comes out exact in double.
  r = m::fmod(D2::variable(1e15 + 0.75, 0), D2::variable(1.0, 1));
  CHECK(r.partial(1) == -1e15);
  // fdim: (1, -1) above, (0, 0) at and below.
  r = m::fdim(D2::variable(3.0, 0), D2::variable(1.0, 1));
  CHECK((r.value() == 2.0 && r.partial(0) == 1.0 && r.partial(1) == -1.0));
  r = m::fdim(D2::variable(1.0, 0), D2::variable(1.0, 1));
  CHECK((r.value() == 0.0 && r.partial(0) == 0.0 && r.partial(1) == 0.0));
  int quo = 0;
  r = m::remquo(D2::variable(7.5, 0), D2::variable(2.0, 1), &quo);
  CHECK((r.value() == -0.5 && r.partial(0) == 1.0 && r.partial(1) == -4.0 && quo == 4));
  r = m::nextafter(D2::variable(1.0, 0), D2::variable(2.0, 1));
  CHECK((r.partial(0) == 1.0 && r.partial(1) == 0.0));
  for (double x : {-2.5, -0.0, 0.0, 0.5, 3.5}) {
    CHECK(m::sign(var(x)).partial(0) == 0.0);
    CHECK(m::rint(var(x)).partial(0) == 0.0);
    CHECK(m::nearbyint(var(x)).partial(0) == 0.0);
    CHECK(m::logb(var(x + 10)).partial(0) == 0.0);
  }
}

TEST_CASE("conventions: clamp at and beyond its bounds") {
  using D3 = Dual<double, 3>;
  auto cl = [](double x, double lo, double hi) {
    return m::clamp(D3::variable(x, 0), D3::variable(lo, 1), D3::variable(hi, 2));
  };
  auto lanes = [](const D3& d) { return std::array{d.partial(0), d.partial(1), d.partial(2)}; };
  CHECK(lanes(cl(0.5, 0, 1)) == std::array{1.0, 0.0, 0.0});
  CHECK(lanes(cl(-1, 0, 1)) == std::array{0.0, 1.0, 0.0});
  CHECK(lanes(cl(2, 0, 1)) == std::array{0.0, 0.0, 1.0});
  CHECK(lanes(cl(0, 0, 1)) == std::array{1.0, 0.0, 0.0});  // on a bound: x wins
  CHECK(lanes(cl(1, 0, 1)) == std::array{1.0, 0.0, 0.0});
  CHECK(std::isnan(m::clamp(var(kNaN), 0.0, 1.0).value()));
  // Constant bounds, mixed int/double.
  CHECK(m::clamp(var(5.0), 0, 1).value() == 1.0);
  CHECK(m::clamp(var(5.0), 0, 1).partial(0) == 0.0);
  CHECK(m::clamp(var(0.5), 0, 1).partial(0) == 1.0);
}

TEST_CASE("conventions: ties, poles, limits at infinity") {
  // logaddexp tie: half each.
  D2 r = m::logaddexp(D2::variable(2.0, 0), D2::variable(2.0, 1));
  CHECK((r.partial(0) == 0.5 && r.partial(1) == 0.5));
  // Far apart: the small side's coefficient is exp(-|a-b|) to the last bits.
  r = m::logaddexp(D2::variable(0.0, 0), D2::variable(-700.0, 1));
  CHECK(r.partial(1) == doctest::Approx(std::exp(-700.0)).epsilon(1e-15));
  // An infinite argument: the limit (0 for -inf, 1 for the other), not the NaN of inf - inf.
  r = m::logaddexp(D2::variable(-kInf, 0), D2::variable(2.0, 1));
  CHECK((r.value() == 2.0 && r.partial(0) == 0.0 && r.partial(1) == 1.0));
  // Poles of the gamma functions: NaN derivative (digamma: NaN value too).
  for (double x : {0.0, -1.0, -4.0}) {
    CHECK(std::isnan(m::digamma(var(x)).partial(0)));
    CHECK(std::isnan(m::lgamma(var(x)).partial(0)));
    CHECK(std::isnan(m::tgamma(var(x)).partial(0)));
    // Values at the poles are libm's (C: lgamma is +inf there; tgamma is NaN at a negative
    // integer and +-inf at +-0).
    CHECK(m::lgamma(var(x)).value() == kInf);
    if (x < 0) CHECK(std::isnan(m::tgamma(var(x)).value()));
  }
  CHECK(m::tgamma(var(0.0)).value() == kInf);
  CHECK(m::tgamma(var(-0.0)).value() == -kInf);
  // erfinv at +-1: infinite value, infinite derivative.
  CHECK(m::erfinv(var(1.0)).value() == kInf);
  CHECK(m::erfinv(var(1.0)).partial(0) == kInf);
  // atan2 and hypot at infinite arguments follow the limits.
  r = m::atan2(D2::variable(kInf, 0), D2::variable(1.0, 1));
  CHECK(r.value() == doctest::Approx(std::numbers::pi / 2));
  CHECK((r.partial(0) == 0.0 && r.partial(1) == 0.0));
  r = m::atan2(D2::variable(kInf, 0), D2::variable(-kInf, 1));
  CHECK((r.partial(0) == 0.0 && r.partial(1) == 0.0));
  r = m::hypot(D2::variable(-kInf, 0), D2::variable(3.0, 1));
  CHECK((r.value() == kInf && r.partial(0) == -1.0 && r.partial(1) == 0.0));
  // hypot(inf, y) = inf for every y (IEEE 754, NaN included): the NaN argument gets 0; two
  // infinite arguments each get their sign.
  r = m::hypot(D2::variable(kInf, 0), D2::variable(std::numeric_limits<double>::quiet_NaN(), 1));
  CHECK((r.value() == kInf && r.partial(0) == 1.0 && r.partial(1) == 0.0));
  r = m::hypot(D2::variable(kInf, 0), D2::variable(-kInf, 1));
  CHECK((r.value() == kInf && r.partial(0) == 1.0 && r.partial(1) == -1.0));
  // sigmoid far out keeps its subnormal value and derivative; tanh' far out is 4 e^{-2|x|}.
  CHECK(m::sigmoid(-740.0) == std::exp(-740.0));
  CHECK(m::sigmoid(-740.0) > 0);
  CHECK(m::sigmoid(var(-740.0)).partial(0) == std::exp(-740.0));
  CHECK(m::sigmoid(-100.0f) > 0);
  CHECK(m::tanh(var(20.0)).partial(0) == doctest::Approx(4 * std::exp(-40.0)).epsilon(1e-15));
  CHECK(m::tanh(Dual<float, 1>::variable(12.0f, 0)).partial(0) ==
        doctest::Approx(4 * std::exp(-24.0)).epsilon(1e-6));
}

TEST_CASE("a NaN value comes with NaN partials (nonzero lanes)") {
  CHECK(std::isnan(m::log(var(-1)).partial(0)));
  CHECK(std::isnan(m::log1p(var(-2)).partial(0)));
  CHECK(std::isnan(m::atanh(var(2)).partial(0)));
  CHECK(std::isnan(m::asin(var(1.5)).partial(0)));
  CHECK(std::isnan(m::pow(var(-1), 0.5).partial(0)));
  CHECK(std::isnan(m::floor(var(kNaN)).partial(0)));
  // A lane that is exactly zero stays zero (strong zero).
  const D2 x(-1.0, 1.0, 0.0);
  CHECK(std::isnan(m::log(x).partial(0)));
  CHECK(m::log(x).partial(1) == 0.0);
}

TEST_CASE("ldexp, scalbn, frexp, modf carry the derivative exactly") {
  CHECK(m::ldexp(var(3.0), 4).partial(0) == 16.0);
  CHECK(m::scalbn(var(3.0), -1).partial(0) == 0.5);
  int e = 0;
  const D1 f = m::frexp(var(12.0), &e);  // 12 = 0.75 * 2^4
  CHECK((e == 4 && f.value() == 0.75 && f.partial(0) == 1.0 / 16));
  D1 ip;
  const D1 fr = m::modf(var(-3.25), &ip);
  CHECK((fr.value() == -0.25 && fr.partial(0) == 1.0 && ip.value() == -3.0 && ip.partial(0) == 0.0));
}

// std:: spellings: a std:: function cannot be overloaded for Dual (adding to namespace std is
// undefined behaviour) and no std:: overload accepts one, so `std::sin(d)` does not compile.
// The generic-code idiom `using std::sin; sin(d)` works through argument-dependent lookup.
template <class T>
concept std_sin_callable = requires(T t) { std::sin(t); };
template <class T>
auto generic_sin(const T& t) {
  using std::sin;
  return sin(t);
}

TEST_CASE("std:: spellings: using std::sin works, std::sin(dual) is rejected") {
  static_assert(!std_sin_callable<D1>);
  static_assert(std_sin_callable<double>);
  const D1 s = generic_sin(var(0.5));
  CHECK(s.value() == std::sin(0.5));
  CHECK(s.partial(0) == std::cos(0.5));
  CHECK(generic_sin(0.5) == std::sin(0.5));
}

}  // namespace
