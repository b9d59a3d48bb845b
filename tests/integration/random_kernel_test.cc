// Property test: random branchy lambdas (depth <= 6) traced, jvp'ed and interpreted vs Dual<double, 3>.
//
// The trees come from tests/kernels/random_kernel.h (shared with the
// differential tester): a generic evaluator whose `if` is an ordinary C++
// `if` on the data, so the tracer sees exactly what a user's lambda would
// give it: decisions, early returns, shared subexpressions. Set DUALCAST_SEED to reproduce or explore; the
// failing function's seed and IR are printed.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

#include "jit/ir/interpret.h"
#include "jit/ir/print.h"
#include "jit/ir/verify.h"
#include "jit/passes/jvp.h"
#include "jit/passes/optimize.h"
#include "jit/trace/trace.h"
#include "kernels/random_kernel.h"
#include <dualcast/dual.hpp>

namespace dualcast::testing {
namespace {

bool Close(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= 1e-12 * std::max(1.0, std::abs(want));
}

// Returns an empty string when the function with this seed agrees everywhere.
std::string CheckOne(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Tree tree = GrowTree(rng);  // 3 inputs, depth 6, classic ops
  auto lambda = [&tree](auto a, auto b, auto c) {
    const std::array xs{a, b, c};
    return EvalNode<decltype(a)>(tree, tree.root(), xs);
  };
  const jit::Type types[] = {jit::Type::kF64, jit::Type::kF64, jit::Type::kF64};
  jit::Function f = jit::Trace("random", lambda, types);
  if (auto s = jit::Verify(f); !s.ok()) return std::string(s.message());
  const int wrt[] = {0, 1, 2};
  jit::Function g = jit::Optimize(jit::Jvp(f, wrt).function);
  if (auto s = jit::Verify(g); !s.ok()) return std::string(s.message());
  using D = Dual<double, 3>;
  std::uniform_real_distribution<double> u(-2, 2);
  for (int point = 0; point < 20; ++point) {
    std::array<double, 3> x{u(rng), u(rng), u(rng)};
    std::array<D, 3> xd{D::variable(x[0], 0), D::variable(x[1], 1), D::variable(x[2], 2)};
    D want = EvalNode<D>(tree, tree.root(), xd);
    std::vector<double> got = jit::Interpret(g, x);
    bool ok = got.size() == 4 && Close(got[0], want.value());
    for (int j = 0; ok && j < 3; ++j) ok = Close(got[1 + j], want.partial(j));
    if (!ok) {
      return "seed " + std::to_string(seed) + " at x = (" + std::to_string(x[0]) + ", " +
             std::to_string(x[1]) + ", " + std::to_string(x[2]) + "): got value " +
             std::to_string(got[0]) + ", Dual says " + std::to_string(want.value()) + "\n" +
             jit::Print(f);
    }
  }
  return "";
}

TEST_CASE("2000 random branchy lambdas: jvp + interpreter equal Dual<double, 3>") {
  uint64_t base = 20261121;
  if (const char* env = std::getenv("DUALCAST_SEED")) base = std::strtoull(env, nullptr, 10);
  int count = 2000;
  if (const char* env = std::getenv("DUALCAST_CASES")) count = std::atoi(env);
  MESSAGE("random kernels: base seed ", base, " (set DUALCAST_SEED to change), ", count, " cases");
  int failures = 0;
  for (int k = 0; k < count && failures < 3; ++k) {
    std::string problem = CheckOne(base + static_cast<uint64_t>(k));
    if (!problem.empty()) {
      ++failures;
      FAIL_CHECK(problem);
    }
  }
  CHECK(failures == 0);
}

}  // namespace
}  // namespace dualcast::testing
