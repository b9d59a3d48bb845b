// Random branchy kernels: expression trees that become real generic lambdas (shared by the property tests).
//
// A random expression tree is turned into a generic lambda by a generic
// evaluator whose `if` is an ordinary C++ `if` on the data, so the tracer sees
// exactly what a user's lambda would give it: decisions, early returns,
// shared subexpressions, selects. The same tree runs eagerly on double and
// Dual<double, N> (the references) and traced on jit::Var, so every executor
// sees one kernel. Trees are plain data: they can be shrunk (ShrinkCandidates)
// when a property fails, and printed as C++ (ToCpp) in a reproducer.
//
// `GrowOptions{}` reproduces the original generator of random_kernel_test.cc
// seed for seed (3 inputs, classic ops); `extended_ops` adds kinks and
// conventions every layer must agree on (relu, floor, rint, fmin, fdim, copysign, pow...).
//
// Example:
//   std::mt19937_64 rng(seed);
//   Tree tree = GrowTree(rng, GrowOptions{.num_inputs = 2, .num_outputs = 2});
//   auto fn = TreeKernel<2, 2>{std::make_shared<Tree>(tree)};  // [](auto x0, auto x1) { ... }
//   jit::Function f = jit::Trace("random", fn, types);       // or dualcast::kernel("k", fn)
//   std::array<double, 2> y = fn(0.5, -1.0);
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <dualcast/dual.hpp>

namespace dualcast::testing {

struct Node {
  enum Kind { kInput, kUnary, kBinary, kScalar, kIf, kSelect } kind = kInput;
  int op = 0;
  int index = 0;
  double c = 0;
  int a = -1, b = -1, t = -1, e = -1;
};

struct Tree {
  std::vector<Node> nodes;
  std::vector<int> roots;  // one per kernel output
  int num_inputs = 3;
  int root() const { return roots[0]; }
};

// Classic op counts (the original generator) and the extended ones.
constexpr int kUnaryOps = 8, kBinaryOps = 6, kScalarOps = 4;
constexpr int kUnaryOpsExtended = 17, kBinaryOpsExtended = 13;

struct GrowOptions {
  int num_inputs = 3;
  int num_outputs = 1;
  int depth = 6;
  // At most max_ifs real branches per output tree keeps paths (<= 2^max_ifs)
  // well under the tracer's limit; further choices become selects.
  int max_ifs = 7;
  bool extended_ops = false;
};

// Sign/integer facts of every kink an evaluation passes (branch conditions,
// min/max ties, abs, floor...). Two points with equal trails lie in one smooth
// piece of the function, so central differences between them are meaningful.
struct Trail {
  std::vector<int64_t> facts;
};

namespace random_kernel_detail {
template <class T>
void Note(Trail* trail, const T& fact) {
  if constexpr (std::is_same_v<T, bool>) {
    if (trail) trail->facts.push_back(fact ? 1 : 0);
  } else if constexpr (std::is_same_v<T, double>) {
    if (trail) trail->facts.push_back(static_cast<int64_t>(std::floor(fact)));
  }
}
template <class T>
constexpr bool kRecords = std::is_same_v<T, double>;
}  // namespace random_kernel_detail

// Evaluates node n on inputs x. `trail` (double only) collects the kink facts.
template <class T>
T EvalNode(const Tree& tree, int n, std::span<const T> x, Trail* trail = nullptr) {
  using namespace dualcast::math;
  using random_kernel_detail::kRecords;
  using random_kernel_detail::Note;
  const Node& node = tree.nodes[n];
  auto eval = [&](int k) { return EvalNode<T>(tree, k, x, trail); };
  switch (node.kind) {
    case Node::kInput: return x[node.index];
    case Node::kUnary: {
      T a = eval(node.a);
      if constexpr (kRecords<T>) {
        if (node.op == 6 || node.op == 8 || node.op == 10 || node.op == 13) Note(trail, a > 0);
        if (node.op == 11) Note(trail, a);
        if (node.op == 16) Note(trail, a + 0.5);  // rint's steps at the half-integers
      }
      switch (node.op) {
        case 0: return sin(a);
        case 1: return cos(a);
        case 2: return tanh(a);
        case 3: return sigmoid(a);
        case 4: return atan(a);
        case 5: return -a;
        case 6: return sqrt(abs(a) + 1);
        case 7: return exp(tanh(a));
        case 8: return relu(a);
        case 9: return softplus(a);
        case 10: return log1p(abs(a));
        case 11: return floor(a);
        case 12: return erf(a);
        case 13: return abs(a);
        case 14: return asinh(a);
        case 15: return expm1(-a * a);
        default: return rint(a);
      }
    }
    case Node::kBinary: {
      T a = eval(node.a), b = eval(node.b);
      if constexpr (kRecords<T>) {
        if (node.op == 3 || node.op == 4 || node.op == 7 || node.op == 8 || node.op == 12) {
          Note(trail, a < b);  // fdim's kink at a = b as well
        }
        if (node.op == 9) Note(trail, std::signbit(a) == std::signbit(b));
        if (node.op == 5 || node.op == 6) {  // hypot's kink at the origin; atan2's jump at a = 0, b < 0
          Note(trail, a > 0);
          Note(trail, b > 0);
        }
      }
      switch (node.op) {
        case 0: return a + b;
        case 1: return a - b;
        case 2: return a * b;
        case 3: return min(a, b);
        case 4: return max(a, b);
        case 5: return hypot(a, b);
        case 6: return atan2(a, b);
        case 7: return fmin(a, b);
        case 8: return fmax(a, b);
        case 9: return copysign(a, b);
        case 10: return a / (b * b + 1);
        case 11: return fma(a, b, a);
        default: return fdim(a, b);
      }
    }
    case Node::kScalar: {
      T a = eval(node.a);
      if constexpr (kRecords<T>) {
        if (node.op == 4) Note(trail, a > 0);  // pow(abs(a) + 0.5, c): abs's kink
      }
      switch (node.op) {
        case 0: return a + node.c;
        case 1: return a * node.c;
        case 2: return node.c - a;
        case 3: return a / (a * a + node.c * node.c + 1);
        default: return pow(abs(a) + 0.5, node.c);
      }
    }
    case Node::kIf: {
      bool taken = false;
      if (eval(node.a) < eval(node.b)) taken = true;
      Note(trail, taken);
      if (taken) return eval(node.t);
      return eval(node.e);
    }
    case Node::kSelect: {
      T a = eval(node.a), b = eval(node.b);
      if constexpr (kRecords<T>) Note(trail, a > b);
      return select(a > b, eval(node.t), eval(node.e));
    }
  }
  return x[0];
}

namespace random_kernel_detail {
inline int Grow(Tree& tree, std::mt19937_64& rng, const GrowOptions& o, int depth, int& ifs) {
  std::uniform_int_distribution<int> pick(0, 99);
  Node node{};
  int p = pick(rng);
  if (depth == 0 || p < 15) {
    node.kind = Node::kInput;
    node.index = pick(rng) % o.num_inputs;
  } else if (p < 35) {
    node.kind = Node::kUnary;
    node.op = pick(rng) % (o.extended_ops ? kUnaryOpsExtended : kUnaryOps);
    node.a = Grow(tree, rng, o, depth - 1, ifs);
  } else if (p < 55) {
    node.kind = Node::kBinary;
    node.op = pick(rng) % (o.extended_ops ? kBinaryOpsExtended : kBinaryOps);
    node.a = Grow(tree, rng, o, depth - 1, ifs);
    node.b = Grow(tree, rng, o, depth - 1, ifs);
  } else if (p < 65) {
    node.kind = Node::kScalar;
    node.op = pick(rng) % (o.extended_ops ? kScalarOps + 1 : kScalarOps);
    node.c = std::uniform_real_distribution<double>(-2, 2)(rng);
    node.a = Grow(tree, rng, o, depth - 1, ifs);
  } else {
    node.kind = p < 90 && ifs < o.max_ifs ? Node::kIf : Node::kSelect;
    if (node.kind == Node::kIf) ++ifs;
    node.a = Grow(tree, rng, o, depth - 1, ifs);
    node.b = Grow(tree, rng, o, depth - 1, ifs);
    node.t = Grow(tree, rng, o, depth - 1, ifs);
    node.e = Grow(tree, rng, o, depth - 1, ifs);
  }
  tree.nodes.push_back(node);
  return static_cast<int>(tree.nodes.size()) - 1;
}
}  // namespace random_kernel_detail

inline Tree GrowTree(std::mt19937_64& rng, const GrowOptions& options = {}) {
  Tree tree;
  tree.num_inputs = options.num_inputs;
  for (int m = 0; m < options.num_outputs; ++m) {
    int ifs = 0;
    tree.roots.push_back(random_kernel_detail::Grow(tree, rng, options, options.depth, ifs));
  }
  return tree;
}

// The tree as a generic lambda of N inputs and M outputs (a scalar for M == 1,
// else std::array<T, M>); it holds the tree by shared_ptr, so copies are cheap.
template <int N, int M>
struct TreeKernel {
  std::shared_ptr<const Tree> tree;

  template <class... X>
    requires(sizeof...(X) == N && (std::is_same_v<X, std::tuple_element_t<0, std::tuple<X...>>> && ...))
  auto operator()(X... x) const {
    using T = std::tuple_element_t<0, std::tuple<X...>>;
    const std::array<T, N> xs{x...};
    const std::span<const T> in(xs);
    if constexpr (M == 1) {
      return EvalNode<T>(*tree, tree->roots[0], in);
    } else {
      return [&]<size_t... I>(std::index_sequence<I...>) {
        return std::array<T, M>{EvalNode<T>(*tree, tree->roots[I], in)...};
      }(std::make_index_sequence<M>{});
    }
  }
};

// Every output of the tree at x (any T the evaluator accepts).
template <class T>
std::vector<T> EvalTree(const Tree& tree, std::span<const T> x, Trail* trail = nullptr) {
  std::vector<T> out;
  for (int r : tree.roots) out.push_back(EvalNode<T>(tree, r, x, trail));
  return out;
}

// The subtree at n written as a C++ expression over x0, x1, ... (for reproducers).
inline std::string ToCpp(const Tree& tree, int n) {
  const Node& node = tree.nodes[n];
  auto s = [&](int k) { return ToCpp(tree, k); };
  auto num = [](double c) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", c);
    return std::string(buf);
  };
  static const char* const kUnary[] = {"sin", "cos", "tanh", "sigmoid", "atan", "-", "sqrt1abs",
                                       "exptanh", "relu", "softplus", "log1pabs", "floor", "erf",
                                       "abs", "asinh", "expm1negsq", "rint"};
  switch (node.kind) {
    case Node::kInput: return "x" + std::to_string(node.index);
    case Node::kUnary:
      switch (node.op) {
        case 6: return "sqrt(abs(" + s(node.a) + ") + 1)";
        case 7: return "exp(tanh(" + s(node.a) + "))";
        case 10: return "log1p(abs(" + s(node.a) + "))";
        case 15: return "expm1(-(" + s(node.a) + ") * (" + s(node.a) + "))";
        default: return std::string(kUnary[node.op]) + "(" + s(node.a) + ")";
      }
    case Node::kBinary: {
      static const char* const kFn[] = {"+", "-", "*", "min", "max", "hypot",
                                        "atan2", "fmin", "fmax", "copysign", "", "fma", "fdim"};
      if (node.op <= 2) return "(" + s(node.a) + " " + kFn[node.op] + " " + s(node.b) + ")";
      if (node.op == 10) return "(" + s(node.a) + " / (" + s(node.b) + " * " + s(node.b) + " + 1))";
      if (node.op == 11) return "fma(" + s(node.a) + ", " + s(node.b) + ", " + s(node.a) + ")";
      return std::string(kFn[node.op]) + "(" + s(node.a) + ", " + s(node.b) + ")";
    }
    case Node::kScalar:
      switch (node.op) {
        case 0: return "(" + s(node.a) + " + " + num(node.c) + ")";
        case 1: return "(" + s(node.a) + " * " + num(node.c) + ")";
        case 2: return "(" + num(node.c) + " - " + s(node.a) + ")";
        case 3:
          return "(" + s(node.a) + " / (" + s(node.a) + " * " + s(node.a) + " + " + num(node.c) +
                 " * " + num(node.c) + " + 1))";
        default: return "pow(abs(" + s(node.a) + ") + 0.5, " + num(node.c) + ")";
      }
    case Node::kIf:
      return "([&] { if (" + s(node.a) + " < " + s(node.b) + ") return " + s(node.t) +
             "; return " + s(node.e) + "; }())";
    case Node::kSelect:
      return "select(" + s(node.a) + " > " + s(node.b) + ", " + s(node.t) + ", " + s(node.e) + ")";
  }
  return "?";
}

// The whole kernel as a C++ generic lambda.
inline std::string ToCpp(const Tree& tree) {
  std::string params;
  for (int i = 0; i < tree.num_inputs; ++i) params += (i ? ", auto x" : "auto x") + std::to_string(i);
  std::string body;
  if (tree.roots.size() == 1) {
    body = "return " + ToCpp(tree, tree.root()) + ";";
  } else {
    body = "return std::array{";
    for (size_t m = 0; m < tree.roots.size(); ++m) body += (m ? ", " : "") + ToCpp(tree, tree.roots[m]);
    body += "};";
  }
  return "[](" + params + ") { using namespace dualcast::math; " + body + " }";
}

// Rebuilds `tree` keeping only nodes reachable from the roots, with node
// `from` replaced by node `to` (pass from = -1 for a plain compaction).
inline Tree Substitute(const Tree& tree, int from, int to) {
  Tree out;
  out.num_inputs = tree.num_inputs;
  std::vector<int> map(tree.nodes.size(), -1);
  auto copy = [&](auto& self, int n) -> int {
    if (n == from) n = to;
    if (map[n] >= 0) return map[n];
    Node node = tree.nodes[n];
    for (int* child : {&node.a, &node.b, &node.t, &node.e}) {
      if (*child >= 0) *child = self(self, *child);
    }
    out.nodes.push_back(node);
    return map[n] = static_cast<int>(out.nodes.size()) - 1;
  };
  for (int r : tree.roots) out.roots.push_back(copy(copy, r));
  return out;
}

// Smaller trees to try when a property fails, most aggressive first: each
// node replaced by one of its children or by an input; each output alone.
inline std::vector<Tree> ShrinkCandidates(const Tree& tree) {
  std::vector<Tree> out;
  if (tree.roots.size() > 1) {
    for (int r : tree.roots) {
      Tree one = tree;
      one.roots = {r};
      out.push_back(Substitute(one, -1, -1));
    }
  }
  Tree with_input = tree;
  with_input.nodes.push_back(Node{});  // x0, used as a replacement leaf
  const int leaf = static_cast<int>(with_input.nodes.size()) - 1;
  // Nodes are stored children first, so walking backwards tries the biggest
  // cuts (at the roots) first.
  for (size_t n = tree.nodes.size(); n-- > 0;) {
    const Node& node = tree.nodes[n];
    if (node.kind == Node::kInput) {
      if (node.index != 0) out.push_back(Substitute(with_input, static_cast<int>(n), leaf));
      continue;
    }
    for (int child : {node.a, node.b, node.t, node.e}) {
      if (child >= 0) out.push_back(Substitute(tree, static_cast<int>(n), child));
    }
    out.push_back(Substitute(with_input, static_cast<int>(n), leaf));
  }
  return out;
}

}  // namespace dualcast::testing
