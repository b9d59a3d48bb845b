// Tests of the tape without user kernels: sum_to, sum/mean/matmul/reshape/transpose gradients, accumulation, nesting.
//
// Losses are built from recorded ops only (a weighted sum is a recorded
// dot product: matmul of reshaped arrays), and checked against central
// finite differences in float64 or hand-written formulas. A hand-built
// broadcast node (f(x, y) = x * y with partials written by the test) checks
// the cache-mode reverse rule, including reduction over broadcast axes.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <thread>

#include "dualcast/array.hpp"
#include "dualcast/detail/broadcast_grad.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "jit/error.h"
#include "jit/ir/ir.h"

namespace dualcast {
namespace {

using D = Array<double>;

// sum(w ⊙ a) through recorded ops: (1, N) x (N, 1).
D WeightedSum(const D& w, const D& a) {
  return sum(matmul(reshape(w, {1, -1}), reshape(a, {-1, 1})));
}

// Central differences of `loss` with respect to every element of inputs[i].
std::vector<double> FiniteDifference(const std::function<double(std::vector<D>&)>& loss,
                                     std::vector<D> inputs, size_t i, double h = 1e-6) {
  std::vector<double> base = inputs[i].to_vector(), grad(base.size());
  for (size_t k = 0; k < base.size(); ++k) {
    std::vector<double> v = base;
    v[k] = base[k] + h;
    inputs[i] = D::from(v, inputs[i].shape());
    const double up = loss(inputs);
    v[k] = base[k] - h;
    inputs[i] = D::from(v, inputs[i].shape());
    const double down = loss(inputs);
    grad[k] = (up - down) / (2 * h);
  }
  return grad;
}

void CheckClose(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    INFO("element " << k << ": got " << got[k] << ", want " << want[k]);
    CHECK(std::abs(got[k] - want[k]) <= tol * (1 + std::abs(want[k])));
  }
}

// Naive sum_to: every element of `full` added to its target position.
std::vector<double> NaiveSumTo(const std::vector<double>& full, const Shape& full_shape,
                               const Shape& target) {
  int64_t tsize = 1;
  for (int64_t s : target) tsize *= s;
  std::vector<double> out(static_cast<size_t>(tsize), 0.0);
  std::vector<int64_t> index(full_shape.size(), 0);
  for (size_t e = 0; e < full.size(); ++e) {
    int64_t t = 0;
    for (size_t i = 0; i < target.size(); ++i) {
      size_t d = full_shape.size() - target.size() + i;
      t = t * target[i] + (target[i] == 1 ? 0 : index[d]);
    }
    out[static_cast<size_t>(t)] += full[e];
    for (size_t d = full_shape.size(); d-- > 0;) {
      if (++index[d] < full_shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

TEST_CASE("SumTo matches a naive reduction over random broadcast patterns") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int rank = static_cast<int>(rng() % 5);
    Shape full, target;
    for (int d = 0; d < rank; ++d) full.push_back(1 + static_cast<int64_t>(rng() % 4));
    const int trank = rank == 0 ? 0 : static_cast<int>(rng() % (rank + 1));
    for (int d = rank - trank; d < rank; ++d) target.push_back(rng() % 2 ? full[d] : 1);
    D a = D::normal(full, trial);
    auto got = detail::SumTo(*a.impl(), target);
    CHECK(got->shape == target);
    CheckClose(D(got).to_vector(), NaiveSumTo(a.to_vector(), full, target), 1e-12);
    // The same through a non-contiguous view: the transposed copy, transposed back.
    if (rank >= 2) {
      D t = a.transpose().copy().transpose();
      int big = 0;
      for (int64_t s : full) big += s > 1;
      CHECK(t.impl()->contiguous() == (big < 2));
      auto got_t = detail::SumTo(*t.impl(), target);
      CheckClose(D(got_t).to_vector(), NaiveSumTo(a.to_vector(), full, target), 1e-12);
    }
  }
}

TEST_CASE("SumTo: large float sums accumulate in double; shape errors are kShape") {
  const int64_t n = 1 << 20;
  auto a = Array<float>::full({4, n / 4}, 0.1f);
  auto total = detail::SumTo(*a.impl(), {});
  const double exact = double(0.1f) * n;
  CHECK(std::abs(Array<float>(total).item() - exact) <= 1e-6 * exact);
  auto rows = detail::SumTo(*a.impl(), {4, 1});
  for (float v : Array<float>(rows).to_vector()) CHECK(std::abs(v - exact / 4) <= 1e-6 * exact);
  auto cols = detail::SumTo(*a.impl(), {n / 4});
  CHECK(Array<float>(cols).at({5}) == doctest::Approx(0.4f).epsilon(1e-6));
  try {
    detail::SumTo(*a.impl(), {3, 1});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kShape);
  }
}

TEST_CASE("sum and mean over axes: values and gradients vs finite differences") {
  const Shape shape{3, 1, 4, 2};
  const std::vector<std::vector<int>> axes_cases = {{}, {0}, {-1}, {1, 2}, {0, 2, 3}, {0, 1, 2, 3}};
  for (const auto& axes : axes_cases) {
    for (bool keepdims : {false, true}) {
      for (bool is_mean : {false, true}) {
        CAPTURE(axes.size());
        CAPTURE(keepdims);
        CAPTURE(is_mean);
        auto loss = [&](std::vector<D>& in) {
          D r = is_mean ? mean(in[0], axes, keepdims) : sum(in[0], axes, keepdims);
          return WeightedSum(in[1], r);
        };
        D x = D::normal(shape, 1);
        D probe = is_mean ? mean(x, axes, keepdims) : sum(x, axes, keepdims);
        D w = D::normal(probe.shape(), 2);
        std::vector<D> in{x, w};
        Tape tape;
        auto g = tape.gradient(loss(in), {x});
        CHECK(g[0].shape() == shape);
        CheckClose(g[0].to_vector(), FiniteDifference([&](std::vector<D>& v) { return loss(v).item(); }, in, 0),
                   1e-7);
      }
    }
  }
  D x = D::arange(6).reshape({2, 3});
  CHECK(sum(x).item() == 15);
  CHECK(sum(x).rank() == 0);
  CHECK(sum(x, {0}).to_vector() == std::vector<double>{3, 5, 7});
  CHECK(mean(x, {1}, true).shape() == Shape{2, 1});
  CHECK(mean(x, {1}).to_vector() == std::vector<double>{1, 4});
  CHECK(std::isnan(mean(D::zeros({0})).item()));
  try {
    sum(x, {2});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kShape);
    CHECK(std::string(e.what()).find("axis 2 is out of range") != std::string::npos);
  }
}

TEST_CASE("matmul values, transposed views, and gradients vs finite differences") {
  D a = D::normal({3, 4}, 3), b = D::normal({4, 5}, 4), w = D::normal({3, 5}, 5);
  auto av = a.to_vector(), bv = b.to_vector();
  auto c = matmul(a, b).to_vector();
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += av[i * 4 + k] * bv[k * 5 + j];
      CHECK(c[i * 5 + j] == doctest::Approx(s).epsilon(1e-13));
    }
  }
  // A transposed view goes to BLAS as CblasTrans; a strided column slice is copied.
  D at = a.transpose().copy();
  CheckClose(matmul(at.transpose(), b).to_vector(), c, 1e-14);
  auto loss = [&](std::vector<D>& in) { return WeightedSum(in[2], matmul(in[0], transpose(in[1]))); };
  std::vector<D> in{a, b.transpose().copy(), w};
  Tape tape;
  auto g = tape.gradient(loss(in), {in[0], in[1]});
  auto fd = [&](std::vector<D>& v) { return loss(v).item(); };
  CheckClose(g[0].to_vector(), FiniteDifference(fd, in, 0), 1e-7);
  CheckClose(g[1].to_vector(), FiniteDifference(fd, in, 1), 1e-7);
  try {
    matmul(a, a);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kShape);
  }
  CHECK(matmul(D::zeros({2, 0}), D::zeros({0, 3})).to_vector() == std::vector<double>(6, 0.0));
}

// Found by a bug hunt: a stride above 2^31 - 1 was refused ("exceeds the 32-bit
// BLAS interface") even along a size-1 dim, where it is never used, and where a
// copy would have served otherwise; NumPy gives [[6]]. Such operands are now
// read in place or copied; the values are checked against a hand sum.
TEST_CASE("matmul of views with strides past 32 bits: computed (in place or through a copy), not refused") {
  static double buf[3] = {1, 2, 3};
  const int64_t huge = int64_t{1} << 40;
  const D row = D::view(buf, {1, 3}, {huge, 1});  // one row: its row stride is never used
  const D col = D::view(buf, {3, 1}, {1, huge});  // one column: likewise
  CHECK(matmul(row, D::ones({3, 1})).to_vector() == std::vector<double>{6});
  CHECK(matmul(D::ones({1, 3}), col).to_vector() == std::vector<double>{6});
  CHECK(matmul(col, row).to_vector() == std::vector<double>{1, 2, 3, 2, 4, 6, 3, 6, 9});
  // Stride 0 along a dim (one element repeated) with a huge stride along the other: a copy.
  const D rep = D::view(buf, {2, 3}, {0, 1});
  CHECK(matmul(rep, col).to_vector() == std::vector<double>{14, 14});
}

TEST_CASE("reshape, transpose and copy: methods and free functions are one operation to the tape") {
  D x = D::normal({2, 3, 4}, 6), w = D::normal({4, 6}, 7);
  auto free_fn = [&](std::vector<D>& in) {
    return WeightedSum(in[1], reshape(transpose(in[0], {2, 0, 1}), {4, 6}));
  };
  auto methods = [&](std::vector<D>& in) {
    return WeightedSum(in[1], in[0].transpose({2, 0, 1}).reshape({4, 6}));
  };
  auto copied = [&](std::vector<D>& in) {
    return WeightedSum(in[1], in[0].transpose({2, 0, 1}).copy().reshape({4, -1}));
  };
  std::vector<D> in{x, w};
  const std::vector<double> fd =
      FiniteDifference([&](std::vector<D>& v) { return free_fn(v).item(); }, in, 0);
  Tape tape;
  CheckClose(tape.gradient(free_fn(in), {x})[0].to_vector(), fd, 1e-7);
  CheckClose(tape.gradient(methods(in), {x})[0].to_vector(), fd, 1e-7);
  CheckClose(tape.gradient(copied(in), {x})[0].to_vector(), fd, 1e-7);
  // A non-contiguous reshape copies first; the gradient still flows.
  D y = x.transpose().reshape({6, 4});
  auto g = tape.gradient(WeightedSum(D::ones({6, 4}), y), {x, y});
  CHECK(g[0].to_vector() == std::vector<double>(24, 1.0));
  CHECK(g[1].to_vector() == std::vector<double>(24, 1.0));
}

// f(x, y) = x * y over x (n, 1) and y (1, m): a broadcast node built by hand,
// with its partials P[0][0] = y, P[0][1] = x (full shape), as the forward
// kernel would have written them.
std::shared_ptr<const jit::Function> MulFunction() {
  auto f = std::make_shared<jit::Function>("mul");
  jit::Builder b(*f);
  jit::ValueId x = b.Input(jit::Type::kF64), y = b.Input(jit::Type::kF64);
  b.Return({b.Mul(x, y)});
  return f;
}

D HandBroadcastMul(const D& x, const D& y) {
  const int64_t n = x.shape()[0], m = y.shape()[1];
  auto xv = x.to_vector(), yv = y.to_vector();
  std::vector<double> out, px, py;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      out.push_back(xv[i] * yv[j]);
      px.push_back(yv[j]);
      py.push_back(xv[i]);
    }
  }
  D result = D::from(out, {n, m});
  if (detail::TapeActive()) {
    detail::BroadcastGradInfo info;
    info.name = "mul";
    info.primal = MulFunction();
    info.leaves = {x.impl(), y.impl()};
    info.out_shape = {n, m};
    info.wrt = {0, 1};
    info.partials = {D::from(px, {n, m}).impl(), D::from(py, {n, m}).impl()};
    detail::Record(detail::MakeBroadcastGradNode(std::move(info)), {result.impl()});
  }
  return result;
}

TEST_CASE("broadcast node, cache mode: x̄ = sum over the broadcast axis of ȳ ⊙ P") {
  D x = D::normal({3, 1}, 8), y = D::normal({1, 5}, 9), w = D::normal({3, 5}, 10);
  Tape tape;
  D loss = WeightedSum(w, HandBroadcastMul(x, y));
  auto g = tape.gradient(loss, {x, y, w});
  auto xv = x.to_vector(), yv = y.to_vector(), wv = w.to_vector();
  std::vector<double> gx(3, 0), gy(5, 0), gw;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j) {
      gx[i] += wv[i * 5 + j] * yv[j];
      gy[j] += wv[i * 5 + j] * xv[i];
      gw.push_back(xv[i] * yv[j]);
    }
  }
  CHECK(g[0].shape() == Shape{3, 1});
  CHECK(g[1].shape() == Shape{1, 5});
  CheckClose(g[0].to_vector(), gx, 1e-14);
  CheckClose(g[1].to_vector(), gy, 1e-14);
  CheckClose(g[2].to_vector(), gw, 1e-14);
}

TEST_CASE("a node's saved arrays are released when no tape holds it any more") {
  D x = D::normal({3, 1}, 17), y = D::normal({1, 4}, 18);
  D kept_by_outer, kept_by_none;
  {
    Tape outer;
    {
      Tape inner;
      kept_by_outer = HandBroadcastMul(x, y);
    }
    CHECK(kept_by_outer.impl()->grad_fn->inputs.size() == 2);  // the outer tape still needs it
    auto g = outer.gradient(sum(kept_by_outer), {x});
    CHECK(g[0].shape() == Shape{3, 1});
  }
  CHECK(kept_by_outer.impl()->grad_fn->inputs.empty());
  {
    Tape only;
    kept_by_none = HandBroadcastMul(x, y);
  }
  CHECK(kept_by_none.impl()->grad_fn->inputs.empty());
  CHECK(kept_by_none.to_vector().size() == 12);  // the values themselves stay
}

TEST_CASE("a tape records only its own thread's operations") {
  D x = D::normal({5}, 19);
  Tape tape;
  std::thread other([&] {
    CHECK_FALSE(detail::TapeActive());
    D s = sum(x);
    CHECK(s.impl()->grad_fn == nullptr);
  });
  other.join();
  CHECK(tape.size() == 0);
}

TEST_CASE("accumulate_gradient adds into user buffers and strided views; errors write nothing") {
  D x = D::normal({2, 3}, 11), w = D::normal({2, 3}, 12);
  Tape tape;
  D loss = WeightedSum(w, x);  // ∂/∂x = w
  std::vector<double> user(12, 1.0);  // a (2, 3) view with column stride 2
  D gview = D::view(user.data(), {2, 3}, {6, 2});
  D gowned = D::full({2, 3}, 10.0);
  tape.accumulate_gradient(loss, {x, x}, {gview, gowned});
  auto wv = w.to_vector();
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      CHECK(user[i * 6 + j * 2] == 1.0 + wv[i * 3 + j]);
      CHECK(user[i * 6 + j * 2 + 1] == 1.0);  // untouched gaps
    }
  }
  CHECK(gowned.at({1, 2}) == 10.0 + wv[5]);
  const std::vector<double> before = user;
  try {
    tape.accumulate_gradient(loss, {x, w}, {gview, D::zeros({3, 2})});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kShape);
  }
  CHECK(user == before);
  const std::vector<double> constant(6, 0.0);
  try {
    tape.accumulate_gradient(loss, {x}, {D::view(constant.data(), {2, 3})});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
  }
}

TEST_CASE("loss must have one element; unrelated inputs are an error (or zeros when asked); repeated inputs get copies") {
  D x = D::normal({2, 2}, 13), unrelated = D::normal({3}, 14);
  Tape tape;
  D s = sum(x, {0});
  try {
    tape.gradient(s, {x});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kShape);
    CHECK(std::string(e.what()).find("exactly one element") != std::string::npos);
  }
  try {
    tape.gradient(sum(x), {x, unrelated, x});
    FAIL("an unused input got a gradient");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
    const std::string m = e.what();
    CHECK(m.find("input 2 (shape [3]) does not reach the loss") != std::string::npos);
    CHECK(m.find("allow_unused") != std::string::npos);
  }
  // accumulate_gradient refuses the same way and writes nothing.
  D buf_x = D::zeros({2, 2}), buf_u = D::ones({3});
  CHECK_THROWS_AS(tape.accumulate_gradient(sum(x), {x, unrelated}, {buf_x, buf_u}), Error);
  CHECK(buf_x.to_vector() == std::vector<double>(4, 0.0));
  CHECK(buf_u.to_vector() == std::vector<double>(3, 1.0));

  auto g = tape.gradient(sum(x), {x, unrelated, x}, GradientOptions{.allow_unused = true});
  CHECK(g[0].to_vector() == std::vector<double>(4, 1.0));
  CHECK(g[1].to_vector() == std::vector<double>(3, 0.0));
  CHECK(g[2].to_vector() == std::vector<double>(4, 1.0));
  CHECK(g[0].data() != g[2].data());
  g[0].mutable_data()[0] = 5;  // a contiguous, independent array
  CHECK(g[2].at({0, 0}) == 1.0);
  // The loss itself as an input.
  D l = sum(x);
  CHECK(tape.gradient(l, {l})[0].item() == 1.0);
}

TEST_CASE("nested tapes: the inner records on both; after it ends the outer still works") {
  D x = D::normal({4}, 15);
  Tape outer;
  D a = sum(x);  // outer only
  D b;
  {
    Tape inner(PartialsMode::kRecompute);
    CHECK(detail::ActivePartialsMode(1) == PartialsMode::kRecompute);
    b = mean(x);  // both
    CHECK(inner.size() == 1);
    CHECK(inner.gradient(b, {x})[0].to_vector() == std::vector<double>(4, 0.25));
    // `a` was recorded before the inner tape: for it, a is a constant, and
    // the error says so (zeros only when asked for).
    try {
      inner.gradient(a, {x});
      FAIL("a gradient through an array computed before the tape was returned");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("computed by 'sum' outside this tape's record") !=
            std::string::npos);
    }
    // allow_unused does not turn it into zeros: the loss does depend on x.
    CHECK_THROWS_AS(inner.gradient(a, {x}, {.allow_unused = true}), Error);
  }
  CHECK(outer.size() == 2);
  CHECK(detail::ActivePartialsMode(1) == PartialsMode::kCache);
  CHECK(outer.gradient(b, {x})[0].to_vector() == std::vector<double>(4, 0.25));
  CHECK(outer.gradient(a, {x})[0].to_vector() == std::vector<double>(4, 1.0));
  outer.clear();
  CHECK_THROWS_AS(outer.gradient(b, {x}), Error);
  CHECK_THROWS_AS(outer.gradient(b, {x}, {.allow_unused = true}), Error);
}

// A tape keeps its first few records inline (Tape::RecordList): past them,
// and again after clear(), every record must still be swept.
TEST_CASE("a cleared tape records again, past its inline records") {
  D x = D::normal({4}, 17);
  Tape tape;
  for (int pass = 0; pass < 2; ++pass) {
    tape.clear();
    CHECK(tape.size() == 0);
    D y = x;
    for (int k = 0; k < 7; ++k) {
      y = y * 2.0 + 1.0;
      y.eval();  // one recorded node per step
    }
    CHECK(tape.size() == 7);
    // d/dx sum(2^7 x + 127) = 128 per element, exactly.
    CHECK(tape.gradient(sum(y), {x})[0].to_vector() == std::vector<double>(4, 128.0));
    tape.clear();
    // Its records are gone: y is a constant to the cleared tape (the sum
    // computed for this attempt is recorded, hence the clear at the top).
    CHECK_THROWS_AS(tape.gradient(sum(y), {x}), Error);
  }
}

TEST_CASE("kAuto picks recompute above the budget; no tape means nothing is recorded") {
  CHECK_FALSE(detail::TapeActive());
  D x = D::normal({3}, 16);
  D s = sum(x);
  CHECK(s.impl()->grad_fn == nullptr);
  Tape tape(PartialsMode::kAuto, 1000);
  CHECK(detail::TapeActive());
  CHECK(detail::ActivePartialsMode(1000) == PartialsMode::kCache);
  CHECK(detail::ActivePartialsMode(1001) == PartialsMode::kRecompute);
}

}  // namespace
}  // namespace dualcast
