// Tests of the tracer: Var/Bool recording, path exploration, op placement per path, limits, purity.
#include <doctest/doctest.h>

#include <array>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <dualcast/dual.hpp>

#include "absl/strings/str_format.h"
#include "jit/error.h"
#include "jit/ir/hash.h"
#include "jit/ir/print.h"
#include "jit/ir/verify.h"
#include "jit/trace/trace.h"
#include "trace_test_support.h"

// Kernels live at global scope, as user code does: their math names are found
// through `using namespace dualcast::math` for double and by ADL for jit::Var.
namespace kernels {

inline constexpr auto kHmLstm = [](auto z, auto zb, auto c, auto f, auto i, auto g) {
  using namespace dualcast::math;
  if (z == 1) return sigmoid(i) * tanh(g);       // FLUSH
  if (zb == 0) return c;                         // COPY
  return sigmoid(f) * c + sigmoid(i) * tanh(g);  // UPDATE
};

inline constexpr auto kSink = [](auto x, auto y) {
  using namespace dualcast::math;
  auto e = exp(x);   // only the then-side uses it: sinks into that side
  auto t = tanh(y);  // both sides use it: stays above the branch
  if (x > y) return e * t;
  return t;
};

inline constexpr auto kNested3 = [](auto x, auto y, auto z) {
  using namespace dualcast::math;
  auto s = sin(x);
  if (x > 0) {
    if (y > 0) {
      if (z > 0) return s * y * z;
      return s * y;
    }
    return exp(s);
  }
  return -x;
};

inline constexpr auto kBranchOnIntermediate = [](auto x, auto y) {
  using namespace dualcast::math;
  if (exp(x) - y > 0.5) return exp(x) * 2;
  return y * y;
};

// Hand-written branchy kernels for the per-path property.
inline constexpr auto kTernaryAndShared = [](auto x, auto y) {
  using namespace dualcast::math;
  auto a = x * y;
  auto b = log1p(a * a);
  auto r = x > y ? a + b : b - y;
  if (r < 1 && y > -1) return r * cos(a);
  return r;
};

inline constexpr auto kLadder = [](auto x) {
  using namespace dualcast::math;
  auto ax = abs(x);
  if (ax < 0.5) return x;
  if (ax < 1.5) return x * x * 0.5 + sqrt(ax);
  if (ax < 3) return sqrt(ax) * exp(-ax);
  return exp(-ax);
};

inline constexpr auto kEarlyAndLate = [](auto x, auto y, auto z) {
  using namespace dualcast::math;
  auto t = tanh(x + y);
  auto u = sigmoid(z);
  if (z > 0) {
    auto v = t * u;
    if (v > 0.25) return v;
    return v + pow(u, y + 2);  // (pow(u, 2) would be folded to u*u by GCC in the reference)
  }
  if (x < y) return max(t, 0.0) + min(u, y);
  return t - 1;
};

inline constexpr auto kRepeatedCondition = [](auto x, auto y) {
  using namespace dualcast::math;
  auto out = y;
  if (x > 0) out = out * 2;
  out = out + 1;
  if (x > 0) out = out * exp(x);  // same condition: no new decision
  if (!(x > 0)) out = out - 3;    // its negation: no new decision either
  if (0 < x) out = out / 5;       // the same fact, operands swapped
  if (x != y) return out;         // a new decision ...
  if (y == x) return out * y;     // ... whose negation is known: the else-side is dead
  return out + x;
};

inline constexpr auto kSelect = [](auto x, auto y) {
  using namespace dualcast::math;
  return select(x > y, exp(x), y);
};

inline constexpr auto kTuple = [](auto x, auto y) {
  using namespace dualcast::math;
  if (x > y) return std::tuple{x + y, x * y, exp(x)};
  return std::tuple{x - y, y, exp(x)};
};

// Every math function by its dual/ name, found after `using namespace dualcast::math`.
inline constexpr auto kAllMath = [](auto x, auto y) {
  using namespace dualcast::math;
  auto p = exp(x) + expm1(x) + log(x) + log1p(x) + log2(x) + log10(x) + sqrt(x) + cbrt(x);
  p += sin(x) + cos(x) + tan(x) + asin(x) + acos(x) + atan(x) + atan2(x, y);
  p += sinh(x) + cosh(x) + tanh(x) + asinh(x) + acosh(x) + atanh(x) + erf(x) + erfc(x);
  p += abs(x) + fabs(y) + min(x, y) + max(x, y) + fmin(x, y) + fmax(x, y) + hypot(x, y);
  p += copysign(x, y) + floor(x) + ceil(x) + round(x) + trunc(x) + fma(x, y, x);
  p += rint(x) + nearbyint(y) + fdim(x, y);
  p += sigmoid(x) + softplus(x) + relu(x);
  p += pow(x, y) + pow(x, 2) + pow(2, x) + min(x, 0.0) + max(1, y);
  return p;
};

}  // namespace kernels

namespace dualcast::jit {
namespace {

using namespace trace_testing;

// ---- a tiny f64 evaluator (runs only the taken branch) ----

double EvalOp(const Inst& inst, const double* a) {
  namespace dm = dualcast::math;
  switch (inst.op) {
    case Op::kNeg: return -a[0];
    case Op::kAdd: return a[0] + a[1];
    case Op::kSub: return a[0] - a[1];
    case Op::kMul: return a[0] * a[1];
    case Op::kDiv: return a[0] / a[1];
    case Op::kFma: return std::fma(a[0], a[1], a[2]);
    case Op::kExp: return dm::exp(a[0]);
    case Op::kLog1p: return dm::log1p(a[0]);
    case Op::kSqrt: return dm::sqrt(a[0]);
    case Op::kSin: return dm::sin(a[0]);
    case Op::kCos: return dm::cos(a[0]);
    case Op::kTanh: return dm::tanh(a[0]);
    case Op::kAbs: return dm::abs(a[0]);
    case Op::kSigmoid: return dm::sigmoid(a[0]);
    case Op::kPow: return dm::pow(a[0], a[1]);
    case Op::kMin: return dm::min(a[0], a[1]);
    case Op::kMax: return dm::max(a[0], a[1]);
    case Op::kLt: return a[0] < a[1];
    case Op::kLe: return a[0] <= a[1];
    case Op::kGt: return a[0] > a[1];
    case Op::kGe: return a[0] >= a[1];
    case Op::kEq: return a[0] == a[1];
    case Op::kNe: return a[0] != a[1];
    case Op::kAnd: return a[0] != 0 && a[1] != 0;
    case Op::kOr: return a[0] != 0 || a[1] != 0;
    case Op::kNot: return a[0] == 0;
    case Op::kSelect: return a[0] != 0 ? a[1] : a[2];
    default: FAIL("the test evaluator lacks ", Spelling(inst.op)); return 0;
  }
}

std::vector<double> EvalBlock(const Function& f, BlockId b, std::vector<double>& vals) {
  const Block& block = f.blocks[b];
  for (ValueId v : block.body) {
    const Inst& inst = f.inst(v);
    if (inst.op == Op::kInput || inst.op == Op::kResult) continue;
    if (inst.op == Op::kConst) {
      vals[v] = inst.imm;
    } else if (inst.op == Op::kIf) {
      std::vector<double> ys =
          EvalBlock(f, vals[inst.args[0]] != 0 ? inst.then_block : inst.else_block, vals);
      for (ValueId r : block.body) {
        if (f.inst(r).op == Op::kResult && f.inst(r).args[0] == v) vals[r] = ys[f.inst(r).index];
      }
    } else {
      double a[3];
      for (int k = 0; k < inst.num_args; ++k) a[k] = vals[inst.args[k]];
      vals[v] = EvalOp(inst, a);
    }
  }
  std::vector<double> ys;
  for (ValueId y : block.yields) ys.push_back(vals[y]);
  return ys;
}

std::vector<double> Eval(const Function& f, const std::vector<double>& in) {
  std::vector<double> vals(f.insts.size(), std::nan(""));
  for (size_t i = 0; i < in.size(); ++i) vals[f.inputs[i]] = in[i];
  return EvalBlock(f, 0, vals);
}

// ---- every path through the IR, with what it evaluates ----

struct Path {
  std::vector<bool> taken;          // the branches taken, outermost first
  std::vector<ValueId> executed;    // ops evaluated (not inputs, ifs or results)
  std::vector<ValueId> roots;       // If conditions passed and the values returned
  std::map<ValueId, ValueId> alias; // If result -> the value its taken branch yielded
  std::vector<ValueId> outputs;
  int count(const Function& f, Op op) const {
    int n = 0;
    for (ValueId v : executed) n += f.inst(v).op == op;
    return n;
  }
};

ValueId Resolve(const Path& p, ValueId v) {
  for (auto it = p.alias.find(v); it != p.alias.end(); it = p.alias.find(v)) v = it->second;
  return v;
}

void Walk(const Function& f, BlockId b, size_t i, Path p, const std::function<void(Path)>& done) {
  const auto& body = f.blocks[b].body;
  for (; i < body.size(); ++i) {
    ValueId v = body[i];
    const Inst& inst = f.inst(v);
    if (inst.op == Op::kInput || inst.op == Op::kResult) continue;
    if (inst.op != Op::kIf) {
      p.executed.push_back(v);
      continue;
    }
    for (bool side : {true, false}) {
      Path q = p;
      q.taken.push_back(side);
      q.roots.push_back(Resolve(q, inst.args[0]));
      BlockId branch = side ? inst.then_block : inst.else_block;
      Walk(f, branch, 0, q, [&, i, branch](Path r) {
        const auto& ys = f.blocks[branch].yields;
        for (size_t j = 0; j < ys.size(); ++j) r.alias[body[i + 1 + j]] = Resolve(r, ys[j]);
        Walk(f, b, i + 1, r, done);
      });
    }
    return;
  }
  done(std::move(p));
}

std::vector<Path> Paths(const Function& f) {
  std::vector<Path> paths;
  Walk(f, 0, 0, Path{}, [&](Path p) {
    for (ValueId y : f.outputs()) {
      p.outputs.push_back(Resolve(p, y));
      p.roots.push_back(Resolve(p, y));
    }
    paths.push_back(std::move(p));
  });
  return paths;
}

// Along every path: no op is computed twice (structurally, through the
// branch results) and every op computed is needed by a condition or output.
void CheckEveryPathIsTight(const Function& f) {
  for (const Path& p : Paths(f)) {
    CAPTURE(Print(f));
    std::map<std::tuple<Op, Type, uint64_t, uint32_t, std::array<ValueId, 3>>, ValueId> seen;
    std::map<ValueId, ValueId> canon;
    auto canonical = [&](ValueId v) {
      v = Resolve(p, v);
      auto it = canon.find(v);
      return it == canon.end() ? v : it->second;
    };
    for (ValueId v : p.executed) {
      const Inst& inst = f.inst(v);
      std::array<ValueId, 3> args{kNoValue, kNoValue, kNoValue};
      for (int k = 0; k < inst.num_args; ++k) args[k] = canonical(inst.args[k]);
      auto key = std::make_tuple(inst.op, inst.type, std::bit_cast<uint64_t>(inst.imm),
                                 inst.index, args);
      auto [it, fresh] = seen.emplace(key, v);
      CHECK_MESSAGE(fresh, "%", v, " (", Spelling(inst.op), ") is computed twice on a path");
      canon[v] = it->second;
    }
    std::map<ValueId, bool> needed;
    std::vector<ValueId> stack = p.roots;
    while (!stack.empty()) {
      ValueId v = Resolve(p, stack.back());
      stack.pop_back();
      if (needed[v]) continue;
      needed[v] = true;
      for (ValueId a : f.inst(v).operands()) stack.push_back(a);
    }
    for (ValueId v : p.executed) {
      CHECK_MESSAGE(needed[v], "%", v, " (", Spelling(f.inst(v).op),
                    ") is computed on a path that does not need it");
    }
  }
}

int MaxIfDepth(const Function& f, BlockId b = 0) {
  int depth = 0;
  for (ValueId v : f.blocks[b].body) {
    const Inst& inst = f.inst(v);
    if (inst.op != Op::kIf) continue;
    depth = std::max(depth, 1 + std::max(MaxIfDepth(f, inst.then_block),
                                         MaxIfDepth(f, inst.else_block)));
  }
  return depth;
}

// Traces an f64 kernel, checks it verifies and is tight on every path, and
// compares the evaluated IR with the lambda run on doubles at random points.
template <size_t N, class F>
Function CheckAgainstDoubles(const std::string& name, F f, double lo = -3, double hi = 3) {
  Function traced = Trace(name, f, Types(Type::kF64, N));
  REQUIRE(Verify(traced).ok());
  CheckEveryPathIsTight(traced);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int trial = 0; trial < 200; ++trial) {
    std::array<double, N> x;
    for (double& xi : x) xi = trial % 7 == 0 ? std::round(dist(rng)) : dist(rng);
    double expected = std::apply(f, x);
    std::vector<double> got = Eval(traced, std::vector<double>(x.begin(), x.end()));
    REQUIRE(got.size() == 1);
    CHECK_MESSAGE(Same(got[0], expected), name, ": ", absl::StrFormat("%.17g vs %.17g", got[0], expected), " at ",
                  x[0], ", ", x[N - 1], "\n", Print(traced));
  }
  return traced;
}

template <class Fn>
Error CatchError(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  FAIL("expected a dualcast::Error");
  return Error(ErrorKind::kInternal, "none");
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---- structure ----

TEST_CASE("straight-line arithmetic records one op per operator, constants in the operand type") {
  Function f = Trace("k", [](auto x, auto y) { return (x + 1) * y - 2 / x; },
                     Types(Type::kF32, 2));
  REQUIRE(Verify(f).ok());
  CHECK(Print(f) ==
        "func k(%0: f32, %1: f32) -> (f32) {\n"
        "  %2 = const 1 : f32\n"
        "  %3 = add %0, %2 : f32\n"
        "  %4 = mul %3, %1 : f32\n"
        "  %5 = const 2 : f32\n"
        "  %6 = div %5, %0 : f32\n"
        "  %7 = sub %4, %6 : f32\n"
        "  return %7\n"
        "}\n");
}

TEST_CASE("an op used by one side sinks into it; an op used by both stays above the branch") {
  Function f = Trace("sink", kernels::kSink, Types(Type::kF64, 2));
  REQUIRE(Verify(f).ok());
  CHECK(Print(f) ==
        "func sink(%0: f64, %1: f64) -> (f64) {\n"
        "  %2 = gt %0, %1 : bool\n"
        "  %3 = tanh %1 : f64\n"
        "  %4 = if %2 {\n"
        "    %5 = exp %0 : f64\n"
        "    %6 = mul %5, %3 : f64\n"
        "    yield %6\n"
        "  } else {\n"
        "    yield %3\n"
        "  }\n"
        "  return %4\n"
        "}\n");
}

TEST_CASE("HM-LSTM cell: three paths, each computing exactly what it needs once") {
  Function f = Trace("hmlstm_cell", kernels::kHmLstm, Types(Type::kF32, 6));
  REQUIRE(Verify(f).ok());
  CheckEveryPathIsTight(f);
  std::vector<Path> paths = Paths(f);
  REQUIRE(paths.size() == 3);
  std::map<std::vector<bool>, const Path*> by_taken;
  for (const Path& p : paths) by_taken[p.taken] = &p;
  REQUIRE(by_taken.count({true}) == 1);
  REQUIRE(by_taken.count({false, true}) == 1);
  REQUIRE(by_taken.count({false, false}) == 1);
  const Path& flush = *by_taken[{true}];
  const Path& copy = *by_taken[{false, true}];
  const Path& update = *by_taken[{false, false}];
  CHECK(flush.count(f, Op::kSigmoid) == 1);
  CHECK(flush.count(f, Op::kTanh) == 1);
  CHECK(copy.count(f, Op::kSigmoid) == 0);
  CHECK(copy.count(f, Op::kTanh) == 0);
  CHECK(copy.count(f, Op::kMul) == 0);
  CHECK(update.count(f, Op::kSigmoid) == 2);
  CHECK(update.count(f, Op::kTanh) == 1);
  CHECK(update.count(f, Op::kMul) == 2);
  CHECK(update.count(f, Op::kAdd) == 1);
  CHECK(copy.outputs[0] == f.inputs[2]);  // COPY returns c itself
  CHECK(MaxIfDepth(f) == 2);
}

TEST_CASE("nested branches three deep, and a branch on an intermediate value") {
  Function nested = CheckAgainstDoubles<3>("nested", kernels::kNested3);
  CHECK(MaxIfDepth(nested) == 3);
  CHECK(CountOps(nested, Op::kIf) == 3);
  CHECK(Paths(nested).size() == 4);
  for (const Path& p : Paths(nested)) {
    // sin(x) is needed by the three x > 0 paths only.
    CHECK(p.count(nested, Op::kSin) == (p.taken[0] ? 1 : 0));
  }

  Function inter = CheckAgainstDoubles<2>("intermediate", kernels::kBranchOnIntermediate);
  REQUIRE(Paths(inter).size() == 2);
  for (const Path& p : Paths(inter)) {
    CHECK(p.count(inter, Op::kExp) == 1);  // computed once, above the branch, reused
  }
  // exp stays in the entry block because the condition needs it.
  int exps_in_entry = 0;
  for (ValueId v : inter.entry().body) exps_in_entry += inter.inst(v).op == Op::kExp;
  CHECK(exps_in_entry == 1);
}

TEST_CASE("hand-written branchy kernels: tight on every path and equal to the lambda on doubles") {
  CheckAgainstDoubles<2>("ternary_and_shared", kernels::kTernaryAndShared);
  CheckAgainstDoubles<1>("ladder", kernels::kLadder, -4, 4);
  CheckAgainstDoubles<3>("early_and_late", kernels::kEarlyAndLate);
  Function repeated = CheckAgainstDoubles<2>("repeated", kernels::kRepeatedCondition);
  // x > 0 once; the x != y decisions of its two sides re-join into one If after it.
  CHECK(CountOps(repeated, Op::kIf) == 2);
  CHECK(CountOps(repeated, Op::kEq) == 0);  // y == x is never asked: it is known
  CHECK(Paths(repeated).size() == 4);
}

TEST_CASE("a decision whose two sides do the same thing leaves no If and no condition") {
  Function f = Trace("same", [](auto x, auto y) {
    auto r = x > 0 ? y : y;
    if (y < x) return r * 2;
    return r * 2;
  }, Types(Type::kF64, 2));
  REQUIRE(Verify(f).ok());
  CHECK(Print(f) ==
        "func same(%0: f64, %1: f64) -> (f64) {\n"
        "  %2 = const 2 : f64\n"
        "  %3 = mul %1, %2 : f64\n"
        "  return %3\n"
        "}\n");
}

TEST_CASE("select stays branch-free") {
  Function f = CheckAgainstDoubles<2>("sel", kernels::kSelect);
  CHECK(CountOps(f, Op::kIf) == 0);
  CHECK(CountOps(f, Op::kSelect) == 1);
  CHECK(CountOps(f, Op::kExp) == 1);
}

TEST_CASE("&&, || and ! are recorded as one condition, without short-circuit") {
  Function f = CheckAgainstDoubles<2>("logic", [](auto x, auto y) {
    if ((x > 0 && y > 0) || !(x < y)) return x * y;
    return x - y;
  });
  CHECK(CountOps(f, Op::kIf) == 1);
  CHECK(CountOps(f, Op::kAnd) == 1);
  CHECK(CountOps(f, Op::kOr) == 1);
  CHECK(CountOps(f, Op::kNot) == 1);
}

TEST_CASE("several outputs: std::tuple and std::array, each If yielding all of them") {
  auto tuple_kernel = kernels::kTuple;
  Function t = Trace("tuple", tuple_kernel, Types(Type::kF64, 2));
  REQUIRE(Verify(t).ok());
  CHECK(t.num_outputs() == 3);
  CheckEveryPathIsTight(t);
  for (double x : {-1.0, 2.0}) {
    auto [a, b, c] = tuple_kernel(x, 0.5);
    CHECK(Eval(t, {x, 0.5}) == std::vector<double>{a, b, c});
  }
  // exp(x) is returned on both paths: computed once above the If.
  for (const Path& p : Paths(t)) CHECK(p.count(t, Op::kExp) == 1);
  CHECK(CountOps(t, Op::kExp) == 1);

  auto array_kernel = [](auto x, auto y) {
    std::array<decltype(x), 2> out;
    out[0] = x * 2;
    out[1] = y > 0 ? x / y : y;
    return out;
  };
  Function a = Trace("array", array_kernel, Types(Type::kF32, 2));
  REQUIRE(Verify(a).ok());
  CHECK(a.num_outputs() == 2);
  CHECK(a.output_type(0) == Type::kF32);
  CheckEveryPathIsTight(a);
}

TEST_CASE("every math function of dual/ is found for Var after using namespace dualcast::math") {
  Function f = Trace("all_math", kernels::kAllMath, Types(Type::kF64, 2));
  REQUIRE(Verify(f).ok());
  CHECK(CountOps(f, Op::kIf) == 0);
  for (Op op : {Op::kExp, Op::kExpm1, Op::kLog, Op::kLog1p, Op::kLog2, Op::kLog10, Op::kSqrt,
                Op::kCbrt, Op::kSin, Op::kCos, Op::kTan, Op::kAsin, Op::kAcos, Op::kAtan,
                Op::kAtan2, Op::kSinh, Op::kCosh, Op::kTanh, Op::kAsinh, Op::kAcosh, Op::kAtanh,
                Op::kErf, Op::kErfc, Op::kAbs, Op::kMin, Op::kMax, Op::kFmin, Op::kFmax,
                Op::kHypot, Op::kCopysign, Op::kFloor, Op::kCeil, Op::kRound, Op::kTrunc,
                Op::kFma, Op::kSigmoid, Op::kSoftplus, Op::kRelu, Op::kPow, Op::kRint, Op::kFdim}) {
    CHECK_MESSAGE(CountOps(f, op) >= 1, Spelling(op));
  }
  CHECK(CountOps(f, Op::kAbs) == 2);  // abs(x) and fabs(y)
  CHECK(CountOps(f, Op::kRint) == 2);  // rint(x) and nearbyint(y)
  CHECK(CountOps(f, Op::kPow) == 3);  // pow(x, y), pow(x, 2), pow(2, x)
  CHECK(CountOps(f, Op::kMin) == 2);  // min(x, y), min(x, 0.0)
  // The same lambda still runs on plain doubles and on Dual.
  using D = dualcast::Dual<double, 1>;
  CHECK(Same(kernels::kAllMath(D::variable(1.5, 0), D(0.25)).value(),
                   kernels::kAllMath(1.5, 0.25)));
}

// ---- types and constants ----

TEST_CASE("float and double tracing: input, op and constant types follow the inputs") {
  auto k = [](auto x) { return x * 0.1 + 1; };
  Function f32 = Trace("k", k, Types(Type::kF32, 1));
  Function f64 = Trace("k", k, Types(Type::kF64, 1));
  REQUIRE(Verify(f32).ok());
  REQUIRE(Verify(f64).ok());
  CHECK(f32.input_type(0) == Type::kF32);
  CHECK(f32.output_type(0) == Type::kF32);
  CHECK(f64.output_type(0) == Type::kF64);
  CHECK(Contains(Print(f32), "const 0.100000001 : f32"));
  CHECK(Contains(Print(f64), "const 0.10000000000000001 : f64"));
  CHECK(StructuralHash(f32) != StructuralHash(f64));
}

TEST_CASE("mixed f32/f64 operands widen; a constant path output takes the output type") {
  Function f = Trace("mixed", [](auto a, auto b) {
    using V = decltype(a);
    if (a > 0) return a;       // f32: the output type
    if (b > 0) return V(0.1);  // a constant made alone: default type f64, re-rounded to f32
    return a * 3;
  }, std::vector<Type>{Type::kF32, Type::kF64});
  REQUIRE(Verify(f).ok());
  CHECK(f.output_type(0) == Type::kF32);
  CHECK(Contains(Print(f), "const 0.100000001 : f32"));
  CHECK_FALSE(Contains(Print(f), "cast"));

  Function g = Trace("widen", [](auto a, auto b) { return a + b; },
                     std::vector<Type>{Type::kF32, Type::kF64});
  REQUIRE(Verify(g).ok());
  CHECK(Print(g) ==
        "func widen(%0: f32, %1: f64) -> (f64) {\n"
        "  %2 = cast %0 : f64\n"
        "  %3 = add %2, %1 : f64\n"
        "  return %3\n"
        "}\n");
}

TEST_CASE("comparisons of constants answer without a decision; constant outputs are accepted") {
  Function f = Trace("consts", [](auto x) {
    using V = decltype(x);
    V two = 2;
    if (two * 3 > 5) return x;  // 6 > 5 is folded: no If
    return -x;
  }, Types(Type::kF64, 1));
  REQUIRE(Verify(f).ok());
  CHECK(CountOps(f, Op::kIf) == 0);
  CHECK(Print(f) == "func consts(%0: f64) -> (f64) {\n  return %0\n}\n");

  Function zero = Trace("zero", [](auto) { return 0.0; }, Types(Type::kF32, 1));
  REQUIRE(Verify(zero).ok());
  CHECK(Print(zero) == "func zero(%0: f32) -> (f32) {\n  %1 = const 0 : f32\n  return %1\n}\n");

  Function none = Trace("no_inputs", []() { return 1.5; }, std::vector<Type>{});
  REQUIRE(Verify(none).ok());
  CHECK(none.output_type(0) == Type::kF64);
}

TEST_CASE("a negative-NaN constant keeps its sign: signbit folds to true, the value stays -NaN") {
  // The builder made every NaN constant +NaN, so signbit(V(-NaN)) gave 0 in a
  // kernel and 1 on double (docs/ops.md: signbit is true for negative NaNs).
  // The reference is C++ on double: std::signbit(-NaN) and -(-NaN).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  REQUIRE(std::signbit(-nan));
  for (Type t : {Type::kF32, Type::kF64}) {
    CAPTURE(TypeName(t));
    Function sb = Trace("sb", [&](auto x) {
      using V = decltype(x);
      return select(signbit(V(-nan)), V(1), V(0)) + x * 0;
    }, Types(t, 1));
    REQUIRE(Verify(sb).ok());
    const double zero[] = {0.0};
    CHECK(Interpret(sb, std::span<const double>(zero))[0] == 1);

    // Both signs as values, distinct nodes; the printer says which.
    Function both = Trace("both", [&](auto x) {
      using V = decltype(x);
      return std::tuple{select(x > 0, V(-nan), x), select(x > 0, V(nan), x), -V(-nan)};
    }, Types(t, 1));
    REQUIRE(Verify(both).ok());
    const double one[] = {1.0};
    const std::vector<double> got = Interpret(both, std::span<const double>(one));
    CHECK((std::isnan(got[0]) && std::signbit(got[0])));
    CHECK((std::isnan(got[1]) && !std::signbit(got[1])));
    CHECK((std::isnan(got[2]) && !std::signbit(got[2])));
    CHECK(Contains(Print(both), "const -nan"));
  }
}

TEST_CASE("an int64 number in a float32 kernel is rounded once, as C++ float + long long") {
  // Through double first, L = 2^60 + 2^36 + 1 became 2^60 + 2^36 (the 1 lost), a
  // tie that rounds to the even 2^60 in float. Rounded once, L is past the
  // midpoint 2^60 + 2^36 and gives 2^60 + 2^37 (float's ulp at 2^60 is 2^37).
  static constexpr long long L = (1LL << 60) + (1LL << 36) + 1;
  const double once = 0x1p60 + 0x1p37;
  REQUIRE(static_cast<double>(0.0f + L) == once);  // the C++ rule the kernel follows
  const double zero[] = {0.0};
  auto value = [&](auto k) {
    return Interpret(Trace("i64", k, Types(Type::kF32, 1)), std::span<const double>(zero))[0];
  };
  CHECK(value([](auto x) { return x + L; }) == once);                     // a number operand
  CHECK(value([](auto x) { return decltype(x)(L) + x; }) == once);        // a Var made from it
  CHECK(value([](auto x) { return select(x > 0, x, L); }) == once);       // a select operand
  CHECK(value([](auto) { return L; }) == once);                          // a constant output
  CHECK(value([](auto x) { return x + 9007199254740993ULL; }) == 0x1p53);  // 2^53 + 1: both agree
  // f64 kernels are unchanged: L rounds to double once (to 2^60 + 2^36).
  CHECK(Interpret(Trace("i64", [](auto x) { return x + L; }, Types(Type::kF64, 1)),
                  std::span<const double>(zero))[0] == 0x1p60 + 0x1p36);
  if constexpr (std::numeric_limits<long double>::digits >= 64) {
    // The same double rounding for a long double: 1 + 2^-24 + 2^-60 is above
    // float's midpoint 1 + 2^-24, but in double it is that midpoint (a tie to 1).
    const long double ld = 1.0L + 0x1p-24L + 0x1p-60L;
    REQUIRE(static_cast<float>(ld) == 1.0f + 0x1p-23f);
    CHECK(value([&](auto x) { return x + ld; }) == 1.0 + 0x1p-23);
  }
}

TEST_CASE("the result type of a kernel is checked at compile time") {
  static_assert(KernelResult<Var>);
  static_assert(KernelResult<double>);
  static_assert(KernelResult<std::tuple<Var, Var, double>>);
  static_assert(KernelResult<std::array<Var, 3>>);
  static_assert(!KernelResult<Bool>);
  static_assert(!KernelResult<void>);
  static_assert(!KernelResult<std::string>);
  static_assert(!KernelResult<bool>);
  static_assert(!KernelResult<std::tuple<>>);
  static_assert(!KernelResult<std::tuple<Var, Bool>>);
  static_assert(!KernelResult<std::array<Var, 0>>);
  static_assert(!std::is_convertible_v<Var, double>);
  static_assert(!std::is_convertible_v<Bool, bool>);
  static_assert(std::is_constructible_v<bool, Bool>);  // explicit: for if, ?:, &&
}

// ---- determinism, threads ----

TEST_CASE("the same lambda traced twice gives the same structure and hash") {
  Function a = Trace("hmlstm_cell", kernels::kHmLstm, Types(Type::kF32, 6));
  Function b = Trace("other_name", kernels::kHmLstm, Types(Type::kF32, 6));
  CHECK(StructuralHash(a) == StructuralHash(b));
  CHECK(Print(a) == Print(Trace("hmlstm_cell", kernels::kHmLstm, Types(Type::kF32, 6))));
  CHECK(StructuralHash(a) != StructuralHash(Trace("sink", kernels::kSink, Types(Type::kF32, 2))));
}

TEST_CASE("several threads trace at once") {
  uint64_t expected = StructuralHash(Trace("cell", kernels::kHmLstm, Types(Type::kF32, 6)));
  std::vector<int> matches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        Function f = Trace("cell", kernels::kHmLstm, Types(Type::kF32, 6));
        matches[t] += StructuralHash(f) == expected && Verify(f).ok();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int m : matches) CHECK(m == 20);
}

// ---- errors ----

TEST_CASE("a data-dependent loop hits the per-path decision limit instead of hanging") {
  Error e = CatchError([] {
    Trace("countdown", [](auto x) {
      while (x > 0) x = x - 1;
      return x;
    }, Types(Type::kF32, 1));
  });
  CHECK(e.kind() == ErrorKind::kTrace);
  CHECK(Contains(e.what(), "'countdown'"));
  CHECK(Contains(e.what(), "32"));
  CHECK(Contains(e.what(), "max_decisions_per_path"));
  CHECK(Contains(e.what(), "select(cond, a, b)"));

  TraceOptions few;
  few.max_decisions_per_path = 3;
  Error e3 = CatchError([&] {
    Trace("deep", kernels::kNested3, Types(Type::kF64, 3), TraceOptions{2, 4096});
  });
  CHECK(e3.kind() == ErrorKind::kTrace);
  CHECK_NOTHROW(Trace("deep", kernels::kNested3, Types(Type::kF64, 3), few));
}

TEST_CASE("too many paths is an error naming the kernel and the limit") {
  auto many = [](auto x, auto y) {
    auto acc = x;
    for (int k = 0; k < 13; ++k) {  // 13 independent conditions: 8192 paths
      if (y > k) acc = acc * y;
      else acc = acc + k;
    }
    return acc;
  };
  TraceOptions limit;
  limit.max_paths = 4096;
  Error e = CatchError([&] { Trace("many", many, Types(Type::kF32, 2), limit); });
  CHECK(e.kind() == ErrorKind::kTrace);
  CHECK(Contains(e.what(), "'many'"));
  CHECK(Contains(e.what(), "4096"));
  CHECK(Contains(e.what(), "13 different conditions"));
  CHECK(Contains(e.what(), "dc::cond(pred, then_fn, else_fn)"));
  CHECK(Contains(e.what(), "select(cond, a, b)"));
  CHECK_NOTHROW(Trace("many", many, Types(Type::kF32, 2)));  // 8192 paths: within the default
  TraceOptions small;
  small.max_paths = 2;
  CHECK_THROWS_AS(Trace("hm", kernels::kHmLstm, Types(Type::kF32, 6), small), Error);
  small.max_paths = 3;
  CHECK_NOTHROW(Trace("hm", kernels::kHmLstm, Types(Type::kF32, 6), small));
}

TEST_CASE("impure kernels are rejected") {
  // State between calls changes which condition is asked after the same decisions.
  Error e1 = CatchError([] {
    Trace("counter", [n = 0](auto x, auto y) mutable {
      ++n;
      if (n % 2 == 1 ? x > y : x < y) return x;
      return y;
    }, Types(Type::kF64, 2));
  });
  CHECK(e1.kind() == ErrorKind::kTrace);
  CHECK(Contains(e1.what(), "'counter'"));
  CHECK(Contains(e1.what(), "not pure/deterministic"));
  // ... or returns early where an earlier run branched.
  Error e2 = CatchError([] {
    Trace("once", [n = 0](auto x) mutable {
      if (n++ > 0) return x;
      if (x > 0) return x * 2;
      return -x;
    }, Types(Type::kF64, 1));
  });
  CHECK(e2.kind() == ErrorKind::kTrace);
  CHECK(Contains(e2.what(), "not pure/deterministic"));
}

TEST_CASE("TraceDynamic dispatches on the run-time arity and names the arities it accepts") {
  auto two = [](auto x, auto y) { return x * y; };
  Function f = TraceDynamic("two", two, Types(Type::kF64, 2));
  CHECK(Verify(f).ok());
  CHECK(f.num_inputs() == 2);
  Error e = CatchError([&] { TraceDynamic("two", two, Types(Type::kF64, 3)); });
  CHECK(e.kind() == ErrorKind::kArity);
  CHECK(Contains(e.what(), "kernel 'two' cannot be called with 3 arguments"));
  CHECK(Contains(e.what(), "takes 2"));
  CHECK(TraceDynamic("variadic", [](auto... xs) { return (xs + ... + 0); },
                     Types(Type::kF32, 5)).num_inputs() == 5);
  Error none = CatchError([] {
    TraceDynamic("plain", [](double x) { return x; }, Types(Type::kF64, 1));
  });
  CHECK(none.kind() == ErrorKind::kArity);
  CHECK(Contains(none.what(), "generic lambda"));
  Error too_many = CatchError([&] { TraceDynamic("two", two, Types(Type::kF64, 17)); });
  CHECK(too_many.kind() == ErrorKind::kArity);
}

TEST_CASE("misuse of traced values outside a trace and bool inputs are reported") {
  Error outside = CatchError([] { (void)Var(1.0); });
  CHECK(outside.kind() == ErrorKind::kTrace);
  CHECK(Contains(outside.what(), "outside of jit::Trace"));
  Error unset = CatchError([] {
    Trace("unset", [](auto x) {
      decltype(x) y;
      return x + y;
    }, Types(Type::kF64, 1));
  });
  CHECK(unset.kind() == ErrorKind::kTrace);
  CHECK(Contains(unset.what(), "'unset'"));
  Error bool_input = CatchError([] {
    Trace("b", [](auto x) { return x; }, std::vector<Type>{Type::kBool});
  });
  CHECK(bool_input.kind() == ErrorKind::kType);
}

}  // namespace
}  // namespace dualcast::jit
