// The Example: blocks of the internal steps headers (activation, digamma, double-double), as a user writes them.
//
// Each case is the header's example text (with its #include lines above and its
// `using namespace` in the block); they did not compile before the examples named
// dualcast::detail. Values against std::tanh, mpmath's digamma and __float128.
#include <doctest/doctest.h>

#include <cmath>

#include <dualcast/activation_steps.hpp>
#include <dualcast/digamma_steps.hpp>
#include <dualcast/double_double_steps.hpp>
#include <dualcast/math.hpp>

namespace {

TEST_CASE("activation_steps.hpp's example") {
  using namespace dualcast::detail;
  ScalarSteps<float> m;
  auto [y, dy] = tanh_steps(m, 0.5f);                    // tanh(0.5), 1 - tanh(0.5)^2
  const double t = std::tanh(0.5);
  CHECK(y == doctest::Approx(t).epsilon(1e-6));
  CHECK(dy == doctest::Approx(1 - t * t).epsilon(1e-6));
}

TEST_CASE("digamma_steps.hpp's example") {
  using namespace dualcast::detail;
  ScalarSteps<double> m;
  double psi = digamma_positive_steps(m, 0.5);             // -gamma - 2 ln 2
  double at_root = digamma_nonpositive_steps(m, -0.5040830082644554);  // ~0, to ~1 ulp
  CHECK(psi == doctest::Approx(-1.963510026021423479).epsilon(1e-15));  // mpmath digamma(0.5)
  // psi' there is about 10 (mpmath), so one ulp of the argument moves psi by ~1e-15.
  CHECK(std::fabs(at_root) < 1e-14);
}

TEST_CASE("double_double_steps.hpp's example") {
  using namespace dualcast::detail;
  ScalarSteps<double> m;
  DoubleDouble<double> third = dd_recip(m, DoubleDouble<double>{3.0, 0.0});  // 1/3 to ~2^-106
  const __float128 got = __float128(third.hi) + __float128(third.lo), want = __float128(1) / 3;
  const __float128 diff = got > want ? got - want : want - got;
  CHECK(double(diff / want) < std::ldexp(1.0, -100));
}

}  // namespace
