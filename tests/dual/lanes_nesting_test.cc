// Tangent lanes are independent (N = 1..8), and nesting gives exact higher derivatives without
// perturbation confusion.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <numbers>
#include <random>
#include <utility>

#include <dualcast/dual.hpp>

#include "dual/dual_test_support.hpp"

namespace {

using dualcast::Dual;
namespace m = dualcast::math;

// A function of N inputs that touches every kind of rule: products, quotients, unary math,
// pow with both arguments live, a selection and a branch on the data.
template <class V, std::size_t N>
V mix(const std::array<V, N>& x) {
  using namespace dualcast::math;
  V acc = 0;
  for (std::size_t k = 0; k < N; ++k) {
    const V& a = x[k];
    const V& b = x[(k + 1) % N];
    acc += sin(a) * exp(b) / (1 + a * a);
    acc += pow(hypot(a, b) + 1, tanh(b)) - sigmoid(a * b);
    acc = max(acc, a - 10);
    if (a > b) acc -= atan2(a, b + 3);
  }
  return acc * sqrt(1 + x[0] * x[0]);
}

template <int N>
void check_lanes() {
  CAPTURE(N);
  std::mt19937_64 rng(dualcast::dual_testing::seed_for("lanes") + N);
  std::uniform_real_distribution<double> u(-2, 2);
  for (int it = 0; it < 20; ++it) {
    std::array<double, N> x{};
    for (auto& v : x) v = u(rng);
    using DN = Dual<double, N>;
    using D1 = Dual<double, 1>;
    std::array<DN, N> all{};
    for (int k = 0; k < N; ++k) all[k] = DN::variable(x[k], k);
    const DN r = mix(all);
    CHECK(r.value() == mix(x));
    for (int k = 0; k < N; ++k) {
      CAPTURE(k);
      // The same derivative from a separate one-lane run: bit-identical.
      std::array<D1, N> one{};
      for (int j = 0; j < N; ++j) one[j] = (j == k) ? D1::variable(x[j], 0) : D1(x[j]);
      const D1 s = mix(one);
      CHECK(s.value() == r.value());
      CHECK(s.partial(0) == r.partial(k));
      // Seeding lane k only: lane k is that derivative, every other lane exactly zero.
      std::array<DN, N> only{};
      for (int j = 0; j < N; ++j) only[j] = (j == k) ? DN::variable(x[j], k) : DN(x[j]);
      const DN o = mix(only);
      for (int j = 0; j < N; ++j) CHECK(o.partial(j) == (j == k ? r.partial(k) : 0.0));
    }
  }
}

TEST_CASE("lanes: N = 1..8, lane k sees only seed k") {
  [&]<int... n>(std::integer_sequence<int, n...>) { (check_lanes<n + 1>(), ...); }(
      std::make_integer_sequence<int, 8>{});
}

struct TagX;
struct TagY;
using Inner = Dual<double, 1, TagX>;
using Outer = Dual<Inner, 1, TagY>;

// f(x), f'(x), f''(x) from one evaluation on a nested Dual seeded in both levels.
template <class F>
std::array<double, 3> second(F f, double x) {
  const Outer r = f(Outer(Inner::variable(x, 0), Inner(1.0)));
  CHECK(r.value().partial(0) == r.partial(0).value());  // both levels see the same f'
  return {r.value().value(), r.partial(0).value(), r.partial(0).partial(0)};
}

TEST_CASE("nesting: second derivatives against closed forms") {
  const double pi = std::numbers::pi;
  for (double x : {0.3, 1.0, 2.7}) {
    CAPTURE(x);
    auto near = [](double got, double want) { return dualcast::dual_testing::close(got, want, 1e-13, 1e-15); };
    auto s = second([](auto v) { return m::sin(v); }, x);
    CHECK(near(s[1], std::cos(x)));
    CHECK(near(s[2], -std::sin(x)));
    s = second([](auto v) { return m::exp(v) * v; }, x);
    CHECK(near(s[2], std::exp(x) * (x + 2)));
    s = second([](auto v) { return m::pow(v, 3.5); }, x);
    CHECK(near(s[2], 3.5 * 2.5 * std::pow(x, 1.5)));
    s = second([](auto v) { return m::pow(2.0, v); }, x);
    CHECK(near(s[2], std::pow(2.0, x) * std::numbers::ln2 * std::numbers::ln2));
    s = second([](auto v) { return m::pow(v, v); }, x);  // x^x: (x^x)(ln x + 1)^2 + x^(x-1)
    CHECK(near(s[2], std::pow(x, x) * (std::log(x) + 1) * (std::log(x) + 1) + std::pow(x, x - 1)));
    s = second([](auto v) { return m::tanh(v); }, x);
    const double t = std::tanh(x);
    CHECK(near(s[2], -2 * t * (1 - t * t)));
    s = second([](auto v) { return m::sigmoid(v); }, x);
    const double sg = 1 / (1 + std::exp(-x));
    CHECK(near(s[2], sg * (1 - sg) * (1 - 2 * sg)));
    s = second([](auto v) { return m::log(v); }, x);
    CHECK(near(s[2], -1 / (x * x)));
    s = second([](auto v) { return m::sqrt(v); }, x);
    CHECK(near(s[2], -0.25 * std::pow(x, -1.5)));
    s = second([](auto v) { return m::atan(v); }, x);
    CHECK(near(s[2], -2 * x / ((1 + x * x) * (1 + x * x))));
    s = second([](auto v) { return m::erf(v); }, x);
    CHECK(near(s[2], -4 * x / std::sqrt(pi) * std::exp(-x * x)));
    s = second([](auto v) { return 1 / v; }, x);
    CHECK(near(s[2], 2 / (x * x * x)));
    s = second([](auto v) { return m::softplus(v); }, x);  // softplus'' = sigmoid'
    CHECK(near(s[2], sg * (1 - sg)));
  }
}

TEST_CASE("nesting: mixed partial of pow(x, y), one variable per level") {
  for (const auto& p : {std::pair{2.0, 3.0}, std::pair{0.5, -1.5}, std::pair{1.7, 0.25}}) {
    const double x = p.first, y = p.second;
    CAPTURE(x);
    CAPTURE(y);
    const Outer r = m::pow(Outer(Inner::variable(x, 0)), Outer(Inner(y), Inner(1.0)));
    CHECK(r.value().partial(0) == doctest::Approx(y * std::pow(x, y - 1)).epsilon(1e-14));       // d/dx
    CHECK(r.partial(0).value() == doctest::Approx(std::log(x) * std::pow(x, y)).epsilon(1e-14));  // d/dy
    CHECK(r.partial(0).partial(0) ==
          doctest::Approx(std::pow(x, y - 1) * (1 + y * std::log(x))).epsilon(1e-14));  // d2/dxdy
  }
}

TEST_CASE("nesting: a full Hessian from Dual<Dual<double, 2>, 2>") {
  using I2 = Dual<double, 2, TagX>;
  using O2 = Dual<I2, 2, TagY>;
  const double x = 0.7, y = -0.4;
  auto rosen = [](auto a, auto b) { return (1 - a) * (1 - a) + 100 * (b - a * a) * (b - a * a); };
  const O2 a(I2::variable(x, 0), I2(1.0), I2(0.0));
  const O2 b(I2::variable(y, 1), I2(0.0), I2(1.0));
  const O2 r = rosen(a, b);
  CHECK(r.partial(0).partial(0) == doctest::Approx(2 - 400 * (y - x * x) + 800 * x * x));
  CHECK(r.partial(0).partial(1) == doctest::Approx(-400 * x));
  CHECK(r.partial(1).partial(0) == doctest::Approx(-400 * x));
  CHECK(r.partial(1).partial(1) == doctest::Approx(200));
}

TEST_CASE("nesting with the helpers: second and third derivatives") {
  const double x = 0.8;
  const double d2 = dualcast::derivative(
      [](auto v) { return dualcast::derivative([](auto w) { return m::sin(w) * w; }, v); }, x);
  CHECK(d2 == doctest::Approx(2 * std::cos(x) - x * std::sin(x)).epsilon(1e-14));
  const double d3 = dualcast::derivative(
      [](auto u) {
        return dualcast::derivative(
            [](auto v) { return dualcast::derivative([](auto w) { return m::exp(w) * m::sin(w); }, v); }, u);
      },
      x);
  CHECK(d3 == doctest::Approx(2 * std::exp(x) * (std::cos(x) - std::sin(x))).epsilon(1e-14));
}

template <class A, class B>
concept addable = requires(A a, B b) { a + b; };

TEST_CASE("perturbation confusion: d/dx [x * d/dy (x + y)] at x = 1 is 1") {
  // ForwardDiff's classic test, written as a user would: the inner call is seeded with a plain
  // double and its callable captures the outer x. The inner derivative keeps x's perturbation
  // (it returns a Dual of the outer tag), so the outer derivative sees x * 1.
  const auto r = dualcast::derivative(
      [](auto x) { return x * dualcast::derivative([&](auto y) { return x + y; }, 1.0); }, 1.0);
  static_assert(std::is_same_v<decltype(r), const double>);
  CHECK(r == 1.0);

  // The same with the inner call seeded with the outer Dual type (x is then a constant inside).
  const double r2 = dualcast::derivative(
      [](auto x) {
        auto inner = dualcast::derivative([&](auto y) { return x + y; }, decltype(x)(1.0));
        return x * inner;
      },
      1.0);
  CHECK(r2 == 1.0);

  // A variant where confusion would change the answer: d/dx [x * d/dy (x * y)] = d/dx x^2 = 2x.
  for (double x0 : {-1.5, 0.25, 3.0}) {
    const double d = dualcast::derivative(
        [](auto x) { return x * dualcast::derivative([&](auto y) { return x * y; }, 2.0); }, x0);
    CHECK(d == 2 * x0);
  }

  // The same by hand with two tags, one per level.
  const Outer xo(Inner::variable(1.0, 0));                 // x lives in TagX
  const Outer yo(Inner(1.0), Inner(1.0));                  // y lives in TagY
  const Inner dy = (xo + yo).partial(0);                   // d/dy (x + y) = 1, a TagX value
  CHECK((Inner::variable(1.0, 0) * dy).partial(0) == 1.0);

  // What the tags prevent: with one untagged type for both perturbations, x + y carries both
  // seeds in the same lane and "d/dy (x + y)" comes out as 2, so the result would be 2.
  using U = Dual<double, 1>;
  const U xu = U::variable(1.0, 0), yu = U::variable(1.0, 0);
  CHECK((xu + yu).partial(0) == 2.0);

  // Two differentiations' own types combine into two levels, never into one lane.
  using TX = Dual<double, 1, dualcast::derivative_tag<struct F1, double>>;
  using TY = Dual<double, 1, dualcast::derivative_tag<struct F2, double>>;
  static_assert(addable<TX, TY> && dualcast::dual_depth_v<decltype(TX() + TY())> == 2);
  static_assert(addable<Dual<TX, 1, dualcast::derivative_tag<struct F2, TX>>, TX>);
}

TEST_CASE("nested helpers seeded with plain numbers: second derivatives and mixed partials") {
  // f(x) = x^3 sin(x): f'' by derivative of derivative, each call seeded with a double.
  for (double x0 : {-2.0, 0.3, 1.7}) {
    const double d2 = dualcast::derivative(
        [](auto x) { return dualcast::derivative([](auto w) { return w * w * w * m::sin(w); }, x); }, x0);
    const double want = 6 * x0 * std::sin(x0) + 6 * x0 * x0 * std::cos(x0) - x0 * x0 * x0 * std::sin(x0);
    CHECK(d2 == doctest::Approx(want).epsilon(1e-14));
  }
  // g(x, y) = exp(x y) + x^2 y: d2g/dxdy = exp(xy)(1 + xy) + 2x, the inner derivative in y
  // capturing the outer x (seeded with a plain double), the outer in x.
  for (auto [x0, y0] : {std::pair{0.5, -1.0}, std::pair{1.25, 0.75}}) {
    const double y = y0;
    const double dxy = dualcast::derivative(
        [y](auto x) { return dualcast::derivative([&](auto yy) { return m::exp(x * yy) + x * x * yy; }, y); },
        x0);
    CHECK(dxy == doctest::Approx(std::exp(x0 * y0) * (1 + x0 * y0) + 2 * x0).epsilon(1e-14));
  }
  // A Hessian as the gradient of a gradient, the inner gradient seeded with plain doubles
  // that capture nothing, and a gradient that keeps an outer perturbation (mixed partials).
  const auto h = dualcast::derivative(
      [](auto t) {
        const auto g = dualcast::gradient([&](auto a, auto b) { return t * a * b + m::sin(a) * t * t; },
                                          std::array{0.5, 2.0});
        return g[0] + 3 * g[1];  // d/da + 3 d/db, each a Dual of t's tag
      },
      1.5);
  // d/dt [t b + cos(a) t^2 + 3 t a] at a = 0.5, b = 2, t = 1.5 = b + 2 t cos(a) + 3 a
  CHECK(h == doctest::Approx(2.0 + 2 * 1.5 * std::cos(0.5) + 1.5).epsilon(1e-14));
}

// Found by a bug hunt: one explicit tag given at both levels made the two perturbations one
// lane, silently: d/dx [x * d/dy (x + y)] came out 2 (exact 1) and d/dx [x * d/dy (x * y)] at
// y = 2, x = 3 came out 5 (exact 2x = 6). Such a nested call now throws, naming the rule; the
// same tag used again after the first call returned, or two distinct tags, still work.
struct ReusedTag {};
struct OtherTag {};
TEST_CASE("one explicit tag at two nesting levels throws (it would confuse the perturbations)") {
  auto nested = [] {
    return dualcast::derivative<ReusedTag>(
        [](auto x) { return x * dualcast::derivative<ReusedTag>([&](auto y) { return x + y; }, 1.0); }, 1.0);
  };
  CHECK_THROWS_WITH_AS(nested(), doctest::Contains("same tag"), std::logic_error);
  CHECK_THROWS_WITH_AS(nested(), doctest::Contains("ReusedTag"), std::logic_error);
  auto nested_gradient = [] {
    return dualcast::gradient<ReusedTag>(
        [](auto a, auto b) {
          const auto g = dualcast::gradient<ReusedTag>([&](auto y, auto z) { return a * y + b * z; },
                                                       std::array{2.0, 2.0});
          return a * g[0] + b * g[1];
        },
        std::array{1.0, 3.0});
  };
  CHECK_THROWS_WITH_AS(nested_gradient(), doctest::Contains("dualcast::gradient"), std::logic_error);
  // The throw left no level held: sequential use of the tag, and distinct tags, are fine.
  CHECK(dualcast::derivative<ReusedTag>([](auto x) { return x * x; }, 3.0) == 6.0);
  const double d = dualcast::derivative<OtherTag>(
      [](auto x) { return x * dualcast::derivative<ReusedTag>([&](auto y) { return x * y; }, 2.0); }, 3.0);
  CHECK(d == 6.0);  // d/dx [x * x] at 3, by hand
}

}  // namespace
