// Tests of dc::cond and dc::select: one traced If per condition (no re-runs), and plain evaluation on doubles and Duals.
#include <doctest/doctest.h>

#include <string>
#include <tuple>
#include <vector>

#include <dualcast/dual.hpp>

#include "jit/trace/trace.h"
#include "trace_test_support.h"

namespace dc = dualcast;

namespace kernels {

// k sequential conditions written with dc::cond; `runs` counts lambda calls.
inline auto CondChain(int k, int* runs) {
  return [k, runs](auto x, auto y) {
    ++*runs;  // harmless: no decision depends on it
    auto a = x;
    for (int i = 0; i < k; ++i) {
      a = dc::cond(x > -1.5 + 0.15 * i, [&] { return a * y; }, [&] { return a + y; });
    }
    return a;
  };
}

inline constexpr auto kSinkIntoSides = [](auto x, auto y) {
  using namespace dualcast::math;
  auto shared = tanh(y);  // both sides: stays above
  return dc::cond(x > y, [&] { return exp(x) * shared; }, [&] { return shared - log1p(x * x); });
};

inline constexpr auto kKnownInside = [](auto x, auto y) {
  return dc::cond(x > y, [&] {
    if (x > y) return x * 2;  // known true here: no decision, no re-run
    return y * 3;
  }, [&] {
    if (y < x) return x * 5;  // the same fact, known false here
    return y - x;
  });
};

inline constexpr auto kTupleSides = [](auto x, auto y) {
  using namespace dualcast::math;
  auto [p, q] = dc::cond(x * y > 0.5, [&] { return std::tuple{x + y, sin(x)}; },
                         [&] { return std::tuple{x * y, x * 0 + 1}; });
  return p * q;
};

inline constexpr auto kAfterPlainIf = [](auto x, auto y) {
  auto a = y;
  if (x > 0) a = a * x;  // plain if: two paths that re-join
  else a = a - x;
  a = dc::cond(y > 0.5, [&] { return a * y; }, [&] { return a + 1; });
  return a * a;
};

inline constexpr auto kSelect = [](auto x, auto y) {
  using namespace dualcast::math;
  return dc::select(x > y, exp(x), y * 2);
};

}  // namespace kernels

namespace dualcast::jit {
namespace {

using namespace trace_testing;

TEST_CASE("dc::cond traces each side once: 20 conditions, one run, 20 Ifs of one op per side") {
  int runs = 0;
  auto chain = kernels::CondChain(20, &runs);
  Function f = Trace("chain", chain, Types(Type::kF64, 2));
  CHECK(runs == 1);
  CHECK(CountOps(f, Op::kIf) == 20);
  CHECK(CountOps(f, Op::kMul) == 20);
  CHECK(CountOps(f, Op::kAdd) == 20);
  for (ValueId v : f.entry().body) {
    if (f.inst(v).op != Op::kIf) continue;
    CHECK(f.blocks[f.inst(v).then_block].body.size() == 1);
    CHECK(f.blocks[f.inst(v).else_block].body.size() == 1);
  }
  CheckValuesAndPartials<2>("chain", kernels::CondChain(20, &runs), f);
}

TEST_CASE("dc::cond: work of one side sinks into it, shared work stays above") {
  Function f = Trace("sink", kernels::kSinkIntoSides, Types(Type::kF64, 2));
  REQUIRE(CountOps(f, Op::kIf) == 1);
  ValueId the_if = kNoValue;
  for (ValueId v : f.entry().body) {
    if (f.inst(v).op == Op::kIf) the_if = v;
    CHECK(f.inst(v).op != Op::kExp);
    CHECK(f.inst(v).op != Op::kLog1p);
  }
  auto ops_in = [&](BlockId b, Op op) {
    int n = 0;
    for (ValueId v : f.blocks[b].body) n += f.inst(v).op == op;
    return n;
  };
  CHECK(ops_in(f.inst(the_if).then_block, Op::kExp) == 1);
  CHECK(ops_in(f.inst(the_if).else_block, Op::kLog1p) == 1);
  CHECK(ops_in(0, Op::kTanh) == 1);
  CHECK(CountOps(f, Op::kTanh) == 1);
  CheckValuesAndPartials<2>("sink", kernels::kSinkIntoSides, f);
}

TEST_CASE("dc::cond: its condition is known inside each side; constant or equal sides give no If") {
  Function known = Trace("known", kernels::kKnownInside, Types(Type::kF64, 2));
  CHECK(CountOps(known, Op::kIf) == 1);
  CHECK(CountOps(known, Op::kLt) == 0);
  CheckValuesAndPartials<2>("known", kernels::kKnownInside, known);

  Function constant = Trace("constant", [](auto x, auto y) {
    return dc::cond(dc::jit::Bool(true), [&] { return x * y; }, [&] { return x / y; });
  }, Types(Type::kF64, 2));
  CHECK(CountOps(constant, Op::kIf) == 0);
  CHECK(CountOps(constant, Op::kDiv) == 0);

  Function alike = Trace("alike", [](auto x, auto y) {
    return dc::cond(x > y, [&] { return x * y; }, [&] { return x * y; });
  }, Types(Type::kF64, 2));
  CHECK(CountOps(alike, Op::kIf) == 0);
  CHECK(CountOps(alike, Op::kGt) == 0);
}

TEST_CASE("dc::cond with tuple sides, and after plain ifs that re-join") {
  Function tuple = Trace("tuple", kernels::kTupleSides, Types(Type::kF64, 2));
  CHECK(CountOps(tuple, Op::kIf) == 1);
  CHECK(CountOps(tuple, Op::kSin) == 1);
  CheckValuesAndPartials<2>("tuple", kernels::kTupleSides, tuple);

  Function after = Trace("after", kernels::kAfterPlainIf, Types(Type::kF64, 2));
  CHECK(CountOps(after, Op::kIf) == 2);
  CHECK(CountOps(after, Op::kMul) == 3);  // a * x, a * y, a * a: each once
  CheckValuesAndPartials<2>("after", kernels::kAfterPlainIf, after);
}

TEST_CASE("dc::select and dc::cond on float, double and Dual evaluate the taken side") {
  CHECK(dc::select(true, 1.5f, 2.5f) == 1.5f);
  CHECK(dc::select(false, 1.5, 2.5) == 2.5);
  int evaluated = 0;
  double r = dc::cond(2.0 > 1.0, [&] { ++evaluated; return 3.0; }, [&] { ++evaluated; return 4.0; });
  CHECK(r == 3.0);
  CHECK(evaluated == 1);
  float rf = dc::cond(false, [] { return 1.0f; }, [] { return 2.0f; });
  CHECK(rf == 2.0f);
  using D = Dual<double, 1>;
  D x = D::variable(0.5, 0);
  D c = dc::cond(x > 0.25, [&] { return x * x; }, [&] { return -x; });
  CHECK(c.value() == 0.25);
  CHECK(c.partial(0) == 1.0);  // d(x^2) = 2x at 0.5

  Function sel = Trace("sel", kernels::kSelect, Types(Type::kF64, 2));
  CHECK(CountOps(sel, Op::kSelect) == 1);
  CHECK(CountOps(sel, Op::kIf) == 0);
  CheckValuesAndPartials<2>("sel", kernels::kSelect, sel);
}

}  // namespace
}  // namespace dualcast::jit
