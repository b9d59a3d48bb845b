// double_double_steps.hpp against __float128 (113-bit significand, an independent exact-enough
// reference): TwoSum and TwoProd exact, the sums, products and quotients within 2^-103.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include <dualcast/math.hpp>

namespace {

using dualcast::detail::DoubleDouble;
using Q = __float128;
using DD = DoubleDouble<double>;
namespace d = dualcast::detail;

Q Exact(const DD& a) { return Q(a.hi) + Q(a.lo); }

// |got - want| / |want| in units of 2^-106 (the last bit of a double-double).
double RelErr106(const DD& got, Q want) {
  const Q diff = Exact(got) - want;
  return double((diff < 0 ? -diff : diff) / (want < 0 ? -want : want)) * std::ldexp(1.0, 106);
}

struct Sampler {
  std::mt19937_64 rng{20261126};
  double Double(int lo_exp, int hi_exp) {
    std::uniform_real_distribution<double> mant(1, 2);
    std::uniform_int_distribution<int> e(lo_exp, hi_exp), sign(0, 1);
    return (sign(rng) ? -1 : 1) * std::ldexp(mant(rng), e(rng));
  }
  DD Dd(int lo_exp, int hi_exp) {
    const double hi = Double(lo_exp, hi_exp);
    return d::fast_two_sum(m, hi, Double(-60, -55) * std::fabs(hi));  // a genuine low part
  }
  d::ScalarSteps<double> m;
};

TEST_CASE("two_sum and two_prod are exact") {
  Sampler s;
  for (int i = 0; i < 20000; ++i) {
    const double a = s.Double(-30, 30), b = s.Double(-30, 30);
    const DD sum = d::two_sum(s.m, a, b), prod = d::two_prod(s.m, a, b);
    REQUIRE(Exact(sum) == Q(a) + Q(b));
    REQUIRE(Exact(prod) == Q(a) * Q(b));
    REQUIRE(sum.hi == a + b);  // the high part is the rounded result
  }
}

TEST_CASE("double-double arithmetic within a few 2^-106") {
  Sampler s;
  double worst_add = 0, worst_cancel = 0, worst_mul = 0, worst_div = 0, worst_recip = 0;
  for (int i = 0; i < 20000; ++i) {
    const DD a = s.Dd(-20, 20), b = s.Dd(-20, 20);
    worst_add = std::max(worst_add, RelErr106(d::dd_add(s.m, a, b), Exact(a) + Exact(b)));
    worst_mul = std::max(worst_mul, RelErr106(d::dd_mul(s.m, a, b), Exact(a) * Exact(b)));
    worst_div = std::max(worst_div, RelErr106(d::dd_div(s.m, a, b), Exact(a) / Exact(b)));
    worst_recip = std::max(worst_recip, RelErr106(d::dd_recip(s.m, a), Q(1) / Exact(a)));
    // High parts that cancel: the sum is a.lo + c.lo, which the sloppy sum rounds to a double.
    const DD c{-a.hi, s.Double(-60, -55) * std::fabs(a.hi)};
    if (Exact(a) + Exact(c) != 0)
      worst_cancel = std::max(worst_cancel, RelErr106(d::dd_add(s.m, a, c), Exact(a) + Exact(c)));
  }
  MESSAGE("worst relative error in 2^-106: add ", worst_add, ", cancelling add ", worst_cancel, ", mul ",
          worst_mul, ", div ", worst_div, ", recip ", worst_recip);
  CHECK(worst_add <= 4);
  CHECK(worst_cancel <= 8);
  CHECK(worst_mul <= 8);
  CHECK(worst_div <= 8);
  CHECK(worst_recip <= 8);
}

TEST_CASE("the sloppy sum is exact enough for terms of one sign, and only for them") {
  Sampler s;
  const DD a = s.Dd(0, 0), c{-a.hi, std::ldexp(std::fabs(a.lo), -3) * 3};
  CHECK(RelErr106(d::dd_add_sloppy(s.m, a, c), Exact(a) + Exact(c)) > 1000);  // why dd_add exists
  double worst = 0;
  for (int i = 0; i < 20000; ++i) {
    DD a = s.Dd(-10, 10), b = s.Dd(-10, 10);
    if ((a.hi < 0) != (b.hi < 0)) b = d::dd_neg(s.m, b);
    worst = std::max(worst, RelErr106(d::dd_add_sloppy(s.m, a, b), Exact(a) + Exact(b)));
  }
  CHECK(worst <= 4);
}

}  // namespace
