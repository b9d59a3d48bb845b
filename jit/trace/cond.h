// dc::cond and dc::select: a two-way choice written once for traced values (one If, traced once) and for numbers and Duals.
//
//   auto a = dc::cond(x > t, [&] { return a * y; }, [&] { return a + y; });
//
// On traced values (jit::Var) both lambdas run once, while tracing, and the
// result is one structured If: at run time only the taken side is computed.
// Unlike a plain C++ `if`, this never re-runs the kernel lambda, so k
// conditions cost k Ifs to trace however they combine. Inside then_fn the
// condition is known to be true (a plain `if` on it inside takes no decision),
// inside else_fn false. When the condition is a constant, or already decided
// on the current path, only the taken side is traced.
//
// On float, double and Dual (a real bool condition) it is plain evaluation of
// the taken side, so the same kernel runs unchanged in tests and on Duals.
//
// Sides return a scalar (Var or number), a std::tuple or a std::array of
// scalars, both sides of the same shape; the result is that shape of Vars.
// `dc::select(c, a, b)` is the branch-free choice (both computed, one kept):
// jit::select for traced values, math::select for numbers and Duals.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <dualcast/dual.hpp>

#include "jit/trace/var.h"

namespace dualcast::jit {

namespace trace_detail {
// Hooks into the current trace (trace.cc). KnownCondition: 1 or 0 when the
// condition is a constant or decided on this path, else -1.
int KnownCondition(ValueId cond);
void AssumeCondition(ValueId cond, bool value);
void ForgetCondition(ValueId cond);
// The results of one If choosing then_values or else_values (pairwise unified
// in type); the then_values themselves when both sides are the same.
std::vector<ValueId> RecordCond(ValueId pred, std::vector<ValueId> then_values,
                                std::vector<ValueId> else_values);

// What a side of cond may return, and the shape of Vars it becomes.
template <class T>
struct CondShape {
  static constexpr bool ok = false;
};
template <class T>
  requires TraceOperand<T>
struct CondShape<T> {
  static constexpr bool ok = true;
  using Out = Var;
};
template <class T, size_t M>
struct CondShape<std::array<T, M>> {
  static constexpr bool ok = CondShape<T>::ok && M > 0;
  using Out = std::array<typename CondShape<T>::Out, M>;
};
template <class... Ts>
struct CondShape<std::tuple<Ts...>> {
  static constexpr bool ok = sizeof...(Ts) > 0 && (CondShape<Ts>::ok && ...);
  using Out = std::tuple<typename CondShape<Ts>::Out...>;
};

template <class T>
void Flatten(const T& value, std::vector<ValueId>& ids) {
  if constexpr (std::same_as<T, Var>) {
    ids.push_back(value.id());
  } else if constexpr (TraceScalar<T>) {
    ids.push_back(DefaultConstant(NumberOf(value)));  // RecordCond retypes it
  } else {
    std::apply([&](const auto&... e) { (Flatten(e, ids), ...); }, value);
  }
}

template <class Out>
Out Rebuild(const std::vector<ValueId>& ids, size_t& k) {
  if constexpr (std::same_as<Out, Var>) {
    return Var::FromId(ids[k++]);
  } else {
    Out out;
    std::apply([&](auto&... e) { ((e = Rebuild<std::remove_cvref_t<decltype(e)>>(ids, k)), ...); },
               out);
    return out;
  }
}

template <class F>
using SideResult = std::remove_cvref_t<std::invoke_result_t<F&>>;

// Traces one side under the assumption that pred is `value`.
template <class F>
std::vector<ValueId> TraceSide(ValueId pred, bool value, bool assume, F& side) {
  if (assume) AssumeCondition(pred, value);
  std::vector<ValueId> ids;
  Flatten(side(), ids);
  if (assume) ForgetCondition(pred);
  return ids;
}
}  // namespace trace_detail

template <class Then, class Else>
  requires std::invocable<Then&> && std::invocable<Else&>
auto cond(const Bool& pred, Then&& then_fn, Else&& else_fn) {
  using RT = trace_detail::SideResult<Then>;
  using RE = trace_detail::SideResult<Else>;
  static_assert(trace_detail::CondShape<RT>::ok && trace_detail::CondShape<RE>::ok,
                "dc::cond sides must return a scalar, a std::tuple or a std::array of scalars");
  using Out = typename trace_detail::CondShape<RT>::Out;
  static_assert(std::same_as<Out, typename trace_detail::CondShape<RE>::Out>,
                "dc::cond sides must return the same shape (scalar, tuple or array of one size)");
  const int known = trace_detail::KnownCondition(pred.id());
  std::vector<ValueId> ids;
  if (known >= 0) {
    ids = known ? trace_detail::TraceSide(pred.id(), true, false, then_fn)
                : trace_detail::TraceSide(pred.id(), false, false, else_fn);
    size_t k = 0;
    return trace_detail::Rebuild<Out>(ids, k);
  }
  std::vector<ValueId> t = trace_detail::TraceSide(pred.id(), true, true, then_fn);
  std::vector<ValueId> e = trace_detail::TraceSide(pred.id(), false, true, else_fn);
  ids = trace_detail::RecordCond(pred.id(), std::move(t), std::move(e));
  size_t k = 0;
  return trace_detail::Rebuild<Out>(ids, k);
}

}  // namespace dualcast::jit

namespace dualcast::math {

// cond on a real bool: evaluates the taken side only.
template <class C, class Then, class Else>
  requires std::same_as<C, bool> && std::invocable<Then&> && std::invocable<Else&>
auto cond(C pred, Then&& then_fn, Else&& else_fn) {
  using RT = std::remove_cvref_t<std::invoke_result_t<Then&>>;
  using RE = std::remove_cvref_t<std::invoke_result_t<Else&>>;
  if constexpr (std::same_as<RT, RE>) {
    return pred ? RT(then_fn()) : RT(else_fn());
  } else {
    using R = std::common_type_t<RT, RE>;
    return pred ? R(then_fn()) : R(else_fn());
  }
}

}  // namespace dualcast::math

namespace dualcast {
// dc::cond / dc::select for every scalar kind (using-declarations, so that ADL
// on a Dual, which also finds dualcast::math, sees the same functions).
using jit::cond;
using jit::select;
using math::cond;
using math::select;
}  // namespace dualcast
