// Property test: random branchy lambdas (depth <= 6) traced, jvp'ed and interpreted vs Dual<double, 3>.
//
// A random expression tree is turned into a real generic lambda by a generic
// evaluator whose `if` is an ordinary C++ `if` on the data, so the tracer sees
// exactly what a user's lambda would give it: decisions, early returns,
// shared subexpressions. Set DUALCAST_SEED to reproduce or explore; the
// failing function's seed and IR are printed.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

#include "jit/interpret.h"
#include "jit/jvp.h"
#include "jit/optimize.h"
#include "jit/print.h"
#include "jit/trace.h"
#include "jit/verify.h"
#include <dualcast/dual.hpp>

namespace dualcast::testing {
namespace {

struct Node {
  enum Kind { kInput, kUnary, kBinary, kScalar, kIf, kSelect } kind;
  int op = 0;
  int index = 0;
  double c = 0;
  int a = -1, b = -1, t = -1, e = -1;
};

struct Tree {
  std::vector<Node> nodes;
  int root = -1;
};

constexpr int kUnaryOps = 8, kBinaryOps = 6, kScalarOps = 4;

template <class T>
T Eval(const Tree& tree, int n, const std::array<T, 3>& x) {
  using namespace dualcast::math;
  const Node& node = tree.nodes[n];
  switch (node.kind) {
    case Node::kInput: return x[node.index];
    case Node::kUnary: {
      T a = Eval(tree, node.a, x);
      switch (node.op) {
        case 0: return sin(a);
        case 1: return cos(a);
        case 2: return tanh(a);
        case 3: return sigmoid(a);
        case 4: return atan(a);
        case 5: return -a;
        case 6: return sqrt(abs(a) + 1);
        default: return exp(tanh(a));
      }
    }
    case Node::kBinary: {
      T a = Eval(tree, node.a, x), b = Eval(tree, node.b, x);
      switch (node.op) {
        case 0: return a + b;
        case 1: return a - b;
        case 2: return a * b;
        case 3: return min(a, b);
        case 4: return max(a, b);
        default: return hypot(a, b);
      }
    }
    case Node::kScalar: {
      T a = Eval(tree, node.a, x);
      switch (node.op) {
        case 0: return a + node.c;
        case 1: return a * node.c;
        case 2: return node.c - a;
        default: return a / (a * a + node.c * node.c + 1);
      }
    }
    case Node::kIf:
      if (Eval(tree, node.a, x) < Eval(tree, node.b, x)) return Eval(tree, node.t, x);
      return Eval(tree, node.e, x);
    case Node::kSelect:
      return select(Eval(tree, node.a, x) > Eval(tree, node.b, x), Eval(tree, node.t, x),
                    Eval(tree, node.e, x));
  }
  return x[0];
}

// At most kMaxIfs real branches per tree keeps paths (<= 2^kMaxIfs) well under
// the tracer's limit; further choices become selects.
constexpr int kMaxIfs = 7;

int Grow(Tree& tree, std::mt19937_64& rng, int depth, int& ifs) {
  std::uniform_int_distribution<int> pick(0, 99);
  Node node{};
  int p = pick(rng);
  if (depth == 0 || p < 15) {
    node.kind = Node::kInput;
    node.index = pick(rng) % 3;
  } else if (p < 35) {
    node.kind = Node::kUnary;
    node.op = pick(rng) % kUnaryOps;
    node.a = Grow(tree, rng, depth - 1, ifs);
  } else if (p < 55) {
    node.kind = Node::kBinary;
    node.op = pick(rng) % kBinaryOps;
    node.a = Grow(tree, rng, depth - 1, ifs);
    node.b = Grow(tree, rng, depth - 1, ifs);
  } else if (p < 65) {
    node.kind = Node::kScalar;
    node.op = pick(rng) % kScalarOps;
    node.c = std::uniform_real_distribution<double>(-2, 2)(rng);
    node.a = Grow(tree, rng, depth - 1, ifs);
  } else {
    node.kind = p < 90 && ifs < kMaxIfs ? Node::kIf : Node::kSelect;
    if (node.kind == Node::kIf) ++ifs;
    node.a = Grow(tree, rng, depth - 1, ifs);
    node.b = Grow(tree, rng, depth - 1, ifs);
    node.t = Grow(tree, rng, depth - 1, ifs);
    node.e = Grow(tree, rng, depth - 1, ifs);
  }
  tree.nodes.push_back(node);
  return static_cast<int>(tree.nodes.size()) - 1;
}

bool Close(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= 1e-12 * std::max(1.0, std::abs(want));
}

// Returns an empty string when the function with this seed agrees everywhere.
std::string CheckOne(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tree tree;
  int ifs = 0;
  tree.root = Grow(tree, rng, 6, ifs);
  auto lambda = [&tree](auto a, auto b, auto c) { return Eval(tree, tree.root, std::array{a, b, c}); };
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
    D want = Eval(tree, tree.root, xd);
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
