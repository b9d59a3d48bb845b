// Origins over long chains (runtime/origin.cc): parents held a bounded depth, then flattened; every path still seen.
//
// A tape over a long simulation keeps every intermediate alive, and the
// flattened ancestry each launch used to copy made recording quadratic in
// the steps. Origins now hold their inputs' Origins (parents) up to
// Origin::kMaxDepth links and flatten past that. These cases run chains well
// past that depth and check what the flattening must keep: a path through
// dropped temporaries is still refused, versions still tell a variable from
// its array's later values, and nothing holds more than kMaxDepth links.
#include <cmath>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "dualcast/dualcast.hpp"
#include "runtime/error_text.h"

namespace dualcast {
namespace {

using D = Array<double>;
using test::ErrorOf;
using test::Has;

// Past the depth, and under Origin::kMaxAncestors arrays in all (a tape
// keeps each step's array alive: past the cap the check cannot be made).
constexpr int kSteps = static_cast<int>(detail::Origin::kMaxDepth) + 300;

// The longest chain of parents held below `o`.
uint32_t HeldDepth(const detail::Origin& o) {
  uint32_t deepest = 0;
  for (const auto& p : o.parents) deepest = std::max(deepest, 1 + HeldDepth(*p));
  return deepest;
}

// u_{k+1} = u_k * a + x, each step computed on its own and the previous one dropped.
D Chain(D u, const D& x, double a, int steps) {
  for (int k = 0; k < steps; ++k) u = (u * a + x).eval();
  return u;
}

TEST_CASE("origin: a chain past the held depth, temporaries dropped, before the tape: still refused") {
  const D u0 = D::from({0.5, -0.25}, {2}), x = D::from({0.125, 1.0}, {2});
  const D u = Chain(u0, x, 0.999, kSteps);
  REQUIRE(u.impl()->origin != nullptr);
  CHECK(HeldDepth(*u.impl()->origin) <= detail::Origin::kMaxDepth);
  Tape tape;
  const D loss = sum(u * u);
  for (const D& input : {u0, x}) {
    const std::string m = ErrorOf([&] { tape.gradient(loss, {input}); });
    INFO(m);
    CHECK(Has(m, "does not reach the loss on this tape"));
    CHECK(Has(m, "before this Tape was opened"));
  }
}

TEST_CASE("origin: a taped chain past the held depth gives the exact gradient; an inner tape refuses the outer part") {
  const double a = 0.999;
  const D u0 = D::from({0.5, -0.25}, {2}), x = D::from({0.125, 1.0}, {2});
  Tape outer;
  const D middle = Chain(u0, x, a, kSteps);
  Tape inner;  // records the second half only
  const D u = Chain(middle, x, a, kSteps);
  const D loss = sum(u);
  // u_N = a^N u0 + (1 + a + ... + a^(N-1)) x.
  const int n = 2 * kSteps;
  const double du0 = std::pow(a, n), dx = (1 - std::pow(a, n)) / (1 - a);
  const std::vector<D> g = outer.gradient(loss, {u0, x});
  for (int k = 0; k < 2; ++k) {
    CHECK(g[0].to_vector()[k] == doctest::Approx(du0).epsilon(1e-12));
    CHECK(g[1].to_vector()[k] == doctest::Approx(dx).epsilon(1e-12));
  }
  // The inner tape saw x used, but the path from the loss to x through the
  // first half passes `middle`, which only the outer tape recorded.
  const std::string m = ErrorOf([&] { inner.gradient(loss, {x}); });
  INFO(m);
  CHECK(Has(m, "reaches the loss on this tape, but also through"));
  CHECK(Has(m, "outside this tape's record"));
  const D dmiddle = inner.gradient(loss, {middle})[0];
  CHECK(dmiddle.to_vector()[1] == doctest::Approx(std::pow(a, kSteps)).epsilon(1e-12));
}

// A tape keeps every step alive: 3 kMaxDepth-link chains hold more arrays than kMaxAncestors.
constexpr int kLongSteps = 3 * static_cast<int>(detail::Origin::kMaxDepth);

TEST_CASE("origin: a taped chain flattens one segment at a time: nothing truncated, every path still seen") {
  const double a = 0.9995;
  const D u0 = D::from({0.5, -0.25}, {2}), x = D::from({0.125, 1.0}, {2});
  Tape outer;
  const D middle = Chain(u0, x, a, kLongSteps);
  // Flattening collected only the arrays between two flattened Origins (the
  // earlier ones kept as parents), not the whole taped history, which is
  // past the cap: no ancestry was cut.
  REQUIRE(middle.impl()->origin != nullptr);
  CHECK(!middle.impl()->origin->truncated);
  CHECK(HeldDepth(*middle.impl()->origin) <= detail::Origin::kMaxDepth);
  Tape inner;
  const D u = Chain(middle, x, a, kLongSteps);
  const D loss = sum(u);
  const int n = 2 * kLongSteps;
  const std::vector<D> g = outer.gradient(loss, {u0, x});
  for (int k = 0; k < 2; ++k) {
    CHECK(g[0].to_vector()[k] == doctest::Approx(std::pow(a, n)).epsilon(1e-12));
    CHECK(g[1].to_vector()[k] == doctest::Approx((1 - std::pow(a, n)) / (1 - a)).epsilon(1e-12));
  }
  // u0 reaches the loss only through `middle`, computed before the inner
  // tape opened, three flattened segments up its ancestry.
  const std::string m = ErrorOf([&] { inner.gradient(loss, {u0}); });
  INFO(m);
  CHECK(Has(m, "only through an array of shape [2]"));
  CHECK(Has(m, "outside this tape's record"));
}

TEST_CASE("origin: versions survive the flattening: a chain from an input's old values is a constant") {
  D u = D::from({0.5, 2.0}, {2});
  const D x = D::from({0.125, 1.0}, {2});
  const D old = Chain(u.copy() * 1.0, x, 0.5, kSteps);  // from u's values before the write
  u.assign({3.0, -1.0});
  {
    Tape tape;
    const D loss = sum(old * u);
    // d/du sum(old * u) = old: the chain read another variable (u's old values).
    const std::vector<double> g = tape.gradient(loss, {u})[0].to_vector(), want = old.to_vector();
    CHECK(g == want);
  }
  // A chain that read u itself, before the write, is no path to the new u either.
  const D from_u = Chain(u * 1.0, x, 0.5, kSteps);
  u.assign({1.0, 1.0});
  Tape after;
  const D loss2 = sum(from_u * u);
  CHECK(after.gradient(loss2, {u})[0].to_vector() == from_u.to_vector());
  // Without a write after it, the same chain is a path (v's version 1, as
  // read, is the one it holds now): refused.
  D v = D::from({0.5, 2.0}, {2});
  v.assign({0.25, 4.0});
  const D from_v = Chain(v * 1.0, x, 0.5, kSteps);
  Tape third;
  const std::string m = ErrorOf([&] { third.gradient(sum(from_v * v), {v}); });
  INFO(m);
  CHECK(Has(m, "but also through"));
}

TEST_CASE("origin: a long tape-less loop holds at most the bounded depth of parents") {
  D u = D::from({1.0}, {1});
  const D x = D::from({0.5}, {1});
  for (int k = 0; k < 20 * static_cast<int>(detail::Origin::kMaxDepth); ++k) u = (u * 0.5 + x).eval();
  REQUIRE(u.impl()->origin != nullptr);
  CHECK(HeldDepth(*u.impl()->origin) <= detail::Origin::kMaxDepth);
  // Flattened entries name only arrays alive then: u0's successors are gone.
  size_t alive = 0;
  for (const auto& e : u.impl()->origin->ancestors) alive += e.array.expired() ? 0 : 1;
  CHECK(alive <= 2 * detail::Origin::kMaxDepth);
}

}  // namespace
}  // namespace dualcast
