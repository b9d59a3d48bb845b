// The eager helpers: derivative, gradient and jacobian of generic callables.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <type_traits>

#include <dualcast/dual.hpp>

namespace {

namespace m = dualcast::math;

struct Square {
  auto operator()(auto x) const { return x * x; }
};

TEST_CASE("derivative") {
  CHECK(dualcast::derivative([](auto x) { return x * x * x; }, 2.0) == 12.0);
  CHECK(dualcast::derivative([](auto x) { return m::tanh(x); }, 0.0) == 1.0);
  const float f = dualcast::derivative([](auto x) { return m::sigmoid(x); }, 0.0f);
  CHECK(f == 0.25f);
  static_assert(std::is_same_v<decltype(dualcast::derivative([](auto x) { return x; }, 1.0f)), float>);
  // A callable that ignores its input (on this path) has derivative 0.
  CHECK(dualcast::derivative([](auto) { return 3.0; }, 1.0) == 0.0);
  CHECK(dualcast::derivative([](auto x) { return x > 0 ? x * 2 : decltype(x)(1.0); }, -1.0) == 0.0);
  // An explicit tag.
  struct MyTag;
  CHECK(dualcast::derivative<MyTag>([](auto x) { return m::exp(2 * x); }, 0.0) == 2.0);
  // Function objects work as well as lambdas.
  CHECK(dualcast::derivative(Square{}, 3.0) == 6.0);
}

TEST_CASE("gradient: array form and separate-argument form") {
  const auto g = dualcast::gradient([](auto x) { return x[0] * x[1] + m::sin(x[2]); }, std::array{3.0, 4.0, 0.0});
  CHECK(g[0] == 4.0);
  CHECK(g[1] == 3.0);
  CHECK(g[2] == 1.0);
  const auto h = dualcast::gradient([](auto a, auto b) { return m::pow(a, b); }, std::array{2.0, 3.0});
  CHECK(h[0] == 12.0);
  CHECK(h[1] == doctest::Approx(8 * std::log(2.0)).epsilon(1e-15));
  const auto one = dualcast::gradient([](const auto& x) { return x[0] * x[0]; }, std::array{5.0f});
  static_assert(std::is_same_v<decltype(one), const std::array<float, 1>>);
  CHECK(one[0] == 10.0f);
  // A constant result: zero gradient.
  const auto z = dualcast::gradient([](auto, auto) { return 1.0; }, std::array{1.0, 2.0});
  CHECK(z[0] == 0.0);
  CHECK(z[1] == 0.0);
}

TEST_CASE("jacobian") {
  const auto J = dualcast::jacobian(
      [](auto x) { return std::array{x[0] * x[1], x[0] + x[1], std::remove_cvref_t<decltype(x[0])>(7.0), m::exp(x[1])}; },
      std::array{3.0, 4.0});
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(J)>, std::array<std::array<double, 2>, 4>>);
  CHECK(J[0][0] == 4.0);
  CHECK(J[0][1] == 3.0);
  CHECK(J[1][0] == 1.0);
  CHECK(J[1][1] == 1.0);
  CHECK(J[2][0] == 0.0);
  CHECK(J[3][1] == std::exp(4.0));
  // Polar to Cartesian, separate arguments: det J = r.
  const auto P = dualcast::jacobian(
      [](auto r, auto t) { return std::array{r * m::cos(t), r * m::sin(t)}; }, std::array{2.0, 0.5});
  CHECK(P[0][0] * P[1][1] - P[0][1] * P[1][0] == doctest::Approx(2.0).epsilon(1e-15));
}

TEST_CASE("helpers nest: a Hessian as the Jacobian of a gradient") {
  auto rosen = [](auto x) { return (1 - x[0]) * (1 - x[0]) + 100 * (x[1] - x[0] * x[0]) * (x[1] - x[0] * x[0]); };
  const double x = 0.7, y = -0.4;
  const auto H = dualcast::jacobian([&](auto p) { return dualcast::gradient(rosen, p); }, std::array{x, y});
  CHECK(H[0][0] == doctest::Approx(2 - 400 * (y - x * x) + 800 * x * x));
  CHECK(H[0][1] == doctest::Approx(-400 * x));
  CHECK(H[1][0] == doctest::Approx(-400 * x));
  CHECK(H[1][1] == doctest::Approx(200));
}

}  // namespace
