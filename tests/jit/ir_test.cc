// Tests of the IR core: builder hash-consing and scoping, printer, verifier, structural hash.
#include <doctest/doctest.h>

#include "jit/ir/hash.h"
#include "jit/ir/ir.h"
#include "jit/ir/print.h"
#include "jit/ir/verify.h"
#include "jit/passes/rewrite.h"

namespace dualcast::jit {
namespace {

// cell(z, c, g) = z == 1 ? tanh(g) : c  with a shared tanh in both branches.
Function SmallCell(double literal = 1) {
  Function f("cell");
  Builder b(f);
  ValueId z = b.Input(Type::kF32), c = b.Input(Type::kF32), g = b.Input(Type::kF32);
  ValueId cond = b.Emit(Op::kEq, {z, b.Const(Type::kF32, literal)});
  b.BeginIf(cond);
  ValueId t = b.Emit(Op::kTanh, {g});
  b.BeginElse({b.Mul(t, t)});
  b.EndIf({c});
  b.Return({static_cast<ValueId>(f.insts.size() - 1)});
  return f;
}

TEST_CASE("builder hash-conses within a scope and across enclosing scopes") {
  Function f("h");
  Builder b(f);
  ValueId x = b.Input(Type::kF64);
  ValueId e1 = b.Emit(Op::kExp, {x});
  ValueId e2 = b.Emit(Op::kExp, {x});
  CHECK(e1 == e2);
  CHECK(b.Const(Type::kF64, 0.0) != b.Const(Type::kF64, -0.0));
  b.BeginIf(b.Emit(Op::kGt, {x, b.Const(Type::kF64, 0)}));
  CHECK(b.Emit(Op::kExp, {x}) == e1);  // visible from the enclosing scope
  ValueId inner = b.Emit(Op::kSin, {x});
  b.BeginElse({inner});
  ValueId other = b.Emit(Op::kSin, {x});
  CHECK(other != inner);  // a sibling branch cannot see the then-branch's values
  auto results = b.EndIf({other});
  REQUIRE(results.size() == 1);
  b.Return({results[0]});
  CHECK(Verify(f).ok());
}

TEST_CASE("printer output is readable and stable") {
  Function f = SmallCell();
  REQUIRE(Verify(f).ok());
  CHECK(Print(f) ==
        "func cell(%0: f32, %1: f32, %2: f32) -> (f32) {\n"
        "  %3 = const 1 : f32\n"
        "  %4 = eq %0, %3 : bool\n"
        "  %5 = if %4 {\n"
        "    %6 = tanh %2 : f32\n"
        "    %7 = mul %6, %6 : f32\n"
        "    yield %7\n"
        "  } else {\n"
        "    yield %1\n"
        "  }\n"
        "  return %5\n"
        "}\n");
}

TEST_CASE("verifier rejects out-of-scope uses and type mixes") {
  Function f = SmallCell();
  // Make the else-branch yield the then-branch's tanh: not visible there.
  ValueId tanh_v = f.blocks[1].body[0];
  f.blocks[2].yields[0] = tanh_v;
  absl::Status s = Verify(f);
  CHECK_FALSE(s.ok());
  CHECK(std::string(s.message()).find("not visible") != std::string::npos);

  Function g = SmallCell();
  g.insts[g.blocks[1].body[0]].type = Type::kF64;  // tanh of f32 claiming f64
  CHECK_FALSE(Verify(g).ok());
}

TEST_CASE("structural hash ignores names and numbering, sees one-op changes") {
  Function a = SmallCell(), b = SmallCell();
  b.name = "other";
  CHECK(StructuralHash(a) == StructuralHash(b));
  CHECK(StructuralHash(a) != StructuralHash(SmallCell(2)));
  Function c = SmallCell();
  c.insts[c.blocks[1].body[0]].op = Op::kSinh;
  CHECK(StructuralHash(a) != StructuralHash(c));
}

TEST_CASE("rewriter copies structure exactly") {
  Function f = SmallCell();
  Function g = Rewriter().Run(f);
  CHECK(Verify(g).ok());
  CHECK(Print(g) == Print(f));
  CHECK(StructuralHash(g) == StructuralHash(f));
}

}  // namespace
}  // namespace dualcast::jit
