// Eager derivative helpers: derivative, gradient and jacobian of a generic callable at a point.
#pragma once

#include "dualcast/host_device.hpp"
#include "dualcast/dual_number.hpp"

#if !DUALCAST_RTC
#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#endif

// Tags and nesting. Each helper differentiates with its own tag, by default
// derivative_tag<F, T> (gradient_tag, jacobian_tag): F the callable's type, T the type of the
// point. Duals of different tags never mix (a compile error), so a perturbation can never be
// confused with another one. Nested calls therefore get distinct tags automatically: an inner
// call that sees an outer Dual must be seeded with a value of the outer Dual type, which makes
// its T, hence its tag, different from the outer one. Capturing an outer variable but seeding
// the inner call with a plain double does not compile, instead of silently mixing the two
// perturbations (the classic perturbation-confusion bug). An explicit tag can be given as the
// first template argument: derivative<MyTag>(f, x).
//
// Example (d/dx [x * d/dy (x + y)] at x = 1 is 1):
//   double r = dualcast::derivative([](auto x) {
//     auto inner = dualcast::derivative([&](auto y) { return x + y; }, decltype(x)(1.0));
//     return x * inner;
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

// Lane k of a result: a D result has lanes, a constant result (the callable ignored its input on
// this path) has derivative zero.
template <class D, class R>
DUALCAST_HD constexpr typename D::value_type lane_of(const R& r, int k) {
  using T = typename D::value_type;
  if constexpr (stdx::is_same_v<R, D>) {
    return r.partial(k);
  } else {
    static_assert(constant_for<R, D>,
                  "dualcast: the function returned a type that is neither the Dual it was called "
                  "with nor a constant (did it mix in a Dual of another differentiation?)");
    return T(0);
  }
}

template <class T>
concept differentiable_point = floating_point<T> || is_dual_v<T>;

}  // namespace detail

// f'(x) for a callable f: T -> T (a generic lambda). T is float, double or a Dual (nesting).
DUALCAST_HD_CALLS_USER
template <class Tag = auto_tag, class F, class T>
  requires detail::differentiable_point<T>
DUALCAST_HD T derivative(F&& f, const T& x) {
  using D = Dual<T, 1, detail::pick_tag<Tag, derivative_tag<detail::remove_cvref_t<F>, T>>>;
  const auto y = f(D::variable(x, 0));
  return detail::lane_of<D>(y, 0);
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
std::array<T, N> gradient(F&& f, const std::array<T, N>& x) {
  using D = Dual<T, static_cast<int>(N), detail::pick_tag<Tag, gradient_tag<detail::remove_cvref_t<F>, T>>>;
  const auto y = detail::call_with_inputs(f, detail::seed_all<D>(x));
  std::array<T, N> g{};
  for (std::size_t k = 0; k < N; ++k) g[k] = detail::lane_of<D>(y, static_cast<int>(k));
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
  using D = Dual<T, static_cast<int>(N), detail::pick_tag<Tag, jacobian_tag<detail::remove_cvref_t<F>, T>>>;
  const auto y = detail::call_with_inputs(f, detail::seed_all<D>(x));
  constexpr std::size_t M = std::tuple_size_v<std::remove_cvref_t<decltype(y)>>;
  std::array<std::array<T, N>, M> J{};
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t k = 0; k < N; ++k) J[m][k] = detail::lane_of<D>(y[m], static_cast<int>(k));
  return J;
}

#endif  // !DUALCAST_RTC

}  // namespace dualcast
