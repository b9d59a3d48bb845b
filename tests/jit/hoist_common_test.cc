// Tests of HoistCommonWork: what moves above an if (work on both sides), what stays (guarded or one-sided work), same results.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "jit/ir/interpret.h"
#include "jit/ir/ir.h"
#include "jit/ir/print.h"
#include "jit/ir/verify.h"
#include "jit/passes/hoist_common.h"
#include "jit/passes/jvp.h"

namespace dualcast::jit {
namespace {

// The HM-LSTM cell: sigmoid(i) * tanh(g) in FLUSH and in UPDATE, not in COPY.
Function Cell() {
  Function f("cell");
  Builder b(f);
  ValueId z = b.Input(Type::kF64), zb = b.Input(Type::kF64), cp = b.Input(Type::kF64);
  ValueId fg = b.Input(Type::kF64), ig = b.Input(Type::kF64), gg = b.Input(Type::kF64);
  b.BeginIf(b.Emit(Op::kEq, {z, b.Const(Type::kF64, 1)}));
  ValueId flush = b.Mul(b.Emit(Op::kSigmoid, {ig}), b.Emit(Op::kTanh, {gg}));
  b.BeginElse({flush});
  b.BeginIf(b.Emit(Op::kEq, {zb, b.Const(Type::kF64, 0)}));
  b.BeginElse({cp});
  ValueId update = b.Add(b.Mul(b.Emit(Op::kSigmoid, {fg}), cp),
                         b.Mul(b.Emit(Op::kSigmoid, {ig}), b.Emit(Op::kTanh, {gg})));
  ValueId inner = b.EndIf({update})[0];
  ValueId c = b.EndIf({inner})[0];
  b.Return({c});
  return f;
}

// How many `op` instructions each block of `f` holds (entry block first).
int CountIn(const Function& f, BlockId block, Op op) {
  int n = 0;
  for (ValueId v : f.blocks[block].body) n += f.inst(v).op == op ? 1 : 0;
  return n;
}
int CountAll(const Function& f, Op op) {
  int n = 0;
  for (const Inst& inst : f.insts) n += inst.op == op ? 1 : 0;
  return n;
}

bool SameBits(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

// Every branch of the cell (z, zb pick it) at a few data points: the hoisted
// function gives the interpreter's results of the original, bit for bit.
void CheckSameOnEveryBranch(const Function& before, const Function& after) {
  REQUIRE(Verify(after).ok());
  const double flags[][2] = {{1, 0}, {0, 0}, {0, 1}, {1, 1}};
  const double data[] = {-3.5, -0.25, 0.0, 0.5, 7.0};
  for (const auto& zz : flags) {
    for (double x : data) {
      const std::vector<double> in = {zz[0], zz[1], x, -x, x * 0.5, 1 - x};
      const std::vector<double> want = Interpret(before, in);
      const std::vector<double> got = Interpret(after, in);
      REQUIRE(want.size() == got.size());
      for (size_t m = 0; m < want.size(); ++m) {
        CAPTURE(m);
        CAPTURE(x);
        CHECK(SameBits(want[m], got[m]));
      }
    }
  }
}

TEST_CASE("work on both sides of an if (at any depth) moves above it, once") {
  const Function cell = Cell();
  REQUIRE(CountAll(cell, Op::kSigmoid) == 3);  // sigmoid(i) twice, sigmoid(f) once
  const Function hoisted = HoistCommonWork(cell);
  INFO(Print(hoisted));
  CHECK(CountAll(hoisted, Op::kSigmoid) == 2);
  CHECK(CountAll(hoisted, Op::kTanh) == 1);
  CHECK(CountIn(hoisted, 0, Op::kSigmoid) == 1);  // sigmoid(i), in the entry block
  CHECK(CountIn(hoisted, 0, Op::kTanh) == 1);
  CheckSameOnEveryBranch(cell, hoisted);
}

TEST_CASE("the jvp of the cell: value and tangent work shared by FLUSH and UPDATE is done once") {
  const std::vector<int> wrt = {2, 3, 4, 5};
  const Function jvp = Jvp(Cell(), wrt).function;
  const Function hoisted = HoistCommonWork(jvp);
  INFO(Print(hoisted));
  // sigmoid and tanh expand into exp/expm1 and divisions: one exp for
  // sigmoid(i) and one for sigmoid(f), one expm1 for tanh(g).
  CHECK(CountAll(jvp, Op::kExp) == 3);
  CHECK(CountAll(hoisted, Op::kExp) == 2);
  CHECK(CountAll(hoisted, Op::kExpm1) == 1);
  CHECK(CountAll(hoisted, Op::kDiv) < CountAll(jvp, Op::kDiv));
  CheckSameOnEveryBranch(jvp, hoisted);
}

TEST_CASE("guarded and one-sided work stays in its side") {
  Function f("guard");
  Builder b(f);
  ValueId x = b.Input(Type::kF64), y = b.Input(Type::kF64);
  b.BeginIf(b.Emit(Op::kGt, {x, b.Const(Type::kF64, 0)}));
  ValueId then_v = b.Add(b.Emit(Op::kLog, {x}), b.Emit(Op::kExp, {y}));
  b.BeginElse({then_v});
  // exp(y) on both sides, log(x) only where x > 0, and work on an inner
  // if's result cannot move above the outer one.
  b.BeginIf(b.Emit(Op::kLt, {y, b.Const(Type::kF64, 0)}));
  b.BeginElse({y});
  ValueId r = b.EndIf({b.Neg(y)})[0];
  ValueId else_v = b.Add(b.Emit(Op::kSqrt, {r}), b.Emit(Op::kExp, {y}));
  b.Return({b.EndIf({else_v})[0]});
  const Function hoisted = HoistCommonWork(f);
  INFO(Print(hoisted));
  REQUIRE(Verify(hoisted).ok());
  CHECK(CountIn(hoisted, 0, Op::kExp) == 1);
  CHECK(CountIn(hoisted, 0, Op::kLog) == 0);
  CHECK(CountIn(hoisted, 0, Op::kSqrt) == 0);
  CHECK(CountAll(hoisted, Op::kLog) == 1);
  CHECK(CountAll(hoisted, Op::kSqrt) == 1);
  for (double xv : {-1.0, 2.0}) {
    for (double yv : {-3.0, 0.5}) {
      const std::vector<double> in = {xv, yv};
      CHECK(SameBits(Interpret(f, in)[0], Interpret(hoisted, in)[0]));
    }
  }
}

TEST_CASE("work deep in the nested ifs of the larger side moves above the outer if") {
  // The then-side is the larger one (three nested ifs), and x * y and
  // exp(y) sit in its innermost then-side; the else-side computes them
  // directly. Work on the inner ifs' result stays where it is.
  Function f("deep");
  Builder b(f);
  ValueId x = b.Input(Type::kF64), y = b.Input(Type::kF64);
  b.BeginIf(b.Emit(Op::kGt, {x, b.Const(Type::kF64, 0)}));
  b.BeginIf(b.Emit(Op::kGt, {y, b.Const(Type::kF64, 0)}));
  b.BeginIf(b.Emit(Op::kGt, {x, b.Const(Type::kF64, 1)}));
  ValueId deep = b.Add(b.Mul(x, y), b.Emit(Op::kExp, {y}));
  b.BeginElse({deep});
  ValueId r2 = b.EndIf({x})[0];
  b.BeginElse({r2});
  ValueId r1 = b.EndIf({y})[0];
  ValueId then_v = b.Emit(Op::kSqrt, {b.Mul(r1, r1)});
  b.BeginElse({then_v});
  ValueId else_v = b.Sub(b.Mul(x, y), b.Emit(Op::kExp, {y}));
  b.Return({b.EndIf({else_v})[0]});
  const Function hoisted = HoistCommonWork(f);
  INFO(Print(hoisted));
  REQUIRE(Verify(hoisted).ok());
  CHECK(CountIn(hoisted, 0, Op::kExp) == 1);
  CHECK(CountAll(hoisted, Op::kExp) == 1);
  CHECK(CountIn(hoisted, 0, Op::kMul) == 1);  // x * y; r1 * r1 stays in the then-side
  CHECK(CountAll(hoisted, Op::kMul) == 2);
  CHECK(CountIn(hoisted, 0, Op::kSqrt) == 0);
  for (double xv : {-1.0, 0.5, 2.0}) {
    for (double yv : {-3.0, 0.5, 2.0}) {
      const std::vector<double> in = {xv, yv};
      CHECK(SameBits(Interpret(f, in)[0], Interpret(hoisted, in)[0]));
    }
  }
}

}  // namespace
}  // namespace dualcast::jit
