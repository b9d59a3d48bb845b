// Tests of re-joining paths: plain sequential `if`s give IR linear in their number, with values and derivatives unchanged.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <dualcast/dual.hpp>

#include "jit/error.h"
#include "jit/ir/print.h"
#include "jit/ir/verify.h"
#include "jit/trace/trace.h"
#include "trace_test_support.h"

// Shapes that mix re-joining with paths that do not re-join. At global scope,
// as user kernels are: dualcast::math serves doubles, ADL finds jit::Var's overloads.
namespace join_kernels {

inline constexpr auto kEarlyExitThenJoins = [](auto x, auto y) {
  using namespace dualcast::math;
  if (y > 1.5) return exp(x);  // an early return: never re-joins
  auto a = x;
  if (x > 0) a = a * y;
  else a = sin(a);
  if (y > 0) a = a + x;
  else a = a - 1;
  return a * a;
};

inline constexpr auto kBranchOnPhi = [](auto x, auto y) {
  using namespace dualcast::math;
  auto a = x * y;
  if (x > y) a = a + 1;
  else a = a * 2;
  if (a > 0.5) return tanh(a) * y;  // a condition on the joined value
  return a - y;
};

inline constexpr auto kTwoValues = [](auto x, auto y, auto z) {
  using namespace dualcast::math;
  auto a = x, b = y;
  if (z > 0) {
    a = a * z;
    b = b + 1;
  } else {
    a = a - z;
  }
  if (x > y) b = b * a;
  else a = a + b;
  return a * b + z;
};

inline constexpr auto kNestedThenJoin = [](auto x, auto y) {
  using namespace dualcast::math;
  auto a = y;
  if (x > 0) {
    if (y > 0) a = a * x;
    else a = a + x;
  } else {
    a = exp(a);
  }
  return a * y + x;
};

}  // namespace join_kernels

namespace dualcast::jit {
namespace {

using namespace trace_testing;
using namespace ::join_kernels;

// k sequential independent conditions on x, each choosing how a changes.
auto Sequential(int k) {
  return [k](auto x, auto y) {
    auto a = x;
    for (int i = 0; i < k; ++i) {
      if (x > -1.5 + 0.3 * i) {
        a = a * y;
      } else {
        a = a + y;
      }
    }
    return a;
  };
}

TEST_CASE("k sequential plain ifs give IR linear in k: one If per condition, one copy of the code") {
  std::vector<size_t> sizes;
  for (int k = 1; k <= 12; ++k) {
    CAPTURE(k);
    Function f = Trace("seq", Sequential(k), Types(Type::kF32, 2));
    REQUIRE(Verify(f).ok());
    CHECK(CountOps(f, Op::kIf) == k);
    CHECK(CountOps(f, Op::kMul) == k);  // each side's op once, not once per path
    CHECK(CountOps(f, Op::kAdd) == k);
    sizes.push_back(f.insts.size());
  }
  // Exactly linear: every condition adds the same number of instructions.
  for (size_t i = 2; i < sizes.size(); ++i) CHECK(sizes[i] - sizes[i - 1] == sizes[1] - sizes[0]);
  // Each If yields one value (the phi of `a`), and its sides hold one op each.
  Function f4 = Trace("seq4", Sequential(4), Types(Type::kF64, 2));
  for (ValueId v : f4.entry().body) {
    if (f4.inst(v).op != Op::kIf) continue;
    CHECK(f4.num_results(v) == 1);
    CHECK(f4.blocks[f4.inst(v).then_block].body.size() == 1);
    CHECK(f4.blocks[f4.inst(v).else_block].body.size() == 1);
  }
}

TEST_CASE("re-joined paths compute the lambda's values and partials (interpreter vs Dual)") {
  for (int k : {1, 2, 5, 9}) {
    CheckValuesAndPartials<2>("seq" + std::to_string(k), Sequential(k),
                              Trace("seq", Sequential(k), Types(Type::kF64, 2)));
  }
}

TEST_CASE("mixed shapes: early exits, conditions on joined values, several values, nesting") {
  Function early = Trace("early", kEarlyExitThenJoins, Types(Type::kF64, 2));
  CheckValuesAndPartials<2>("early", kEarlyExitThenJoins, early);
  CHECK(CountOps(early, Op::kMul) == 2);  // a * y once and a * a once, not per path
  CHECK(CountOps(early, Op::kIf) == 3);

  Function phi = Trace("phi", kBranchOnPhi, Types(Type::kF64, 2));
  CheckValuesAndPartials<2>("phi", kBranchOnPhi, phi);
  CHECK(CountOps(phi, Op::kTanh) == 1);
  CHECK(CountOps(phi, Op::kIf) == 2);

  Function two = Trace("two", kTwoValues, Types(Type::kF64, 3));
  CheckValuesAndPartials<3>("two", kTwoValues, two);
  CHECK(CountOps(two, Op::kIf) == 2);

  Function nested = Trace("nested", kNestedThenJoin, Types(Type::kF64, 2));
  CheckValuesAndPartials<2>("nested", kNestedThenJoin, nested);
  CHECK(CountOps(nested, Op::kIf) == 2);
  CHECK(CountOps(nested, Op::kAdd) == 2);  // a + x on one path, the final + x once
}

TEST_CASE("re-joining is deterministic: the same kernel gives the same IR") {
  Function a = Trace("seq", Sequential(7), Types(Type::kF32, 2));
  Function b = Trace("seq", Sequential(7), Types(Type::kF32, 2));
  CHECK(Print(a) == Print(b));
}

TEST_CASE("paths that never re-join stop at max_insts with an error naming dc::cond") {
  // Which comparison comes next depends on the branches taken before: the
  // sides of a decision do different work, so little re-joins.
  auto chain = [](auto x) {
    auto acc = x;
    bool up = true;
    for (int i = 0; i < 8; ++i) {
      const bool c = up ? static_cast<bool>(acc > 0.1 * i) : static_cast<bool>(acc < 0.1 * i);
      if (c) {
        acc = acc * 1.5;
        up = !up;
      } else {
        acc = acc + 0.5;
      }
    }
    return acc;
  };
  Function f = Trace("chain", chain, Types(Type::kF64, 1));  // 256 paths, within the default
  CHECK(CountOps(f, Op::kIf) > 64);
  CHECK(f.insts.size() > 500);
  TraceOptions small;
  small.max_insts = 500;
  try {
    Trace("chain", chain, Types(Type::kF64, 1), small);
    FAIL("max_insts was not enforced");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kTrace);
    std::string what = e.what();
    CHECK(what.find("'chain'") != std::string::npos);
    CHECK(what.find("256 paths") != std::string::npos);
    CHECK(what.find("max_insts = 500") != std::string::npos);
    CHECK(what.find("dc::cond") != std::string::npos);
  }
}

TEST_CASE("64 arguments trace; more is an error naming the limit") {
  auto sum = [](auto x0, auto... xs) { return (x0 + ... + xs); };
  Function f = TraceDynamic("wide", sum, Types(Type::kF32, 64));
  CHECK(f.num_inputs() == 64);
  CHECK(CountOps(f, Op::kAdd) == 63);
  try {
    TraceDynamic("wider", sum, Types(Type::kF32, 65));
    FAIL("65 arguments were accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kArity);
    std::string what = e.what();
    CHECK(what.find("'wider'") != std::string::npos);
    CHECK(what.find("65 arguments") != std::string::npos);
    CHECK(what.find("at most 64") != std::string::npos);
  }
}

TEST_CASE("TraceOptions out of range are rejected with the kernel's name") {
  TraceOptions bad;
  bad.vector_width = 3;
  try {
    Trace("vw", Sequential(1), Types(Type::kF32, 2), bad);
    FAIL("vector_width 3 was accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()).find("'vw'") != std::string::npos);
    CHECK(std::string(e.what()).find("vector_width") != std::string::npos);
  }
  TraceOptions ok;
  ok.vector_width = 8;
  ok.fast_math = true;
  CHECK_NOTHROW(Trace("vw", Sequential(1), Types(Type::kF32, 2), ok));
}

}  // namespace
}  // namespace dualcast::jit
