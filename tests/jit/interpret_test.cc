// Tests of the reference interpreter: every op against a hand-written value, branch selection, f32 rounding.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "jit/error.h"
#include "jit/ir/interpret.h"
#include "jit/ir/ir.h"
#include "jit/ir/scalar_ops.h"
#include "jit/ir/verify.h"

namespace dualcast::jit {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// f(x0, ..., x_{n-1}) = op(x...) with inputs of `input_type`.
Function OneOp(Op op, Type input_type) {
  Function f(Spelling(op));
  Builder b(f);
  std::vector<ValueId> args;
  Type arg_type = Info(op).kind == OpKind::Logic ? Type::kBool : input_type;
  for (int k = 0; k < Info(op).arity; ++k) {
    // select's condition is a bool input.
    args.push_back(b.Input(op == Op::kSelect && k == 0 ? Type::kBool : arg_type));
  }
  b.Return({op == Op::kCast ? b.Cast(Type::kF32, args[0]) : b.Emit(op, args)});
  return f;
}

struct Expectation {
  Op op;
  std::vector<double> args;
  double expected;  // written by hand (libm values via std::, in double)
};

bool SameValue(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// libm is not correctly rounded everywhere (glibc's cbrt(-27) is one ulp off -3),
// so hand-written values are compared to a few ulps.
bool Close(double a, double b) {
  return SameValue(a, b) || std::abs(a - b) <= 1e-15 * std::abs(b);
}

TEST_CASE("interpreter: every op once against a hand-written f64 expectation") {
  const double pi = 3.141592653589793;
  const std::vector<Expectation> table = {
      {Op::kNeg, {2.5}, -2.5},
      {Op::kAdd, {2, 3}, 5},
      {Op::kSub, {2, 3}, -1},
      {Op::kMul, {2, -3}, -6},
      {Op::kDiv, {1, 4}, 0.25},
      // fused: (1 + 2^-30)(1 - 2^-30) - 1 = -2^-60 exactly; unfused it would round to 0.
      {Op::kFma, {1 + 0x1p-30, 1 - 0x1p-30, -1}, -0x1p-60},
      {Op::kExp, {0}, 1},
      {Op::kExpm1, {1e-10}, 1e-10 + 0.5e-20},  // x + x²/2 + ...
      {Op::kLog, {1}, 0},
      {Op::kLog1p, {1e-10}, 1e-10 - 0.5e-20},  // x - x²/2 + ...
      {Op::kLog2, {8}, 3},
      {Op::kLog10, {1000}, 3},
      {Op::kSqrt, {6.25}, 2.5},
      {Op::kCbrt, {-27}, -3},
      {Op::kSin, {pi / 2}, 1},
      {Op::kCos, {0}, 1},
      {Op::kTan, {0}, 0},
      {Op::kAsin, {1}, pi / 2},
      {Op::kAcos, {1}, 0},
      {Op::kAtan, {1}, pi / 4},
      {Op::kSinh, {0}, 0},
      {Op::kCosh, {0}, 1},
      {Op::kTanh, {0.5}, std::tanh(0.5)},
      {Op::kAsinh, {0}, 0},
      {Op::kAcosh, {1}, 0},
      {Op::kAtanh, {0}, 0},
      {Op::kErf, {0}, 0},
      {Op::kErfc, {0}, 1},
      {Op::kAbs, {-3}, 3},
      {Op::kFloor, {-2.5}, -3},
      {Op::kCeil, {-2.5}, -2},
      {Op::kRound, {-2.5}, -3},  // halfway cases away from zero
      {Op::kTrunc, {-2.5}, -2},
      {Op::kRint, {-2.5}, -2},  // halfway cases to even
      {Op::kSigmoid, {0}, 0.5},
      {Op::kFastTanh, {-0.5}, -0.46211715726000974},  // tanh(-1/2), A&S 4.5 tables
      {Op::kFastSigmoid, {0}, 0.5},
      {Op::kSoftplus, {0}, std::log(2.0)},
      {Op::kRelu, {-1}, 0},
      {Op::kPow, {2, 10}, 1024},
      {Op::kAtan2, {1, -1}, 3 * pi / 4},
      {Op::kMin, {3, -1}, -1},
      {Op::kMax, {3, -1}, 3},
      {Op::kFmin, {kNaN, 2}, 2},  // a NaN loses
      {Op::kFmax, {2, kNaN}, 2},
      {Op::kHypot, {3, 4}, 5},
      {Op::kCopysign, {3, -0.0}, -3},
      {Op::kExp2, {-3}, 0.125},
      {Op::kLgamma, {5}, std::log(24.0)},
      {Op::kTgamma, {5}, 24},
      {Op::kSign, {-7}, -1},
      {Op::kSquare, {-3}, 9},
      {Op::kRsqrt, {0.25}, 2},
      {Op::kErfinv, {0.5}, 0.47693627620446987},  // tabulated (A&S 7.1)
      {Op::kFmod, {-7, 3}, -1},                   // the sign of the dividend
      {Op::kRemainder, {8, 3}, -1},               // 8/3 rounds to 3
      {Op::kFdim, {1, 3}, 0},                     // max(a - b, +0)
      {Op::kLdexp, {3, 4.9}, 48},                 // the count truncates to 4
      {Op::kLogaddexp, {0, 0}, std::log(2.0)},
      {Op::kClamp, {5, 0, 1}, 1},
      {Op::kIsnan, {kNaN}, 1},
      {Op::kIsfinite, {kInf}, 0},
      {Op::kIsinf, {-kInf}, 1},
      {Op::kSignbit, {-0.0}, 1},
      {Op::kLt, {1, 2}, 1},
      {Op::kLe, {2, 2}, 1},
      {Op::kGt, {1, 2}, 0},
      {Op::kGe, {1, 2}, 0},
      {Op::kEq, {kNaN, kNaN}, 0},
      {Op::kNe, {kNaN, kNaN}, 1},
      {Op::kAnd, {1, 0}, 0},
      {Op::kOr, {1, 0}, 1},
      {Op::kNot, {0}, 1},
      {Op::kSelect, {0, 7, 9}, 9},
      {Op::kCast, {0.1}, static_cast<double>(0.1f)},  // f64 -> f32 rounds
  };
  std::set<Op> covered;
  for (const Expectation& e : table) {
    std::string op_name = Spelling(e.op);
    CAPTURE(op_name);
    CAPTURE(e.expected);
    Function f = OneOp(e.op, Type::kF64);
    REQUIRE(Verify(f).ok());
    std::vector<double> y = Interpret(f, std::span<const double>(e.args));
    REQUIRE(y.size() == 1);
    CHECK(Close(y[0], e.expected));
    covered.insert(e.op);
  }
  // Every op of ops.def with a scalar meaning is in the table.
  for (int i = 0; i < kNumOps; ++i) {
    Op op = static_cast<Op>(i);
    OpKind kind = Info(op).kind;
    if (kind == OpKind::Leaf || kind == OpKind::Control) continue;
    std::string op_name = Spelling(op);
    CAPTURE(op_name);
    CHECK(covered.count(op) == 1);
  }
}

TEST_CASE("interpreter: conventions at kinks, ties and specials") {
  auto eval = [](Op op, std::vector<double> args) {
    return Interpret(OneOp(op, Type::kF64), std::span<const double>(args))[0];
  };
  CHECK(eval(Op::kRelu, {kNaN}) != eval(Op::kRelu, {kNaN}));  // NaN stays NaN
  CHECK_FALSE(std::signbit(eval(Op::kRelu, {-0.0})));        // relu(-0) = +0
  // Ties take the first argument: min(+0, -0) = +0, min(-0, +0) = -0.
  CHECK_FALSE(std::signbit(eval(Op::kMin, {0.0, -0.0})));
  CHECK(std::signbit(eval(Op::kMin, {-0.0, 0.0})));
  CHECK(std::signbit(eval(Op::kMax, {-0.0, 0.0})));
  CHECK(std::isnan(eval(Op::kMin, {kNaN, 1})));  // min returns a NaN first argument
  CHECK(eval(Op::kMin, {1, kNaN}) == 1);
  CHECK(eval(Op::kSigmoid, {-1000}) == 0);
  CHECK(eval(Op::kSoftplus, {1000}) == 1000);
  CHECK(eval(Op::kSoftplus, {-1000}) == 0);
  CHECK(eval(Op::kExp, {kInf}) == kInf);
  CHECK(eval(Op::kSelect, {1, 7, kNaN}) == 7);
}

TEST_CASE("interpreter: only the branch whose condition holds runs") {
  // f(x) = x > 0 ? (x < 10 ? sqrt(x) : log(x)) : -x, with a constant
  // per branch so the test sees which branch produced the value.
  Function f("branches");
  Builder b(f);
  ValueId x = b.Input(Type::kF64);
  ValueId zero = b.Const(Type::kF64, 0);
  b.BeginIf(b.Emit(Op::kGt, {x, zero}));
  b.BeginIf(b.Emit(Op::kLt, {x, b.Const(Type::kF64, 10)}));
  ValueId small = b.Emit(Op::kSqrt, {x});
  b.BeginElse({small, b.Const(Type::kF64, 1)});
  ValueId large = b.Emit(Op::kLog, {x});
  std::vector<ValueId> inner = b.EndIf({large, b.Const(Type::kF64, 2)});
  b.BeginElse(inner);
  std::vector<ValueId> outer = b.EndIf({b.Neg(x), b.Const(Type::kF64, 3)});
  b.Return(outer);
  REQUIRE(Verify(f).ok());

  auto run = [&](double v) { return Interpret(f, std::vector<double>{v}); };
  CHECK(run(4) == std::vector<double>{2, 1});
  CHECK(run(100) == std::vector<double>{std::log(100.0), 2});
  CHECK(run(-5) == std::vector<double>{5, 3});
  CHECK(run(0) == std::vector<double>{-0.0, 3});
  // NaN compares false: the else-branch.
  std::vector<double> nan_result = run(kNaN);
  CHECK(std::isnan(nan_result[0]));
  CHECK(nan_result[1] == 3);
}

TEST_CASE("interpreter: f32 values are rounded to float at every step") {
  // f(a, b) = (a + b) - a in f32: with a = 1 and b = 1e-8 the sum rounds to 1.
  Function f("cancel");
  Builder b(f);
  ValueId a = b.Input(Type::kF32), c = b.Input(Type::kF32);
  b.Return({b.Sub(b.Add(a, c), a), b.Emit(Op::kExp, {c}), b.Cast(Type::kF64, c)});
  REQUIRE(Verify(f).ok());

  std::vector<double> y = Interpret(f, std::vector<double>{1.0, 1e-8});
  CHECK(y[0] == 0.0);
  CHECK(y[1] == static_cast<double>(std::exp(static_cast<float>(1e-8))));
  // The f64 input 0.1 is rounded to float on entry; the cast widens exactly.
  y = Interpret(f, std::vector<double>{1.0, 0.1});
  CHECK(y[2] == static_cast<double>(0.1f));
  CHECK(y[2] != 0.1);
  // f32 transcendental: computed by the float overload, not rounded from double.
  float x = 0.7f;
  y = Interpret(f, std::vector<double>{1.0, x});
  CHECK(y[1] == static_cast<double>(std::exp(x)));

  // The float convenience overload gives the same values.
  std::vector<float> yf = Interpret(f, std::vector<float>{1.0f, 1e-8f});
  CHECK(yf[0] == 0.0f);
  CHECK(yf[1] == std::exp(1e-8f));
}

TEST_CASE("interpreter: f32 fma is fused in float") {
  // (1 + 2^-12)(1 - 2^-12) - 1 = -2^-24: exact only when fused in float.
  double args[] = {1 + 0x1p-12, 1 - 0x1p-12, -1};
  CHECK(EvalScalarOp(Op::kFma, Type::kF32, args) == -0x1p-24);
}

TEST_CASE("interpreter: a wrong number of inputs is an arity error that names the kernel") {
  Function f = OneOp(Op::kAdd, Type::kF64);
  try {
    Interpret(f, std::vector<double>{1.0});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kArity);
    CHECK(std::string(e.what()).find("'add'") != std::string::npos);
    CHECK(std::string(e.what()).find("takes 2 inputs but was given 1") != std::string::npos);
  }
}

}  // namespace
}  // namespace dualcast::jit
