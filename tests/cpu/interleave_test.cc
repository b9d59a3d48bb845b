// Tests of InterleaveFactor: the work and critical path it measures on hand-built IR, and the factor it picks.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "jit/cpu/interleave.h"
#include "jit/ir/ir.h"

namespace dualcast::jit::cpu {
namespace {

// x, then `length` dependent multiply-adds: a = a * c + d.
Function Chain(int length) {
  Function f("chain");
  Builder b(f);
  ValueId a = b.Input(Type::kF32);
  const ValueId c = b.Const(Type::kF32, 0.999), d = b.Const(Type::kF32, 0.001);
  for (int k = 0; k < length; ++k) a = b.Add(b.Mul(a, c), d);
  b.Return({a});
  return f;
}

// `width` independent chains of `length` multiply-adds, summed at the end.
Function Parallel(int width, int length) {
  Function f("parallel");
  Builder b(f);
  const ValueId x = b.Input(Type::kF32);
  ValueId total = b.Const(Type::kF32, 0);
  for (int w = 0; w < width; ++w) {
    ValueId a = b.Mul(x, b.Const(Type::kF32, 1.0 + w));
    for (int k = 0; k < length; ++k) a = b.Add(b.Mul(a, x), b.Const(Type::kF32, 0.5 + w));
    total = b.Add(total, a);
  }
  b.Return({total});
  return f;
}

TEST_CASE("a chain's depth is its length; independent chains add work, not depth") {
  const ChainShape chain = MeasureChains(Chain(50));
  CHECK(chain.work == 100);
  CHECK(chain.depth == 100);
  const ChainShape parallel = MeasureChains(Parallel(4, 10));
  CHECK(parallel.work == 4 * (1 + 20) + 4);  // per chain: the scaling mul and 10 mul-adds; 4 adds
  CHECK(parallel.depth == 1 + 20 + 4);       // the last chain's, then the adds into the total
}

TEST_CASE("an if costs both sides' work and its longer side's depth") {
  Function f("branchy");
  Builder b(f);
  const ValueId x = b.Input(Type::kF32);
  b.BeginIf(b.Emit(Op::kGt, {x, b.Const(Type::kF32, 0)}));  // depth 1
  ValueId a = x;
  for (int k = 0; k < 30; ++k) a = b.Add(b.Mul(a, x), x);  // 60 deep
  b.BeginElse({a});
  const ValueId e = b.Emit(Op::kExp, {x});  // 12 deep
  const std::vector<ValueId> r = b.EndIf({e});
  b.Return({b.Mul(r[0], x)});
  const ChainShape s = MeasureChains(f);
  CHECK(s.work == 1 + 60 + 20 + 1);  // a transcendental: work 20, latency 12
  CHECK(s.depth == 60 + 1);
}

TEST_CASE("only long chains with little parallel work are interleaved, within the budget") {
  CHECK(InterleaveFactor(Chain(10)) == 1);    // depth 20: the core overlaps steps already
  CHECK(InterleaveFactor(Chain(100)) == 4);   // depth 200, work / depth = 1
  CHECK(InterleaveFactor(Parallel(3, 30)) == 2);
  CHECK(InterleaveFactor(Parallel(6, 30)) == 1);
  // Work 3000: 4 x 3000 is over the budget of 8192 weighted ops, 2 x 3000 within it; work 6000:
  // both over.
  CHECK(InterleaveFactor(Chain(1500)) == 2);
  CHECK(InterleaveFactor(Chain(3000)) == 1);
}

TEST_CASE("a kernel step's lanes: the hint, else the host's times the factor") {
  KernelSpec spec;
  spec.function = std::make_shared<const Function>(Chain(100));
  spec.dtype = Type::kF32;
  spec.rank = 1;
  CHECK(KernelStepLanes(spec) == 4 * HostLanes(Type::kF32));
  spec.output_reduce = {1};  // a row sum keeps host-wide accumulators (reduce_spec_test.cc)
  CHECK(KernelStepLanes(spec) == 4 * HostLanes(Type::kF32));
  spec.hints.vector_width = 8;
  CHECK(KernelStepLanes(spec) == 8);
  CHECK(HostLanes(Type::kF64) * 2 == HostLanes(Type::kF32));
}

}  // namespace
}  // namespace dualcast::jit::cpu
