// Tests of Inline and Compose: a fused chain equals calling its kernels one after another; wiring errors are caught.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "jit/error.h"
#include "jit/ir/interpret.h"
#include "jit/ir/ir.h"
#include "jit/ir/print.h"
#include "jit/ir/verify.h"
#include "jit/passes/compose.h"
#include "jit/passes/optimize.h"

namespace dualcast::jit {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool SameBits(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

int Count(const Function& f, Op op) {
  int n = 0;
  for (const Inst& inst : f.insts) n += inst.op == op;
  return n;
}

// y = f(x, a) = x > a ? (x > 0 ? tanh(x) * a : exp(x)) : x - a     (nested branches)
std::shared_ptr<const Function> MakeF() {
  auto f = std::make_shared<Function>("f");
  Builder b(*f);
  ValueId x = b.Input(Type::kF64), a = b.Input(Type::kF64);
  b.BeginIf(b.Emit(Op::kGt, {x, a}));
  b.BeginIf(b.Emit(Op::kGt, {x, b.Const(Type::kF64, 0)}));
  ValueId t = b.Mul(b.Emit(Op::kTanh, {x}), a);
  b.BeginElse({t});
  ValueId inner = b.EndIf({b.Emit(Op::kExp, {x})})[0];
  b.BeginElse({inner});
  b.Return({b.EndIf({b.Sub(x, a)})[0]});
  return f;
}

// z = g(y, b) = y * b + exp(y)
std::shared_ptr<const Function> MakeG() {
  auto g = std::make_shared<Function>("g");
  Builder b(*g);
  ValueId y = b.Input(Type::kF64), bb = b.Input(Type::kF64);
  b.Return({b.Add(b.Mul(y, bb), b.Emit(Op::kExp, {y}))});
  return g;
}

// w = h(z, y) = z < y ? sin(z) : y * z
std::shared_ptr<const Function> MakeH() {
  auto h = std::make_shared<Function>("h");
  Builder b(*h);
  ValueId z = b.Input(Type::kF64), y = b.Input(Type::kF64);
  b.BeginIf(b.Emit(Op::kLt, {z, y}));
  b.BeginElse({b.Emit(Op::kSin, {z})});
  b.Return({b.EndIf({b.Mul(y, z)})[0]});
  return h;
}

FusionSource Leaf(int i) { return {FusionSource::kLeaf, i, 0}; }
FusionSource Node(int i, int output = 0) { return {FusionSource::kNode, i, output}; }

std::vector<std::vector<double>> Samples() {
  std::vector<std::vector<double>> s;
  const double special[] = {0.0, -0.0, 1.0, -1.5, 0.3, kInf, -kInf, kNaN, 4e-320};
  for (double x : special) {
    for (double a : special) s.push_back({x, a, 0.5});
  }
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal(0, 2);
  for (int i = 0; i < 200; ++i) s.push_back({normal(rng), normal(rng), normal(rng)});
  return s;
}

TEST_CASE("a fused chain with an intermediate needed outside equals the kernels run in turn") {
  auto f = MakeF(), g = MakeG(), h = MakeH();
  const Type leaves[] = {Type::kF64, Type::kF64, Type::kF64};  // x, a, b
  const std::vector<FusionNode> nodes = {{f, {Leaf(0), Leaf(1)}},    // y = f(x, a)
                                         {g, {Node(0), Leaf(2)}},    // z = g(y, b)
                                         {h, {Node(1), Node(0)}}};   // w = h(z, y)
  const std::vector<FusionSource> outputs = {Node(2), Node(0)};     // w, and y for outside
  Function fused = Compose("fused", leaves, nodes, outputs);
  REQUIRE(Verify(fused).ok());
  CHECK(fused.name == "fused");
  CHECK(fused.num_inputs() == 3);
  CHECK(fused.num_outputs() == 2);
  CHECK(Count(fused, Op::kIf) == 3);  // f's two, h's one: nothing lost, nothing duplicated
  Function optimized = Optimize(fused);
  REQUIRE(Verify(optimized).ok());

  int checked = 0;
  for (const std::vector<double>& in : Samples()) {
    const double y = Interpret(*f, std::vector<double>{in[0], in[1]})[0];
    const double z = Interpret(*g, std::vector<double>{y, in[2]})[0];
    const double w = Interpret(*h, std::vector<double>{z, y})[0];
    for (const Function* k : {&fused, &optimized}) {
      std::vector<double> out = Interpret(*k, in);
      REQUIRE(out.size() == 2);
      if (!SameBits(out[0], w) || !SameBits(out[1], y)) {
        FAIL_CHECK("at x=", in[0], " a=", in[1], " b=", in[2], ": ", out[0], ", ", out[1],
                   " vs ", w, ", ", y);
      }
      ++checked;
    }
  }
  CHECK(checked > 400);
}

TEST_CASE("hash-consing shares a subexpression between two inlined kernels") {
  auto p = std::make_shared<Function>("p");  // p(x) = exp(x) + 1
  {
    Builder b(*p);
    ValueId x = b.Input(Type::kF32);
    ValueId e = b.Emit(Op::kExp, {x});
    b.Return({b.Add(e, b.Const(Type::kF32, 1))});
  }
  auto q = std::make_shared<Function>("q");  // q(x, s) = exp(x) * s
  {
    Builder b(*q);
    ValueId x = b.Input(Type::kF32), s = b.Input(Type::kF32);
    b.Return({b.Mul(b.Emit(Op::kExp, {x}), s)});
  }
  const Type leaves[] = {Type::kF32, Type::kF32};
  const std::vector<FusionNode> nodes = {{p, {Leaf(0)}}, {q, {Leaf(0), Leaf(1)}}};
  const std::vector<FusionSource> outputs = {Node(0), Node(1)};
  Function fused = Compose("pq", leaves, nodes, outputs);
  REQUIRE(Verify(fused).ok());
  CHECK(Print(fused) ==
        "func pq(%0: f32, %1: f32) -> (f32, f32) {\n"
        "  %2 = exp %0 : f32\n"
        "  %3 = const 1 : f32\n"
        "  %4 = add %2, %3 : f32\n"
        "  %5 = mul %2, %1 : f32\n"
        "  return %4, %5\n"
        "}\n");
  for (float x : {0.0f, -1.25f, 3.0f, 88.0f}) {
    std::vector<float> out = Interpret(fused, std::vector<float>{x, 2.0f});
    CHECK(out[0] == std::exp(x) + 1.0f);
    CHECK(out[1] == std::exp(x) * 2.0f);
  }
}

TEST_CASE("a multi-output node feeds consumers by output index; unused leaves stay inputs") {
  auto polar = std::make_shared<Function>("polar");  // (r, t) -> (r cos t, r sin t)
  {
    Builder b(*polar);
    ValueId r = b.Input(Type::kF64), t = b.Input(Type::kF64);
    b.Return({b.Mul(r, b.Emit(Op::kCos, {t})), b.Mul(r, b.Emit(Op::kSin, {t}))});
  }
  auto sub = std::make_shared<Function>("sub");
  {
    Builder b(*sub);
    ValueId u = b.Input(Type::kF64), v = b.Input(Type::kF64);
    b.Return({b.Sub(u, v)});
  }
  const Type leaves[] = {Type::kF64, Type::kF64, Type::kF64};  // the last one is unused
  const std::vector<FusionNode> nodes = {{polar, {Leaf(0), Leaf(1)}},
                                         {sub, {Node(0, 1), Node(0, 0)}}};  // sin part - cos part
  const std::vector<FusionSource> outputs = {Node(1)};
  Function fused = Compose("fused", leaves, nodes, outputs);
  REQUIRE(Verify(fused).ok());
  CHECK(fused.num_inputs() == 3);
  for (double t : {0.0, 0.5, 2.0, -3.0}) {
    const double r = 1.5;
    CHECK(SameBits(Interpret(fused, std::vector<double>{r, t, 7.0})[0],
                   r * std::sin(t) - r * std::cos(t)));
  }
}

TEST_CASE("inline emits into the current block, even inside a branch, and shares repeated calls") {
  auto f = MakeF();
  Function caller("caller");
  Builder b(caller);
  ValueId u = b.Input(Type::kF64), v = b.Input(Type::kF64);
  ValueId first = Inline(b, *f, std::vector<ValueId>{u, v})[0];
  b.BeginIf(b.Emit(Op::kLt, {u, b.Const(Type::kF64, 10)}));
  ValueId swapped = Inline(b, *f, std::vector<ValueId>{v, u})[0];
  b.BeginElse({swapped});
  ValueId other = b.EndIf({first})[0];
  const size_t before_repeat = caller.insts.size();
  std::vector<ValueId> again = Inline(b, *f, std::vector<ValueId>{u, v});
  b.Return({first, other});
  REQUIRE(Verify(caller).ok());
  // Its pure prefix is shared; each If is structure and is emitted anew
  // (three inlines of f's two Ifs, and the caller's own).
  CHECK(Count(caller, Op::kIf) == 3 * 2 + 1);
  CHECK(caller.insts.size() - before_repeat < f->insts.size());
  for (double uu : {-1.0, 0.5, 20.0}) {
    for (double vv : {-2.0, 0.0, 3.0}) {
      std::vector<double> out = Interpret(caller, std::vector<double>{uu, vv});
      const double fuv = Interpret(*f, std::vector<double>{uu, vv})[0];
      const double fvu = Interpret(*f, std::vector<double>{vv, uu})[0];
      CHECK(SameBits(out[0], fuv));
      CHECK(SameBits(out[1], uu < 10 ? fvu : fuv));
    }
  }
}

// Runs `call` and returns the dualcast::Error it throws (an empty message if none).
Error ErrorOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e;
  }
  return Error(ErrorKind::kInvalidArgument, "");
}

TEST_CASE("bad wiring is a kInternal error that names the node and input") {
  auto f = MakeF(), g = MakeG();
  const Type leaves[] = {Type::kF64, Type::kF64, Type::kF64};
  auto compose = [&](std::vector<FusionNode> nodes, std::vector<FusionSource> outputs) {
    return [=]() { Compose("bad", leaves, nodes, outputs); };
  };
  struct Case {
    const char* name;
    std::function<void()> call;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"a node reads itself", compose({{f, {Leaf(0), Node(0)}}}, {Node(0)}), "cycle"},
      {"a node reads a later node",
       compose({{f, {Leaf(0), Node(1)}}, {g, {Leaf(0), Leaf(1)}}}, {Node(0)}), "cycle"},
      {"leaf out of range", compose({{f, {Leaf(0), Leaf(3)}}}, {Node(0)}), "reads leaf 3 of 3"},
      {"negative leaf", compose({{f, {Leaf(-1), Leaf(0)}}}, {Node(0)}), "reads leaf -1"},
      {"node output out of range",
       compose({{f, {Leaf(0), Leaf(1)}}, {g, {Node(0, 1), Leaf(2)}}}, {Node(1)}),
       "node 1 ('g') input 0 reads output 1 of node 0, which has 1"},
      {"output reads a missing node", compose({{f, {Leaf(0), Leaf(1)}}}, {Node(4)}),
       "output 0 reads node 4 of 1"},
      {"wrong arity", compose({{f, {Leaf(0)}}}, {Node(0)}),
       "node 0 ('f') is wired to 1 sources; it takes 2 inputs"},
      {"null function", compose({{nullptr, {}}}, {}), "node 0 has no function"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Error e = ErrorOf(c.call);
    CHECK(e.kind() == ErrorKind::kInternal);
    CHECK_MESSAGE(std::string(e.what()).find(c.expected) != std::string::npos, e.what());
  }

  // A type mismatch: an f32 leaf wired to f's f64 input.
  const Type f32_leaves[] = {Type::kF32, Type::kF64};
  const std::vector<FusionNode> nodes = {{f, {Leaf(0), Leaf(1)}}};
  const std::vector<FusionSource> outputs = {Node(0)};
  Error e = ErrorOf([&] { Compose("bad", f32_leaves, nodes, outputs); });
  CHECK(e.kind() == ErrorKind::kInternal);
  CHECK_MESSAGE(std::string(e.what()).find("node 0 ('f') input 0 is f64 but its source is f32") !=
                    std::string::npos,
                e.what());

  // Inline checks its arguments too.
  Function caller("caller");
  Builder b(caller);
  ValueId x = b.Input(Type::kF64);
  Error arity = ErrorOf([&] { Inline(b, *f, std::vector<ValueId>{x}); });
  CHECK(arity.kind() == ErrorKind::kInternal);
  CHECK(std::string(arity.what()).find("with 1 arguments; it takes 2") != std::string::npos);
}

}  // namespace
}  // namespace dualcast::jit
