// The built-in kernels behind Array operators, math functions and where().
#include "dualcast/operators.hpp"

#include "absl/strings/str_cat.h"
#include "jit/error.h"

namespace dualcast::detail {
namespace {

// The lambdas call the math functions unqualified, by the names of
// dualcast::math: while tracing, argument-dependent lookup finds the
// jit::Var overloads (jit/trace/var.h), exactly as in a user's kernel.

Kernel MakeBuiltin(Builtin op) {
  using B = Builtin;
  switch (op) {
    case B::kAdd: return kernel("add", [](auto a, auto b) { return a + b; });
    case B::kSub: return kernel("sub", [](auto a, auto b) { return a - b; });
    case B::kMul: return kernel("mul", [](auto a, auto b) { return a * b; });
    case B::kDiv: return kernel("div", [](auto a, auto b) { return a / b; });
    case B::kNeg: return kernel("neg", [](auto a) { return -a; });
    // Comparisons: 0/1 in the arguments' type, constant in both branches,
    // so their partials are structurally zero.
    case B::kEq: return kernel("eq", [](auto a, auto b) { return select(a == b, 1, 0); });
    case B::kNe: return kernel("ne", [](auto a, auto b) { return select(a != b, 1, 0); });
    case B::kLt: return kernel("lt", [](auto a, auto b) { return select(a < b, 1, 0); });
    case B::kLe: return kernel("le", [](auto a, auto b) { return select(a <= b, 1, 0); });
    case B::kGt: return kernel("gt", [](auto a, auto b) { return select(a > b, 1, 0); });
    case B::kGe: return kernel("ge", [](auto a, auto b) { return select(a >= b, 1, 0); });
    case B::kWhere:
      return kernel("where", [](auto c, auto a, auto b) { return select(c != 0, a, b); });
    case B::kFma:
      return kernel("fma", [](auto a, auto b, auto c) { return fma(a, b, c); });
#define DUALCAST_UNARY_CASE(name) \
  case B::k_##name:               \
    return kernel(#name, [](auto x) { return name(x); });
      DUALCAST_UNARY_MATH(DUALCAST_UNARY_CASE)
#undef DUALCAST_UNARY_CASE
#define DUALCAST_BINARY_CASE(name)                          \
  case B::k_##name:                                         \
    return kernel(#name, [](auto a, auto b) { return name(a, b); });
      DUALCAST_BINARY_MATH(DUALCAST_BINARY_CASE)
#undef DUALCAST_BINARY_CASE
  }
  throw Error(ErrorKind::kInternal,
              absl::StrCat("unknown built-in kernel ", static_cast<int>(op)));
}

constexpr int kNumBuiltins = static_cast<int>(Builtin::k_copysign) + 1;

}  // namespace

const Kernel& BuiltinKernel(Builtin op) {
  // Built once, thread-safely; never destroyed (used until exit).
  static const auto* kernels = [] {
    auto* all = new std::vector<Kernel>();
    for (int i = 0; i < kNumBuiltins; ++i) all->push_back(MakeBuiltin(static_cast<Builtin>(i)));
    return all;
  }();
  return (*kernels)[static_cast<int>(op)];
}

}  // namespace dualcast::detail
