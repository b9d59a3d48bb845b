// The one-pass gradient (runtime/one_pass.h) against finite differences of a host float64 loss and the kCache sweep.
//
// Each kernel is a generic lambda evaluated twice: traced by dualcast, and
// called with doubles on the host, where the loss is summed by hand and
// differentiated by central differences. Every case also runs under
// PartialsMode::kCache (the cached-partials sweep) and must agree with it.
// OnePassGradients() shows which path ran: the default tape must take the
// one pass where it applies, and must fall back (still right, or the same
// Error) where it does not.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "dualcast/array.hpp"
#include "dualcast/array_ops.hpp"
#include "dualcast/detail/array_impl.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/error.hpp"
#include "dualcast/kernel.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "jit/cpu/thread_pool.h"
#include "jit/stats.h"
#include "runtime/one_pass.h"

namespace dualcast {
namespace {

using detail::OnePassGradients;

namespace host {
template <class T>
  requires std::is_floating_point_v<T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}
}  // namespace host

auto kF = [](auto x, auto a) {
  using std::sin;
  return x * a + sin(x);
};
auto kG = [](auto y, auto x, auto b) {
  using std::exp;
  return y * exp(b) - x * y;
};
auto kCell = [](auto z, auto zb, auto c, auto f, auto i, auto g) {
  using host::sigmoid, std::tanh;
  if (z == 1) return sigmoid(i) * tanh(g);       // FLUSH
  if (zb == 0) return c;                         // COPY
  return sigmoid(f) * c + sigmoid(i) * tanh(g);  // UPDATE
};
const Kernel& F() {
  static const Kernel k = kernel("op_f", kF);
  return k;
}
const Kernel& G() {
  static const Kernel k = kernel("op_g", kG);
  return k;
}
const Kernel& Cell() {
  static const Kernel k = kernel("op_cell", kCell);
  return k;
}

// A host array of a 2-D broadcast: shape (), (n,), (m,1), (1,n) or (m,n).
struct Host {
  Shape shape;
  std::vector<double> v;
  double at(int64_t r, int64_t c) const {
    if (shape.empty()) return v[0];
    if (shape.size() == 1) return v[static_cast<size_t>(shape[0] == 1 ? 0 : c)];
    return v[static_cast<size_t>((shape[0] == 1 ? 0 : r) * shape[1] + (shape[1] == 1 ? 0 : c))];
  }
};

Host Uniform(Shape shape, uint64_t seed, double lo = -1, double hi = 1) {
  return {shape, Array<double>::uniform(shape, seed, lo, hi).to_vector()};
}

using HostLoss = std::function<double(const std::vector<Host>&)>;

// Central differences of `loss` with respect to every element of input k.
std::vector<double> FiniteDiff(const HostLoss& loss, std::vector<Host> in, size_t k) {
  std::vector<double> g(in[k].v.size());
  for (size_t e = 0; e < g.size(); ++e) {
    const double x = in[k].v[e], h = 1e-6 * std::max(1.0, std::abs(x));
    in[k].v[e] = x + h;
    const double up = loss(in);
    in[k].v[e] = x - h;
    const double down = loss(in);
    in[k].v[e] = x;
    g[e] = (up - down) / (2 * h);
  }
  return g;
}

std::vector<Array<double>> ToArrays(const std::vector<Host>& in) {
  std::vector<Array<double>> a;
  for (const Host& h : in) a.push_back(Array<double>::from(h.v, h.shape));
  return a;
}

void CheckClose(const std::vector<double>& got, const std::vector<double>& want, double eps) {
  REQUIRE(got.size() == want.size());
  for (size_t e = 0; e < got.size(); ++e) {
    CAPTURE(e);
    CHECK(got[e] == doctest::Approx(want[e]).epsilon(eps).scale(1.0));
  }
}

// Runs `build` (the loss from the arrays) under a tape of `mode`, returns
// the loss and the gradients, and whether the one-pass path ran.
struct Run {
  double loss = 0;
  std::vector<std::vector<double>> grads;
  bool one_pass = false;
};
template <class Build>
Run RunTape(PartialsMode mode, const std::vector<Array<double>>& in, const std::vector<size_t>& wrt,
            Build build) {
  const int64_t before = OnePassGradients();
  Tape tape(mode);
  std::vector<Array<double>> inputs;
  for (size_t k : wrt) inputs.push_back(in[k]);
  auto [value, grads] = tape.value_and_gradient(build(in), inputs);
  Run r;
  r.loss = value.item();
  for (const auto& g : grads) r.grads.push_back(g.to_vector());
  r.one_pass = OnePassGradients() == before + 1;
  return r;
}

// The default tape takes one pass and agrees with kCache and with finite differences.
template <class Build>
void CheckOnePass(const std::vector<Host>& host, const HostLoss& loss, const std::vector<size_t>& wrt,
                  Build build, bool expect_one_pass = true) {
  const std::vector<Array<double>> in = ToArrays(host);
  const Run fast = RunTape(PartialsMode::kAuto, in, wrt, build);
  const Run cached = RunTape(PartialsMode::kCache, in, wrt, build);
  CHECK(fast.one_pass == expect_one_pass);
  CHECK_FALSE(cached.one_pass);
  CHECK(fast.loss == doctest::Approx(loss(host)).epsilon(1e-12));
  CHECK(cached.loss == doctest::Approx(loss(host)).epsilon(1e-12));
  for (size_t k = 0; k < wrt.size(); ++k) {
    CAPTURE(k);
    CheckClose(fast.grads[k], cached.grads[k], 1e-11);
    CheckClose(fast.grads[k], FiniteDiff(loss, host, wrt[k]), 1e-6);
  }
}

TEST_CASE("one pass: a chain reading one input three times, with (m,1), (1,n) and scalar inputs") {
  const int64_t m = 6, n = 7;
  for (Shape wshape : {Shape{}, Shape{n}, Shape{m, 1}, Shape{m, n}}) {
    CAPTURE(wshape.size());
    std::vector<Host> host = {Uniform({m, n}, 1), Uniform({m, 1}, 2), Uniform({1, n}, 3), Uniform(wshape, 4)};
    HostLoss loss = [&](const std::vector<Host>& h) {
      double s = 0;
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t c = 0; c < n; ++c) {
          const double x = h[0].at(r, c);
          s += kG(kF(x, h[1].at(r, c)), x, h[2].at(r, c)) * h[3].at(r, c);
        }
      }
      return s;
    };
    CheckOnePass(host, loss, {0, 1, 2, 3}, [](const std::vector<Array<double>>& a) {
      Array<double> y = broadcast(F(), a[0], a[1]);
      return sum(broadcast(G(), y, a[0], a[2]) * a[3]);
    });
  }
}

TEST_CASE("one pass: mean, sum over explicit axes with keepdims, a subset of inputs, one input twice") {
  const int64_t m = 5, n = 4;
  std::vector<Host> host = {Uniform({m, n}, 5), Uniform({m, 1}, 6)};
  HostLoss total = [&](const std::vector<Host>& h) {
    double s = 0;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) s += kF(h[0].at(r, c), h[1].at(r, c));
    }
    return s;
  };
  HostLoss avg = [&](const std::vector<Host>& h) { return total(h) / static_cast<double>(m * n); };
  CheckOnePass(host, avg, {0, 1}, [](const std::vector<Array<double>>& a) {
    return mean(broadcast(F(), a[0], a[1]));
  });
  CheckOnePass(host, total, {1}, [](const std::vector<Array<double>>& a) {
    return sum(broadcast(F(), a[0], a[1]), {0, 1}, /*keepdims=*/true);
  });
  CheckOnePass(host, total, {1, 0, 1}, [](const std::vector<Array<double>>& a) {
    return sum(broadcast(F(), a[0], a[1]));
  });
}

// z, zb: rows (m,1) or columns (1,n) of 0/1 flags covering every branch.
void HmlstmCase(bool rows) {
  const int64_t n = 9;
  const Shape flag_shape = rows ? Shape{n, 1} : Shape{1, n};
  Host z{flag_shape, {}}, zb{flag_shape, {}};
  for (int64_t k = 0; k < n; ++k) {
    z.v.push_back(k % 3 == 0 ? 1.0 : 0.0);
    zb.v.push_back(k % 3 == 1 ? 0.0 : 1.0);
  }
  std::vector<Host> host = {z, zb, Uniform({n, n}, 7, 0, 1), Uniform({n, n}, 8, -2, 2),
                            Uniform({n, n}, 9, -2, 2), Uniform({n, n}, 10, -2, 2), Uniform({n, n}, 11)};
  auto cell_at = [&](const std::vector<Host>& h, int64_t r, int64_t c) {
    return kCell(h[0].at(r, c), h[1].at(r, c), h[2].at(r, c), h[3].at(r, c), h[4].at(r, c), h[5].at(r, c));
  };
  HostLoss loss = [&](const std::vector<Host>& h) {
    double s = 0;
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c = 0; c < n; ++c) s += cell_at(h, r, c) * h[6].at(r, c);
    }
    return s;
  };
  const std::vector<Array<double>> in = ToArrays(host);
  // The benchmark's shape: c is held, loss = sum(c * cbar), gradients of all six.
  Array<double> c_fast, c_cached;
  auto build = [](Array<double>* c) {
    return [c](const std::vector<Array<double>>& a) {
      *c = broadcast(Cell(), a[0], a[1], a[2], a[3], a[4], a[5]);
      return sum(*c * a[6]);
    };
  };
  const Run fast = RunTape(PartialsMode::kAuto, in, {0, 1, 2, 3, 4, 5}, build(&c_fast));
  const Run cached = RunTape(PartialsMode::kCache, in, {0, 1, 2, 3, 4, 5}, build(&c_cached));
  CHECK(fast.one_pass);
  CHECK(fast.loss == doctest::Approx(loss(host)).epsilon(1e-12));
  CHECK_FALSE(c_fast.is_pending());
  std::vector<double> c_want;
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < n; ++c) c_want.push_back(cell_at(host, r, c));
  }
  CheckClose(c_fast.to_vector(), c_want, 1e-14);
  for (size_t k = 0; k < 6; ++k) {
    CAPTURE(k);
    CHECK(fast.grads[k].size() == host[k].v.size());
    CheckClose(fast.grads[k], cached.grads[k], 1e-11);
    if (k < 2) {  // the flags only steer: zero gradients of their own shape
      for (double g : fast.grads[k]) CHECK(g == 0.0);
    } else {
      CheckClose(fast.grads[k], FiniteDiff(loss, host, k), 1e-6);
    }
  }
}

TEST_CASE("one pass: the HM-LSTM cell, rows layout") { HmlstmCase(true); }
TEST_CASE("one pass: the HM-LSTM cell, columns layout") { HmlstmCase(false); }

// The per-step plan is cached by the primal and the requested leaves: steps
// that change the shapes, the requested inputs, their order, the dtype or
// the values of a constant operand, one after another with the same kernel,
// must each get their own right answer (a stale plan would reuse the wrong
// output slots or shapes).
TEST_CASE("one pass: no cached plan goes stale across steps that change shapes, inputs, dtype, values") {
  struct Step {
    Shape x, a, w;
    std::vector<size_t> wrt;
    uint64_t seed;
  };
  const std::vector<Step> steps = {
      {{4, 3}, {4, 1}, {}, {0, 1}, 31},  {{4, 3}, {4, 1}, {}, {1}, 32},
      {{4, 3}, {1, 3}, {4, 3}, {0}, 33}, {{6, 5}, {6, 1}, {1, 5}, {1, 0}, 34},
      {{4, 3}, {4, 1}, {}, {0, 1}, 35},  {{6, 5}, {}, {6, 1}, {2, 1, 0}, 36},
  };
  for (const Step& st : steps) {
    CAPTURE(st.seed);
    const int64_t m = st.x[0], n = st.x[1];
    std::vector<Host> host = {Uniform(st.x, st.seed), Uniform(st.a, st.seed + 100),
                              Uniform(st.w, st.seed + 200, 0.5, 2)};
    HostLoss loss = [&](const std::vector<Host>& h) {
      double s = 0;
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t c = 0; c < n; ++c) s += kF(h[0].at(r, c), h[1].at(r, c)) * h[2].at(r, c);
      }
      return s;
    };
    CheckOnePass(host, loss, st.wrt, [](const std::vector<Array<double>>& a) {
      return sum(broadcast(F(), a[0], a[1]) * a[2]);
    });
    // The same structure in float32 between the float64 steps.
    auto x = Array<float>::uniform(st.x, st.seed, -1, 1), a = Array<float>::uniform(st.a, st.seed + 1, -1, 1);
    const int64_t before = OnePassGradients();
    Tape tape;
    std::vector<Array<float>> g = tape.gradient(sum(broadcast(F(), x, a)), {a, x});
    CHECK(OnePassGradients() == before + 1);
    std::vector<Host> hf = {{st.x, {}}, {st.a, {}}, {Shape{}, {1.0}}};
    for (float v : x.to_vector()) hf[0].v.push_back(v);
    for (float v : a.to_vector()) hf[1].v.push_back(v);
    for (size_t k : {size_t{1}, size_t{0}}) {
      const std::vector<double> want = FiniteDiff(loss, hf, k);
      const std::vector<float> got = g[k == 1 ? 0 : 1].to_vector();
      REQUIRE(got.size() == want.size());
      for (size_t e = 0; e < got.size(); ++e) CHECK(got[e] == doctest::Approx(want[e]).epsilon(1e-5).scale(1));
    }
  }
}

TEST_CASE("one pass: float32 agrees with the kCache sweep") {
  auto x = Array<float>::uniform({33, 17}, 12, -1, 1);
  auto a = Array<float>::uniform({33, 1}, 13, -1, 1);
  auto b = Array<float>::uniform({1, 17}, 14, -1, 1);
  auto grads = [&](PartialsMode mode) {
    Tape tape(mode);
    Array<float> y = broadcast(F(), x, a);
    return tape.gradient(sum(broadcast(G(), y, x, b)), {x, a, b});
  };
  const int64_t before = OnePassGradients();
  std::vector<Array<float>> fast = grads(PartialsMode::kAuto), cached = grads(PartialsMode::kCache);
  CHECK(OnePassGradients() == before + 1);
  for (size_t k = 0; k < 3; ++k) {
    const std::vector<float> f = fast[k].to_vector(), c = cached[k].to_vector();
    for (size_t e = 0; e < f.size(); ++e) CHECK(f[e] == doctest::Approx(c[e]).epsilon(1e-5).scale(1e-3));
  }
}

TEST_CASE("one pass: the tape still holds the group, so gradient() can be called again") {
  auto x = Array<double>::uniform({6, 5}, 15, -1, 1);
  auto a = Array<double>::uniform({6, 1}, 16, -1, 1);
  Tape tape;
  Array<double> y = broadcast(F(), x, a);
  Array<double> loss = sum(y * x);
  const int64_t before = OnePassGradients();
  std::vector<Array<double>> first = tape.gradient(loss, {x, a});
  CHECK(OnePassGradients() == before + 1);
  std::vector<Array<double>> again = tape.gradient(loss, {x, a});  // the sweep, recomputing
  CHECK(OnePassGradients() == before + 1);
  for (size_t k = 0; k < 2; ++k) CheckClose(again[k].to_vector(), first[k].to_vector(), 1e-12);
  // y was held and fused: its own gradient is ∂loss/∂y = x.
  std::vector<Array<double>> gy = tape.gradient(loss, {y});
  CheckClose(gy[0].to_vector(), x.to_vector(), 1e-14);
}

TEST_CASE("one pass: falls back, still right, for inputs inside the group and several groups") {
  const int64_t m = 4, n = 6;
  std::vector<Host> host = {Uniform({m, n}, 17), Uniform({m, 1}, 18), Uniform({1, n}, 19)};
  HostLoss loss = [&](const std::vector<Host>& h) {
    double s = 0;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) s += kG(kF(h[0].at(r, c), h[1].at(r, c)), h[0].at(r, c), h[2].at(r, c));
    }
    return s;
  };
  // The loss is a broadcast of a sum, not a sum: the sweep.
  HostLoss twice = [&](const std::vector<Host>& h) { return 2 * loss(h); };
  CheckOnePass(host, twice, {0, 1, 2}, [](const std::vector<Array<double>>& a) {
    Array<double> y = broadcast(F(), a[0], a[1]);
    return sum(broadcast(G(), y, a[0], a[2])) * 2.0;
  }, /*expect_one_pass=*/false);
  // The first broadcast is computed first (a tape node of its own): x reaches
  // the loss through a leaf recorded on the tape, so the sweep runs.
  CheckOnePass(host, loss, {0, 1, 2}, [](const std::vector<Array<double>>& a) {
    Array<double> y = broadcast(F(), a[0], a[1]);
    y.eval();
    return sum(broadcast(G(), y, a[0], a[2]));
  }, /*expect_one_pass=*/false);
  // y recorded on the tape but computed from a alone: a constant to x and b,
  // so the one pass applies to {x, b} (and not to {a, x, b}).
  HostLoss from_a = [&](const std::vector<Host>& h) {
    double s = 0;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) s += kG(kF(0.5, h[1].at(r, c)), h[0].at(r, c), h[2].at(r, c));
    }
    return s;
  };
  auto build_from_a = [](const std::vector<Array<double>>& a) {
    Array<double> y = broadcast(F(), Array<double>::scalar(0.5), a[1]);
    y.eval();
    return sum(broadcast(G(), y, a[0], a[2]));
  };
  CheckOnePass(host, from_a, {0, 2}, build_from_a, /*expect_one_pass=*/true);
  CheckOnePass(host, from_a, {1, 0, 2}, build_from_a, /*expect_one_pass=*/false);
  // A requested input that is pending inside the group (a parameter made by an expression).
  const std::vector<Array<double>> in = ToArrays(host);
  const int64_t before = OnePassGradients();
  Tape tape;
  Array<double> x2 = in[0] * 1.0;
  Array<double> l = sum(broadcast(G(), broadcast(F(), x2, in[1]), x2, in[2]));
  std::vector<Array<double>> g = tape.gradient(l, {x2});
  CHECK(OnePassGradients() == before);
  CheckClose(g[0].to_vector(), FiniteDiff(loss, host, 0), 1e-6);
}

TEST_CASE("one pass: never silent — unused inputs and paths through arrays computed before the tape") {
  auto x = Array<double>::uniform({5, 3}, 20, -1, 1);
  auto a = Array<double>::uniform({5, 1}, 21, -1, 1);
  auto unused = Array<double>::uniform({5, 3}, 22, -1, 1);
  {
    Tape tape;
    Array<double> loss = sum(broadcast(F(), x, a));
    CHECK_THROWS_AS(tape.gradient(loss, {x, unused}), Error);
  }
  {
    Tape tape;
    Array<double> loss = sum(broadcast(F(), x, a));
    std::vector<Array<double>> g = tape.gradient(loss, {unused, a}, {.allow_unused = true});
    for (double v : g[0].to_vector()) CHECK(v == 0.0);
    double want = 0;
    const std::vector<double> xv = x.to_vector();
    for (int r = 0; r < 5; ++r) {
      double row = 0;
      for (int c = 0; c < 3; ++c) row += xv[static_cast<size_t>(r * 3 + c)];
      CHECK(g[1].to_vector()[static_cast<size_t>(r)] == doctest::Approx(row).epsilon(1e-13));
      want += row;
    }
    (void)want;
  }
  {
    // x2 = 2x computed before the tape: the loss reads x directly and
    // through x2, which the tape never saw. The one pass must not return
    // the direct part alone; the sweep says why it cannot answer.
    Array<double> x2 = (x * 2.0).eval();
    Tape tape;
    Array<double> loss = sum(x2 * x);
    const int64_t before = OnePassGradients();
    CHECK_THROWS_AS(tape.gradient(loss, {x}), Error);
    CHECK(OnePassGradients() == before);
  }
}

// The arrays between an untaped leaf and the input may be gone: y =
// transpose(x) + 0 drops the transposed view once y is computed, and the path
// from y back to x must still be seen (through y's Origin's flattened
// ancestry). The one pass missed it and returned d/dx of sum(y * x) without
// the path through y (found by the REPL bug hunt); every mode must refuse.
TEST_CASE("one pass: a path through an untaped array whose view in between was dropped is refused") {
  const Array<double> m = Array<double>::from({1, 2, 3, 4}, {2, 2});
  const Array<double> b = Array<double>::from({1, 2}, {2});
  const std::vector<std::pair<const char*, std::function<Array<double>()>>> ys = {
      {"transpose(m) + 0", [&] { return m.transpose() + 0.0; }},
      {"exp(transpose(m))", [&] { return exp(m.transpose()); }},
      {"transpose(m * 1)", [&] { return (m * 1.0).transpose(); }},
      {"transpose(transpose(m)) + 0", [&] { return m.transpose().transpose() + 0.0; }},
  };
  for (const PartialsMode mode : {PartialsMode::kAuto, PartialsMode::kCache, PartialsMode::kRecompute}) {
    for (const auto& [what, make] : ys) {
      CAPTURE(what);
      Array<double> y = make();  // every temporary view is gone after this line
      y.eval();
      Tape tape(mode);
      CHECK_THROWS_WITH_AS(tape.gradient(sum(y * m), {m}), doctest::Contains("would miss that path"),
                           Error);
    }
    Array<double> r = b.reshape({2, 1}) + 0.0;
    r.eval();
    Tape tape(mode);
    CHECK_THROWS_WITH_AS(tape.gradient(sum(r * b), {b}), doctest::Contains("would miss that path"),
                         Error);
  }
}

// A leaf stacked from more arrays than an Origin's ancestry holds (4096): the
// inputs are all alive, so the walk through them is exact, and every mode
// answers (they refused: "cannot check", found by the review of 37a85c6). A
// dropped input in such a leaf still makes the check impossible: an Error.
TEST_CASE("one pass: a leaf stacked from 5000 live arrays is checked exactly, a dropped one is not") {
  std::vector<Array<double>> samples;
  for (int k = 0; k < 5000; ++k) {
    samples.push_back(Array<double>::from({0.001 * k, 1.0 - 0.001 * k}, {2}));
  }
  const Array<double> data = stack(samples, 0).eval();  // (5000, 2)
  const Array<double> w = Array<double>::from({0.5, -2}, {1, 2});
  for (const PartialsMode mode : {PartialsMode::kAuto, PartialsMode::kCache, PartialsMode::kRecompute}) {
    const int64_t before = OnePassGradients();
    Tape tape(mode);
    const std::vector<double> g = tape.gradient(sum(data * w), {w})[0].to_vector();
    double col0 = 0, col1 = 0;
    for (int k = 0; k < 5000; ++k) col0 += 0.001 * k, col1 += 1.0 - 0.001 * k;
    CHECK(OnePassGradients() == before + (mode == PartialsMode::kAuto ? 1 : 0));
    REQUIRE(g.size() == 2);
    CHECK(g[0] == doctest::Approx(col0).epsilon(1e-12));
    CHECK(g[1] == doctest::Approx(col1).epsilon(1e-12));
  }
  // The same with w itself among the stacked arrays, through a temporary gone
  // since: the ancestry is capped, an input is gone, so the check cannot be
  // made, and every mode says so rather than answer without that path.
  std::vector<Array<double>> with_w = samples;
  with_w.push_back((w.reshape({2}) * 3.0).eval());
  const Array<double> mixed = stack(with_w, 0).eval();
  with_w.pop_back();  // the temporary (w * 3) is gone now
  for (const PartialsMode mode : {PartialsMode::kAuto, PartialsMode::kCache, PartialsMode::kRecompute}) {
    Tape tape(mode);
    CHECK_THROWS_AS(tape.gradient(sum(mixed * w), {w}), Error);
  }
}

TEST_CASE("one pass: accumulate_gradient adds the one-pass gradients into the buffers") {
  auto x = Array<double>::uniform({7, 5}, 25, -1, 1);
  auto a = Array<double>::uniform({1, 5}, 26, -1, 1);
  auto run = [&](PartialsMode mode) {
    std::vector<Array<double>> bufs = {Array<double>::full({7, 5}, 1.0), Array<double>::full({1, 5}, -2.0)};
    Tape tape(mode);
    Array<double> y = broadcast(F(), x, a);
    tape.accumulate_gradient(mean(broadcast(G(), y, x, a)), {x, a}, bufs);
    return bufs;
  };
  const int64_t before = OnePassGradients();
  std::vector<Array<double>> fast = run(PartialsMode::kAuto);
  CHECK(OnePassGradients() == before + 1);
  std::vector<Array<double>> cached = run(PartialsMode::kCache);
  CHECK(OnePassGradients() == before + 1);
  for (size_t k = 0; k < 2; ++k) CheckClose(fast[k].to_vector(), cached[k].to_vector(), 1e-12);
}

TEST_CASE("one pass: a loss handed over is left out of the kernel; one still readable is computed") {
  // A kernel of its own, so the compile counts below see only this test's kernels.
  static const Kernel k = kernel("op_handed_over", [](auto x, auto a) {
    using std::exp;
    return x * exp(a) - a * x * x;
  });
  auto x = Array<double>::uniform({9, 6}, 31, -1, 1);
  auto a = Array<double>::uniform({1, 6}, 32, -1, 1);
  const std::vector<double> xs = x.to_vector(), as = a.to_vector();
  double host_loss = 0;
  std::vector<double> host_c(xs.size()), host_dx(xs.size()), host_da(as.size(), 0.0);
  for (size_t e = 0; e < xs.size(); ++e) {
    const double xv = xs[e], av = as[e % 6];
    host_c[e] = xv * std::exp(av) - av * xv * xv;
    host_loss += host_c[e];
    host_dx[e] = std::exp(av) - 2 * av * xv;
    host_da[e % 6] += xv * std::exp(av) - xv * xv;
  }
  auto check_grads = [&](const std::vector<Array<double>>& g) {
    REQUIRE(g.size() == 2);
    CheckClose(g[0].to_vector(), host_dx, 1e-12);
    CheckClose(g[1].to_vector(), host_da, 1e-12);
  };
  // Kernels new to this process (compiled, or loaded from the disk cache)
  // and one-pass gradients, of the gradient call alone.
  struct Counts {
    int64_t compiles, one_pass;
  };
  auto counts = [] {
    const jit::Stats s = jit::GetStats();
    return Counts{s.compiles + s.disk_hits, OnePassGradients()};
  };
  auto during = [&](auto call) {
    const Counts before = counts();
    call();
    const Counts after = counts();
    return Counts{after.compiles - before.compiles, after.one_pass - before.one_pass};
  };

  // Held: computed by the kernel, as before.
  {
    Tape tape;
    Array<double> c = broadcast(k, x, a);  // held: every kernel below writes it
    Array<double> loss = sum(c);
    const Counts n = during([&] { check_grads(tape.gradient(loss, {x, a})); });
    CHECK(n.compiles == 1);
    CHECK(n.one_pass == 1);
    CHECK(loss.item() == doctest::Approx(host_loss).epsilon(1e-12));
  }
  // A temporary: nobody can read it, so another kernel, without the loss.
  {
    Tape tape;
    Array<double> c = broadcast(k, x, a);  // held: every kernel below writes it
    const Counts n = during([&] { check_grads(tape.gradient(sum(c), {x, a})); });
    CHECK(n.compiles == 1);
    CHECK(n.one_pass == 1);
    CheckClose(c.to_vector(), host_c, 1e-14);
  }
  // std::move of the last handle: that kernel again; the handle is empty afterwards.
  {
    Tape tape;
    Array<double> c = broadcast(k, x, a);  // held: every kernel below writes it
    Array<double> loss = sum(c);
    const Counts n = during([&] { check_grads(tape.gradient(std::move(loss), {x, a})); });
    CHECK(n.compiles == 0);
    CHECK(n.one_pass == 1);
    CHECK_FALSE(loss.valid());  // NOLINT(bugprone-use-after-move): the documented moved-from state
  }
  {
    Tape tape;
    Array<double> c = broadcast(k, x, a);  // held: every kernel below writes it
    std::vector<Array<double>> bufs = {Array<double>::zeros({9, 6}), Array<double>::zeros({1, 6})};
    for (auto& b : bufs) b.eval();
    Array<double> loss = sum(c);
    const Counts n = during([&] { tape.accumulate_gradient(std::move(loss), {x, a}, bufs); });
    CHECK(n.one_pass == 1);  // (its compiles include the += into the buffers)
    check_grads(bufs);
  }
  // Handed over while another handle, or a pending array, still reads it: computed.
  {
    Tape tape;
    Array<double> c = broadcast(k, x, a);  // held: every kernel below writes it
    Array<double> loss = sum(c);
    Array<double> kept = loss;
    const Counts n = during([&] { check_grads(tape.gradient(std::move(loss), {x, a})); });
    CHECK(n.compiles == 0);  // the held kernel
    CHECK(kept.impl()->pending == nullptr);  // computed by it, not left for later
    CHECK(kept.item() == doctest::Approx(host_loss).epsilon(1e-12));
  }
  {
    Tape tape;
    Array<double> c = broadcast(k, x, a);  // held: every kernel below writes it
    Array<double> loss = sum(c);
    Array<double> twice = loss * 2.0;
    check_grads(tape.gradient(std::move(loss), {x, a}));
    CHECK(twice.item() == doctest::Approx(2 * host_loss).epsilon(1e-12));
  }
}

TEST_CASE("one pass: temporaries in the loss expression are not stored; a named intermediate is") {
  // `tape.gradient(sum(k.(x, a) * w), ...)` in one line keeps the product and
  // k's result alive as temporaries while gradient() runs; they are released
  // by the operators and sum, so the kernel is the one the same code over
  // several statements builds (which stores neither).
  static const Kernel k = kernel("op_temporaries", [](auto x, auto a) {
    using std::tanh;
    return tanh(x * a) + x;
  });
  auto x = Array<double>::uniform({7, 5}, 41, -1, 1);
  auto a = Array<double>::uniform({7, 1}, 42, -1, 1);
  auto w = Array<double>::uniform({7, 5}, 43, -1, 1);
  const std::vector<double> xs = x.to_vector(), as = a.to_vector(), ws = w.to_vector();
  std::vector<double> host_c(xs.size()), host_dx(xs.size()), host_da(as.size(), 0.0);
  for (size_t e = 0; e < xs.size(); ++e) {
    const double xv = xs[e], av = as[e / 5], t = std::tanh(xv * av);
    host_c[e] = t + xv;
    host_dx[e] = ws[e] * ((1 - t * t) * av + 1);
    host_da[e / 5] += ws[e] * (1 - t * t) * xv;
  }
  auto check_grads = [&](const std::vector<Array<double>>& g) {
    REQUIRE(g.size() == 2);
    CheckClose(g[0].to_vector(), host_dx, 1e-12);
    CheckClose(g[1].to_vector(), host_da, 1e-12);
  };
  auto compiles_during = [](auto call) {
    const jit::Stats before = jit::GetStats();
    call();
    const jit::Stats after = jit::GetStats();
    return (after.compiles + after.disk_hits) - (before.compiles + before.disk_hits);
  };
  const int64_t one_pass = OnePassGradients();
  // Several statements: the intermediates are gone before gradient() runs.
  CHECK(compiles_during([&] {
          Tape tape;
          Array<double> loss = sum(broadcast(k, x, a) * w);
          check_grads(tape.gradient(std::move(loss), {x, a}));
        }) == 1);
  // One line: the same kernel.
  CHECK(compiles_during([&] {
          Tape tape;
          check_grads(tape.gradient(sum(broadcast(k, x, a) * w), {x, a}));
        }) == 0);
  // A named intermediate stays held: another kernel, which stores it.
  Array<double> c;
  CHECK(compiles_during([&] {
          Tape tape;
          c = broadcast(k, x, a);
          check_grads(tape.gradient(sum(c * w), {x, a}));
        }) == 1);
  CHECK_FALSE(c.is_pending());
  CheckClose(c.to_vector(), host_c, 1e-14);
  CHECK(OnePassGradients() == one_pass + 3);
}

TEST_CASE("one pass: an argument that makes a call fail is left as it was") {
  // Released only once the call has succeeded: a temporary the error names
  // is still there for the caller who passed it with std::move.
  static const Kernel k = kernel("op_release_on_success", [](auto x, auto a) { return x * a; });
  Array<double> x = Array<double>::uniform({4, 3}, 44, -1, 1);
  Array<double> bad = Array<double>::uniform({5}, 45, -1, 1);
  CHECK_THROWS_AS(broadcast(k, std::move(x), std::move(bad)), Error);
  CHECK(x.valid());    // NOLINT(bugprone-use-after-move): the call threw before releasing
  CHECK(bad.valid());  // NOLINT(bugprone-use-after-move)
  CHECK_THROWS_AS(std::move(x) * std::move(bad), Error);
  CHECK(x.valid());  // NOLINT(bugprone-use-after-move)
  CHECK(x.to_vector().size() == 12);
  // On success the moved-from handles are empty; the result is right.
  const std::vector<double> xs = x.to_vector();
  Array<double> y = exp(std::move(x));
  CHECK_FALSE(x.valid());  // NOLINT(bugprone-use-after-move)
  const std::vector<double> ys = y.to_vector();
  for (size_t e = 0; e < xs.size(); ++e) CHECK(ys[e] == doctest::Approx(std::exp(xs[e])).epsilon(1e-15));
}

TEST_CASE("one pass: a second size reuses the compiled kernel") {
  auto run = [](int64_t n) {
    auto x = Array<double>::uniform({n, n}, 23, -1, 1);
    auto a = Array<double>::uniform({n, 1}, 24, -1, 1);
    Tape tape;
    Array<double> y = broadcast(F(), x, a);
    return tape.gradient(mean(broadcast(G(), y, x, a)), {x, a});
  };
  run(40);
  const int64_t compiles = jit::GetStats().compiles;
  const int64_t before = OnePassGradients();
  run(57);
  CHECK(OnePassGradients() == before + 1);
  CHECK(jit::GetStats().compiles == compiles);
}

TEST_CASE("one pass and fused sums: bitwise the same under 1, 2 and 8 threads") {
  const int64_t rows = 600, cols = 512;  // ~10 launch chunks
  for (bool by_row : {true, false}) {
    const Shape flags = by_row ? Shape{rows, 1} : Shape{1, cols};
    const int64_t nf = by_row ? rows : cols;
    std::vector<float> zv(static_cast<size_t>(nf)), zbv(static_cast<size_t>(nf));
    for (int64_t k = 0; k < nf; ++k) {
      zv[static_cast<size_t>(k)] = k % 3 == 0 ? 1.0f : 0.0f;
      zbv[static_cast<size_t>(k)] = k % 5 == 0 ? 0.0f : 1.0f;
    }
    auto z = Array<float>::from(zv, flags), zb = Array<float>::from(zbv, flags);
    auto c = Array<float>::uniform({rows, cols}, 30, -2, 2), f = Array<float>::uniform({rows, cols}, 31, -3, 3);
    auto i = Array<float>::uniform({rows, cols}, 32, -3, 3), g = Array<float>::uniform({rows, cols}, 33, -3, 3);
    auto cbar = Array<float>::uniform({rows, cols}, 34, -1, 1);
    std::vector<std::vector<float>> first;
    for (int threads : {1, 2, 8}) {
      CAPTURE(threads);
      jit::ThreadPool pool(threads);
      jit::ScopedThreadPool scope(pool);
      std::vector<std::vector<float>> got;
      {
        Tape tape;
        Array<float> cell = broadcast(Cell(), z, zb, c, f, i, g);
        const int64_t before = OnePassGradients();
        auto [loss, grads] = tape.value_and_gradient(sum(cell * cbar), {z, zb, c, f, i, g});
        CHECK(OnePassGradients() == before + 1);
        got.push_back(loss.to_vector());
        got.push_back(cell.to_vector());
        for (const auto& gr : grads) got.push_back(gr.to_vector());
      }
      got.push_back(sum(broadcast(Cell(), z, zb, c, f, i, g) * cbar, {0}, true).to_vector());
      got.push_back(sum(broadcast(Cell(), z, zb, c, f, i, g) * cbar, {1}, true).to_vector());
      if (first.empty()) {
        first = got;
        continue;
      }
      REQUIRE(got.size() == first.size());
      for (size_t k = 0; k < got.size(); ++k) {
        CAPTURE(k);
        CHECK(std::memcmp(got[k].data(), first[k].data(), got[k].size() * sizeof(float)) == 0);
      }
    }
  }
}

}  // namespace
}  // namespace dualcast
