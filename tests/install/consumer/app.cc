// Consumer smoke test of an installed dualcast: a branchy kernel, partials into the caller's memory, a tape gradient.
//
// Built by tests/install/run_install_test.cmake against `cmake --install`
// output only. Every value is checked against the closed form written out
// here, and the program exits non-zero on any mismatch.
//
// Example:
//   cmake -S tests/install/consumer -B b -DCMAKE_PREFIX_PATH=<prefix> && cmake --build b && b/app
#include <cmath>
#include <cstdio>
#include <vector>

#include <dualcast/dualcast.hpp>

namespace dc = dualcast;

namespace {

int failures = 0;

void Expect(bool ok, const char* what, double got, double want) {
  if (!ok) {
    std::fprintf(stderr, "FAIL %s: got %.17g want %.17g\n", what, got, want);
    ++failures;
  }
}

void Near(const char* what, double got, double want) {
  Expect(std::abs(got - want) <= 1e-12 * (1 + std::abs(want)), what, got, want);
}

}  // namespace

int main() {
  // y = x < 1 ? a*x*x : a*(2x - 1): C1 at x = 1.
  dc::Kernel k = dc::kernel("consumer_kernel", [](auto x, auto a) {
    if (x < 1) return a * x * x;
    return a * (2 * x - 1);
  });

  std::vector<double> xs = {0.25, 0.5, 2.0, 3.0};
  const double a = 1.5;
  auto X = dc::Array<double>::view(static_cast<const double*>(xs.data()), {4});
  auto A = dc::Array<double>::scalar(a);

  // Values and partials written straight into one interleaved caller table:
  // row i holds {y, dy/dx, dy/da, unused}.
  std::vector<double> table(4 * xs.size(), -1.0);
  dc::PartialsOptions<double> opt;
  opt.value_out = {dc::Array<double>::view(table.data(), {4}, {4})};
  opt.partial_out = {dc::Array<double>::view(table.data() + 1, {4}, {4}),
                     dc::Array<double>::view(table.data() + 2, {4}, {4})};
  dc::partials(k, {X, A}, opt);
  for (size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i];
    Near("value", table[4 * i], x < 1 ? a * x * x : a * (2 * x - 1));
    Near("dy/dx", table[4 * i + 1], x < 1 ? 2 * a * x : 2 * a);
    Near("dy/da", table[4 * i + 2], x < 1 ? x * x : 2 * x - 1);
  }

  // Reverse mode: d/da sum(k(x, a)) = sum(dy/da).
  {
    dc::Tape tape;
    auto loss = dc::sum(dc::broadcast(k, X, A));
    std::vector<dc::Array<double>> g = tape.gradient(loss, {A});
    double want = 0;
    for (double x : xs) want += x < 1 ? x * x : 2 * x - 1;
    Near("tape d/da", g[0].item(), want);
  }

  // Errors reach the consumer as dualcast::Error with a category.
  try {
    dc::broadcast(k, X, dc::Array<double>::zeros({3}));
    Expect(false, "shape error not thrown", 0, 0);
  } catch (const dc::Error& e) {
    Expect(e.kind() == dc::ErrorKind::kShape, "error kind", static_cast<int>(e.kind()),
           static_cast<int>(dc::ErrorKind::kShape));
  }

  std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "OK", failures);
  return failures ? 1 : 0;
}
