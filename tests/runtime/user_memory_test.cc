// A tape copies the views of the user's writable memory it reads again in the sweep: the user's own writes into their buffer after the forward pass do not change a gradient.
//
// A simulation code views its state buffer, computes the next state, and
// stores it back into the same buffer through its own pointer: no dualcast
// write, so no in-place stamp sees it. Expected values are hand-written
// derivatives at the values the forward pass read, and central differences
// of the whole loop in plain double.
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "doctest/doctest.h"
#include "dualcast/dualcast.hpp"
#include "jit/stats.h"

namespace dualcast {
namespace {

using D = Array<double>;
using V = std::vector<double>;

constexpr PartialsMode kModes[] = {PartialsMode::kAuto, PartialsMode::kCache, PartialsMode::kRecompute};

const Kernel& Logistic() {  // u + k u (1 - u): d/du = 1 + k (1 - 2u), d/dk = u (1 - u)
  static const Kernel k = kernel("user_memory_logistic", [](auto u, auto k) { return u + k * u * (1 - u); });
  return k;
}
const Kernel& Scale() {  // u k: d/dk = u, the argument itself
  static const Kernel k = kernel("user_memory_scale", [](auto u, auto k) { return u * k; });
  return k;
}

void CheckNear(const V& got, const V& want, double eps = 1e-12) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(eps));
}

TEST_CASE("a view's buffer written through the user's pointer after the forward pass: gradients at the values read") {
  for (const PartialsMode mode : kModes) {
    CAPTURE(static_cast<int>(mode));
    V state = {0.1, 0.2, 0.3};
    const V old = state;
    const D k = D::scalar(0.5);
    Tape tape(mode);
    const D u = D::view(state.data(), {3});
    const D next = broadcast(Logistic(), u, k);
    next.eval();
    std::fill(state.begin(), state.end(), 0.9);  // the user's own write
    const std::vector<D> g = tape.gradient(sum(next), {u, k});
    double dk = 0;
    V du;
    for (double v : old) {
      dk += v * (1 - v);
      du.push_back(1 + 0.5 * (1 - 2 * v));
    }
    CheckNear(g[0].to_vector(), du);
    CHECK(g[1].item() == doctest::Approx(dk).epsilon(1e-12));
  }
}

TEST_CASE("a partial that is a view argument itself (d(u k)/dk = u) is the value read, not the buffer now") {
  for (const PartialsMode mode : kModes) {
    CAPTURE(static_cast<int>(mode));
    V state = {1, 2, 3};
    const D k = D::scalar(0.5);
    Tape tape(mode);
    const D u = D::view(state.data(), {3});
    const D y = broadcast(Scale(), u, k);
    y.eval();
    state = {10, 20, 30};  // same capacity: the same memory
    CHECK(tape.gradient(sum(y), {k})[0].item() == doctest::Approx(6.0));
  }
}

// The simulation pattern: the initial state is a view of the code's state
// buffer, and after each step the code stores the new state into that buffer
// through its own pointer (for its own output), while the steps chain through
// dualcast's arrays. The first step read the buffer before it was overwritten.
TEST_CASE("a time loop storing each state into the buffer its first step viewed matches central differences") {
  const int steps = 12;
  const V u0 = {0.15, 0.4, 0.55, 0.8};
  auto loss_by_hand = [&](double k, size_t bump, double du) {
    V u = u0;
    if (bump < u.size()) u[bump] += du;
    for (int s = 0; s < steps; ++s) {
      for (double& v : u) v = v + k * v * (1 - v);
    }
    double l = 0;
    for (double v : u) l += v * v;
    return l;
  };
  const double k0 = 0.3, h = 1e-6;
  const double want_k = (loss_by_hand(k0 + h, 9, 0) - loss_by_hand(k0 - h, 9, 0)) / (2 * h);
  V want_u;
  for (size_t i = 0; i < u0.size(); ++i) {
    want_u.push_back((loss_by_hand(k0, i, h) - loss_by_hand(k0, i, -h)) / (2 * h));
  }
  for (const PartialsMode mode : kModes) {
    CAPTURE(static_cast<int>(mode));
    V state = u0;
    const D k = D::scalar(k0);
    Tape tape(mode);
    const D start = D::view(state.data(), {4});
    D u = start;
    for (int s = 0; s < steps; ++s) {
      u = broadcast(Logistic(), u, k);
      const V values = u.to_vector();
      std::copy(values.begin(), values.end(), state.begin());
    }
    const std::vector<D> g = tape.gradient(sum(u * u), {start, k});
    CheckNear(g[0].to_vector(), want_u, 1e-7);
    CHECK(g[1].item() == doctest::Approx(want_k).epsilon(1e-7));
  }
}

TEST_CASE("matmul of a view: the user's later write does not reach its gradient") {
  V a_buf = {1, 2, 3, 4};  // 2x2
  const V a_old = a_buf;
  const D b = D::from({5, 6, 7, 8}, {2, 2});
  const D w = D::from({1, -1, 2, 0.5}, {2, 2});
  Tape tape;
  const D a = D::view(a_buf.data(), {2, 2});
  const D y = matmul(a, b);
  y.eval();
  std::fill(a_buf.begin(), a_buf.end(), 100.0);
  const std::vector<D> g = tape.gradient(sum(y * w), {a, b});
  // d/dA sum((A B) .* W) = W Bᵀ; d/dB = Aᵀ W at the A read.
  V want_a(4, 0.0), want_b(4, 0.0);
  const V wv = w.to_vector(), bv = b.to_vector();
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int r = 0; r < 2; ++r) {
        want_a[i * 2 + j] += wv[i * 2 + r] * bv[j * 2 + r];
        want_b[i * 2 + j] += a_old[r * 2 + i] * wv[r * 2 + j];
      }
    }
  }
  CheckNear(g[0].to_vector(), want_a);
  CheckNear(g[1].to_vector(), want_b);
}

TEST_CASE("reductions of a view (prod, max, norm): gradients at the values read") {
  V buf = {2, 5, 4};
  const V old = buf;
  Tape tape;
  const D x = D::view(buf.data(), {3});
  const D p = prod(x), m = max(x), n = norm(x);
  p.eval();
  m.eval();
  n.eval();
  std::fill(buf.begin(), buf.end(), 1.0);
  CheckNear(tape.gradient(p, {x})[0].to_vector(), {20, 8, 10});   // the product of the others
  CheckNear(tape.gradient(m, {x})[0].to_vector(), {0, 1, 0});     // the old maximum
  const double norm_old = std::sqrt(4.0 + 25 + 16);
  CheckNear(tape.gradient(n, {x})[0].to_vector(), {old[0] / norm_old, old[1] / norm_old, old[2] / norm_old});
}

// An intermediate fused into its consumer and asked for: the group is
// recomputed in parts (GradNode::Cut), from the copies the node took (also a
// cached node: its partials fold the intermediate's use in).
TEST_CASE("a gradient with respect to a fused intermediate, after the user's write, uses the values read") {
  for (const PartialsMode mode : kModes) {
    CAPTURE(static_cast<int>(mode));
    V state = {0.2, 0.6};
    const V old = state;
    const D k = D::scalar(0.5);
    Tape tape(mode);
    const D u = D::view(state.data(), {2});
    const D y = broadcast(Logistic(), u, k);  // held, and consumed inside the loss's kernel
    const D loss = sum(y * y);
    loss.eval();
    std::fill(state.begin(), state.end(), 0.95);
    const std::vector<D> g = tape.gradient(loss, {y, k});
    V dy;
    double dk = 0;
    for (double v : old) {
      const double yv = v + 0.5 * v * (1 - v);
      dy.push_back(2 * yv);
      dk += 2 * yv * v * (1 - v);
    }
    CheckNear(g[0].to_vector(), dy);
    CHECK(g[1].item() == doctest::Approx(dk).epsilon(1e-12));
  }
}

// The one-pass plan computes the loss and its gradient in one kernel and
// records the group for later gradients: those read the copies too.
TEST_CASE("after a one-pass gradient and the user's write, a second gradient is at the values read") {
  V state = {0.2, 0.6, 0.7};
  const V old = state;
  const D k = D::scalar(0.5);
  Tape tape;
  const D u = D::view(state.data(), {3});
  const D y = broadcast(Logistic(), u, k);
  const ValueAndGradient<double> first = tape.value_and_gradient(sum(y), {k});
  std::fill(state.begin(), state.end(), 0.95);
  double dk = 0;
  V du;
  for (double v : old) {
    dk += v * (1 - v);
    du.push_back(1 + 0.5 * (1 - 2 * v));
  }
  CHECK(first.gradients[0].item() == doctest::Approx(dk).epsilon(1e-12));
  const std::vector<D> second = tape.gradient(sum(y), {u, k});
  CheckNear(second[0].to_vector(), du);
  CHECK(second[1].item() == doctest::Approx(dk).epsilon(1e-12));
}

// const is the user's word that the memory does not change while the tape
// lives: such views are read again, so large read-only inputs cost no copy.
TEST_CASE("a view of const memory is not copied when recorded; a view of writable memory is, once") {
  for (const PartialsMode mode : {PartialsMode::kAuto, PartialsMode::kRecompute}) {
    CAPTURE(static_cast<int>(mode));
    V buf = {0.2, 0.4, 0.6};
    const D k = D::scalar(0.5);
    auto launches_of_recording = [&](const D& u) {
      Tape tape(mode);
      const D y = broadcast(Logistic(), u, k);
      jit::ResetStats();
      y.eval();
      const int64_t launches = jit::GetStats().launches;
      CHECK(tape.gradient(sum(y), {k})[0].item() == doctest::Approx(0.16 + 0.24 + 0.24));
      return launches;
    };
    const int64_t read_only = launches_of_recording(D::view(static_cast<const double*>(buf.data()), {3}));
    const int64_t writable = launches_of_recording(D::view(buf.data(), {3}));
    CHECK(writable == read_only + 1);  // the copy
  }
}

// A buffer viewed unchanged at every step (a forcing term) shares one copy:
// the view is compared with the last copy of that memory, which it equals.
TEST_CASE("an unchanged buffer viewed at every step is copied once, and again after the user changes it") {
  const Kernel& forced = [] {
    static const Kernel k = kernel("user_memory_forced", [](auto u, auto f, auto k) { return u + k * (f - u * u); });
    return std::cref(k);
  }();
  const int steps = 6, change_at = 3;
  auto loss_by_hand = [&](double k) {
    double u = 0.5, l = 0;
    for (int s = 0; s < steps; ++s) u = u + k * ((s < change_at ? 0.3 : 0.7) - u * u);
    l = 2 * u;  // two elements, the same values
    return l;
  };
  const double k0 = 0.1, h = 1e-6;
  const double want = (loss_by_hand(k0 + h) - loss_by_hand(k0 - h)) / (2 * h);
  auto run = [&](bool writable, int64_t* launches) {
    V forcing = {0.3, 0.3};
    const D k = D::scalar(k0), u0 = D::full({2}, 0.5);
    Tape tape;
    D u = u0;
    jit::ResetStats();
    for (int s = 0; s < steps; ++s) {
      if (writable && s == change_at) forcing = {0.7, 0.7};  // the user's own write, same memory
      const D f = writable ? D::view(forcing.data(), {2}) : D::view(static_cast<const double*>(forcing.data()), {2});
      u = broadcast(forced, u, f, k);
      u.eval();
    }
    *launches = jit::GetStats().launches;
    return tape.gradient(sum(u), {k})[0].item();
  };
  int64_t copied = 0, read_again = 0;
  CHECK(run(true, &copied) == doctest::Approx(want).epsilon(1e-7));
  (void)run(false, &read_again);  // const and unchanged: read again, never copied
  CHECK(copied == read_again + 2);  // the first values, and the changed ones
}

}  // namespace
}  // namespace dualcast
