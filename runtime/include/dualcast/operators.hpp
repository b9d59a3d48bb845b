// Array arithmetic, comparisons, math functions and where(): built-in broadcast kernels that fuse like user kernels.
//
// Every function here is `broadcast(builtin_kernel, ...)`: lazy, NumPy
// broadcasting, fused with the broadcasts around it into one kernel, and
// differentiated by the tape like any kernel. An operand may be an Array or
// a plain number (either side); numbers are constants, never differentiated.
// Comparisons return arrays of 0 and 1 in the arrays' type, with no gradient.
// The math functions mirror dualcast::math (same names and conventions:
// sigmoid, softplus, relu, min/max ties, pow at 0, ...). So min(a, b) and
// max(a, b) are std::min/std::max per element: a NaN in a is returned, a NaN
// in b is dropped (NumPy's minimum/maximum propagate both; the reductions
// dc::min(A), dc::max(A) propagate NaN; fmin/fmax drop it on either side).
//
// where(c, a, b) is select(c != 0, a, b): both a and b are computed for
// every element, as in TensorFlow/JAX/PyTorch. It is what the reverse-mode
// comparator records (see Unfused); a kernel with a real `if` computes only
// the taken branch, which is the point of dualcast.
//
// Example:
//   auto y = dualcast::tanh(x) * 2.0 + b;             // one fused kernel when read
//   auto m = dualcast::where(x > 0.0, dualcast::sqrt(x), 0.0);
#pragma once

#include <type_traits>
#include <utility>

#include "dualcast/array.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/kernel.hpp"

// X-macros of the built-in kernels: name (function or op), arity.
#define DUALCAST_UNARY_MATH(X)                                                                \
  X(exp) X(expm1) X(log) X(log1p) X(log2) X(log10) X(sqrt) X(cbrt) X(sin) X(cos) X(tan)     \
  X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(asinh) X(acosh) X(atanh) X(erf) X(erfc) \
  X(abs) X(fabs) X(floor) X(ceil) X(round) X(trunc) X(sigmoid) X(softplus) X(relu)         \
  X(fast_tanh) X(fast_sigmoid)
#define DUALCAST_BINARY_MATH(X) \
  X(pow) X(atan2) X(min) X(max) X(fmin) X(fmax) X(hypot) X(copysign)

namespace dualcast {
namespace detail {

enum class Builtin {
  kAdd, kSub, kMul, kDiv, kNeg,
  kEq, kNe, kLt, kLe, kGt, kGe,
  kWhere, kFma,
#define DUALCAST_ENUM(name) k_##name,
  DUALCAST_UNARY_MATH(DUALCAST_ENUM) DUALCAST_BINARY_MATH(DUALCAST_ENUM)
#undef DUALCAST_ENUM
};

// The process-wide kernel of a built-in operation (traced on first use).
const Kernel& BuiltinKernel(Builtin op);

// Two or three broadcast operands, at least one of them an Array.
template <class... A>
concept ArrayOperands =
    (BroadcastArgument<std::remove_cvref_t<A>> && ...) && (IsArray<std::remove_cvref_t<A>>::value || ...);

}  // namespace detail

#define DUALCAST_BINARY_OPERATOR(sym, op)                                \
  template <class A, class B>                                            \
    requires detail::ArrayOperands<A, B>                                 \
  auto operator sym(A&& a, B&& b) {                                      \
    return broadcast(detail::BuiltinKernel(detail::Builtin::op),         \
                     std::forward<A>(a), std::forward<B>(b));            \
  }
DUALCAST_BINARY_OPERATOR(+, kAdd)
DUALCAST_BINARY_OPERATOR(-, kSub)
DUALCAST_BINARY_OPERATOR(*, kMul)
DUALCAST_BINARY_OPERATOR(/, kDiv)
DUALCAST_BINARY_OPERATOR(==, kEq)
DUALCAST_BINARY_OPERATOR(!=, kNe)
DUALCAST_BINARY_OPERATOR(<, kLt)
DUALCAST_BINARY_OPERATOR(<=, kLe)
DUALCAST_BINARY_OPERATOR(>, kGt)
DUALCAST_BINARY_OPERATOR(>=, kGe)
#undef DUALCAST_BINARY_OPERATOR

template <class A>
  requires detail::IsArray<std::remove_cvref_t<A>>::value
auto operator-(A&& a) {
  return broadcast(detail::BuiltinKernel(detail::Builtin::kNeg), std::forward<A>(a));
}

#define DUALCAST_UNARY_FUNCTION(name)                                                         \
  template <class X>                                                                          \
    requires detail::IsArray<std::remove_cvref_t<X>>::value                                   \
  auto name(X&& x) {                                                                          \
    return broadcast(detail::BuiltinKernel(detail::Builtin::k_##name), std::forward<X>(x));  \
  }
DUALCAST_UNARY_MATH(DUALCAST_UNARY_FUNCTION)
#undef DUALCAST_UNARY_FUNCTION

#define DUALCAST_BINARY_FUNCTION(name)                                        \
  template <class A, class B>                                                 \
    requires detail::ArrayOperands<A, B>                                      \
  auto name(A&& a, B&& b) {                                                   \
    return broadcast(detail::BuiltinKernel(detail::Builtin::k_##name),        \
                     std::forward<A>(a), std::forward<B>(b));                 \
  }
DUALCAST_BINARY_MATH(DUALCAST_BINARY_FUNCTION)
#undef DUALCAST_BINARY_FUNCTION

// a * b + c, fused (one rounding), as dualcast::math::fma.
template <class A, class B, class C>
  requires detail::ArrayOperands<A, B, C>
auto fma(A&& a, B&& b, C&& c) {
  return broadcast(detail::BuiltinKernel(detail::Builtin::kFma), std::forward<A>(a),
                   std::forward<B>(b), std::forward<C>(c));
}

// select(cond != 0, a, b) elementwise; both sides are computed.
template <class C, class A, class B>
  requires detail::ArrayOperands<C, A, B>
auto where(C&& cond, A&& a, B&& b) {
  return broadcast(detail::BuiltinKernel(detail::Builtin::kWhere), std::forward<C>(cond),
                   std::forward<A>(a), std::forward<B>(b));
}

}  // namespace dualcast
