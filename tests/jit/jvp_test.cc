// Tests of the forward-mode pass: values and partials against dualcast::Dual, and the structure it emits.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <dualcast/dual.hpp>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "jit/error.h"
#include "jit/ir/interpret.h"
#include "jit/ir/ir.h"
#include "jit/ir/print.h"
#include "jit/ir/verify.h"
#include "jit/passes/jvp.h"

namespace dualcast::jit {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool SameValue(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

bool Close(double a, double b, double rel = 1e-12) {
  return SameValue(a, b) || std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b));
}

// Distance in units in the last place between two floats (0 for two NaNs).
int64_t UlpDistance(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<int64_t>::max();
  auto ordered = [](float x) {
    int32_t i = std::bit_cast<int32_t>(x);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
  };
  return std::abs(ordered(a) - ordered(b));
}

// The same for doubles (saturating: a sign mismatch or an infinity is "far").
int64_t UlpDistance64(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  if (a == b) return 0;
  if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
    return std::numeric_limits<int64_t>::max();
  }
  if (std::signbit(a) != std::signbit(b)) {
    return std::abs(a) + std::abs(b) < 1e-300 ? 1 : std::numeric_limits<int64_t>::max();
  }
  const int64_t ia = std::bit_cast<int64_t>(std::abs(a)), ib = std::bit_cast<int64_t>(std::abs(b));
  return ia > ib ? ia - ib : ib - ia;
}

// Whether dualcast::Dual has this op yet (the staples of ops.def that dual/ has
// not caught up with are tested against their own references in ops_test.cc).
bool HasDualReference(Op op) {
  switch (op) {
    case Op::kExp2: case Op::kLgamma: case Op::kTgamma: case Op::kSign: case Op::kSquare:
    case Op::kRsqrt: case Op::kErfinv: case Op::kFmod: case Op::kRemainder: case Op::kLdexp:
    case Op::kLogaddexp: case Op::kClamp: return false;
    default: return true;
  }
}

// The partial `got` against the long-double Dual reference: within 8 ulp, or,
// where the op's value is NaN although no input is, NaN (NaN value => NaN partials).
// (+, -, * and fma are exempt: jvp.cc keeps their plain partials.)
template <class T>
void CheckPartial(Op op, T got, long double reference, T value, const std::vector<double>& point) {
  bool nan_input = false;
  for (double v : point) nan_input = nan_input || std::isnan(v);
  const bool exempt = op == Op::kAdd || op == Op::kSub || op == Op::kMul || op == Op::kFma;
  if (std::isnan(value) && !nan_input && !exempt) {
    CHECK(std::isnan(got));
    return;
  }
  if (nan_input && std::isnan(got)) return;  // a NaN in gives a NaN partial or the convention's value
  if (op == Op::kFastTanh || op == Op::kFastSigmoid) {  // absolute accuracy (docs/fast-activations.md)
    CHECK(std::fabs(static_cast<long double>(got) - reference) <= 4 * std::numeric_limits<T>::epsilon());
    return;
  }
  const T ref = static_cast<T>(reference);
  if constexpr (std::is_same_v<T, float>) {
    CHECK(UlpDistance(got, ref) <= 8);
  } else {
    CHECK(UlpDistance64(got, ref) <= 8);
  }
}

// The op applied to Duals (or plain numbers): the reference, written with the
// Dual library's functions only.
template <class T>
T ApplyOp(Op op, const T* x) {
  namespace m = dualcast::math;
  switch (op) {
    case Op::kNeg: return -x[0];
    case Op::kAdd: return x[0] + x[1];
    case Op::kSub: return x[0] - x[1];
    case Op::kMul: return x[0] * x[1];
    case Op::kDiv: return x[0] / x[1];
    case Op::kFma: return m::fma(x[0], x[1], x[2]);
    case Op::kExp: return m::exp(x[0]);
    case Op::kExpm1: return m::expm1(x[0]);
    case Op::kLog: return m::log(x[0]);
    case Op::kLog1p: return m::log1p(x[0]);
    case Op::kLog2: return m::log2(x[0]);
    case Op::kLog10: return m::log10(x[0]);
    case Op::kSqrt: return m::sqrt(x[0]);
    case Op::kCbrt: return m::cbrt(x[0]);
    case Op::kSin: return m::sin(x[0]);
    case Op::kCos: return m::cos(x[0]);
    case Op::kTan: return m::tan(x[0]);
    case Op::kAsin: return m::asin(x[0]);
    case Op::kAcos: return m::acos(x[0]);
    case Op::kAtan: return m::atan(x[0]);
    case Op::kSinh: return m::sinh(x[0]);
    case Op::kCosh: return m::cosh(x[0]);
    case Op::kTanh: return m::tanh(x[0]);
    case Op::kAsinh: return m::asinh(x[0]);
    case Op::kAcosh: return m::acosh(x[0]);
    case Op::kAtanh: return m::atanh(x[0]);
    case Op::kErf: return m::erf(x[0]);
    case Op::kErfc: return m::erfc(x[0]);
    case Op::kAbs: return m::abs(x[0]);
    case Op::kFloor: return m::floor(x[0]);
    case Op::kCeil: return m::ceil(x[0]);
    case Op::kRound: return m::round(x[0]);
    case Op::kTrunc: return m::trunc(x[0]);
    case Op::kRint: return m::rint(x[0]);
    case Op::kSigmoid: return m::sigmoid(x[0]);
    case Op::kFastTanh: return m::fast_tanh(x[0]);
    case Op::kFastSigmoid: return m::fast_sigmoid(x[0]);
    case Op::kSoftplus: return m::softplus(x[0]);
    case Op::kRelu: return m::relu(x[0]);
    case Op::kPow: return m::pow(x[0], x[1]);
    case Op::kAtan2: return m::atan2(x[0], x[1]);
    case Op::kMin: return m::min(x[0], x[1]);
    case Op::kMax: return m::max(x[0], x[1]);
    case Op::kFmin: return m::fmin(x[0], x[1]);
    case Op::kFmax: return m::fmax(x[0], x[1]);
    case Op::kHypot: return m::hypot(x[0], x[1]);
    case Op::kCopysign: return m::copysign(x[0], x[1]);
    case Op::kFdim: return m::fdim(x[0], x[1]);
    default: break;
  }
  FAIL("no reference for ", Spelling(op));
  return x[0];
}

// Points where each op is defined, plus the special points of its conventions.
std::vector<std::vector<double>> SamplePoints(Op op, int count, std::mt19937_64& rng) {
  const int arity = Info(op).arity;
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  std::vector<std::vector<double>> points;
  for (int n = 0; n < count; ++n) {
    std::vector<double> p(arity);
    for (double& v : p) v = uniform(-3, 3);
    switch (op) {
      case Op::kLog: case Op::kLog2: case Op::kLog10: case Op::kSqrt: p[0] = uniform(0.01, 5); break;
      case Op::kLog1p: p[0] = uniform(-0.99, 3); break;
      case Op::kAsin: case Op::kAcos: case Op::kAtanh: p[0] = uniform(-0.99, 0.99); break;
      case Op::kAcosh: p[0] = uniform(1.01, 5); break;
      case Op::kTan: p[0] = uniform(-1.5, 1.5); break;
      case Op::kPow: p[0] = uniform(0.01, 3); break;
      default: break;
    }
    points.push_back(p);
  }
  // Kinks, ties, zeros of both signs, NaN: the conventions live here.
  const std::vector<std::vector<double>> specials1 = {{0.0}, {-0.0}, {1.0}, {-2.0}, {kNaN}};
  const std::vector<std::vector<double>> specials2 = {
      {1.5, 1.5}, {0.0, -0.0}, {-0.0, 0.0}, {0.0, 0.0}, {0.0, 2.0}, {0.0, 0.5}, {2.0, 0.0},
      {-2.0, 3.0}, {3.0, -1.0}, {kNaN, 1.0}, {1.0, kNaN}, {-1.0, -0.0}};
  if (arity == 1) points.insert(points.end(), specials1.begin(), specials1.end());
  if (arity == 2) points.insert(points.end(), specials2.begin(), specials2.end());
  if (arity == 3) points.push_back({0.0, kInf, 1.0});
  return points;
}

// f(x_0, .., x_{n-1}) = op(x...) for one arithmetic or math op.
Function OneOp(Op op, Type type) {
  Function f(Spelling(op));
  Builder b(f);
  std::vector<ValueId> args;
  for (int k = 0; k < Info(op).arity; ++k) args.push_back(b.Input(type));
  b.Return({b.Emit(op, args)});
  return f;
}

std::vector<int> AllInputs(const Function& f) {
  std::vector<int> wrt;
  for (size_t i = 0; i < f.num_inputs(); ++i) wrt.push_back(static_cast<int>(i));
  return wrt;
}

TEST_CASE("jvp of every arithmetic and math op: Dual<double>'s value, partials within 8 ulp") {
  std::mt19937_64 rng(42);
  int checked_ops = 0;
  for (int i = 0; i < kNumOps; ++i) {
    Op op = static_cast<Op>(i);
    if (Info(op).kind != OpKind::Arith && Info(op).kind != OpKind::Math) continue;
    if (!HasDualReference(op)) continue;
    std::string op_name = Spelling(op);
    CAPTURE(op_name);
    Function f = OneOp(op, Type::kF64);
    std::vector<int> wrt = AllInputs(f);
    JvpResult r = Jvp(f, wrt);
    REQUIRE(Verify(r.function).ok());
    const size_t J = wrt.size();
    REQUIRE(r.function.num_outputs() == 1 + J);
    for (const std::vector<double>& p : SamplePoints(op, 200, rng)) {
      using D = Dual<double, 3>;
      D x[3];
      for (size_t k = 0; k < p.size(); ++k) x[k] = D::variable(p[k], static_cast<int>(k));
      D expected = ApplyOp(op, x);
      using L = Dual<long double, 3>;
      L xl[3];
      for (size_t k = 0; k < p.size(); ++k) xl[k] = L::variable(p[k], static_cast<int>(k));
      L precise = ApplyOp(op, xl);
      std::vector<double> got = Interpret(r.function, std::span<const double>(p));
      CAPTURE(p);
      // The value is the Dual library's, bit for bit; the partials are checked
      // against the long-double Dual, whose formulas keep 11 more bits.
      CHECK(SameValue(got[0], expected.value()));
      for (size_t j = 0; j < J; ++j) {
        CAPTURE(j);
        CheckPartial(op, got[PartialIndex(1, J, 0, j)], precise.partial(static_cast<int>(j)), got[0], p);
      }
    }
    ++checked_ops;
  }
  CHECK(checked_ops == 48);  // a new op needs its Dual reference in ApplyOp
}

TEST_CASE("jvp of every op in f32: value within 4 ulp of Dual<float>, partials within 8 ulp") {
  std::mt19937_64 rng(7);
  for (int i = 0; i < kNumOps; ++i) {
    Op op = static_cast<Op>(i);
    if (Info(op).kind != OpKind::Arith && Info(op).kind != OpKind::Math) continue;
    if (!HasDualReference(op)) continue;
    std::string op_name = Spelling(op);
    CAPTURE(op_name);
    Function f = OneOp(op, Type::kF32);
    std::vector<int> wrt = AllInputs(f);
    JvpResult r = Jvp(f, wrt);
    REQUIRE(Verify(r.function).ok());
    const size_t J = wrt.size();
    for (const std::vector<double>& p : SamplePoints(op, 100, rng)) {
      using D = Dual<float, 3>;
      D x[3];
      std::vector<float> pf(p.begin(), p.end());
      for (size_t k = 0; k < p.size(); ++k) x[k] = D::variable(pf[k], static_cast<int>(k));
      D expected = ApplyOp(op, x);
      using L = Dual<long double, 3>;
      L xl[3];
      for (size_t k = 0; k < p.size(); ++k) xl[k] = L::variable(pf[k], static_cast<int>(k));
      L precise = ApplyOp(op, xl);
      std::vector<float> got = Interpret(r.function, std::span<const float>(pf));
      std::vector<double> pw(pf.begin(), pf.end());
      CAPTURE(p);
      CHECK(UlpDistance(got[0], expected.value()) <= 4);
      for (size_t j = 0; j < J; ++j) {
        CAPTURE(j);
        CheckPartial(op, got[PartialIndex(1, J, 0, j)], precise.partial(static_cast<int>(j)), got[0], pw);
      }
    }
  }
}

TEST_CASE("jvp of pow: d/dx keeps the sign of x^(p-1) where p - 1 rounds to p, f32 as f64, as Dual") {
  // For |p| >= 2^53 (every such float is an even integer) p - 1 is odd, so at x = -1 the
  // derivative p x^(p-1) is -p; a p - 1 rounded back to p would give +p. Hand values.
  constexpr double p54 = 0x1p54;
  struct Case {
    double x, p, want;
  };
  const std::vector<Case> cases = {
      {-1, p54, -p54}, {-1, -p54, p54}, {1, p54, p54}, {-1, 3, 3}, {-1, 4, -4}, {0.5, 2, 1},
      {-2, 0x1p60, -kInf},  // f32: x^p overflows (inf in f32 and double); p (x^p / x) keeps the sign
  };
  Function f32 = OneOp(Op::kPow, Type::kF32), f64 = OneOp(Op::kPow, Type::kF64);
  JvpResult j32 = Jvp(f32, std::vector<int>{0}), j64 = Jvp(f64, std::vector<int>{0});
  for (const Case& c : cases) {
    CAPTURE(c.x);
    CAPTURE(c.p);
    const std::vector<float> in32 = {static_cast<float>(c.x), static_cast<float>(c.p)};
    const float got32 = Interpret(j32.function, std::span<const float>(in32))[1];
    CHECK(got32 == static_cast<float>(c.want));
    using F = Dual<float, 1>;
    CHECK(dualcast::math::pow(F::variable(in32[0], 0), in32[1]).partial(0) == got32);
    if (std::isfinite(c.want)) {  // f64 overflows its x^(p-1) fallback differently (not this rule)
      const std::vector<double> in64 = {c.x, c.p};
      CHECK(Interpret(j64.function, std::span<const double>(in64))[1] == c.want);
    }
  }
  // pow(-1, inf) = 1: f32 and f64 give the same -inf (p (y / x)), and Dual the same.
  const std::vector<float> at_inf = {-1, std::numeric_limits<float>::infinity()};
  const float d32 = Interpret(j32.function, std::span<const float>(at_inf))[1];
  const std::vector<double> at_inf64 = {-1, kInf};
  CHECK(d32 == Interpret(j64.function, std::span<const double>(at_inf64))[1]);
  CHECK(d32 == dualcast::math::pow(Dual<float, 1>::variable(-1.0f, 0), at_inf[1]).partial(0));
  CHECK(d32 == dualcast::math::pow(Dual<double, 1>::variable(-1.0, 0), kInf).partial(0));
}

// --- The HM-LSTM cell: z == 1 ? sigmoid(i) tanh(g) : (zb == 0 ? c : sigmoid(f) c + sigmoid(i) tanh(g)).

template <class T>
T CellReference(T z, T zb, T c, T f, T i, T g) {
  using namespace dualcast::math;
  if (z == 1) return sigmoid(i) * tanh(g);                     // FLUSH
  if (zb == 0) return c;                                         // COPY
  return sigmoid(f) * c + sigmoid(i) * tanh(g);                  // UPDATE
}

Function Cell(Type t) {
  Function fn("hmlstm_cell");
  Builder b(fn);
  ValueId z = b.Input(t), zb = b.Input(t), c = b.Input(t), f = b.Input(t), i = b.Input(t),
          g = b.Input(t);
  b.BeginIf(b.Emit(Op::kEq, {z, b.Const(t, 1)}));
  ValueId flush = b.Mul(b.Emit(Op::kSigmoid, {i}), b.Emit(Op::kTanh, {g}));
  b.BeginElse({flush});
  b.BeginIf(b.Emit(Op::kEq, {zb, b.Const(t, 0)}));
  b.BeginElse({c});
  ValueId update = b.Add(b.Mul(b.Emit(Op::kSigmoid, {f}), c),
                         b.Mul(b.Emit(Op::kSigmoid, {i}), b.Emit(Op::kTanh, {g})));
  std::vector<ValueId> inner = b.EndIf({update});
  std::vector<ValueId> outer = b.EndIf(inner);
  b.Return(outer);
  return fn;
}

TEST_CASE("jvp of the HM-LSTM cell matches Dual on every path") {
  const std::vector<int> wrt = {2, 3, 4, 5};  // c, f, i, g
  JvpResult r = Jvp(Cell(Type::kF64), wrt);
  REQUIRE(Verify(r.function).ok());
  JvpResult r32 = Jvp(Cell(Type::kF32), wrt);
  REQUIRE(Verify(r32.function).ok());
  for (bool zero : r.structurally_zero) CHECK_FALSE(zero);

  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-4, 4);
  std::bernoulli_distribution coin;
  int paths[3] = {0, 0, 0};
  for (int n = 0; n < 1200; ++n) {
    std::vector<double> x = {coin(rng) ? 1.0 : 0.0, coin(rng) ? 1.0 : 0.0, u(rng), u(rng),
                             u(rng), u(rng)};
    ++paths[x[0] == 1 ? 0 : (x[1] == 0 ? 1 : 2)];
    using D = Dual<double, 4>;
    D y = CellReference<D>(x[0], x[1], D::variable(x[2], 0), D::variable(x[3], 1),
                           D::variable(x[4], 2), D::variable(x[5], 3));
    std::vector<double> got = Interpret(r.function, std::span<const double>(x));
    CAPTURE(x);
    CHECK(Close(got[0], y.value()));
    for (size_t j = 0; j < 4; ++j) CHECK(Close(got[PartialIndex(1, 4, 0, j)], y.partial(int(j))));

    using F = Dual<float, 4>;
    std::vector<float> xf(x.begin(), x.end());
    F yf = CellReference<F>(xf[0], xf[1], F::variable(xf[2], 0), F::variable(xf[3], 1),
                            F::variable(xf[4], 2), F::variable(xf[5], 3));
    // Partials against long double: Dual<float>'s 1 - tanh^2 has lost digits here.
    using L = Dual<long double, 4>;
    L yl = CellReference<L>(xf[0], xf[1], L::variable(xf[2], 0), L::variable(xf[3], 1),
                            L::variable(xf[4], 2), L::variable(xf[5], 3));
    std::vector<float> gotf = Interpret(r32.function, std::span<const float>(xf));
    CHECK(UlpDistance(gotf[0], yf.value()) <= 4);
    for (size_t j = 0; j < 4; ++j) {
      CHECK(UlpDistance(gotf[PartialIndex(1, 4, 0, j)], static_cast<float>(yl.partial(int(j)))) <= 8);
    }
  }
  for (int count : paths) CHECK(count > 200);
}

// Counts the instructions satisfying `pred` on one path: the entry block plus,
// at each If met, the branch `path` chooses (then = true), in order.
template <class Pred>
int CountOnPath(const Function& f, const std::vector<bool>& path, Pred pred) {
  int count = 0;
  size_t depth = 0;
  BlockId block = 0;
  for (bool walking = true; walking;) {
    walking = false;
    for (ValueId v : f.blocks[block].body) {
      const Inst& inst = f.inst(v);
      if (pred(inst)) ++count;
      if (inst.op == Op::kIf) {
        REQUIRE(depth < path.size());
        block = path[depth++] ? inst.then_block : inst.else_block;
        walking = true;
        break;  // the cell has one If per block, at its end
      }
    }
  }
  CHECK(depth == path.size());
  return count;
}

// Transcendental work on a path: a differentiated tanh or sigmoid becomes the steps of
// dualcast/activation_steps.hpp, value and derivative from ONE exponential (tanh: expm1(+-2|x|),
// sigmoid: exp(-|x|)), so accuracy costs no second transcendental (1 - tanh^2 has no digits left beyond
// |x| ~ 3 in f32, and a separate exp for tanh' made the HM-LSTM kernel 37% slower).
TEST_CASE("jvp of the HM-LSTM cell: one exp per activation, shared by value and derivative") {
  JvpResult r = Jvp(Cell(Type::kF32), std::vector<int>{2, 3, 4, 5});
  const Function& f = r.function;
  REQUIRE(Verify(f).ok());
  const ValueId in_f = f.inputs[3], in_i = f.inputs[4], in_g = f.inputs[5];
  auto activation = [](const Inst& inst) {
    return inst.op == Op::kTanh || inst.op == Op::kSigmoid;
  };
  // Everything but the bit operations abs and copysign: a libm call or a formula around one.
  auto any_math = [](const Inst& inst) {
    return Info(inst.op).kind == OpKind::Math && inst.op != Op::kAbs && inst.op != Op::kCopysign;
  };
  // exp or expm1 of an argument computed from |v| (tanh: expm1(+-2|v|), sigmoid: exp(-|v|)):
  // the activation's one exponential.
  auto reads_abs_of = [&f](auto& self, ValueId id, ValueId v, int depth) -> bool {
    const Inst& inst = f.inst(id);
    if (inst.op == Op::kAbs && inst.args[0] == v) return true;
    if (depth == 0) return false;
    for (int k = 0; k < inst.num_args; ++k) {
      if (self(self, inst.args[k], v, depth - 1)) return true;
    }
    return false;
  };
  auto exp_of = [&](ValueId v) {
    return [&, v](const Inst& inst) {
      return (inst.op == Op::kExp || inst.op == Op::kExpm1) &&
             reads_abs_of(reads_abs_of, inst.args[0], v, 3);
    };
  };
  const std::vector<bool> flush = {true}, copy = {false, true}, update = {false, false};
  CAPTURE(Print(f));

  CHECK(CountOnPath(f, flush, activation) == 0);
  CHECK(CountOnPath(f, flush, exp_of(in_g)) == 1);
  CHECK(CountOnPath(f, flush, exp_of(in_i)) == 1);
  CHECK(CountOnPath(f, flush, exp_of(in_f)) == 0);
  CHECK(CountOnPath(f, flush, any_math) == 2);

  CHECK(CountOnPath(f, copy, any_math) == 0);

  CHECK(CountOnPath(f, update, activation) == 0);
  CHECK(CountOnPath(f, update, exp_of(in_g)) == 1);
  CHECK(CountOnPath(f, update, exp_of(in_i)) == 1);
  CHECK(CountOnPath(f, update, exp_of(in_f)) == 1);
  CHECK(CountOnPath(f, update, any_math) == 3);

  // The inner If yields c and 4 lanes; the outer one its result and 4 lanes
  // (FLUSH yields zeros for the c and f lanes it does not touch).
  for (ValueId v = 0; v < f.insts.size(); ++v) {
    if (f.inst(v).op == Op::kIf) CHECK(f.num_results(v) == 5);
  }
}

TEST_CASE("jvp: an input used only in conditions has structurally zero partials") {
  // f(x0, x1, x2, x3) = x3 > 0 ? x0 * (x3 < 2 ? 1 : 2) + sin(x1) : x2 * x1
  // (floor(x3) instead of the select would carry a lane: NaN at x3 = NaN, as in Dual.)
  auto build = [] {
    Function fn("indep");
    Builder b(fn);
    ValueId x0 = b.Input(Type::kF64), x1 = b.Input(Type::kF64), x2 = b.Input(Type::kF64),
            x3 = b.Input(Type::kF64);
    b.BeginIf(b.Emit(Op::kGt, {x3, b.Const(Type::kF64, 0)}));
    ValueId step = b.Select(b.Emit(Op::kLt, {x3, b.Const(Type::kF64, 2)}), b.Const(Type::kF64, 1),
                            b.Const(Type::kF64, 2));
    ValueId t = b.Add(b.Mul(x0, step), b.Emit(Op::kSin, {x1}));
    b.BeginElse({t});
    b.Return(b.EndIf({b.Mul(x2, x1)}));
    return fn;
  };
  Function fn = build();
  JvpResult with3 = Jvp(fn, std::vector<int>{0, 1, 2, 3});
  JvpResult without3 = Jvp(fn, std::vector<int>{0, 1, 2});
  REQUIRE(Verify(with3.function).ok());
  CHECK(with3.structurally_zero == std::vector<bool>{false, false, false, true});
  CHECK(without3.structurally_zero == std::vector<bool>{false, false, false});
  // Lane 3 costs nothing: not one extra instruction (its output is the
  // constant 0 that `x3 > 0` already needs), and the If carries no extra lane.
  CHECK(with3.function.insts.size() == without3.function.insts.size());
  for (ValueId v = 0; v < with3.function.insts.size(); ++v) {
    if (with3.function.inst(v).op == Op::kIf) CHECK(with3.function.num_results(v) == 4);
  }
  for (double x3 : {-1.0, 2.5}) {
    std::vector<double> x = {0.3, 0.7, -1.1, x3};
    std::vector<double> y = Interpret(with3.function, std::span<const double>(x));
    CHECK(y[PartialIndex(1, 4, 0, 3)] == 0);
    CHECK_FALSE(std::signbit(y[PartialIndex(1, 4, 0, 3)]));
    std::vector<double> expected = x3 > 0 ? std::vector<double>{x3 < 2 ? 1.0 : 2.0, std::cos(0.7), 0}
                                          : std::vector<double>{0, -1.1, 0.7};
    for (size_t j = 0; j < 3; ++j) CHECK(y[PartialIndex(1, 4, 0, j)] == expected[j]);
  }
}

TEST_CASE("jvp: the untaken branch cannot leak NaN into a partial") {
  // f(x) = x > 0 ? sqrt(x) : 0
  Function fn("safe_sqrt");
  Builder b(fn);
  ValueId x = b.Input(Type::kF64);
  ValueId zero = b.Const(Type::kF64, 0);
  b.BeginIf(b.Emit(Op::kGt, {x, zero}));
  ValueId s = b.Emit(Op::kSqrt, {x});
  b.BeginElse({s});
  b.Return(b.EndIf({zero}));
  JvpResult r = Jvp(fn, std::vector<int>{0});
  REQUIRE(Verify(r.function).ok());
  CHECK(r.structurally_zero == std::vector<bool>{false});
  for (double v : {-4.0, -0.0, 0.0}) {
    std::vector<double> y = Interpret(r.function, std::vector<double>{v});
    CHECK(y[0] == 0);
    CHECK(y[1] == 0);  // exactly 0, not NaN (sqrt'(x < 0)) nor inf (sqrt'(0))
  }
  std::vector<double> y = Interpret(r.function, std::vector<double>{4.0});
  CHECK(y == std::vector<double>{2.0, 0.25});
}

// Several outputs, nested branches, select, casts, repeated and reordered wrt.
template <class T>
std::array<T, 3> MultiReference(T x, T y, T w) {
  using namespace dualcast::math;
  T out0 = x * y + w;
  T out1;
  if (x > y) {
    out1 = w < 0 ? exp(x) * w : max(x, w) / (1 + y * y);
  } else {
    out1 = select(w > 1, pow(abs(x) + 1, w), sin(y) * w) - floor(x);
  }
  T out2 = hypot(x, w) + atan2(y, x) + min(x, T(0.5));
  return {out0, out1, out2};
}

Function Multi() {
  const Type t = Type::kF64;
  Function fn("multi");
  Builder b(fn);
  ValueId x = b.Input(t), y = b.Input(t), w = b.Input(t);
  auto k = [&](double v) { return b.Const(t, v); };
  ValueId out0 = b.Add(b.Mul(x, y), w);
  b.BeginIf(b.Emit(Op::kGt, {x, y}));
  b.BeginIf(b.Emit(Op::kLt, {w, k(0)}));
  ValueId neg_w = b.Mul(b.Emit(Op::kExp, {x}), w);
  b.BeginElse({neg_w});
  ValueId pos_w = b.Div(b.Emit(Op::kMax, {x, w}), b.Add(k(1), b.Mul(y, y)));
  std::vector<ValueId> then_out = b.EndIf({pos_w});
  b.BeginElse(then_out);
  ValueId chosen = b.Select(b.Emit(Op::kGt, {w, k(1)}),
                            b.Emit(Op::kPow, {b.Add(b.Emit(Op::kAbs, {x}), k(1)), w}),
                            b.Mul(b.Emit(Op::kSin, {y}), w));
  std::vector<ValueId> out1 = b.EndIf({b.Sub(chosen, b.Emit(Op::kFloor, {x}))});
  ValueId out2 = b.Add(b.Add(b.Emit(Op::kHypot, {x, w}), b.Emit(Op::kAtan2, {y, x})),
                       b.Emit(Op::kMin, {x, k(0.5)}));
  b.Return({out0, out1[0], out2});
  return fn;
}

TEST_CASE("jvp with several outputs, nested ifs and a reordered, repeated wrt matches Dual") {
  const std::vector<int> wrt = {2, 0, 2};  // w, x, w again; y is not differentiated
  JvpResult r = Jvp(Multi(), wrt);
  REQUIRE(Verify(r.function).ok());
  const size_t M = 3, J = 3;
  REQUIRE(r.function.num_outputs() == M + M * J);
  CHECK(r.structurally_zero == std::vector<bool>(M * J, false));

  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-2, 2);
  int branches[3] = {0, 0, 0};
  for (int n = 0; n < 1500; ++n) {
    double x = u(rng), y = u(rng), w = u(rng);
    ++branches[x > y ? (w < 0 ? 0 : 1) : 2];
    using D = Dual<double, 3>;
    D dw(w, 1.0, 0.0, 1.0);  // lanes 0 and 2 are w
    std::array<D, 3> expected = MultiReference<D>(D::variable(x, 1), D(y), dw);
    std::vector<double> got = Interpret(r.function, std::vector<double>{x, y, w});
    CAPTURE(x);
    CAPTURE(y);
    CAPTURE(w);
    for (size_t m = 0; m < M; ++m) {
      CHECK(Close(got[m], expected[m].value()));
      for (size_t j = 0; j < J; ++j) {
        CHECK(Close(got[PartialIndex(M, J, m, j)], expected[m].partial(int(j))));
      }
    }
  }
  for (int count : branches) CHECK(count > 200);
}

TEST_CASE("jvp through casts and selects on bools") {
  // f(x: f32, y: f64) = f64(x * x) * y + (x > 0 ? 1 : 0)-as-select of f64 constants
  Function fn("cast");
  Builder b(fn);
  ValueId x = b.Input(Type::kF32), y = b.Input(Type::kF64);
  ValueId sq = b.Cast(Type::kF64, b.Mul(x, x));
  ValueId step = b.Select(b.Emit(Op::kGt, {x, b.Const(Type::kF32, 0)}), b.Const(Type::kF64, 1),
                          b.Const(Type::kF64, 0));
  b.Return({b.Add(b.Mul(sq, y), step)});
  JvpResult r = Jvp(fn, std::vector<int>{0, 1});
  REQUIRE(Verify(r.function).ok());
  float xf = 0.3f;
  double yv = -1.7;
  std::vector<double> got = Interpret(r.function, std::vector<double>{xf, yv});
  const double x2 = static_cast<double>(xf * xf);
  CHECK(got[0] == x2 * yv + 1);
  CHECK(got[1] == static_cast<double>(xf + xf) * yv);  // d(x*x) = x + x in float, then widened
  CHECK(got[2] == x2);
}

TEST_CASE("jvp rejects positions out of range and bool inputs") {
  Function fn("bad");
  Builder b(fn);
  ValueId x = b.Input(Type::kF64);
  ValueId flag = b.Input(Type::kBool);
  b.Return({b.Select(flag, x, b.Neg(x))});
  try {
    Jvp(fn, std::vector<int>{2});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()).find("'bad' has 2 inputs") != std::string::npos);
  }
  try {
    Jvp(fn, std::vector<int>{1});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kType);
  }
  JvpResult ok = Jvp(fn, std::vector<int>{0});
  CHECK(Interpret(ok.function, std::vector<double>{2, 0}) == std::vector<double>{-2, -1});
}

}  // namespace
}  // namespace dualcast::jit
