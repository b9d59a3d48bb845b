// Tests of the lazy graph: fused chains run as one launch, extra outputs, cuts, caps, and the tape hook.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "jit/error.h"
#include "dualcast/array.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/kernel.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "jit/stats.h"

namespace dualcast {
namespace {

// y = f.(x, a); z = g.(y, b); w = h.(z, y), with branches, and its double reference.
Kernel F() {
  return kernel("f", [](auto x, auto a) {
    using namespace dualcast::math;
    if (x > 0) return tanh(x) * a;
    return x * x + a;
  });
}
Kernel G() {
  return kernel("g", [](auto y, auto b) {
    using namespace dualcast::math;
    return exp(y) - b;
  });
}
Kernel H() {
  return kernel("h", [](auto z, auto y) { return z * y + 1; });
}
double FRef(double x, double a) { return x > 0 ? std::tanh(x) * a : x * x + a; }
double GRef(double y, double b) { return std::exp(y) - b; }
double HRef(double z, double y) { return z * y + 1; }

TEST_CASE("y = f.(x, a); z = g.(y, b); w = h.(z, y) runs as one launch; y held is an extra output") {
  Kernel f = F(), g = G(), h = H();
  auto x = Array<double>::uniform({8, 5}, 1, -1, 1);
  auto a = Array<double>::uniform({5}, 2, -1, 1);
  auto b = Array<double>::uniform({8, 1}, 3, -1, 1);
  const std::vector<double> xs = x.to_vector(), as = a.to_vector(), bs = b.to_vector();
  jit::ResetStats();
  Array<double> y = broadcast(f, x, a);
  Array<double> w;
  {
    Array<double> z = broadcast(g, y, b);
    w = broadcast(h, z, y);
  }
  CHECK(jit::GetStats().launches == 0);
  std::vector<double> ws = w.to_vector();
  CHECK(jit::GetStats().launches == 1);
  CHECK_FALSE(y.is_pending());
  std::vector<double> ys = y.to_vector();
  CHECK(jit::GetStats().launches == 1);
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 5; ++j) {
      const double yr = FRef(xs[i * 5 + j], as[j]);
      CHECK(ys[i * 5 + j] == doctest::Approx(yr).epsilon(1e-14));
      CHECK(ws[i * 5 + j] == doctest::Approx(HRef(GRef(yr, bs[i]), yr)).epsilon(1e-13));
    }
  }
}

TEST_CASE("an intermediate nobody holds is never stored; reading it first splits the chain") {
  Kernel f = F(), g = G(), h = H();
  auto x = Array<float>::uniform({16}, 4, -1, 1);
  auto a = Array<float>::scalar(0.5f);
  auto b = Array<float>::scalar(0.25f);
  jit::ResetStats();
  Array<float> w = broadcast(h, broadcast(g, broadcast(f, x, a), b), broadcast(f, x, a));
  w.eval();
  CHECK(jit::GetStats().launches == 1);

  jit::ResetStats();
  Array<float> y = broadcast(f, x, a);
  Array<float> w2 = broadcast(h, broadcast(g, y, b), y);
  y.eval();  // y alone
  w2.eval();  // reads y as a leaf
  CHECK(jit::GetStats().launches == 2);
  std::vector<float> xs = x.to_vector(), v1 = w.to_vector(), v2 = w2.to_vector();
  for (size_t i = 0; i < xs.size(); ++i) {
    const double yr = FRef(xs[i], 0.5);
    CHECK(v1[i] == doctest::Approx(HRef(GRef(yr, 0.25), yr)).epsilon(1e-5));
    CHECK(v2[i] == doctest::Approx(v1[i]).epsilon(1e-6));  // vector vs scalar libm
  }
}

TEST_CASE("a held intermediate of a smaller shape is computed on its own first") {
  Kernel f = F(), g = G();
  auto x = Array<double>::uniform({3, 1}, 5, -1, 1);
  auto b = Array<double>::uniform({1, 4}, 6, -1, 1);
  jit::ResetStats();
  Array<double> y = broadcast(f, x, 2.0);  // (3, 1)
  Array<double> z = broadcast(g, y, b);     // (3, 4)
  std::vector<double> zs = z.to_vector();
  CHECK(jit::GetStats().launches == 2);
  CHECK(y.shape() == Shape{3, 1});
  std::vector<double> xs = x.to_vector(), bs = b.to_vector(), ys = y.to_vector();
  for (int i = 0; i < 3; ++i) {
    CHECK(ys[i] == doctest::Approx(FRef(xs[i], 2)).epsilon(1e-14));
    for (int j = 0; j < 4; ++j) {
      CHECK(zs[i * 4 + j] == doctest::Approx(GRef(FRef(xs[i], 2), bs[j])).epsilon(1e-14));
    }
  }
}

TEST_CASE("sibling outputs of broadcast_n and pending consumers outside the group are written once") {
  Kernel two = kernel("two", [](auto x) { return std::tuple{x + 1, x * 3}; });
  Kernel add = kernel("add", [](auto p, auto q) { return p + q; });
  auto x = Array<double>::arange(6);
  jit::ResetStats();
  std::vector<Array<double>> pq = broadcast_n(two, x);
  Array<double> s = broadcast(add, pq[0], pq[1]);
  Array<double> t = broadcast(add, pq[1], 1.0);  // pending, outside s's group, holds pq[1]
  std::vector<double> ss = s.to_vector();
  CHECK(jit::GetStats().launches == 1);
  CHECK_FALSE(pq[0].is_pending());
  CHECK_FALSE(pq[1].is_pending());
  std::vector<double> ts = t.to_vector();
  CHECK(jit::GetStats().launches == 2);
  for (int i = 0; i < 6; ++i) {
    CHECK(ss[i] == (i + 1) + 3 * i);
    CHECK(ts[i] == 3 * i + 1);
  }
}

TEST_CASE("long chains are cut into bounded groups and stay correct") {
  auto x = Array<double>::full({10}, 1.0);
  Array<double> y = x;
  for (int i = 0; i < 300; ++i) y = y * 0.5 + 0.5;  // fixed point 1
  jit::ResetStats();
  for (double v : y.to_vector()) CHECK(v == 1.0);
  CHECK(jit::GetStats().launches <= 1);
  Array<double> s = x;
  for (int i = 0; i < 300; ++i) s = s + x;
  for (double v : s.to_vector()) CHECK(v == 301.0);
}

TEST_CASE("the fusion cap is a budget on IR size: many tiny broadcasts fuse, a few big ones are cut") {
  std::vector<double> xs(16);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.1 + 0.05 * static_cast<double>(i);
  auto x = Array<double>::from(xs, {16});
  // 200 one-op broadcasts: far under kMaxFusedInsts (768) and kMaxFusedNodes (256).
  jit::ResetStats();  // cuts launch inside broadcast(), so count from before the chain
  Array<double> y = x;
  for (int i = 0; i < 100; ++i) y = y * 0.999 + 0.001;
  std::vector<double> got = y.to_vector();
  CHECK(jit::GetStats().launches == 1);
  for (size_t i = 0; i < xs.size(); ++i) {
    double r = xs[i];
    for (int k = 0; k < 100; ++k) r = r * 0.999 + 0.001;
    CHECK(got[i] == doctest::Approx(r).epsilon(1e-12));
  }
  // Four broadcasts of a kernel of at least 250 instructions: only 4 nodes,
  // but over the instruction budget together, so the group is cut.
  Kernel big = kernel("big", [](auto a) {
    for (int k = 0; k < 250; ++k) a = a * 0.999 + 0.001;
    return a;
  });
  jit::ResetStats();
  Array<double> z = x;
  for (int i = 0; i < 4; ++i) z = broadcast(big, z);
  got = z.to_vector();
  CHECK(jit::GetStats().launches >= 2);
  for (size_t i = 0; i < xs.size(); ++i) {
    double r = xs[i];
    for (int k = 0; k < 1000; ++k) r = r * 0.999 + 0.001;
    CHECK(got[i] == doctest::Approx(r).epsilon(1e-12));
  }
}

TEST_CASE("with a tape, a fused chain records partials w.r.t. its leaves (cache and recompute)") {
  Kernel f = F(), g = G(), h = H();
  auto x = Array<double>::uniform({4, 3}, 7, -1, 1);
  auto a = Array<double>::uniform({3}, 8, -1, 1);
  auto b = Array<double>::uniform({4, 1}, 9, -1, 1);
  auto loss_of = [&](const Array<double>& xx) {
    Array<double> y = broadcast(f, xx, a);
    return sum(broadcast(h, broadcast(g, y, b), y));
  };
  std::vector<double> grads[2];
  int k = 0;
  for (PartialsMode mode : {PartialsMode::kCache, PartialsMode::kRecompute}) {
    Tape tape(mode);
    jit::ResetStats();
    Array<double> loss = loss_of(x);
    loss.eval();
    grads[k++] = tape.gradient(loss, {x})[0].to_vector();
  }
  // Central differences on the double reference.
  std::vector<double> xs = x.to_vector(), as = a.to_vector(), bs = b.to_vector();
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) {
      auto term = [&](double xv) {
        const double y = FRef(xv, as[j]);
        return HRef(GRef(y, bs[i]), y);
      };
      const double e = 1e-6, xv = xs[i * 3 + j];
      const double fd = (term(xv + e) - term(xv - e)) / (2 * e);
      CHECK(grads[0][i * 3 + j] == doctest::Approx(fd).epsilon(1e-6));
      CHECK(grads[1][i * 3 + j] == doctest::Approx(grads[0][i * 3 + j]).epsilon(1e-13));
    }
  }
}

TEST_CASE("cache mode: a held extra output that later receives an adjoint is recomputed, exactly") {
  // loss = sum(g.(y, b)) + sum(y .* y) with y = f.(x, a): y is an extra output
  // of the first group (partials not stored) and then gets an adjoint of its
  // own from the second term.
  Kernel f = F(), g = G();
  auto x = Array<double>::uniform({6, 4}, 21, -1, 1);
  auto a = Array<double>::uniform({4}, 22, -1, 1);
  auto b = Array<double>::uniform({6, 1}, 23, -1, 1);
  const std::vector<double> xs = x.to_vector(), as = a.to_vector();
  std::vector<double> grads[2];
  int k = 0;
  for (PartialsMode mode : {PartialsMode::kCache, PartialsMode::kRecompute}) {
    Tape tape(mode);
    Array<double> y = broadcast(f, x, a);
    Array<double> first = sum(broadcast(g, y, b));
    Array<double> second = sum(y * y);
    Array<double> loss = first + second;
    grads[k++] = tape.gradient(loss, {x})[0].to_vector();
  }
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 4; ++j) {
      auto term = [&](double xv) {
        const double y = FRef(xv, as[j]);
        return std::exp(y) + y * y;  // b does not depend on x
      };
      const double e = 1e-6, xv = xs[i * 4 + j];
      const double fd = (term(xv + e) - term(xv - e)) / (2 * e);
      CHECK(grads[0][i * 4 + j] == doctest::Approx(fd).epsilon(1e-6));
      CHECK(grads[1][i * 4 + j] == doctest::Approx(grads[0][i * 4 + j]).epsilon(1e-13));
    }
  }
}

TEST_CASE("with a tape, a held intermediate stays fused; its own gradient cuts the kernel there") {
  Kernel f = F(), g = G();
  auto x = Array<double>::uniform({5}, 10, -1, 1);
  std::vector<double> xs = x.to_vector();
  {
    // Fused: one launch writes y, the loss and x's gradient (the one-pass
    // plan of the default tape); x's gradient is right, and a gradient with
    // respect to y itself is its full adjoint exp(y): the sweep re-runs the
    // consumers with y as an input.
    Tape tape;
    Array<double> y = broadcast(f, x, 2.0);
    jit::ResetStats();
    Array<double> loss = sum(broadcast(g, y, 0.0));  // sum(exp(y))
    std::vector<double> gx = tape.gradient(loss, {x})[0].to_vector();
    CHECK(jit::GetStats().launches == 1);
    for (int i = 0; i < 5; ++i) {
      const double e = 1e-6;
      const double fd = (std::exp(FRef(xs[i] + e, 2)) - std::exp(FRef(xs[i] - e, 2))) / (2 * e);
      CHECK(gx[i] == doctest::Approx(fd).epsilon(1e-6));
    }
    for (const auto& grads : {tape.gradient(loss, {y}), tape.gradient(loss, {x, y})}) {
      std::vector<double> gy = grads.back().to_vector();
      for (int i = 0; i < 5; ++i) CHECK(gy[i] == doctest::Approx(std::exp(FRef(xs[i], 2))).epsilon(1e-14));
    }
    // x's gradient through the cut group equals the uncut one.
    std::vector<double> gx_cut = tape.gradient(loss, {x, y})[0].to_vector();
    for (int i = 0; i < 5; ++i) CHECK(gx_cut[i] == doctest::Approx(gx[i]).epsilon(1e-13));
  }
  {
    // eval() first makes y a leaf of the next kernel: its gradient is exp(y).
    Tape tape;
    Array<double> y = broadcast(f, x, 2.0);
    y.eval();
    Array<double> loss = sum(broadcast(g, y, 0.0));
    std::vector<Array<double>> grads = tape.gradient(loss, {y, x});
    std::vector<double> ys = y.to_vector(), gy = grads[0].to_vector(), gx = grads[1].to_vector();
    for (int i = 0; i < 5; ++i) {
      CHECK(gy[i] == doctest::Approx(std::exp(ys[i])).epsilon(1e-14));
      const double e = 1e-6;
      const double fd = (std::exp(FRef(xs[i] + e, 2)) - std::exp(FRef(xs[i] - e, 2))) / (2 * e);
      CHECK(gx[i] == doctest::Approx(fd).epsilon(1e-6));
    }
  }
}

}  // namespace
}  // namespace dualcast
