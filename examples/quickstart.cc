// Quickstart: one branchy generic lambda, evaluated on double and on Dual<double, 3>.
//
// Run: ./build/examples/dualcast-quickstart
#include <array>
#include <cmath>
#include <cstdio>

#include <dualcast/dual.hpp>

int main() {
  using dualcast::Dual;

  // 1. A scalar kernel: a generic lambda with an ordinary `if` on the data. The same code runs
  //    on float, double and Dual (and, traced, in the JIT).
  auto kernel = [](auto x, auto w, auto b) {
    using namespace dualcast::math;
    auto z = w * x + b;
    if (z > 0) return tanh(z) * sqrt(1 + x * x);  // active branch
    return 0.1 * z * exp(x);                      // leaky branch
  };

  // 2. On plain doubles it is just a function.
  std::printf("kernel(0.5, 2, -0.5) = %.6f   (active)\n", kernel(0.5, 2.0, -0.5));
  std::printf("kernel(0.5, 2, -1.5) = %.6f  (leaky)\n\n", kernel(0.5, 2.0, -1.5));

  // 3. On Dual<double, 3>: seed x, w, b in lanes 0, 1, 2. One evaluation gives the value and
  //    all three partial derivatives of whichever branch the data selects.
  using D = Dual<double, 3>;
  int failures = 0;
  for (double b : {-0.5, -1.5}) {
    const double x = 0.5, w = 2.0;
    const D r = kernel(D::variable(x, 0), D::variable(w, 1), D::variable(b, 2));
    std::printf("b = %+.1f (%s branch): value %.6f  d/dx %.6f  d/dw %.6f  d/db %.6f\n", b,
                w * x + b > 0 ? "active" : "leaky", r.value(), r.partial(0), r.partial(1), r.partial(2));

    // 4. Check d/dx against a central finite difference of the double version.
    const double h = 1e-6;
    const double fd = (kernel(x + h, w, b) - kernel(x - h, w, b)) / (2 * h);
    const double err = std::fabs(r.partial(0) - fd);
    const bool ok = err <= 1e-7 * (1 + std::fabs(fd));
    std::printf("            finite difference d/dx %.6f  |error| %.1e  %s\n", fd, err, ok ? "OK" : "MISMATCH");
    failures += ok ? 0 : 1;
  }

  // 5. The eager helpers do the seeding for you: the gradient with respect to (x, w, b).
  const auto g = dualcast::gradient(kernel, std::array{0.5, 2.0, -0.5});
  std::printf("\ngradient(kernel, {0.5, 2, -0.5}) = {%.6f, %.6f, %.6f}\n", g[0], g[1], g[2]);

  // 6. Higher order by nesting: the second derivative in x of the active branch.
  const double d2 = dualcast::derivative(
      [&](auto x) { return dualcast::derivative([&](auto y) { return kernel(y, 2.0, -0.5); }, x); }, 0.5);
  std::printf("d2/dx2 kernel(x, 2, -0.5) at x = 0.5: %.6f\n", d2);

  return failures == 0 ? 0 : 1;
}
