// Eager derivative helpers: derivative, gradient and jacobian of a generic callable at a point.
#pragma once

#include "dualcast/host_device.hpp"
#include "dualcast/dual_number.hpp"

#if !DUALCAST_RTC
#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#endif

// Tags and nesting. Each helper differentiates with its own tag, by default
// derivative_tag<F, T> (gradient_tag, jacobian_tag): F the callable's type, T the type of the
// point. A perturbation can never be confused with another: Duals of different tags combine
// into one value with a level per tag (dual_number.hpp, dual_levels.hpp), and each helper reads
// out the coefficient of its own tag only. So nested calls just work, whether the inner call is
// seeded with a plain number (its callable captures the outer variable) or with the outer
// Dual type; the result keeps every outer perturbation (it is a Dual of the outer tags when the
// callable used outer Duals), so the outer helper can differentiate it in turn. An explicit tag
// can be given as the first template argument: derivative<MyTag>(f, x).
//
// Example (ForwardDiff's perturbation-confusion test: d/dx [x * d/dy (x + y)] at x = 1 is 1):
//   double r = dualcast::derivative([](auto x) {
//     return x * dualcast::derivative([&](auto y) { return x + y; }, 1.0);
//   }, 1.0);
namespace dualcast {

// Marker for "derive the tag from the callable and the point".
struct auto_tag {};

template <class F, class T>
struct derivative_tag {};
template <class F, class T>
struct gradient_tag {};
template <class F, class T>
struct jacobian_tag {};

namespace detail {

template <class Tag, class Default>
using pick_tag = stdx::conditional_t<stdx::is_same_v<Tag, auto_tag>, Default, Tag>;

// What a helper returns for a point of type T and a callable result of type R: R without the
// helper's level Tag (so outer perturbations are kept), widened to hold T's levels as well
// (a result that ignored its input is still a value of the point's type).
template <class R, class Tag, class T>
struct result_of_helper {
  static_assert(is_dual_v<R> || arithmetic<R>,
                "dualcast: the differentiated function must return a number or a Dual");
  using rest = without_tag_t<R, Tag>;
  using type = stdx::conditional_t<is_dual_v<rest> || is_dual_v<T>, common_dual_t<rest, T>,
                                   stdx::conditional_t<is_dual_v<R>, rest, T>>;
};

// Lane k of Tag in a result r: its coefficient (zero when r does not depend on Tag), as Out.
template <class Out, class Tag, class R>
DUALCAST_HD constexpr Out lane_of(const R& r, int k) {
  if constexpr (is_dual_v<R>)
    return embed<Out>(tag_part<Tag>(r, k));
  else
    return Out(0);
}

template <class T>
concept differentiable_point = floating_point<T> || is_dual_v<T>;

// One tag, one nesting level. A helper called while another helper of the SAME tag runs on this
// thread (an explicit tag given at two levels, derivative<MyTag> inside derivative<MyTag>, or
// a callable that differentiates itself at the same point type) would read an outer Dual that
// reached the inner callable as the inner perturbation: d/dx [x * d/dy (x + y)] came out 2, not
// 1, silently. Types cannot show it (the inner callable captures the outer Dual), so it is
// refused when it happens, on the host; a GPU thread has no such record and relies on the rule.
#if !DUALCAST_RTC && !defined(__CUDA_ARCH__)
template <class Tag>
inline thread_local int tag_depth = 0;

template <class Tag>
class tag_scope {
 public:
  explicit tag_scope(const char* helper) {
    if (tag_depth<Tag> != 0) {
      throw std::logic_error(
          std::string("dualcast::") + helper + ": called while another derivative, gradient or jacobian " +
          "with the same tag runs (" + tag_spelling<Tag>() + "). A Dual of the outer call reaching " +
          "this one would be taken for this call's own perturbation (a wrong derivative). Give each " +
          "nesting level its own tag, e.g. derivative<OuterTag>(...) around derivative<InnerTag>(...), " +
          "or leave the tag out: the default tag names the callable and the point type");
    }
    ++tag_depth<Tag>;
  }
  ~tag_scope() { --tag_depth<Tag>; }
  tag_scope(const tag_scope&) = delete;
  tag_scope& operator=(const tag_scope&) = delete;
};
#define DUALCAST_TAG_SCOPE(Tag, helper) const ::dualcast::detail::tag_scope<Tag> dualcast_tag_scope_(helper)
#else
#define DUALCAST_TAG_SCOPE(Tag, helper) ((void)0)
#endif

}  // namespace detail

// f'(x) for a callable f: T -> T (a generic lambda). T is float, double or a Dual (nesting).
DUALCAST_HD_CALLS_USER
template <class Tag = auto_tag, class F, class T>
  requires detail::differentiable_point<T>
DUALCAST_HD auto derivative(F&& f, const T& x) {
  using DTag = detail::pick_tag<Tag, derivative_tag<detail::remove_cvref_t<F>, T>>;
  static_assert(!detail::has_tag_v<T, DTag>,
                "dualcast::derivative: the point already carries a perturbation of this tag (the "
                "same explicit tag at two nesting levels); give each level its own tag");
  DUALCAST_TAG_SCOPE(DTag, "derivative");
  using D = Dual<T, 1, DTag>;
  const auto y = f(D::variable(x, 0));
  using Out = typename detail::result_of_helper<detail::remove_cvref_t<decltype(y)>, DTag, T>::type;
  return detail::lane_of<Out, DTag>(y, 0);
}

#if !DUALCAST_RTC

namespace detail {

// Call f with the N seeded inputs: as N separate arguments when f accepts that (and N > 1),
// otherwise as one std::array. Deciding by arity never instantiates the body of a generic lambda.
template <class F, class D, std::size_t... I>
constexpr bool invocable_separately(std::index_sequence<I...>) {
  return std::is_invocable_v<F&, decltype((void(I), std::declval<const D&>()))...>;
}

template <class F, class D, std::size_t N>
decltype(auto) call_with_inputs(F& f, const std::array<D, N>& xs) {
  if constexpr (N > 1) {
    if constexpr (invocable_separately<F, D>(std::make_index_sequence<N>{}))
      return std::apply(f, xs);
    else
      return f(xs);
  } else {
    return f(xs);
  }
}

template <class D, std::size_t N, class T>
std::array<D, N> seed_all(const std::array<T, N>& x) {
  std::array<D, N> xs{};
  for (std::size_t k = 0; k < N; ++k) xs[k] = D::variable(x[k], static_cast<int>(k));
  return xs;
}

}  // namespace detail

// The gradient of f: (x_0, ..., x_{N-1}) -> scalar at x, in one evaluation with N lanes.
// f receives the inputs as one std::array<Dual, N> or, if it takes N parameters, as N arguments.
//
// Example:
//   auto g = dualcast::gradient([](auto x) { return x[0] * x[1]; }, std::array{3.0, 4.0});
//   // g == {4.0, 3.0}
template <class Tag = auto_tag, class F, class T, std::size_t N>
  requires detail::differentiable_point<T>
auto gradient(F&& f, const std::array<T, N>& x) {
  using GTag = detail::pick_tag<Tag, gradient_tag<detail::remove_cvref_t<F>, T>>;
  static_assert(!detail::has_tag_v<T, GTag>,
                "dualcast::gradient: the point already carries a perturbation of this tag (the "
                "same explicit tag at two nesting levels); give each level its own tag");
  DUALCAST_TAG_SCOPE(GTag, "gradient");
  using D = Dual<T, static_cast<int>(N), GTag>;
  const auto y = detail::call_with_inputs(f, detail::seed_all<D>(x));
  using Out = typename detail::result_of_helper<detail::remove_cvref_t<decltype(y)>, GTag, T>::type;
  std::array<Out, N> g{};
  for (std::size_t k = 0; k < N; ++k) g[k] = detail::lane_of<Out, GTag>(y, static_cast<int>(k));
  return g;
}

// The Jacobian J[m][j] = dy_m/dx_j of f returning std::array<R, M>, in one evaluation.
//
// Example:
//   auto J = dualcast::jacobian([](auto x) { return std::array{x[0] * x[1], x[0] + x[1]}; },
//                               std::array{3.0, 4.0});   // {{4, 3}, {1, 1}}
template <class Tag = auto_tag, class F, class T, std::size_t N>
  requires detail::differentiable_point<T>
auto jacobian(F&& f, const std::array<T, N>& x) {
  using JTag = detail::pick_tag<Tag, jacobian_tag<detail::remove_cvref_t<F>, T>>;
  static_assert(!detail::has_tag_v<T, JTag>,
                "dualcast::jacobian: the point already carries a perturbation of this tag (the "
                "same explicit tag at two nesting levels); give each level its own tag");
  DUALCAST_TAG_SCOPE(JTag, "jacobian");
  using D = Dual<T, static_cast<int>(N), JTag>;
  const auto y = detail::call_with_inputs(f, detail::seed_all<D>(x));
  constexpr std::size_t M = std::tuple_size_v<std::remove_cvref_t<decltype(y)>>;
  using Out = typename detail::result_of_helper<std::remove_cvref_t<decltype(y[0])>, JTag, T>::type;
  std::array<std::array<Out, N>, M> J{};
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t k = 0; k < N; ++k) J[m][k] = detail::lane_of<Out, JTag>(y[m], static_cast<int>(k));
  return J;
}

#endif  // !DUALCAST_RTC

}  // namespace dualcast
