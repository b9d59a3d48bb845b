// Array::assign(Array): values (broadcast, strided, overlapping), errors that leave memory untouched, and gradients through it against hand formulas and central differences.
//
// A simulation stores each new state where it viewed the old one:
// `state.assign(next)`. Under a tape the write is recorded like a copy, so
// the gradient of a loss read from the state flows back through every step;
// the reference is the same loop in plain double, differentiated by central
// differences.
#include <cmath>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "dualcast/dualcast.hpp"

namespace dualcast {
namespace {

using D = Array<double>;
using V = std::vector<double>;

constexpr PartialsMode kModes[] = {PartialsMode::kAuto, PartialsMode::kCache, PartialsMode::kRecompute};

const Kernel& Logistic() {  // u + k u (1 - u)
  static const Kernel k = kernel("assign_logistic", [](auto u, auto k) { return u + k * u * (1 - u); });
  return k;
}

void CheckNear(const V& got, const V& want, double eps) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(eps));
}

TEST_CASE("assign(Array): broadcast, strided and pending sources; a destination that is a view") {
  V buf(6, -1);
  D::view(buf.data(), {2, 3}).assign(D::from({1, 2, 3, 4, 5, 6}, {2, 3}));
  CHECK(buf == V{1, 2, 3, 4, 5, 6});
  D::view(buf.data(), {2, 3}, {1, 2}).assign(D::from({1, 2, 3, 4, 5, 6}, {2, 3}));  // column-major
  CHECK(buf == V{1, 4, 2, 5, 3, 6});
  D::view(buf.data(), {2, 3}).assign(D::from({7, 8, 9}, {3}));  // a row to every row
  CHECK(buf == V{7, 8, 9, 7, 8, 9});
  D::view(buf.data(), {2, 3}).assign(D::from({1, 2}, {2, 1}));  // a column to every column
  CHECK(buf == V{1, 1, 1, 2, 2, 2});
  const D x = D::from({1, 2, 3}, {3});
  D::view(buf.data(), {3}).assign(x * x + 1);  // pending: computed, then written
  CHECK(buf == V{2, 5, 10, 2, 2, 2});
  D owned = D::zeros({3});
  owned.assign(D::scalar(4));
  CHECK(owned.to_vector() == V{4, 4, 4});
  D empty = D::zeros({0, 3});
  empty.assign(D::from({1, 2, 3}, {3}));  // nothing to write
  CHECK(empty.shape() == Shape{0, 3});
}

TEST_CASE("assign(Array): a source over the same memory is read in full before the write") {
  V buf = {0, 1, 2, 3, 4, 5};
  const D head = D::view(buf.data(), {5}), tail = D::view(buf.data() + 1, {5});
  D(tail).assign(head);  // element by element in order, buf[0] would fill everything
  CHECK(buf == V{0, 0, 1, 2, 3, 4});
  D(head).assign(tail);
  CHECK(buf == V{0, 1, 2, 3, 4, 4});
  D whole = D::view(buf.data(), {6});
  whole.assign(whole);  // itself
  CHECK(buf == V{0, 1, 2, 3, 4, 4});
  D t = D::view(buf.data(), {2, 3});
  t.assign(D::view(buf.data(), {2, 3}, {1, 2}));  // the transpose of the same memory, read first
  CHECK(buf == V{0, 2, 4, 1, 3, 4});
}

TEST_CASE("assign(Array): bad input is an error that names the sizes, and the memory is untouched") {
  V buf = {1, 2, 3, 4, 5, 6};
  const V before = buf;
  D dest = D::view(buf.data(), {2, 3});
  CHECK_THROWS_WITH_AS(dest.assign(D::from({1, 2}, {2})),
                       doctest::Contains("a source of shape [2] does not broadcast to this array's shape [2, 3]"),
                       Error);
  CHECK_THROWS_WITH_AS(dest.assign(D::zeros({3, 2, 3})), doctest::Contains("shape [3, 2, 3]"), Error);
  CHECK_THROWS_WITH_AS(dest.assign(D()), doctest::Contains("the source is an empty Array handle"), Error);
  const V frozen = {1, 2, 3};
  CHECK_THROWS_WITH_AS(D::view(frozen.data(), {3}).assign(D::zeros({3})), doctest::Contains("read-only view"),
                       Error);
  CHECK_THROWS_WITH_AS(D::view(buf.data(), {2, 3}, {0, 1}).assign(D::zeros({2, 3})),
                       doctest::Contains("several elements share memory"), Error);
  CHECK(buf == before);
  CHECK(frozen == V{1, 2, 3});
}

// `steps` of the logistic map in plain double, the state stored in place.
V Loop(V u, double k, int steps) {
  for (int s = 0; s < steps; ++s) {
    for (double& x : u) x = x + k * x * (1 - x);
  }
  return u;
}
double LoopLoss(const V& u0, double k, int steps) {
  double loss = 0;
  for (double x : Loop(u0, k, steps)) loss += x * x;
  return loss;
}

TEST_CASE("assign(Array) under a tape: a state buffer stepped in place, gradients through every step") {
  const V u0v = {0.2, 0.45, 0.7, 0.35};
  const double kv = 0.3;
  constexpr int kSteps = 6;
  const double h = 1e-6;
  V want_du0(u0v.size());
  for (size_t i = 0; i < u0v.size(); ++i) {
    V plus = u0v, minus = u0v;
    plus[i] += h, minus[i] -= h;
    want_du0[i] = (LoopLoss(plus, kv, kSteps) - LoopLoss(minus, kv, kSteps)) / (2 * h);
  }
  const double want_dk = (LoopLoss(u0v, kv + h, kSteps) - LoopLoss(u0v, kv - h, kSteps)) / (2 * h);
  for (const PartialsMode mode : kModes) {
    CAPTURE(static_cast<int>(mode));
    V buf(u0v.size(), 0);
    const D u0 = D::from(u0v, {4}), k = D::scalar(kv);
    Tape tape(mode);
    D state = D::view(buf.data(), {4});
    state.assign(u0);
    for (int s = 0; s < kSteps; ++s) state.assign(broadcast(Logistic(), state, k));
    const auto g = tape.gradient(sum(state * state), {u0, k});
    CheckNear(buf, Loop(u0v, kv, kSteps), 1e-14);
    CheckNear(g[0].to_vector(), want_du0, 1e-7);
    CHECK(g[1].item() == doctest::Approx(want_dk).epsilon(1e-7));
  }
}

TEST_CASE("assign(Array) under a tape: a node that read the state before the write keeps the values it read") {
  // s = u0; y = s s; then either s = y + 1 (y computed as part of the source):
  //   loss = Σ y + Σ s = 2 Σ u0^2 + n, d/du0 = 4 u0;
  // or s = 3 u0 (y still pending at the write, not part of the source: the
  // write computes it first, on the tape all the same): d/du0 = 2 u0 + 3.
  for (const PartialsMode mode : kModes) {
    for (const bool y_in_source : {true, false}) {
      CAPTURE(static_cast<int>(mode));
      CAPTURE(y_in_source);
      V buf(3, 0);
      const D u0 = D::from({0.5, -1, 2}, {3});
      Tape tape(mode);
      D s = D::view(buf.data(), {3});
      s.assign(u0);
      const D y = s * s;
      s.assign(y_in_source ? y + 1 : u0 * 3);
      CHECK(y.to_vector() == V{0.25, 1, 4});
      CHECK(buf == (y_in_source ? V{1.25, 2, 5} : V{1.5, -3, 6}));
      CHECK(tape.gradient(sum(y) + sum(s), {u0})[0].to_vector() == (y_in_source ? V{2, -4, 8} : V{4, 1, 7}));
    }
  }
}

TEST_CASE("assign(Array) under a tape: a source over the same memory is credited as it was read") {
  // s = s (itself), then s = the shifted view of its own memory, each under a
  // tape: loss = Σ w s, so d/du0 follows the shift by hand.
  V buf = {0, 0, 0, 0};
  const D u0 = D::from({1, 2, 3, 4}, {4});
  const D w = D::from({1, 10, 100}, {3});
  Tape tape;
  D whole = D::view(buf.data(), {4});
  whole.assign(u0);
  whole.assign(whole);
  D head = slice(whole, {{0, 3}});
  const D tail = slice(whole, {{1, 4}});
  head.assign(tail);  // buf = {2, 3, 4, 4}
  CHECK(buf == V{2, 3, 4, 4});
  const auto g = tape.gradient(sum(head * w), {u0});
  CHECK(g[0].to_vector() == V{0, 1, 10, 100});  // head[i] = u0[i + 1]
}

TEST_CASE("assign(Array) under a tape: a broadcast source's gradient is summed over the broadcast axes") {
  Tape tape;
  const D row = D::from({1, 2, 3}, {3}), w = D::from({1, 10, 100, 2, 20, 200}, {2, 3});
  D dest = D::zeros({2, 3});
  dest.assign(row * 2);
  const auto g = tape.gradient(sum(dest * w), {row});
  CHECK(g[0].to_vector() == V{2 * (1 + 2), 2 * (10 + 20), 2 * (100 + 200)});  // d/drow = 2 Σ_rows w
}

TEST_CASE("assign(Array) under a tape: another view of the memory reads the values, and its gradient is refused") {
  V buf = {0, 0, 0};
  Tape tape;
  const D x = D::from({1, 2, 3}, {3});
  D dest = D::view(buf.data(), {3});
  const D other = D::view(buf.data(), {3});  // made before the write
  dest.assign(x * 3);
  CHECK(buf == V{3, 6, 9});
  CHECK(tape.gradient(sum(dest), {x})[0].to_vector() == V{3, 3, 3});
  try {
    (void)tape.gradient(sum(other) + sum(x), {x});
    FAIL("a gradient through another view of assigned memory must be refused");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("written there by Array::assign through another view") !=
          std::string::npos);
  }
}

TEST_CASE("assign(Array) into a slice of an array: credited through the slice, refused through the whole") {
  const D w = D::from({1, 10, 100, 1000}, {4});
  for (int through_whole = 0; through_whole < 2; ++through_whole) {
    Tape tape;
    D x = D::zeros({4});
    const D z = D::from({1, 2}, {2});
    D head = slice(x, {{0, 2}});
    head.assign(z * 3);
    CHECK(x.to_vector() == V{3, 6, 0, 0});
    if (through_whole == 0) {  // d/dz = 3 w[0:2]
      CHECK(tape.gradient(sum(head * slice(w, {{0, 2}})), {z})[0].to_vector() == V{3, 30});
      continue;
    }
    try {
      (void)tape.gradient(sum(x * w), {z});
      FAIL("a gradient through the whole array, which assign() did not write as a variable, must be refused");
    } catch (const Error& e) {
      const std::string m = e.what();
      CHECK(m.find("written there by Array::assign through another view") != std::string::npos);
      CHECK(m.find("Read the assigned values through the array assign() wrote") != std::string::npos);
    }
  }
}

}  // namespace
}  // namespace dualcast
