// Generic lambdas with data-dependent branches: on Duals, the partials of the taken branch on
// each side; the same lambda on float and double gives the same values.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <limits>

#include <dualcast/dual.hpp>

namespace {

using dualcast::Dual;

// The HM-LSTM cell of the benchmark: FLUSH, COPY or UPDATE depending on the boundary bits.
const auto cell = [](auto z, auto zb, auto c, auto f, auto i, auto g) {
  using namespace dualcast::math;
  if (z == 1) return sigmoid(i) * tanh(g);         // FLUSH
  if (zb == 0) return c;                           // COPY
  return sigmoid(f) * c + sigmoid(i) * tanh(g);    // UPDATE
};

// sqrt where it is defined, 0 elsewhere, written with an if (not a select).
const auto safe_sqrt = [](auto x) {
  using namespace dualcast::math;
  if (x > 0) return sqrt(x);
  return decltype(x)(0);
};

double sig(double x) { return 1 / (1 + std::exp(-x)); }

TEST_CASE("HM-LSTM cell: each branch gives its own partials") {
  using D6 = Dual<double, 6>;
  enum { kZ, kZb, kC, kF, kI, kG };
  const double c = 0.3, f = -0.7, i = 0.4, g = 1.1;
  auto run = [&](double z, double zb) {
    return cell(D6::variable(z, kZ), D6::variable(zb, kZb), D6::variable(c, kC), D6::variable(f, kF),
                D6::variable(i, kI), D6::variable(g, kG));
  };
  const double th = std::tanh(g), si = sig(i), sf = sig(f);

  SUBCASE("FLUSH (z == 1)") {
    const D6 r = run(1, 1);
    CHECK(r.value() == doctest::Approx(si * th).epsilon(1e-15));
    CHECK(r.partial(kI) == doctest::Approx(si * (1 - si) * th).epsilon(1e-14));
    CHECK(r.partial(kG) == doctest::Approx(si * (1 - th * th)).epsilon(1e-14));
    for (int k : {kZ, kZb, kC, kF}) CHECK(r.partial(k) == 0.0);
  }
  SUBCASE("COPY (z == 0, zb == 0)") {
    const D6 r = run(0, 0);
    CHECK(r.value() == c);
    CHECK(r.partial(kC) == 1.0);
    for (int k : {kZ, kZb, kF, kI, kG}) CHECK(r.partial(k) == 0.0);
  }
  SUBCASE("UPDATE (z == 0, zb == 1)") {
    const D6 r = run(0, 1);
    CHECK(r.value() == doctest::Approx(sf * c + si * th).epsilon(1e-15));
    CHECK(r.partial(kC) == doctest::Approx(sf).epsilon(1e-15));
    CHECK(r.partial(kF) == doctest::Approx(sf * (1 - sf) * c).epsilon(1e-14));
    CHECK(r.partial(kI) == doctest::Approx(si * (1 - si) * th).epsilon(1e-14));
    CHECK(r.partial(kG) == doctest::Approx(si * (1 - th * th)).epsilon(1e-14));
    CHECK(r.partial(kZ) == 0.0);
    CHECK(r.partial(kZb) == 0.0);
  }
  SUBCASE("the same lambda on double and float: the Dual values bit for bit") {
    for (const auto& bits : {std::array{1.0, 1.0}, std::array{0.0, 0.0}, std::array{0.0, 1.0}}) {
      const double z = bits[0], zb = bits[1];
      CAPTURE(z);
      CAPTURE(zb);
      CHECK(cell(z, zb, c, f, i, g) == run(z, zb).value());
      const float rf = cell(float(z), float(zb), float(c), float(f), float(i), float(g));
      using F6 = Dual<float, 6>;
      const F6 df = cell(F6(float(z)), F6(float(zb)), F6::variable(float(c), kC), F6(float(f)), F6(float(i)),
                         F6(float(g)));
      CHECK(rf == df.value());
      CHECK(rf == doctest::Approx(cell(z, zb, c, f, i, g)).epsilon(1e-6));
    }
  }
}

TEST_CASE("branch on the data: sqrt(x) if x > 0 else 0") {
  using D1 = Dual<double, 1>;
  for (double x : {4.0, 0.25, 1e-300}) {
    CAPTURE(x);
    const D1 r = safe_sqrt(D1::variable(x, 0));
    CHECK(r.value() == std::sqrt(x));
    CHECK(r.partial(0) == 0.5 / std::sqrt(x));
  }
  for (double x : {0.0, -0.0, -1.0, -1e300}) {
    CAPTURE(x);
    const D1 r = safe_sqrt(D1::variable(x, 0));
    CHECK(r.value() == 0.0);
    CHECK(r.partial(0) == 0.0);  // the untaken branch leaks nothing: no inf, no NaN
  }
  CHECK(safe_sqrt(4.0) == 2.0);
  CHECK(safe_sqrt(-4.0f) == 0.0f);
  CHECK(dualcast::derivative(safe_sqrt, 0.0) == 0.0);
  CHECK(dualcast::derivative(safe_sqrt, 4.0) == 0.25);
}

TEST_CASE("branches and nesting: the second derivative follows the branch too") {
  // |x|^3 written with a branch: f'' = 6|x|.
  auto cube_abs = [](auto x) {
    if (x < 0) return -x * x * x;
    return x * x * x;
  };
  auto d2 = [&](double x) {
    return dualcast::derivative([&](auto v) { return dualcast::derivative(cube_abs, v); }, x);
  };
  CHECK(d2(-2.0) == 12.0);
  CHECK(d2(2.0) == 12.0);
  CHECK(d2(0.0) == 0.0);
}

}  // namespace
