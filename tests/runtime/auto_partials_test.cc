// kAuto recomputes cheap kernels and keeps a copy of an argument before an in-place write: gradients as kCache gives them, never an Error kCache would not give.
//
// Expected values are hand-written derivatives at the values the forward
// pass read, and central differences of a whole simulation run without a tape.
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "dualcast/dualcast.hpp"
#include "jit/ir/op_cost.h"
#include "jit/trace/trace.h"
#include "runtime/auto_partials.h"
#include "runtime/error_text.h"

namespace dualcast {
namespace {

using D = Array<double>;
using V = std::vector<double>;

const Kernel& Affine() {  // cheap: d/dx = b + 1, d/db = x
  static const Kernel k = kernel("auto_affine", [](auto x, auto b) { return x * b + x; });
  return k;
}
const Kernel& Costly() {  // three transcendentals for two partials: kAuto caches
  static const Kernel k =
      kernel("auto_costly", [](auto x, auto b) { return tanh(x * b) * exp(x) + sin(b); });
  return k;
}

void CheckNear(const V& got, const V& want, double eps = 1e-12) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(eps));
}

TEST_CASE("kAuto: cheap kernels are recorded to recompute, costly ones cached; kCache and kRecompute as asked") {
  const D x = D::from({1, 2}, {2}), b = D::from({3, 4}, {2});
  {
    Tape tape;
    const size_t before = detail::RecomputingEntriesForTesting();
    broadcast(Affine(), x, b).eval();
    CHECK(detail::RecomputingEntriesForTesting() == before + 2);  // under x's and b's storage
    broadcast(Costly(), x, b).eval();
    CHECK(detail::RecomputingEntriesForTesting() == before + 2);
  }
  CHECK(detail::RecomputingEntriesForTesting() == 0);  // dropped with the last tape
  for (const PartialsMode mode : {PartialsMode::kCache, PartialsMode::kRecompute}) {
    Tape tape(mode);
    broadcast(Affine(), x, b).eval();
    CHECK(detail::RecomputingEntriesForTesting() == 0);
  }
}

// The rule's measured cases (auto_partials.h): work against the vector
// width. The weights are counted here by hand from the lambdas, so a change
// of op_cost.h's table or of the rule shows up as a changed decision.
TEST_CASE("kAuto's rule: a stencil with a tanh is cached on a 256-bit host and recomputed on a 512-bit one") {
  const jit::Type f64[4] = {jit::Type::kF64, jit::Type::kF64, jit::Type::kF64, jit::Type::kF64};
  // 2v, l - 2v, + r, k *, tanh (20), 0.1 *, v +: work 26, four partials.
  const jit::Function with_tanh = jit::Trace(
      "auto_rule_tanh", [](auto v, auto l, auto r, auto k) { return v + 0.1 * tanh(k * (l - 2 * v + r)); }, f64);
  CHECK(jit::TotalWork(with_tanh) == 26);
  CHECK_FALSE(detail::CheaperToRecompute(with_tanh, 4, 256));  // 26 > 4 x 4
  CHECK(detail::CheaperToRecompute(with_tanh, 4, 512));        // 26 <= 4 x 8
  CHECK_FALSE(detail::CheaperToRecompute(with_tanh, 3, 512));  // 26 > 3 x 8
  // The same without the tanh: recomputed everywhere but on a 128-bit host.
  const jit::Function plain = jit::Trace(
      "auto_rule_plain", [](auto v, auto l, auto r, auto k) { return v + 0.1 * (k * (l - 2 * v + r)); }, f64);
  CHECK(jit::TotalWork(plain) == 6);
  CHECK(detail::CheaperToRecompute(plain, 4, 256));
  CHECK(detail::CheaperToRecompute(plain, 4, 512));
  CHECK_FALSE(detail::CheaperToRecompute(plain, 2, 128));  // 6 > 2 x 2
  CHECK_FALSE(detail::CheaperToRecompute(plain, 0, 512));  // nothing stored: nothing to save
  // A division weighs 4: x / y + x is work 5, two partials.
  const jit::Function quotient =
      jit::Trace("auto_rule_div", [](auto x, auto y) { return x / y + x; }, std::span(f64, 2));
  CHECK(jit::TotalWork(quotient) == 5);
  CHECK(detail::CheaperToRecompute(quotient, 2, 256));  // 5 <= 2 x 4
  CHECK_FALSE(detail::CheaperToRecompute(quotient, 1, 256));
}

// Each way of writing in place, after the node read b: d/dx = b + 1 and
// d/db = x at the values the forward pass read.
TEST_CASE("kAuto: every kind of in-place write of an argument leaves the recorded gradient") {
  const V bv = {3, 4};
  const std::vector<std::pair<const char*, std::function<void(D&, D&)>>> writes = {
      {"assign", [](D& b, D&) { b.assign({30, 40}); }},
      {"mutable_data", [](D& b, D&) { b.mutable_data()[1] = 40; }},
      {"a view's assign", [](D& b, D&) { slice(b, {{1, 2}}).assign({40}); }},
      {"a partials() destination",
       [](D& b, D& x) {
         PartialsOptions<double> options;
         options.value_out = {b};
         partials(Affine(), {x, x}, options);
       }},
  };
  for (const auto& [what, write] : writes) {
    CAPTURE(what);
    D x = D::from({1, 2}, {2}), b = D::from(bv, {2});
    Tape tape;
    D loss = sum(broadcast(Affine(), x, b));
    loss.eval();
    write(b, x);
    // (d/db is asked of b as it is now, which the loss does not read: an Error in every mode.)
    CheckNear(tape.gradient(loss, {x})[0].to_vector(), {bv[0] + 1, bv[1] + 1});
  }
  {  // the other argument: d/db = x at the old x
    D x = D::from({1, 2}, {2}), b = D::from(bv, {2});
    Tape tape;
    D loss = sum(broadcast(Affine(), x, b));
    loss.eval();
    x.assign({10, 20});
    CheckNear(tape.gradient(loss, {b})[0].to_vector(), {1, 2});
  }
  // accumulate_gradient's buffer is written too: the second call must still
  // see the old b (d/dx = b + 1 added twice).
  D x = D::from({1, 2}, {2}), b = D::from(bv, {2});
  Tape tape;
  D loss = sum(broadcast(Affine(), x, b));
  loss.eval();
  tape.accumulate_gradient(loss, {x}, {b});  // b += d/dx = (4, 5): now (7, 9)
  CheckNear(b.to_vector(), {7, 9});
  CheckNear(tape.gradient(loss, {x})[0].to_vector(), {4, 5});
}

TEST_CASE("kAuto: the copy is taken at the first write to the memory, and kept through later ones") {
  std::vector<double> buf = {3, 4, 5, 6};
  D x = D::from({1, 2}, {2});
  D b = D::view(buf.data(), {4});
  D front = slice(b, {{0, 2}}), back = slice(b, {{2, 4}});
  Tape tape;
  D loss = sum(broadcast(Affine(), x, front));
  loss.eval();
  back.assign({50, 60});   // beside what the node reads, same memory: front copied now, at (3, 4)
  front.assign({30, 40});  // what it reads: the copy stays
  b.assign({7, 7, 7, 7});
  CheckNear(tape.gradient(loss, {x})[0].to_vector(), {4, 5});
}

TEST_CASE("kAuto: a training loop updating its weights in place under one tape") {
  // loss_t = sum(x_t * w + x_t) with w updated after each step; d/dx_t = w
  // as step t read it + 1, for every t, from the one tape.
  D w = D::from({0.5, -1}, {2});
  Tape tape;
  std::vector<D> xs, losses;
  std::vector<V> w_seen;
  for (int t = 0; t < 4; ++t) {
    xs.push_back(D::from({1.0 + t, 2.0 - t}, {2}));
    losses.push_back(sum(broadcast(Affine(), xs.back(), w)));
    losses.back().eval();
    w_seen.push_back(w.to_vector());
    w.assign({w_seen.back()[0] + 1, w_seen.back()[1] * 2});
  }
  for (int t = 0; t < 4; ++t) {
    CAPTURE(t);
    CheckNear(tape.gradient(losses[t], {xs[t]})[0].to_vector(), {w_seen[t][0] + 1, w_seen[t][1] + 1});
  }
}

TEST_CASE("kAuto: an adjoint reaching a held intermediate of a fused group, after a write") {
  // y = x * b + x is held and also read by z in the same kernel: the node has
  // two outputs, both recomputed from the copy of b.
  D x = D::from({1, 2}, {2}), b = D::from({3, 4}, {2});
  Tape tape;
  D y = broadcast(Affine(), x, b);
  D z = y * b;
  D loss = sum(y) + sum(z);
  loss.eval();
  b.assign({0, 0});
  // d/dx (x b + x)(1 + b) = (b + 1)^2 at the old b
  CheckNear(tape.gradient(loss, {x})[0].to_vector(), {16, 25});
}

TEST_CASE("kAuto past its budget recomputes a costly kernel, and keeps a copy before a write too") {
  D x = D::from({0.5, -1}, {2}), b = D::from({0.3, 0.2}, {2});
  Tape tape(PartialsMode::kAuto, /*budget_bytes=*/0);
  D loss = sum(broadcast(Costly(), x, b));
  loss.eval();
  b.assign({9, 9});
  const V xv = {0.5, -1}, bv = {0.3, 0.2};
  V want(2);
  for (size_t i = 0; i < 2; ++i) {  // d/dx tanh(x b) e^x
    want[i] = (bv[i] / std::pow(std::cosh(xv[i] * bv[i]), 2) + std::tanh(xv[i] * bv[i])) * std::exp(xv[i]);
  }
  CheckNear(tape.gradient(loss, {x})[0].to_vector(), want, 1e-14);
}

// A time-stepping loop with a forcing buffer written in place every step.
double Simulate(const V& u0v, double kappa_value, Tape* tape, std::vector<D>* grads) {
  static const Kernel step = kernel("auto_step", [](auto u, auto f, auto k) {
    auto src = u * (1 - u);
    if (u > 0.5) src = src * 0.5;
    return u + 0.1 * (k * (f - u) + src);
  });
  const int64_t n = static_cast<int64_t>(u0v.size());
  D u0 = D::from(u0v, {n}), kappa = D::scalar(kappa_value), f = D::zeros({n});
  D u = u0;
  for (int s = 0; s < 30; ++s) {
    V fv(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) fv[static_cast<size_t>(i)] = std::sin(0.3 * s + static_cast<double>(i));
    f.assign(fv);  // the same buffer each step: the node of the last step read it
    u = broadcast(step, u, f, kappa);
    u.eval();
  }
  D loss = sum(u * u);
  const double value = loss.item();
  if (tape != nullptr) *grads = tape->gradient(loss, {u0, kappa});
  return value;
}

TEST_CASE("kAuto: a simulation writing its forcing buffer in place each step matches central differences") {
  const V u0 = {0.2, 0.45, 0.6, 0.8, 0.3};
  const double kappa = 0.7, h = 1e-6;
  std::vector<D> g;
  {
    Tape tape;
    Simulate(u0, kappa, &tape, &g);
  }
  const V du0 = g[0].to_vector();
  for (size_t i = 0; i < u0.size(); ++i) {
    V up = u0, dn = u0;
    up[i] += h;
    dn[i] -= h;
    const double fd = (Simulate(up, kappa, nullptr, nullptr) - Simulate(dn, kappa, nullptr, nullptr)) / (2 * h);
    CHECK(du0[i] == doctest::Approx(fd).epsilon(1e-7));
  }
  const double fd = (Simulate(u0, kappa + h, nullptr, nullptr) - Simulate(u0, kappa - h, nullptr, nullptr)) / (2 * h);
  CHECK(g[1].item() == doctest::Approx(fd).epsilon(1e-7));
  // kRecompute keeps no partial arrays, so it cannot: the write is an Error.
  Tape tape(PartialsMode::kRecompute);
  const std::string m = test::ErrorOf([&] { Simulate(u0, kappa, &tape, &g); }, "(no error)");
  CHECK(test::Has(m, "was written in place"));
}

TEST_CASE("kAuto: a write on another thread is not seen there; the gradient is the Error, not other values") {
  D x = D::from({1, 2}, {2}), b = D::from({3, 4}, {2});
  Tape tape;
  D loss = sum(broadcast(Affine(), x, b));
  loss.eval();
  std::thread([&] { b.assign({30, 40}); }).join();
  const std::string m = test::ErrorOf([&] { tape.gradient(loss, {x}); }, "(no error)");
  CHECK(test::Has(m, "argument 2 of 'auto_affine'"));
  CHECK(test::Has(m, "was written in place"));
}

}  // namespace
}  // namespace dualcast
