// Tests of EliminateDeadCode: what goes, what stays (inputs, conditions, yields), If result renumbering.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "jit/ir/interpret.h"
#include "jit/ir/ir.h"
#include "jit/ir/print.h"
#include "jit/ir/verify.h"
#include "jit/passes/dce.h"

namespace dualcast::jit {
namespace {

bool SameBits(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

// DCE must not change any output: check at special points on every input.
void CheckSameOutputs(const Function& before, const Function& after) {
  REQUIRE(Verify(after).ok());
  const double points[] = {0.0, -0.0, 1.0, -2.5, 0.75, std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(), 1e-310};
  const size_t n = before.num_inputs();
  size_t combos = 1;
  for (size_t i = 0; i < n; ++i) combos *= std::size(points);
  for (size_t c = 0; c < combos; ++c) {
    std::vector<double> in;
    for (size_t i = 0, rest = c; i < n; ++i, rest /= std::size(points)) {
      in.push_back(points[rest % std::size(points)]);
    }
    std::vector<double> want = Interpret(before, in), got = Interpret(after, in);
    REQUIRE(want.size() == got.size());
    for (size_t m = 0; m < want.size(); ++m) {
      if (!SameBits(want[m], got[m])) FAIL_CHECK("output ", m, " differs at combination ", c);
    }
  }
}

TEST_CASE("dead straight-line values go; unused inputs stay") {
  Function f("t");
  Builder b(f);
  ValueId x = b.Input(Type::kF64), y = b.Input(Type::kF64);
  b.Input(Type::kF64);  // never read: still part of the signature
  ValueId a = b.Emit(Op::kExp, {x});
  b.Mul(b.Emit(Op::kSin, {y}), a);  // dead
  b.Return({b.Add(a, x)});
  Function g = EliminateDeadCode(f);
  CHECK(Print(g) ==
        "func t(%0: f64, %1: f64, %2: f64) -> (f64) {\n"
        "  %3 = exp %0 : f64\n"
        "  %4 = add %3, %0 : f64\n"
        "  return %4\n"
        "}\n");
  CHECK(g.insts.size() == 5);
  CheckSameOutputs(f, g);
}

TEST_CASE("unused if results leave both branches and the rest are renumbered") {
  Function f("t");
  Builder b(f);
  ValueId x = b.Input(Type::kF64), y = b.Input(Type::kF64);
  b.BeginIf(b.Emit(Op::kLt, {x, y}));
  std::vector<ValueId> then_yields = {b.Emit(Op::kSin, {x}), b.Emit(Op::kCos, {x}),
                                      b.Emit(Op::kTan, {x})};
  b.BeginElse(then_yields);
  std::vector<ValueId> r = b.EndIf({y, b.Emit(Op::kExp, {y}), x});
  b.Return({r[2], r[0]});  // result 1 (cos / exp) is dead, and out of order outputs
  Function g = EliminateDeadCode(f);
  CHECK(Print(g) ==
        "func t(%0: f64, %1: f64) -> (f64, f64) {\n"
        "  %2 = lt %0, %1 : bool\n"
        "  %3, %4 = if %2 {\n"
        "    %5 = sin %0 : f64\n"
        "    %6 = tan %0 : f64\n"
        "    yield %5, %6\n"
        "  } else {\n"
        "    yield %1, %0\n"
        "  }\n"
        "  return %4, %3\n"
        "}\n");
  // The kept results are numbered 0 and 1, in their old order.
  const Inst& out0 = g.inst(g.outputs()[0]);
  const Inst& out1 = g.inst(g.outputs()[1]);
  CHECK(out0.op == Op::kResult);
  CHECK(out0.index == 1);
  CHECK(out1.index == 0);
  CHECK(g.num_results(out0.args[0]) == 2);
  CheckSameOutputs(f, g);
}

TEST_CASE("an if whose results are all unused disappears with its condition") {
  Function f("t");
  Builder b(f);
  ValueId x = b.Input(Type::kF64), y = b.Input(Type::kF64);
  b.BeginIf(b.Emit(Op::kLt, {x, b.Emit(Op::kExp, {y})}));
  b.BeginElse({b.Emit(Op::kSin, {x})});
  b.EndIf({x});
  b.BeginIf(b.Emit(Op::kGt, {x, y}));  // an if with no results at all
  b.BeginElse({});
  b.EndIf({});
  b.Return({b.Mul(x, y)});
  Function g = EliminateDeadCode(f);
  CHECK(Print(g) ==
        "func t(%0: f64, %1: f64) -> (f64) {\n"
        "  %2 = mul %0, %1 : f64\n"
        "  return %2\n"
        "}\n");
  CHECK(g.blocks.size() == 1);
  CheckSameOutputs(f, g);
}

TEST_CASE("nested ifs: an inner if feeding only a dead yield goes") {
  Function f("t");
  Builder b(f);
  ValueId x = b.Input(Type::kF64), y = b.Input(Type::kF64);
  ValueId outer_only_yielded = b.Emit(Op::kAtan, {y});  // used only by the else yield
  b.BeginIf(b.Emit(Op::kLt, {x, y}));
  b.BeginIf(b.Emit(Op::kGt, {x, b.Const(Type::kF64, 0)}));
  b.BeginElse({b.Emit(Op::kSin, {x})});
  ValueId inner = b.EndIf({b.Emit(Op::kCos, {x})})[0];
  b.BeginElse({b.Add(inner, y), x});
  std::vector<ValueId> r = b.EndIf({y, outer_only_yielded});
  b.Return({r[1]});
  Function g = EliminateDeadCode(f);
  CHECK(Print(g) ==
        "func t(%0: f64, %1: f64) -> (f64) {\n"
        "  %2 = atan %1 : f64\n"
        "  %3 = lt %0, %1 : bool\n"
        "  %4 = if %3 {\n"
        "    yield %0\n"
        "  } else {\n"
        "    yield %2\n"
        "  }\n"
        "  return %4\n"
        "}\n");
  CheckSameOutputs(f, g);
}

TEST_CASE("a live inner if keeps only its needed result") {
  Function f("t");
  Builder b(f);
  ValueId x = b.Input(Type::kF64), y = b.Input(Type::kF64);
  b.BeginIf(b.Emit(Op::kLt, {x, y}));
  b.BeginIf(b.Emit(Op::kGt, {x, b.Const(Type::kF64, 0)}));
  b.BeginElse({b.Emit(Op::kSin, {x}), b.Emit(Op::kSinh, {x})});
  std::vector<ValueId> inner = b.EndIf({b.Emit(Op::kCos, {x}), b.Emit(Op::kCosh, {x})});
  b.BeginElse({inner[1]});
  ValueId r = b.EndIf({y})[0];
  b.Return({r});
  Function g = EliminateDeadCode(f);
  CHECK(Print(g) ==
        "func t(%0: f64, %1: f64) -> (f64) {\n"
        "  %2 = lt %0, %1 : bool\n"
        "  %3 = if %2 {\n"
        "    %4 = const 0 : f64\n"
        "    %5 = gt %0, %4 : bool\n"
        "    %6 = if %5 {\n"
        "      %7 = sinh %0 : f64\n"
        "      yield %7\n"
        "    } else {\n"
        "      %8 = cosh %0 : f64\n"
        "      yield %8\n"
        "    }\n"
        "    yield %6\n"
        "  } else {\n"
        "    yield %1\n"
        "  }\n"
        "  return %3\n"
        "}\n");
  CheckSameOutputs(f, g);
}

TEST_CASE("dead code elimination is idempotent") {
  Function f("t");
  Builder b(f);
  ValueId x = b.Input(Type::kF32);
  ValueId e = b.Emit(Op::kExp, {x});
  b.BeginIf(b.Emit(Op::kLt, {x, e}));
  b.BeginElse({e, b.Neg(x)});
  std::vector<ValueId> r = b.EndIf({x, b.Emit(Op::kLog, {e})});
  b.Return({b.Add(r[1], e)});
  Function once = EliminateDeadCode(f);
  Function twice = EliminateDeadCode(once);
  CHECK(Print(twice) == Print(once));
  CHECK(once.insts.size() < f.insts.size());
  CheckSameOutputs(f, once);
}

}  // namespace
}  // namespace dualcast::jit
