// Consumer smoke test of the installed header-only Dual<T, N>: derivative of a branchy function vs the closed form.
//
// Example:
//   cmake -S tests/install/dual_consumer -B b -DCMAKE_PREFIX_PATH=<prefix> && cmake --build b && b/dual_app
#include <cmath>
#include <cstdio>

#include <dualcast/dual.hpp>

int main() {
  using D = dualcast::Dual<double, 1>;
  auto f = [](auto x) {
    using namespace dualcast::math;
    if (x > 0) return exp(x) * x;
    return x * x;
  };
  int failures = 0;
  for (double x : {-1.5, 0.5, 2.0}) {
    D y = f(D(x, 1.0));
    const double want = x > 0 ? std::exp(x) * (1 + x) : 2 * x;
    if (std::abs(y.partial(0) - want) > 1e-13 * (1 + std::abs(want))) {
      std::fprintf(stderr, "FAIL x=%g: got %.17g want %.17g\n", x, y.partial(0), want);
      ++failures;
    }
  }
  std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "OK", failures);
  return failures ? 1 : 0;
}
