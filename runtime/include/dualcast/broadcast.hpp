// broadcast / broadcast_n: apply a Kernel elementwise over arrays with NumPy rules, lazily and fused.
//
// A call checks everything at once — the kernel's arity (by tracing it), the
// element types, the devices and the broadcast shape — and throws
// dualcast::Error naming the kernel, the argument positions (1-based), the
// sizes and the dimension; then it returns arrays that are *pending*. Reading
// one (to_vector, item, printing, eval, a non-broadcast op, the tape) computes
// it together with every pending broadcast it depends on, as ONE composed
// kernel over the leaf arrays; an intermediate result that is still held
// elsewhere is written by that same kernel as an extra output. While a Tape
// records on this thread, the kernel also produces the partials with respect
// to the leaves (or, in recompute mode, the tape re-runs it later).
//
// Arguments are Arrays of one element type, or plain numbers (rank-0 constants
// of that type, converted from the number's own type once, as C++ does; never
// differentiated). An Array passed as a temporary (or with std::move) is
// released when the call returns (its handle left empty), so it does not
// count as held: in `tape.gradient(sum(tanh(x) * w), {x})` the product is
// never stored, as over two statements. The operators, math functions and
// lazy reductions (operators.hpp, reductions.hpp, array_ops.hpp) do the
// same. A write through dualcast (assign, mutable_data, ...) first computes
// the pending results that read that memory; a write through your own
// pointer cannot: eval() those results before it (embedding.md §2).
//
// `Unfused` turns fusion off on this thread while it lives: every broadcast
// is computed immediately, on its own, one kernel and one tape node per call
// (the pure reverse-mode comparator, and a debugging aid).
//
// Example:
//   auto y = dualcast::broadcast(f, x, a);            // pending
//   auto z = dualcast::broadcast(g, y, 2.0);          // pending
//   std::vector<float> v = z.to_vector();             // one launch: g(f(x, a), 2)
//   auto outs = dualcast::broadcast_n(sincos, x);    // outs[0], outs[1]
//   { dualcast::Unfused unfused; auto w = dualcast::broadcast(f, x, a); }  // computed now
#pragma once

#include <memory>
#include <type_traits>
#include <vector>

#include "dualcast/array.hpp"
#include "dualcast/kernel.hpp"

namespace dualcast {

// While alive, broadcasts on this thread are computed immediately and never
// fused (nesting allowed).
class Unfused {
 public:
  Unfused();
  ~Unfused();
  Unfused(const Unfused&) = delete;
  Unfused& operator=(const Unfused&) = delete;
  // Whether an Unfused guard is alive on this thread.
  static bool active();
};

namespace detail {

// One argument of a broadcast, type-erased.
struct Operand {
  enum Kind { kArray, kNumber, kEmptyHandle } kind = kArray;
  std::shared_ptr<ArrayImpl> array;
  double number = 0;
  float number_f32 = 0;  // converted straight from the number's type: one rounding, as in C++
};

// The non-template core of broadcast/broadcast_n: validates, records the lazy
// node and returns its (pending) outputs. `dtype` is the result type (that of
// the first Array argument). With `single_output`, a kernel with several
// outputs is an error that points to broadcast_n.
std::vector<std::shared_ptr<ArrayImpl>> Broadcast(const Kernel& k, std::vector<Operand> operands,
                                                  DType dtype, bool single_output);

template <class A>
struct IsArray : std::false_type {};
template <class T>
struct IsArray<Array<T>> : std::true_type {};

template <class A>
concept BroadcastArgument =
    IsArray<A>::value || (std::is_arithmetic_v<A> && !std::is_same_v<A, bool>);

// The element type of the first Array among A...
template <class... A>
struct FirstArray {};
template <class A, class... R>
struct FirstArray<A, R...> : FirstArray<R...> {};
template <class T, class... R>
struct FirstArray<Array<T>, R...> {
  using type = T;
};

template <class A>
Operand ToOperand(const A& a) {
  if constexpr (IsArray<A>::value) {
    if (!a.valid()) return Operand{Operand::kEmptyHandle, nullptr, 0};
    return Operand{Operand::kArray, a.impl(), 0};
  } else {
    return Operand{Operand::kNumber, nullptr, static_cast<double>(a), static_cast<float>(a)};
  }
}

// After a call that took its own reference: empties an Array argument that
// was passed as an rvalue (see the header comment). `A` is the argument's
// forwarding type; lvalues, const rvalues and numbers are left alone.
template <class A>
void ReleaseIfTemporary(std::remove_reference_t<A>& a) {
  if constexpr (!std::is_lvalue_reference_v<A> && !std::is_const_v<std::remove_reference_t<A>> &&
                IsArray<std::remove_cvref_t<A>>::value) {
    a = std::remove_cvref_t<A>();
  }
}

template <ElementType T>
std::vector<Array<T>> Wrap(std::vector<std::shared_ptr<ArrayImpl>> impls) {
  std::vector<Array<T>> out;
  out.reserve(impls.size());
  for (auto& impl : impls) out.emplace_back(std::move(impl));
  return out;
}

}  // namespace detail

// k applied elementwise; k must have one output (else Error(kArity): use broadcast_n).
template <class... A>
  requires(detail::BroadcastArgument<std::remove_cvref_t<A>> && ...) &&
          (detail::IsArray<std::remove_cvref_t<A>>::value || ...)
Array<typename detail::FirstArray<std::remove_cvref_t<A>...>::type> broadcast(const Kernel& k,
                                                                               A&&... args) {
  using T = typename detail::FirstArray<std::remove_cvref_t<A>...>::type;
  auto outs = detail::Broadcast(k, {detail::ToOperand(args)...}, detail::DTypeOf<T>(), true);
  (detail::ReleaseIfTemporary<A>(args), ...);
  return Array<T>(std::move(outs[0]));
}

// k applied elementwise; one array per output of k.
template <class... A>
  requires(detail::BroadcastArgument<std::remove_cvref_t<A>> && ...) &&
          (detail::IsArray<std::remove_cvref_t<A>>::value || ...)
std::vector<Array<typename detail::FirstArray<std::remove_cvref_t<A>...>::type>> broadcast_n(
    const Kernel& k, A&&... args) {
  using T = typename detail::FirstArray<std::remove_cvref_t<A>...>::type;
  auto outs = detail::Broadcast(k, {detail::ToOperand(args)...}, detail::DTypeOf<T>(), false);
  (detail::ReleaseIfTemporary<A>(args), ...);
  return detail::Wrap<T>(std::move(outs));
}

// A lambda where a Kernel belongs: a compile-time error that says how to make
// one (a Kernel is named, for its errors, and traced once, for its speed;
// `broadcast(f, x)` with a bare lambda would have neither).
template <class F, class... A>
  requires(!std::is_convertible_v<const F&, const Kernel&> && std::is_class_v<F>)
void broadcast(const F&, const A&...) {
  static_assert(std::is_convertible_v<const F&, const Kernel&>,
                "dualcast::broadcast takes a dualcast::Kernel, not a lambda: make the kernel once, "
                "`static const dualcast::Kernel k = dualcast::kernel(\"name\", lambda);`, then "
                "call dualcast::broadcast(k, args...)");
}
template <class F, class... A>
  requires(!std::is_convertible_v<const F&, const Kernel&> && std::is_class_v<F>)
void broadcast_n(const F&, const A&...) {
  static_assert(std::is_convertible_v<const F&, const Kernel&>,
                "dualcast::broadcast_n takes a dualcast::Kernel, not a lambda: make the kernel once, "
                "`static const dualcast::Kernel k = dualcast::kernel(\"name\", lambda);`, then "
                "call dualcast::broadcast_n(k, args...)");
}

// The same with the arguments in a vector (arity known only at run time).
template <ElementType T>
Array<T> broadcast(const Kernel& k, const std::vector<Array<T>>& args) {
  std::vector<detail::Operand> ops;
  for (const auto& a : args) ops.push_back(detail::ToOperand(a));
  return Array<T>(detail::Broadcast(k, std::move(ops), detail::DTypeOf<T>(), true)[0]);
}
template <ElementType T>
std::vector<Array<T>> broadcast_n(const Kernel& k, const std::vector<Array<T>>& args) {
  std::vector<detail::Operand> ops;
  for (const auto& a : args) ops.push_back(detail::ToOperand(a));
  return detail::Wrap<T>(detail::Broadcast(k, std::move(ops), detail::DTypeOf<T>(), false));
}

}  // namespace dualcast
