// Tests of the max/min/prod reduced outputs and of max, min, prod, logsumexp, var, norm, argmax, argmin against double loops and central differences.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "dualcast/array.hpp"
#include "dualcast/array_ops.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/detail/execute.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "jit/codegen/broadcast_layout.h"
#include "jit/cpu/thread_pool.h"
#include "jit/error.h"
#include "jit/stats.h"
#include "runtime/element_access.h"
#include "runtime/lazy_reduce.h"

namespace dualcast {
namespace {

using detail::ArrayImpl;
using detail::DType;
using detail::ReduceKind;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const char* KindName(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSum: return "sum";
    case ReduceKind::kProd: return "prod";
    case ReduceKind::kMax: return "max";
    case ReduceKind::kMin: return "min";
  }
  return "?";
}
constexpr double kInf = std::numeric_limits<double>::infinity();

// The test's own combine (NumPy: NaN wins max/min), independent of kernel_spec.cc.
double Combine(ReduceKind kind, double a, double b) {
  if (kind == ReduceKind::kProd) return a * b;
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  return kind == ReduceKind::kMax ? (a > b ? a : b) : (a < b ? a : b);
}

// f(x, y) = (x * y, x + y): output 0 reduced by `kind`, output 1 summed, in one kernel.
std::shared_ptr<const jit::Function> TwoOutputs(DType dtype) {
  const jit::Type t = dtype == DType::kF32 ? jit::Type::kF32 : jit::Type::kF64;
  auto f = std::make_shared<jit::Function>("kinds_test");
  jit::Builder b(*f);
  jit::ValueId x = b.Input(t), y = b.Input(t);
  b.Return({b.Mul(x, y), b.Add(x, y)});
  return f;
}

using test::At;
using test::Count;
using test::Set;

// Values near 1 (so long products neither overflow nor underflow), all distinct.
std::shared_ptr<ArrayImpl> Filled(DType dtype, const Shape& shape, int seed) {
  return test::FilledWith(dtype, shape,
                          [&](int64_t i) { return 1 + 0.003 * std::sin(0.37 * static_cast<double>(i) + seed); });
}

// Each gradient entry against central differences of `loss` (h = 1e-6, relative 1e-6).
template <class Loss>
void CheckCentralDifferences(const std::vector<double>& grad, const std::vector<double>& x, Loss&& loss) {
  for (size_t e = 0; e < x.size(); ++e) {
    std::vector<double> hi = x, lo = x;
    hi[e] += 1e-6;
    lo[e] -= 1e-6;
    CHECK(grad[e] == doctest::Approx((loss(hi) - loss(lo)) / 2e-6).epsilon(1e-6));
  }
}

// Reference: x (full shape) times y (shape (1, .., d_last) broadcast), each
// product rounded to the element type, combined in double in row-major order.
std::vector<double> Reference(ReduceKind kind, const ArrayImpl& x, const ArrayImpl& y, const Shape& full,
                              const Shape& target) {
  const double start = kind == ReduceKind::kProd ? 1.0 : kind == ReduceKind::kMax ? -kInf : kInf;
  std::vector<double> out(static_cast<size_t>(Count(target)), start);
  const int64_t last = full.back();
  for (int64_t flat = 0; flat < Count(full); ++flat) {
    int64_t rest = flat, t = 0, step = 1;
    for (size_t d = full.size(); d-- > 0;) {
      const int64_t idx = rest % full[d];
      rest /= full[d];
      if (target[d] != 1) t += idx * step;
      step *= target[d];
    }
    double v = At(x, flat) * At(y, flat % last);
    if (x.dtype == DType::kF32) v = static_cast<float>(v);
    out[static_cast<size_t>(t)] = Combine(kind, out[static_cast<size_t>(t)], v);
  }
  return out;
}

std::vector<char> Bytes(const ArrayImpl& a) {
  std::vector<char> b(static_cast<size_t>(a.size()) * (a.dtype == DType::kF32 ? 4 : 8));
  std::memcpy(b.data(), a.data(), b.size());
  return b;
}

TEST_CASE("reduce kinds: max, min, prod over every axis set, beside a sum in one kernel, 1/2/8 threads bitwise") {
  const std::vector<Shape> fulls = {{5, 33, 17}, {3, 70001}, {200001}, {40, 3001}};
  for (DType dtype : {DType::kF32, DType::kF64}) {
    auto fn = TwoOutputs(dtype);
    for (const Shape& full : fulls) {
      const int rank = static_cast<int>(full.size());
      Shape yshape(full.size(), 1);
      yshape.back() = full.back();
      auto x = Filled(dtype, full, 1), y = Filled(dtype, yshape, 2);
      // A NaN in x and infinities: max/min propagate the NaN along its rows only.
      Set(*x, Count(full) / 3, kNaN);
      Set(*x, Count(full) / 2, kInf);
      Set(*x, Count(full) / 5, -kInf);
      for (uint32_t mask = 1; mask < (1u << rank); ++mask) {
        Shape target = full;
        for (int d = 0; d < rank; ++d) {
          if (mask >> d & 1u) target[static_cast<size_t>(d)] = 1;
        }
        for (ReduceKind kind : {ReduceKind::kMax, ReduceKind::kMin, ReduceKind::kProd}) {
          const std::vector<double> want = Reference(kind, *x, *y, full, target);
          std::vector<char> first;
          for (int threads : {1, 2, 8}) {
            jit::ThreadPool pool(threads);
            jit::ScopedThreadPool scope(pool);
            detail::ExecuteOptions o;
            o.output_shapes = {target, target};
            o.reduce_ops = {kind, ReduceKind::kSum};
            auto outs = detail::Execute("kinds_test", fn, {x, y}, o);
            const std::string what = std::string(KindName(kind)) + " " +
                                     jit::FormatShape(full) + " -> " + jit::FormatShape(target);
            CAPTURE(what);
            CAPTURE(threads);
            if (threads == 1) {
              first = Bytes(*outs[0]);
              REQUIRE(outs[0]->size() == static_cast<int64_t>(want.size()));
              for (size_t e = 0; e < want.size(); ++e) {
                const double got = At(*outs[0], static_cast<int64_t>(e));
                const double w = dtype == DType::kF32 ? static_cast<float>(want[e]) : want[e];
                if (std::isnan(w)) {
                  CHECK(std::isnan(got));
                } else if (kind == ReduceKind::kProd && std::isfinite(w)) {  // another order of the same products
                  CHECK(got == doctest::Approx(w).epsilon(dtype == DType::kF32 ? 1e-6 : 1e-12));
                } else {
                  CHECK(got == w);  // max/min are exact, so is an infinite product
                }
              }
            } else {
              CHECK(Bytes(*outs[0]) == first);
            }
          }
        }
      }
    }
  }
}

// Host reference for the public ops: `op` over the dims in `reduced` of a
// row-major array of `shape`, keepdims layout.
std::vector<double> HostReduce(ReduceKind kind, const std::vector<double>& v, const Shape& shape,
                               const std::vector<bool>& reduced) {
  Shape keep = shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) keep[d] = 1;
  }
  const double start = kind == ReduceKind::kProd ? 1.0 : kind == ReduceKind::kMax ? -kInf : kInf;
  std::vector<double> out(static_cast<size_t>(Count(keep)), start);
  for (int64_t flat = 0; flat < Count(shape); ++flat) {
    int64_t rest = flat, t = 0, step = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t idx = rest % shape[d];
      rest /= shape[d];
      if (!reduced[d]) t += idx * step;
      step *= keep[d];
    }
    out[static_cast<size_t>(t)] = Combine(kind, out[static_cast<size_t>(t)], v[static_cast<size_t>(flat)]);
  }
  return out;
}

Array<double> Op(ReduceKind kind, const Array<double>& a, const std::vector<int>& axes, bool keepdims) {
  switch (kind) {
    case ReduceKind::kMax: return max(a, axes, keepdims);
    case ReduceKind::kMin: return min(a, axes, keepdims);
    default: return prod(a, axes, keepdims);
  }
}

TEST_CASE("reduce kinds: max/min/prod of a pending operand, all axes, keepdims") {
  const Shape shape = {4, 7, 9};
  auto x = Array<double>::uniform(shape, 11, 0.9, 1.1);
  auto y = Array<double>::uniform({7, 1}, 12, 0.9, 1.1);
  const std::vector<double> xv = x.to_vector(), yv = y.to_vector();
  std::vector<double> pv(xv.size());
  for (size_t e = 0; e < xv.size(); ++e) pv[e] = xv[e] * yv[(e / 9) % 7];
  for (ReduceKind kind : {ReduceKind::kMax, ReduceKind::kMin, ReduceKind::kProd}) {
    for (uint32_t mask = 0; mask < 8; ++mask) {  // 0: an empty list reduces nothing (axis=())
      std::vector<int> axes;
      std::vector<bool> reduced(3);
      for (int d = 0; d < 3; ++d) {
        reduced[static_cast<size_t>(d)] = mask >> d & 1u;
        if (reduced[static_cast<size_t>(d)]) axes.push_back(d - (d == 2 ? 3 : 0));  // -1 for the last
      }
      for (bool keepdims : {false, true}) {
        CAPTURE(KindName(kind));
        CAPTURE(mask);
        CAPTURE(keepdims);
        Array<double> r = Op(kind, x * y, axes, keepdims);
        const std::vector<double> got = r.to_vector();
        Shape want_shape;
        for (int d = 0; d < 3; ++d) {
          if (!reduced[static_cast<size_t>(d)]) want_shape.push_back(shape[static_cast<size_t>(d)]);
          else if (keepdims) want_shape.push_back(1);
        }
        CHECK(r.shape() == want_shape);
        const std::vector<double> want = HostReduce(kind, pv, shape, reduced);
        REQUIRE(got.size() == want.size());
        for (size_t e = 0; e < want.size(); ++e) {
          CHECK(got[e] == doctest::Approx(want[e]).epsilon(1e-14));
        }
        // The computed operand takes its own generated kernel: the same values.
        Array<double> p = x * y;
        p.eval();
        const std::vector<double> again = Op(kind, p, axes, keepdims).to_vector();
        for (size_t e = 0; e < want.size(); ++e) {
          CHECK(again[e] == doctest::Approx(want[e]).epsilon(1e-14));
        }
      }
    }
  }
}

TEST_CASE("reduce kinds: a max feeding a later broadcast (stable softmax rows)") {
  auto x = Array<double>::uniform({6, 50}, 21, -30, 30);
  auto s = Array<double>::uniform({1, 50}, 22, 0.5, 2);
  Array<double> z = x * s;                            // pending
  Array<double> m = max(z, {1}, true);
  Array<double> e = exp(z - m);                       // m cuts the group: a second kernel
  Array<double> p = e / sum(e, {1}, true);
  const std::vector<double> xv = x.to_vector(), sv = s.to_vector(), got = p.to_vector();
  for (int i = 0; i < 6; ++i) {
    double mx = -kInf, total = 0;
    for (int j = 0; j < 50; ++j) mx = std::fmax(mx, xv[i * 50 + j] * sv[j]);
    for (int j = 0; j < 50; ++j) total += std::exp(xv[i * 50 + j] * sv[j] - mx);
    for (int j = 0; j < 50; ++j) {
      CHECK(got[i * 50 + j] == doctest::Approx(std::exp(xv[i * 50 + j] * sv[j] - mx) / total).epsilon(1e-12));
    }
  }
}

TEST_CASE("reduce kinds: empty reductions follow NumPy, NaN propagates through max") {
  auto e = Array<double>::ones({3, 0});
  Array<double> pe = e * 2.0;
  CHECK_THROWS_WITH_AS(max(pe, {1}), doctest::Contains("max of an empty slice"), Error);
  CHECK_THROWS_WITH_AS(min(e, {1}), doctest::Contains("min of an empty slice"), Error);
  const std::vector<double> ones = prod(pe, {1}).to_vector();
  CHECK(ones == std::vector<double>{1, 1, 1});
  CHECK(max(pe, {0}).shape() == Shape{0});  // nothing to reduce into: an empty result, no error

  auto x = Array<double>::from({1, 2, 3, 4, 5, 6}, {2, 3});
  auto n = Array<double>::from({1, kNaN, 1}, {3});
  const std::vector<double> m = max(x * n, {0}).to_vector();  // column 1 holds a NaN
  CHECK(m[0] == 4);
  CHECK(std::isnan(m[1]));
  CHECK(m[2] == 6);
  const std::vector<double> lo = min(x * n, {1}).to_vector();  // both rows hold it
  CHECK(std::isnan(lo[0]));
  CHECK(std::isnan(lo[1]));
}

TEST_CASE("reduce kinds: under a tape, max/prod of a pending operand match central differences") {
  auto x = Array<double>::uniform({3, 5}, 31, 0.5, 2.0);
  for (ReduceKind kind : {ReduceKind::kMax, ReduceKind::kProd}) {
    CAPTURE(KindName(kind));
    Tape tape;
    Array<double> loss = sum(Op(kind, x * x, {1}, false) * Array<double>::from({1, 2, 3}, {3}));
    std::vector<Array<double>> g = tape.gradient(loss, {x});
    const std::vector<double> xv = x.to_vector(), gv = g[0].to_vector();
    // Central differences of the same loss on the host.
    auto host_loss = [&](std::vector<double> v) {
      double total = 0;
      for (int i = 0; i < 3; ++i) {
        double r = kind == ReduceKind::kProd ? 1 : -kInf;
        for (int j = 0; j < 5; ++j) r = Combine(kind, r, v[i * 5 + j] * v[i * 5 + j]);
        total += (i + 1) * r;
      }
      return total;
    };
    CheckCentralDifferences(gv, xv, host_loss);
  }
}

double Identity(ReduceKind kind) {
  return kind == ReduceKind::kMax ? -kInf : kind == ReduceKind::kMin ? kInf : kind == ReduceKind::kProd ? 1 : 0;
}

// max/min/prod of a pending operand join the kernel that produces it
// (lazy_reduce.cc). Off the tape: one kernel, the product never stored. A
// tape opened after max(x * x) was made, while it is still pending:
// materialised under that tape, it records max's rule (never a sum's), so
// the gradient matches central differences.
TEST_CASE("reduce kinds: a pending max/min/prod fuses into its producer; a tape opened later records its rule") {
  auto x = Array<double>::uniform({4, 6}, 41, 0.5, 2.0);
  const std::vector<double> xv = x.to_vector();
  for (ReduceKind kind : {ReduceKind::kMax, ReduceKind::kMin, ReduceKind::kProd}) {
    CAPTURE(KindName(kind));
    auto op = [&](const Array<double>& a) { return Op(kind, a, {1}, false); };
    // Off the tape: fused, the operand never written.
    const auto before = detail::GetFusedReductionCounts();
    Array<double> r = op(x * x);
    CHECK(r.is_pending());
    const std::vector<double> got = r.to_vector();
    const auto after = detail::GetFusedReductionCounts();
    CHECK(after.fused == before.fused + 1);
    CHECK(after.operands_written == before.operands_written);
    for (int i = 0; i < 4; ++i) {
      double want = Identity(kind);
      for (int j = 0; j < 6; ++j) want = Combine(kind, want, xv[i * 6 + j] * xv[i * 6 + j]);
      if (kind == ReduceKind::kProd) {
        CHECK(got[static_cast<size_t>(i)] == doctest::Approx(want).epsilon(1e-15));  // another order
      } else {
        CHECK(got[static_cast<size_t>(i)] == want);
      }
    }
    // Made before the tape, still pending when it opens: recorded when computed.
    Array<double> pending = op(x * x);
    Tape tape;
    Array<double> loss = sum(pending * Array<double>::from({1, -2, 3, 0.5}, {4}));
    std::vector<Array<double>> g = tape.gradient(loss, {x});
    const std::vector<double> gv = g[0].to_vector();
    auto host_loss = [&](std::vector<double> v) {
      const double w[4] = {1, -2, 3, 0.5};
      double total = 0;
      for (int i = 0; i < 4; ++i) {
        double m = Identity(kind);
        for (int j = 0; j < 6; ++j) m = Combine(kind, m, v[i * 6 + j] * v[i * 6 + j]);
        total += w[i] * m;
      }
      return total;
    };
    CheckCentralDifferences(gv, xv, host_loss);
    const int nonzero = static_cast<int>(std::count_if(gv.begin(), gv.end(), [](double g) { return g != 0; }));
    CHECK(nonzero == (kind == ReduceKind::kProd ? 24 : 4));  // one extreme per row (no ties)
  }
}

// prod is the plain product, as NumPy: a zero beside an infinity or a NaN
// gives NaN (never a silent 0), pending (fused) or computed alike.
TEST_CASE("reduce kinds: prod follows IEEE like NumPy: 0 * inf and NaN propagate, empty is 1") {
  const std::vector<double> rows = {2, 0, kInf, 3,  0, kNaN, 1, 1,  0, 0, 5, 2,  -1, 2, -0.5, 4};
  const std::vector<double> want = {kNaN, kNaN, 0, 4};
  auto x = Array<double>::from(rows, {4, 4});
  const std::vector<double> computed = prod(x, {1}).to_vector();
  const std::vector<double> pending = prod(x * 1.0, {1}).to_vector();
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    for (double got : {computed[i], pending[i]}) {
      if (std::isnan(want[i])) {
        CHECK(std::isnan(got));
      } else {
        CHECK(got == want[i]);
      }
    }
  }
  CHECK(prod(Array<double>::zeros({3, 0}), {1}).to_vector() == std::vector<double>{1, 1, 1});
  CHECK(prod(Array<double>::zeros({3, 0}) * 2.0, {1}).to_vector() == std::vector<double>{1, 1, 1});
}

// Found by a bug hunt: the adjoint was P / a_i, so a slot holding +-inf or NaN
// got inf/inf or NaN instead of the others' product ([inf, 2, 3]: NaN, not 6),
// and with two zeros beside a NaN every slot got 0 under a NaN value. The
// reference here is the rule itself, prod_{k != i} a_k, multiplied out in IEEE
// double for every slot; every special value and pair of them, in 4-element rows.
TEST_CASE("reduce kinds: prod's gradient is the product of the others with 0, +-inf and NaN in the slice") {
  const std::vector<double> values = {0.0, -0.0, kInf, -kInf, kNaN, 2.0, -3.0};
  std::vector<double> rows;
  for (double a : values) {
    for (double b : values) {
      for (double c : {0.0, kInf, kNaN, 0.5}) rows.insert(rows.end(), {a, b, c, -4.0});
    }
  }
  const int64_t n = static_cast<int64_t>(rows.size() / 4);
  std::vector<double> want(rows.size());
  for (int64_t r = 0; r < n; ++r) {
    for (int i = 0; i < 4; ++i) {
      double others = 1;
      for (int k = 0; k < 4; ++k) {
        if (k != i) others *= rows[static_cast<size_t>(r * 4 + k)];
      }
      want[static_cast<size_t>(r * 4 + i)] = others;
    }
  }
  auto x = Array<double>::from(rows, {n, 4});
  for (bool pending : {false, true}) {
    CAPTURE(pending);
    Tape tape;
    Array<double> p = pending ? prod(x * 1.0, {1}) : prod(x, {1});
    const std::vector<double> g = tape.gradient(sum(p), {x})[0].to_vector();
    for (size_t k = 0; k < want.size(); ++k) {
      CAPTURE(k);
      CAPTURE(rows[k - k % 4]);
      CAPTURE(rows[k - k % 4 + 1]);
      CAPTURE(rows[k - k % 4 + 2]);
      if (std::isnan(want[k])) {
        CHECK(std::isnan(g[k]));
      } else {
        CHECK(g[k] == want[k]);
        CHECK(std::signbit(g[k]) == std::signbit(want[k]));
      }
    }
  }
  // Over no axes prod is the identity: gradient 1 for any value (was NaN at inf and NaN).
  Tape tape;
  auto v = Array<double>::from({kInf, kNaN, 0.0, 2.0}, {4});
  CHECK(tape.gradient(sum(prod(v, {})), {v})[0].to_vector() == std::vector<double>{1, 1, 1, 1});
}

// The test's own argmax/argmin: first position of the extreme along `axis` of
// a row-major array (-1: over all elements), a NaN counting as the extreme.
std::vector<double> HostArg(bool is_max, const std::vector<double>& v, const Shape& shape, int axis) {
  int64_t outer = 1, len = static_cast<int64_t>(v.size()), inner = 1;
  if (axis >= 0) {
    len = shape[static_cast<size_t>(axis)];
    for (int d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  }
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      int64_t best = 0;
      for (int64_t k = 0; k < len; ++k) {
        const double e = v[static_cast<size_t>((o * len + k) * inner + in)];
        const double b = v[static_cast<size_t>((o * len + best) * inner + in)];
        if (std::isnan(e)) {
          best = k;
          break;
        }
        if (is_max ? e > b : e < b) best = k;
      }
      out.push_back(static_cast<double>(best));
    }
  }
  return out;
}

// Generated kernels (the extreme, then the least position holding it): every
// axis, keepdims, many ties (values rounded to a few levels, signed zeros),
// NaNs in some slices, a pending operand (its max joins the producer) and a
// computed one, float64 and float32, 1/2/8 threads with the same result.
TEST_CASE("reduce kinds: argmax/argmin match a first-occurrence host loop on every axis, ties and NaN") {
  const Shape shape = {5, 7, 9};
  auto u = Array<double>::uniform(shape, 71, -2, 2);
  std::vector<double> v = u.to_vector();
  for (double& e : v) e = std::round(e);  // -2..2: ties everywhere, and -0.0 beside 0.0
  v[3] = kNaN;                            // NaNs in a few slices, after their extreme
  v[100] = kNaN;
  v[200] = -0.0;
  const auto x = Array<double>::from(v, shape);
  for (bool is_max : {true, false}) {
    for (int axis : {-1, 0, 1, 2}) {
      for (bool keepdims : {false, true}) {
        CAPTURE(is_max);
        CAPTURE(axis);
        CAPTURE(keepdims);
        auto arg = [&](const auto& a) {
          if (axis < 0) return is_max ? argmax(a) : argmin(a);
          return is_max ? argmax(a, axis, keepdims) : argmin(a, axis, keepdims);
        };
        const std::vector<double> want = HostArg(is_max, v, shape, axis);
        Shape want_shape;
        for (int d = 0; d < 3 && axis >= 0; ++d) {
          if (d != axis) want_shape.push_back(shape[static_cast<size_t>(d)]);
          else if (keepdims) want_shape.push_back(1);
        }
        const auto before = detail::GetFusedReductionCounts();
        const Array<double> fused = arg(x * 1.0);  // pending: the extreme is fused
        CHECK(detail::GetFusedReductionCounts().fused == before.fused + 1);
        CHECK(fused.shape() == want_shape);
        CHECK(fused.to_vector() == want);
        CHECK(arg(x).to_vector() == want);
        const Array<float> xf = Array<float>::from(std::vector<float>(v.begin(), v.end()), shape);
        CHECK(arg(xf).to_vector() == std::vector<float>(want.begin(), want.end()));
      }
    }
  }
  // The same positions under any thread count (the min over positions is exact).
  auto big = Array<float>::uniform({300, 2001}, 72, -3, 3);
  std::vector<float> first;
  for (int threads : {1, 2, 8}) {
    jit::ThreadPool pool(threads);
    jit::ScopedThreadPool scope(pool);
    const std::vector<float> now = argmax(big * 1.0f, 0).to_vector();
    if (first.empty()) first = now;
    CHECK(now == first);
  }
  const std::vector<float> bv = big.to_vector();
  const std::vector<double> col = HostArg(true, std::vector<double>(bv.begin(), bv.end()), {300, 2001}, 0);
  CHECK(std::vector<double>(first.begin(), first.end()) == col);
  // Errors name the op and the sizes.
  CHECK_THROWS_WITH_AS(argmax(Array<double>::zeros({3, 0}), 1), doctest::Contains("argmax: an empty slice"), Error);
  CHECK(argmin(Array<double>::zeros({0, 3}), 1).shape() == Shape{0});  // no slices: no error
  CHECK_THROWS_WITH_AS(argmin(Array<float>::zeros({(int64_t{1} << 24) + 2})),
                       doctest::Contains("not exact in float32"), Error);
}

// Host logsumexp / var (ddof) / 2-norm of each slice, keepdims layout.
std::vector<double> HostComposite(const std::string& op, const std::vector<double>& v, const Shape& shape,
                                  const std::vector<bool>& reduced, int ddof = 0) {
  Shape keep = shape;
  int64_t len = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) {
      keep[d] = 1;
      len *= shape[d];
    }
  }
  std::vector<std::vector<double>> slices(static_cast<size_t>(Count(keep)));
  for (int64_t flat = 0; flat < Count(shape); ++flat) {
    int64_t rest = flat, t = 0, step = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t idx = rest % shape[d];
      rest /= shape[d];
      if (!reduced[d]) t += idx * step;
      step *= keep[d];
    }
    slices[static_cast<size_t>(t)].push_back(v[static_cast<size_t>(flat)]);
  }
  std::vector<double> out;
  for (const auto& sl : slices) {
    double r = 0;
    if (op == "logsumexp") {
      double m = -kInf, total = 0;
      for (double x : sl) m = std::max(m, x);
      for (double x : sl) total += std::exp(x - m);
      r = m + std::log(total);
    } else if (op == "var") {
      double mu = 0, total = 0;
      for (double x : sl) mu += x / static_cast<double>(len);
      for (double x : sl) total += (x - mu) * (x - mu);
      r = total / static_cast<double>(len - ddof);
    } else {
      for (double x : sl) r += x * x;
      r = std::sqrt(r);
    }
    out.push_back(r);
  }
  return out;
}

TEST_CASE("reduce kinds: logsumexp, var and norm of a pending operand, every axis set, keepdims") {
  const Shape shape = {3, 8, 5};
  auto x = Array<double>::uniform(shape, 41, -3, 3);
  auto y = Array<double>::uniform({8, 1}, 42, 0.5, 2);
  const std::vector<double> xv = x.to_vector(), yv = y.to_vector();
  std::vector<double> pv(xv.size());
  for (size_t e = 0; e < xv.size(); ++e) pv[e] = xv[e] * yv[(e / 5) % 8];
  for (const std::string op : {"logsumexp", "var", "norm"}) {
    for (uint32_t mask = 1; mask < 8; ++mask) {
      std::vector<int> axes;
      std::vector<bool> reduced(3);
      for (int d = 0; d < 3; ++d) {
        reduced[static_cast<size_t>(d)] = mask >> d & 1u;
        if (reduced[static_cast<size_t>(d)]) axes.push_back(d);
      }
      for (bool keepdims : {false, true}) {
        CAPTURE(op);
        CAPTURE(mask);
        CAPTURE(keepdims);
        const Array<double> p = x * y;
        Array<double> r = op == "logsumexp" ? logsumexp(p, axes, keepdims)
                          : op == "var"     ? var(p, axes, keepdims, 1)
                                            : norm(p, axes, keepdims);
        const std::vector<double> got = r.to_vector();
        const std::vector<double> want = HostComposite(op, pv, shape, reduced, 1);
        REQUIRE(got.size() == want.size());
        for (size_t e = 0; e < want.size(); ++e) {
          CHECK(got[e] == doctest::Approx(want[e]).epsilon(1e-12));
        }
      }
    }
  }
}

TEST_CASE("reduce kinds: the first pass of logsumexp/var/norm joins the operand's kernel off the tape") {
  const Shape shape = {6, 7};
  auto x = Array<double>::uniform(shape, 43, -3, 3);
  auto y = Array<double>::uniform({1, 7}, 44, 0.5, 2);
  const std::vector<double> xv = x.to_vector(), yv = y.to_vector();
  std::vector<double> pv(xv.size());
  for (size_t e = 0; e < xv.size(); ++e) pv[e] = xv[e] * yv[e % 7];
  for (const std::string op : {"logsumexp", "var", "norm"}) {
    for (const std::vector<int>& axes : {std::vector<int>{1}, std::vector<int>{0}, std::vector<int>{0, 1}}) {
      CAPTURE(op);
      CAPTURE(axes.size());
      CAPTURE(axes[0]);
      std::vector<bool> reduced(2, false);
      for (int d : axes) reduced[static_cast<size_t>(d)] = true;
      Array<double> p = x * y;
      REQUIRE(p.is_pending());
      const auto before = detail::GetFusedReductionCounts();
      Array<double> r = op == "logsumexp" ? logsumexp(p, axes) : op == "var" ? var(p, axes) : norm(p, axes);
      const auto after = detail::GetFusedReductionCounts();
      // One fused reduction (the first pass), which also wrote p (held here).
      CHECK(after.fused == before.fused + 1);
      CHECK(after.operands_written == before.operands_written + 1);
      CHECK_FALSE(p.is_pending());
      const std::vector<double> got = r.to_vector(), pgot = p.to_vector();
      const std::vector<double> want = HostComposite(op, pv, shape, reduced);
      REQUIRE(got.size() == want.size());
      for (size_t e = 0; e < want.size(); ++e) CHECK(got[e] == doctest::Approx(want[e]).epsilon(1e-12));
      for (size_t e = 0; e < pv.size(); ++e) CHECK(pgot[e] == pv[e]);
      // Under a tape the operand is recorded first: nothing fused, the same values.
      Tape tape;
      Array<double> q = x * y;
      const auto before_tape = detail::GetFusedReductionCounts();
      Array<double> rt = op == "logsumexp" ? logsumexp(q, axes) : op == "var" ? var(q, axes) : norm(q, axes);
      CHECK(detail::GetFusedReductionCounts().fused == before_tape.fused);
      const std::vector<double> got_tape = rt.to_vector();
      for (size_t e = 0; e < want.size(); ++e) CHECK(got_tape[e] == doctest::Approx(want[e]).epsilon(1e-12));
    }
  }
}

TEST_CASE("reduce kinds: logsumexp/norm edge values and f32 range, gradients of pending operands") {
  const auto rows = Array<double>::from({-kInf, -kInf, 1, kInf, 2, kNaN, 1000, 1000}, {4, 2});
  const std::vector<double> lse = logsumexp(rows * 1.0, {1}).to_vector();
  CHECK(lse[0] == -kInf);  // all -inf: -inf, not NaN
  CHECK(lse[1] == kInf);
  CHECK(std::isnan(lse[2]));
  CHECK(lse[3] == doctest::Approx(1000 + std::log(2.0)));
  // f32 squares overflow at 1.8e19; the scaled norm does not.
  auto big = Array<float>::from({3e30f, 4e30f}, {2});
  CHECK(norm(big * 1.0f).item() == doctest::Approx(5e30).epsilon(1e-6));
  // Gradients through the generated compositions, operand pending, vs central differences.
  auto x = Array<double>::uniform({2, 4}, 51, 0.5, 2.0);
  for (const std::string op : {"logsumexp", "var", "norm"}) {
    CAPTURE(op);
    Tape tape;
    Array<double> p = x * x;
    Array<double> r = op == "logsumexp" ? logsumexp(p, {1}) : op == "var" ? var(p, {1}) : norm(p, {1});
    const std::vector<double> gv = tape.gradient(sum(r * Array<double>::from({1, 3}, {2})), {x})[0].to_vector();
    const std::vector<double> xv = x.to_vector();
    auto host = [&](std::vector<double> v) {
      for (double& e : v) e *= e;
      const std::vector<double> rr = HostComposite(op, v, {2, 4}, {false, true});
      return rr[0] + 3 * rr[1];
    };
    CheckCentralDifferences(gv, xv, host);
  }
}

TEST_CASE("reduce kinds: the composed reductions are bitwise the same under 1, 2 and 8 threads") {
  auto x = Array<float>::uniform({300, 2001}, 61, -5, 5);
  for (int axis : {0, 1}) {
    std::vector<std::vector<float>> first;
    for (int threads : {1, 2, 8}) {
      jit::ThreadPool pool(threads);
      jit::ScopedThreadPool scope(pool);
      std::vector<std::vector<float>> now = {logsumexp(x * 2.0f, {axis}).to_vector(),
                                             var(x * 2.0f, {axis}).to_vector(),
                                             norm(x * 2.0f, {axis}).to_vector(),
                                             prod(x * 0.1f + 1.0f, {axis}).to_vector()};
      if (first.empty()) {
        first = now;
      } else {
        for (size_t k = 0; k < now.size(); ++k) {
          CAPTURE(k);
          CHECK(std::memcmp(now[k].data(), first[k].data(), now[k].size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace dualcast
