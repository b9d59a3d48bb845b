// Tests of the CPU kernels' explicit vector code: tails, lane-mask branches, uniform branches, math clamps and chunked math.
//
// The kernels run W elements per step (16 f32 / 8 f64 with AVX-512). These
// tests put values where that could show: in full vectors and in masked
// tails, in vectors whose lanes all take one side of an if, none, or some,
// and under conditions that are uniform along a row (rows layout) or vary
// along it (columns layout). References are the interpreter (Interpret), the
// C library at double precision, and the kernel's own value for the same
// input elsewhere in the array (a value must not depend on where it sits).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "jit/codegen/kernel_abi.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/cpu/cpu_backend.h"
#include "jit/cpu/interleave.h"
#include "jit/ir/hash.h"
#include "jit/ir/interpret.h"
#include "jit/ir/ir.h"

namespace dualcast::jit {
namespace {

template <class T>
constexpr Type kType = std::is_same_v<T, float> ? Type::kF32 : Type::kF64;

// Runs `f` over contiguous rank-2 data of shape `sizes` ({n} for rank 1, {}
// for rank 0). `inputs[i]` holds input i; an input listed in `per_row` has
// one value per row (shape (rows, 1), broadcast along the inner dim), one in
// `per_column` one value per column (shape (1, cols)). Returns the outputs.
template <class T>
std::vector<std::vector<T>> RunKernel(std::shared_ptr<Function> f, std::vector<int64_t> sizes,
                                      const std::vector<std::vector<T>>& inputs,
                                      std::vector<int> per_row = {},
                                      std::vector<int> per_column = {}) {
  const int rank = static_cast<int>(sizes.size());
  KernelSpec spec;
  spec.function = f;
  spec.function_hash = StructuralHash(*f);
  spec.hints = f->hints;
  spec.dtype = kType<T>;
  spec.rank = rank;
  spec.input_broadcast.assign(f->num_inputs(), 0);
  std::vector<int64_t> in_strides;
  for (size_t i = 0; i < f->num_inputs(); ++i) {
    const bool row = std::find(per_row.begin(), per_row.end(), int(i)) != per_row.end();
    const bool column = std::find(per_column.begin(), per_column.end(), int(i)) != per_column.end();
    if (rank == 0) continue;
    if (rank == 1) {
      in_strides.push_back(1);
      continue;
    }
    spec.input_broadcast[i] = row ? 0b10 : column ? 0b01 : 0;
    in_strides.push_back(column ? 0 : row ? 1 : sizes[1]);
    in_strides.push_back(row ? 0 : 1);
  }
  absl::StatusOr<CompiledCpuKernel> k = CompileCpuKernel(spec, nullptr);
  REQUIRE_MESSAGE(k.ok(), k.status().ToString());
  int64_t count = 1;
  for (int64_t s : sizes) count *= s;
  std::vector<std::vector<T>> outputs(f->num_outputs(), std::vector<T>(count, T(-999)));
  std::vector<const void*> in_ptrs;
  for (const auto& v : inputs) in_ptrs.push_back(v.data());
  std::vector<void*> out_ptrs;
  std::vector<int64_t> out_strides;
  for (auto& o : outputs) {
    out_ptrs.push_back(o.data());
    if (rank == 1) out_strides.push_back(1);
    if (rank == 2) out_strides.insert(out_strides.end(), {sizes[1], 1});
  }
  KernelArgs args{sizes.data(), in_ptrs.data(), in_strides.data(), out_ptrs.data(),
                  out_strides.data(), 0, rank == 0 ? 1 : sizes[0]};
  k->entry(&args);
  return outputs;
}

template <class T>
bool SameBits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Every libm-backed op of one argument, as one output each.
std::shared_ptr<Function> UnaryMath(Type t) {
  auto f = std::make_shared<Function>("unary_math");
  Builder b(*f);
  ValueId x = b.Input(t);
  std::vector<ValueId> outs;
  for (Op op : {Op::kSin, Op::kCos, Op::kTanh, Op::kExp, Op::kLog1p, Op::kErf, Op::kAtan,
                Op::kSigmoid, Op::kCbrt}) {
    outs.push_back(b.Emit(op, {x}));
  }
  b.Return(outs);
  return f;
}

template <class T>
void CheckPositionIndependence() {
  const std::vector<T> values = {T(-1116.8363), T(0.5), T(-3.25), T(1e-3), T(17), T(-1.9e-9)};
  auto f = UnaryMath(kType<T>);
  for (T x : values) {
    CAPTURE(x);
    // Rank 1, n = 37: two or more full vectors and a masked tail; rank 2 with
    // rows of 5: every element in a tail; rank 0: the one element.
    auto long_row = RunKernel<T>(f, {37}, {std::vector<T>(37, x)});
    auto short_rows = RunKernel<T>(f, {3, 5}, {std::vector<T>(15, x)});
    auto single = RunKernel<T>(f, {}, {std::vector<T>(1, x)});
    for (size_t m = 0; m < long_row.size(); ++m) {
      CAPTURE(m);
      const T reference = single[m][0];
      for (T got : long_row[m]) CHECK(SameBits(got, reference));
      for (T got : short_rows[m]) CHECK(SameBits(got, reference));
    }
  }
}

TEST_CASE("a value does not depend on where in the array it sits (full vector, tail, rank 0)") {
  CheckPositionIndependence<float>();
  CheckPositionIndependence<double>();
}

TEST_CASE("sin, cos, tanh and erf stay within [-1, 1] where libmvec steps past it") {
  // libmvec's f32 sin(-1116.8363) is 1.00000012 and f64 cos(-1.9e-9) is
  // 1 + 2^-52; the true values round to at most 1.
  auto f32 = RunKernel<float>(UnaryMath(Type::kF32), {40}, {std::vector<float>(40, -1116.8363f)});
  for (float s : f32[0]) {
    CHECK(s <= 1.0f);
    CHECK(std::abs(double(s) - std::sin(double(-1116.8363f))) <= 2e-7);
  }
  auto f64 = RunKernel<double>(UnaryMath(Type::kF64), {40}, {std::vector<double>(40, -1.9e-9)});
  for (double c : f64[1]) {  // cos(-1.9e-9) = 1 - 1.8e-18 rounds to 1
    char text[64];
    std::snprintf(text, sizeof text, "%a", c);
    CHECK_MESSAGE(c == 1.0, text);
  }
  // Over many points: never outside [-1, 1].
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> wide(-2e4f, 2e4f);
  std::vector<float> xs(4099);
  for (float& x : xs) x = wide(rng);
  auto many = RunKernel<float>(UnaryMath(Type::kF32), {4099}, {xs});
  for (int m : {0, 1, 2, 5}) {
    for (float v : many[m]) CHECK((v >= -1.0f && v <= 1.0f));
  }
}

// if (c > 0) { if (x > 0) A else B } else { if (x < c) C else D }, plus a
// select and math on both levels, and an if with tiny sides (a nested one
// too); c may be per element, per row or per column.
std::shared_ptr<Function> NestedBranches(Type t) {
  auto f = std::make_shared<Function>("nested_branches");
  Builder b(*f);
  ValueId c = b.Input(t), x = b.Input(t);
  ValueId zero = b.Const(t, 0);
  b.BeginIf(b.Emit(Op::kGt, {c, zero}));
  b.BeginIf(b.Emit(Op::kGt, {x, zero}));
  ValueId a = b.Emit(Op::kTanh, {b.Mul(x, c)});
  b.BeginElse({a, b.Add(x, c)});
  auto inner = b.EndIf({b.Emit(Op::kExp, {x}), b.Mul(x, x)});
  b.BeginElse({inner[0], inner[1]});
  b.BeginIf(b.Emit(Op::kLt, {x, c}));
  b.BeginElse({b.Sub(c, x), b.Emit(Op::kSin, {x})});
  auto other = b.EndIf({b.Div(x, b.Sub(c, b.Const(t, 1))), c});
  auto outer = b.EndIf({other[0], other[1]});
  // Tiny sides (blended without a test when lanes may disagree), one nested.
  b.BeginIf(b.Emit(Op::kGt, {x, c}));
  b.BeginElse({b.Add(x, c)});
  b.BeginIf(b.Emit(Op::kLt, {x, zero}));
  b.BeginElse({b.Neg(x)});
  auto tiny_inner = b.EndIf({x});
  auto tiny = b.EndIf({b.Sub(tiny_inner[0], c)});
  b.Return({outer[0], b.Select(b.Emit(Op::kLt, {outer[1], zero}), x, outer[1]), tiny[0]});
  return f;
}

template <class T>
void CheckAgainstInterpreter(const Function& f, const std::vector<std::vector<T>>& outs,
                             const std::vector<std::vector<T>>& per_element_inputs) {
  int mismatches = 0;
  for (size_t e = 0; e < outs[0].size(); ++e) {
    std::vector<double> x;
    for (const auto& in : per_element_inputs) x.push_back(double(in[e]));
    std::vector<double> want = Interpret(f, x);
    for (size_t m = 0; m < outs.size(); ++m) {
      const T w = static_cast<T>(want[m]);
      // Math through libmvec: a few ulp from the interpreter's libm.
      const double tol = 8 * std::numeric_limits<T>::epsilon() * std::max(1.0, std::abs(double(w)));
      if (!(std::abs(double(outs[m][e]) - double(w)) <= tol) && ++mismatches <= 5) {
        FAIL_CHECK("output " << m << " element " << e << ": got " << outs[m][e] << ", want " << w);
      }
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("lane-mask branches: vectors whose lanes all take a side, none, or some") {
  auto f = NestedBranches(Type::kF32);
  // 8 blocks of 16 elements: all c > 0 and x > 0; all c <= 0; alternating c;
  // one lane different; random; then a 13-element tail of random values.
  const int n = 8 * 16 + 13;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> c(n), x(n);
  for (int e = 0; e < n; ++e) {
    const int block = e / 16, lane = e % 16;
    switch (block) {
      case 0: c[e] = 1.5f; x[e] = 0.25f + lane * 0.1f; break;
      case 1: c[e] = -1.0f; x[e] = u(rng); break;
      case 2: c[e] = lane % 2 ? 1.0f : -1.0f; x[e] = u(rng); break;
      case 3: c[e] = lane == 7 ? 1.0f : -1.0f; x[e] = u(rng); break;
      case 4: c[e] = 0.5f; x[e] = lane == 3 ? -1.0f : 1.0f; break;
      default: c[e] = u(rng); x[e] = u(rng); break;
    }
  }
  auto outs = RunKernel<float>(f, {n}, {c, x});
  CheckAgainstInterpreter<float>(*f, outs, {c, x});

  auto fd = NestedBranches(Type::kF64);
  std::vector<double> cd(c.begin(), c.end()), xd(x.begin(), x.end());
  auto outs_d = RunKernel<double>(fd, {n}, {cd, xd});
  CheckAgainstInterpreter<double>(*fd, outs_d, {cd, xd});
}

TEST_CASE("conditions uniform along a row (rows layout) and varying along it (columns layout)") {
  auto f = NestedBranches(Type::kF32);
  const int rows = 11, cols = 45;  // 45: two full vectors and a tail per row (W = 16)
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> x(rows * cols), c_rows(rows), c_cols(cols);
  for (float& v : x) v = u(rng);
  for (float& v : c_rows) v = u(rng);
  for (float& v : c_cols) v = u(rng);
  // Per-element copies of the broadcast inputs, for the interpreter.
  std::vector<float> c_rows_full(rows * cols), c_cols_full(rows * cols);
  for (int r = 0; r < rows; ++r) {
    for (int k = 0; k < cols; ++k) {
      c_rows_full[r * cols + k] = c_rows[r];
      c_cols_full[r * cols + k] = c_cols[k];
    }
  }
  auto by_rows = RunKernel<float>(f, {rows, cols}, {c_rows, x}, /*per_row=*/{0});
  CheckAgainstInterpreter<float>(*f, by_rows, {c_rows_full, x});
  auto by_cols = RunKernel<float>(f, {rows, cols}, {c_cols, x}, {}, /*per_column=*/{0});
  CheckAgainstInterpreter<float>(*f, by_cols, {c_cols_full, x});
  // The same data as full arrays gives bit-identical results (uniform
  // branches are only a faster way to the same values).
  auto full = RunKernel<float>(f, {rows, cols}, {c_rows_full, x});
  for (size_t m = 0; m < full.size(); ++m) {
    for (size_t e = 0; e < full[m].size(); ++e) CHECK(SameBits(full[m][e], by_rows[m][e]));
  }
}

TEST_CASE("work a uniform branch's side shares with an output is not moved into the side") {
  // y = exp(x) is an output and is used inside `if (c > 0)`; with c per row
  // (or rank 0) the if is uniform, and y must stay computed for the store.
  auto f = std::make_shared<Function>("shared_with_output");
  Builder b(*f);
  ValueId c = b.Input(Type::kF64), x = b.Input(Type::kF64);
  ValueId y = b.Emit(Op::kExp, {x});
  ValueId only_in_side = b.Mul(x, x);
  b.BeginIf(b.Emit(Op::kGt, {c, b.Const(Type::kF64, 0)}));
  b.BeginElse({b.Add(y, only_in_side)});
  auto r = b.EndIf({b.Const(Type::kF64, 2)});
  b.Return({r[0], y});
  const std::vector<double> rows = {1.0, -1.0, 0.5};
  std::vector<double> xs(3 * 21), cs(3 * 21);
  for (size_t e = 0; e < xs.size(); ++e) {
    xs[e] = 0.1 * double(e) - 2;
    cs[e] = rows[e / 21];
  }
  auto outs = RunKernel<double>(f, {3, 21}, {rows, xs}, /*per_row=*/{0});
  CheckAgainstInterpreter<double>(*f, outs, {cs, xs});
  auto single = RunKernel<double>(f, {}, {{1.0}, {0.75}});
  CheckAgainstInterpreter<double>(*f, single, {{1.0}, {0.75}});
}

TEST_CASE("f64 math inside an f32 kernel runs on chunks of the wide vector") {
  // 16 f32 lanes hold 16 f64 values: two 8-lane libmvec calls with AVX-512.
  auto f = std::make_shared<Function>("mixed_width");
  Builder b(*f);
  ValueId x = b.Input(Type::kF32);
  ValueId wide = b.Cast(Type::kF64, x);
  ValueId y = b.Emit(Op::kExp, {b.Emit(Op::kSin, {wide})});
  b.Return({b.Cast(Type::kF32, y), b.Emit(Op::kPow, {x, x})});
  std::vector<float> xs(53);
  for (size_t e = 0; e < xs.size(); ++e) xs[e] = 0.05f + 0.37f * float(e);
  auto outs = RunKernel<float>(f, {53}, {xs});
  for (size_t e = 0; e < xs.size(); ++e) {
    CAPTURE(e);
    const float want = static_cast<float>(std::exp(std::sin(double(xs[e]))));
    CHECK(std::abs(outs[0][e] - want) <= 2 * std::numeric_limits<float>::epsilon() * want);
    const double pow_ref = std::pow(double(xs[e]), double(xs[e]));
    CHECK(std::abs(outs[1][e] - pow_ref) <= 8 * std::numeric_limits<float>::epsilon() * pow_ref);
  }
}

// A long chain (interleaved: several host vectors per step) through every
// kind of lowering that depends on the lane count: arithmetic, the inline
// exp and expm1 (vscalef in 512-bit pieces), a chunked libmvec call, a
// branch on a per-row flag (uniform) and one on the data (mixed lanes).
template <class T>
std::shared_ptr<Function> LongChain(int vector_width) {
  auto f = std::make_shared<Function>("long_chain");
  f->hints.vector_width = vector_width;
  const Type t = kType<T>;
  Builder b(*f);
  const ValueId x = b.Input(t), z = b.Input(t);
  auto steps = [&](ValueId a, int n, double c) {
    for (int k = 0; k < n; ++k) a = b.Add(b.Mul(a, b.Const(t, 0.999)), b.Const(t, c));
    return a;
  };
  ValueId a = steps(x, 40, 0.001);
  const ValueId arithmetic = a;  // exact: checked against the interpreter bit for bit
  b.BeginIf(b.Emit(Op::kGt, {z, b.Const(t, 0)}));
  const ValueId then_value = b.Emit(Op::kExp, {steps(a, 10, 0.002)});
  b.BeginElse({then_value});
  const ValueId else_value = b.Emit(Op::kSin, {steps(a, 10, 0.003)});
  a = b.EndIf({else_value})[0];
  b.BeginIf(b.Emit(Op::kLt, {x, b.Const(t, 0)}));
  const ValueId neg = b.Emit(Op::kExpm1, {steps(a, 10, 0.004)});
  b.BeginElse({neg});
  const ValueId pos = b.Emit(Op::kTanh, {steps(a, 10, 0.005)});
  a = b.EndIf({pos})[0];
  b.Return({arithmetic, steps(a, 20, 0.006)});
  return f;
}

template <class T>
void CheckInterleavedMatchesOneVector() {
  const int host_lanes = cpu::HostLanes(kType<T>);
  auto interleaved = LongChain<T>(0);
  auto one_vector = LongChain<T>(host_lanes);
  REQUIRE(cpu::InterleaveFactor(*interleaved) == 4);  // or this test would not test interleaving
  // Rows of 4 * W + 3 (full interleaved steps and a tail), of 3 (all tail) and one long row
  // with a tail shorter than a host vector.
  for (std::vector<int64_t> sizes : std::vector<std::vector<int64_t>>{
           {6, 4 * host_lanes + 3}, {9, 3}, {1, 9 * host_lanes + 5}}) {
    CAPTURE(sizes[1]);
    const int64_t count = sizes[0] * sizes[1];
    std::vector<T> x(count), z(sizes[0]);
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> u(-1.5, 1.5);
    for (T& v : x) v = T(u(rng));
    for (size_t r = 0; r < z.size(); ++r) z[r] = r % 3 == 1 ? T(-1) : T(1);
    auto got = RunKernel<T>(interleaved, sizes, {x, z}, {1});
    auto want = RunKernel<T>(one_vector, sizes, {x, z}, {1});
    int mismatches = 0;
    for (size_t m = 0; m < got.size(); ++m) {
      for (int64_t e = 0; e < count; ++e) {
        if (!SameBits(got[m][e], want[m][e]) && ++mismatches <= 5) {
          FAIL_CHECK("output " << m << " element " << e << ": " << got[m][e] << " interleaved, "
                               << want[m][e] << " one vector per step");
        }
      }
    }
    for (int64_t e = 0; e < count; ++e) {
      const std::vector<double> in = {double(x[e]), double(z[e / sizes[1]])};
      if (!SameBits(got[0][e], static_cast<T>(Interpret(*interleaved, in)[0])) && ++mismatches <= 5) {
        FAIL_CHECK("element " << e << " differs from the interpreter");
      }
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("a long chain runs several vectors per step, with the bits of one vector per step") {
  CheckInterleavedMatchesOneVector<float>();
  CheckInterleavedMatchesOneVector<double>();
}

}  // namespace
}  // namespace dualcast::jit
