// jit::Var and jit::Bool: the traced scalar and boolean a kernel lambda runs on while it is traced.
//
// A generic kernel lambda is written once and runs on float, double, Dual<...>
// and, when the JIT traces it, on `Var`. A Var is only a handle: the id of a
// node in the current thread's trace (a hash-consed DAG, see trace.h). Every
// operator and math function on Var records one node; the element type (f32
// or f64) lives in the IR. A plain number mixed with a Var becomes a constant
// of the Var's type (so `x * 2` on an f32 x multiplies by an f32 2); a Var
// made from a number alone takes the kernel's default type (the inputs' type).
// The number is converted to that type straight from its own, once, as C++
// converts it (an int64 above 2^53 in an f32 kernel is not rounded twice
// through double). One exception: in a kernel with both f32 and f64 inputs, a
// Var made from a number alone is f64 and meets an f32 Var re-rounded from it.
// A NaN constant keeps its sign (signbit sees it); its payload is dropped.
// Arithmetic on two constants is folded (exactly: IEEE + - * / in the type);
// math functions are never folded, so results match the backends' libm.
//
// Comparisons give a `Bool`. Its `explicit operator bool` is the path oracle:
// a plain C++ `if (x > y)`, `?:` or early `return` asks the tracer which way to
// go, and the tracer re-runs the lambda until every sequence of decisions has
// been seen (trace.h). `&&`, `||` and `!` on Bool are recorded as And/Or/Not
// nodes: they do NOT short-circuit (both sides are always computed, which is
// harmless because kernels are pure), and a combined condition is one branch.
// For a choice without a branch use `select(cond, a, b)`; for a two-sided
// choice traced once (no re-runs, only the taken side runs) `dc::cond` (cond.h).
//
// The math functions carry exactly the names of dual/'s `dualcast::math` and
// live in namespace dualcast::jit, so a kernel finds them by ADL, also after
// `using namespace dualcast::math;` (those overloads are constrained to
// std::floating_point and never match a Var); using-declarations at the end
// of this file make `dualcast::math::sin(x)` spelled out reach them too. Var
// does not convert to double, so no std:: or C function can silently take a Var.
//
// Example:
//   auto relu_or_exp = [](auto x, auto y) {
//     using namespace dualcast::math;
//     if (x > 0 && y > 0) return x * y;   // one decision on (and (gt x 0) (gt y 0))
//     return select(x > y, exp(x), y);     // no decision: a select node
//   };
#pragma once

#include <concepts>
#include <type_traits>

#include "jit/ir/ir.h"

namespace dualcast::jit {

class Var;
class Bool;

namespace trace_detail {
// A number as each element type holds it, converted straight from its own
// type: a 64-bit integer beyond 2^53 (or a long double) becomes a float with
// one rounding, as in C++'s float + long long, not two through double.
struct Number {
  double f64;
  float f32;
};
template <class S>
Number NumberOf(S value) {
  return {static_cast<double>(value), static_cast<float>(value)};
}

// Hooks into the current thread's trace, defined in trace.cc. Each throws
// Error(kTrace) when no trace is active or a handle is unset or stale.
ValueId DefaultConstant(Number value);
ValueId ConstantLike(ValueId partner, Number value);  // a constant of partner's type
ValueId BoolConstant(bool value);
ValueId Record(Op op, ValueId a);
ValueId Record(Op op, ValueId a, ValueId b);
ValueId Record(Op op, ValueId a, ValueId b, ValueId c);
Type TypeOf(ValueId v);
bool Decide(ValueId cond);
}  // namespace trace_detail

// Any built-in number except bool: what may stand next to a Var.
template <class T>
concept TraceScalar = std::is_arithmetic_v<T> && !std::same_as<T, bool>;

class Var {
 public:
  // An unset value (so that std::array<Var, M> can be filled in later);
  // using it in an operation throws.
  Var() = default;
  // A constant of the kernel's default type. Only valid while tracing.
  template <TraceScalar S>
  Var(S value) : id_(trace_detail::DefaultConstant(trace_detail::NumberOf(value))) {}  // NOLINT

  static Var FromId(ValueId id) {
    Var v;
    v.id_ = id;
    return v;
  }
  ValueId id() const { return id_; }
  Type type() const { return trace_detail::TypeOf(id_); }

  // std::sin(x) on a traced value: adding overloads to namespace std is UB, so
  // instead std::sin(x) finds std::sin(long double) through this conversion,
  // whose body refuses to compile with the fix. The conversion is offered to
  // long double only (a template conversion deduces the exact target type), so
  // Var still does not convert to double or float: a lambda taking double is
  // not callable with a Var, `double d = x` does not compile, and Var's own
  // operators and math functions (exact matches) are unaffected.
  template <std::same_as<long double> D>
  operator D() const {  // NOLINT: exists only to fail with a readable message
    static_assert(sizeof(D) == 0,
                  "dualcast: std:: math on a traced value (jit::Var): call the function "
                  "unqualified, sin(x), after `using namespace dc::math;` (that finds "
                  "dc::math for numbers and Duals, and the traced overload for a Var by "
                  "ADL); a traced value has no number while the kernel is traced");
    return 0;
  }

  template <class B>
  Var& operator+=(const B& b);
  template <class B>
  Var& operator-=(const B& b);
  template <class B>
  Var& operator*=(const B& b);
  template <class B>
  Var& operator/=(const B& b);

 private:
  ValueId id_ = kNoValue;
};

class Bool {
 public:
  Bool() = default;
  Bool(bool value) : id_(trace_detail::BoolConstant(value)) {}  // NOLINT: a constant
  static Bool FromId(ValueId id) {
    Bool b;
    b.id_ = id;
    return b;
  }
  ValueId id() const { return id_; }

  // The path oracle: which way this run of the lambda goes (trace.h).
  explicit operator bool() const { return trace_detail::Decide(id_); }

  // Recorded as nodes; no short-circuit (see the file comment).
  friend Bool operator&&(const Bool& a, const Bool& b) {
    return FromId(trace_detail::Record(Op::kAnd, a.id_, b.id_));
  }
  friend Bool operator||(const Bool& a, const Bool& b) {
    return FromId(trace_detail::Record(Op::kOr, a.id_, b.id_));
  }
  friend Bool operator!(const Bool& a) { return FromId(trace_detail::Record(Op::kNot, a.id_)); }

 private:
  ValueId id_ = kNoValue;
};

template <class T>
concept TraceOperand = std::same_as<std::remove_cvref_t<T>, Var> || TraceScalar<std::remove_cvref_t<T>>;

// At least one Var among the arguments: keeps our templates away from plain numbers.
template <class... Ts>
concept HasVar = (std::same_as<std::remove_cvref_t<Ts>, Var> || ...);

namespace trace_detail {

// The node of an operand; a number becomes a constant of the partner's type.
template <class T>
ValueId Operand(const T& value, ValueId partner) {
  if constexpr (std::same_as<T, Var>) {
    return value.id();
  } else if (partner == kNoValue) {
    return DefaultConstant(NumberOf(value));
  } else {
    return ConstantLike(partner, NumberOf(value));
  }
}

// The first Var among the arguments (kNoValue if none).
template <class... Ts>
ValueId FirstVar(const Ts&... values) {
  ValueId found = kNoValue;
  auto take = [&](const auto& v) {
    if constexpr (std::same_as<std::remove_cvref_t<decltype(v)>, Var>) {
      if (found == kNoValue) found = v.id();
    }
  };
  (take(values), ...);
  return found;
}

template <class... Ts>
Var Apply(Op op, const Ts&... values) {
  ValueId partner = FirstVar(values...);
  return Var::FromId(Record(op, Operand(values, partner)...));
}

template <class A, class B>
Bool Compare(Op op, const A& a, const B& b) {
  ValueId partner = FirstVar(a, b);
  return Bool::FromId(Record(op, Operand(a, partner), Operand(b, partner)));
}

}  // namespace trace_detail

// ---- arithmetic and comparison operators (Var/Var, Var/number, number/Var) ----

#define DUALCAST_JIT_OPERATOR(symbol, op, Result, apply)        \
  template <TraceOperand A, TraceOperand B>                      \
    requires HasVar<A, B>                                        \
  Result operator symbol(const A& a, const B& b) {               \
    return trace_detail::apply(op, a, b);                        \
  }
DUALCAST_JIT_OPERATOR(+, Op::kAdd, Var, Apply)
DUALCAST_JIT_OPERATOR(-, Op::kSub, Var, Apply)
DUALCAST_JIT_OPERATOR(*, Op::kMul, Var, Apply)
DUALCAST_JIT_OPERATOR(/, Op::kDiv, Var, Apply)
DUALCAST_JIT_OPERATOR(==, Op::kEq, Bool, Compare)
DUALCAST_JIT_OPERATOR(!=, Op::kNe, Bool, Compare)
DUALCAST_JIT_OPERATOR(<, Op::kLt, Bool, Compare)
DUALCAST_JIT_OPERATOR(<=, Op::kLe, Bool, Compare)
DUALCAST_JIT_OPERATOR(>, Op::kGt, Bool, Compare)
DUALCAST_JIT_OPERATOR(>=, Op::kGe, Bool, Compare)
#undef DUALCAST_JIT_OPERATOR

inline Var operator-(const Var& x) { return trace_detail::Apply(Op::kNeg, x); }
inline Var operator+(const Var& x) { return x; }

template <class B>
Var& Var::operator+=(const B& b) {
  static_assert(TraceOperand<B>, "a Var can be combined with a Var or a number");
  return *this = *this + b;
}
template <class B>
Var& Var::operator-=(const B& b) {
  static_assert(TraceOperand<B>, "a Var can be combined with a Var or a number");
  return *this = *this - b;
}
template <class B>
Var& Var::operator*=(const B& b) {
  static_assert(TraceOperand<B>, "a Var can be combined with a Var or a number");
  return *this = *this * b;
}
template <class B>
Var& Var::operator/=(const B& b) {
  static_assert(TraceOperand<B>, "a Var can be combined with a Var or a number");
  return *this = *this / b;
}

// ---- math functions, with the names of dualcast::math, generated from jit/ir/ops.def ----

// Each Math row of ops.def becomes a function of its spelling taking that many
// operands; each unary Compare row (isnan, isfinite) one returning a Bool.
// Unary ones are templates on exactly Var: a number must never convert to a Var
// to call them. Two- and three-argument ones take a Var and numbers in any
// order, e.g. pow(x, 2) or clamp(x, 0, 1).
#define DUALCAST_JIT_MATH_1(name, op)                            \
  template <std::same_as<Var> V>                                 \
  Var name(const V& x) {                                         \
    return trace_detail::Apply(Op::k##op, x);                    \
  }
#define DUALCAST_JIT_MATH_2(name, op)                                       \
  template <TraceOperand A, TraceOperand B>                                 \
    requires HasVar<A, B>                                                   \
  Var name(const A& a, const B& b) {                                        \
    return trace_detail::Apply(Op::k##op, a, b);                            \
  }
#define DUALCAST_JIT_MATH_3(name, op)                                       \
  template <TraceOperand A, TraceOperand B, TraceOperand C>                 \
    requires HasVar<A, B, C>                                                \
  Var name(const A& a, const B& b, const C& c) {                            \
    return trace_detail::Apply(Op::k##op, a, b, c);                         \
  }
#define DUALCAST_JIT_TEST_1(name, op)                                       \
  template <std::same_as<Var> V>                                            \
  Bool name(const V& x) {                                                   \
    return Bool::FromId(trace_detail::Record(Op::k##op, x.id()));           \
  }
#define DUALCAST_KERNEL_MATH(name, op, arity) DUALCAST_JIT_MATH_##arity(name, op)
#define DUALCAST_KERNEL_TEST(name, op) DUALCAST_JIT_TEST_1(name, op)
#include "jit/trace/kernel_math_rows.inc"
#undef DUALCAST_KERNEL_MATH
#undef DUALCAST_KERNEL_TEST
#undef DUALCAST_JIT_MATH_1
#undef DUALCAST_JIT_MATH_2
#undef DUALCAST_JIT_MATH_3
#undef DUALCAST_JIT_TEST_1

// C's name for abs.
template <std::same_as<Var> V>
Var fabs(const V& x) {
  return abs(x);
}
// rint under the default rounding mode, the only one kernels run in (ties to even).
template <std::same_as<Var> V>
Var nearbyint(const V& x) {
  return rint(x);
}
// ldexp(x, n): n is truncated to an integer (see jit/ir/staple_math.h).

template <TraceOperand A, TraceOperand B, TraceOperand C>
  requires HasVar<A, B, C>
Var fma(const A& a, const B& b, const C& c) {
  return trace_detail::Apply(Op::kFma, a, b, c);
}

// cond ? a : b without a branch: both sides are computed (a Select node).
template <TraceOperand A, TraceOperand B>
Var select(const Bool& cond, const A& a, const B& b) {
  ValueId partner = trace_detail::FirstVar(a, b);
  return Var::FromId(trace_detail::Record(Op::kSelect, cond.id(),
                                          trace_detail::Operand(a, partner),
                                          trace_detail::Operand(b, partner)));
}

}  // namespace dualcast::jit

// dc::math::sin(x) spelled out in a kernel: the traced functions under
// dualcast::math's names too, as using-declarations. One function reached
// two ways is one candidate, so the usual unqualified sin(x) after
// `using namespace dc::math;` (which also finds it by ADL) is not ambiguous,
// and for numbers and Duals nothing changes (these take only a Var).
namespace dualcast::math {
#define DUALCAST_KERNEL_MATH(name, op, arity) using ::dualcast::jit::name;
#define DUALCAST_KERNEL_TEST(name, op) using ::dualcast::jit::name;  // isnan, isfinite, isinf, signbit
#include "jit/trace/kernel_math_rows.inc"
#undef DUALCAST_KERNEL_MATH
#undef DUALCAST_KERNEL_TEST
using ::dualcast::jit::fabs;
using ::dualcast::jit::fma;
using ::dualcast::jit::nearbyint;
using ::dualcast::jit::select;
}  // namespace dualcast::math
