// Why mixed mode matters: the untaken-branch NaN of reverse mode with `where`, and its absence with a real branch.
//
// f(x) = x > 0 ? sqrt(x) : x * 0, at x < 0.
//  - As a kernel with a real `if`, the dual kernel runs only the taken branch:
//    ∂f/∂x = 0 exactly, in cache and in recompute mode.
//  - Written as TensorFlow/JAX/PyTorch users write it, where(x > 0, sqrt(x),
//    0 * x), recorded as unfused primitives (one tape node each, the
//    reverse-mode comparator), sqrt is evaluated at x < 0 too: its local
//    partial 0.5 / sqrt(x) is NaN, and the reverse sweep multiplies it by the
//    zero adjoint `where` sends to the untaken side: 0 * NaN = NaN. That is
//    the NaN gradient users of those frameworks see (the "double where"
//    trick exists to work around it).
//  - The same `where` fused into one dual kernel is safe as well: forward mode
//    selects the taken side's tangent instead of multiplying by zero.
#include <doctest/doctest.h>

#include <cmath>

#include "dualcast/array.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/kernel.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"

namespace dualcast {
namespace {

const Kernel& SqrtOrZero() {
  static const Kernel k = kernel("sqrt_or_zero", [](auto x) {
    using std::sqrt;
    if (x > 0) return sqrt(x);
    return x * 0;
  });
  return k;
}

const std::vector<double> kPoints = {-1.0, -0.25, 0.25, 4.0};

TEST_CASE("a real branch: the gradient at x < 0 is exactly 0, in both modes") {
  for (PartialsMode mode : {PartialsMode::kCache, PartialsMode::kRecompute}) {
    CAPTURE(static_cast<int>(mode));
    auto x = Array<double>::from(kPoints, {4});
    Tape tape(mode);
    auto loss = sum(broadcast(SqrtOrZero(), x));
    CHECK(loss.item() == 0.5 + 2.0);
    std::vector<double> g = tape.gradient(loss, {x})[0].to_vector();
    CHECK(g == std::vector<double>{0.0, 0.0, 0.5 / std::sqrt(0.25), 0.5 / 2.0});
    CHECK(tape.size() == 2);  // one fused broadcast, one sum
  }
}

TEST_CASE("the where comparator (unfused primitives) reproduces the NaN gradient") {
  for (PartialsMode mode : {PartialsMode::kCache, PartialsMode::kRecompute}) {
    CAPTURE(static_cast<int>(mode));
    auto x = Array<double>::from(kPoints, {4});
    Tape tape(mode);
    Array<double> y;
    {
      Unfused unfused;
      y = where(x > 0.0, sqrt(x), 0.0 * x);
    }
    CHECK(tape.size() == 4);  // >, sqrt, *, where: one node per primitive
    auto loss = sum(y);
    CHECK(loss.item() == 0.5 + 2.0);  // the value is right...
    std::vector<double> g = tape.gradient(loss, {x})[0].to_vector();
    CHECK(std::isnan(g[0]));  // ...the gradient is not
    CHECK(std::isnan(g[1]));
    CHECK(g[2] == 0.5 / std::sqrt(0.25));
    CHECK(g[3] == 0.5 / 2.0);
  }
}

TEST_CASE("the same where, fused into one dual kernel, selects the tangent: no NaN") {
  for (PartialsMode mode : {PartialsMode::kCache, PartialsMode::kRecompute}) {
    auto x = Array<double>::from(kPoints, {4});
    Tape tape(mode);
    // Separate statements: temporaries still alive while sum() runs count as
    // held from outside, and a held intermediate is cut out of the fused group.
    auto y = where(x > 0.0, sqrt(x), 0.0 * x);
    auto loss = sum(y);
    loss.eval();              // a sum of a pending array is pending too
    CHECK(tape.size() == 2);  // one fused kernel, one sum
    std::vector<double> g = tape.gradient(loss, {x})[0].to_vector();
    CHECK(g == std::vector<double>{0.0, 0.0, 0.5 / std::sqrt(0.25), 0.5 / 2.0});
  }
}

}  // namespace
}  // namespace dualcast
