// Dual<T, N, Tag>: a value with N tangent lanes, its arithmetic, comparisons and type traits.
#pragma once

#include "dualcast/host_device.hpp"
#include "dualcast/math.hpp"

namespace dualcast {

template <class T, int N, class Tag = void>
class Dual;

namespace math {
// Empty base of every Dual. Its only job is to make dualcast::math an associated namespace of
// Dual, so that argument-dependent lookup finds the Dual overloads of tanh, pow, ... that live
// next to the scalar ones, without declaring those names in dualcast itself (where they would
// hide ::exp, ::floor, ... from unqualified calls in other dualcast code). Templated on the
// derived type so that nested Duals do not stack two identical empty bases at one address.
template <class Self>
struct dual_adl {};
}  // namespace math

// ---------------------------------------------------------------------------------------------
// Traits
// ---------------------------------------------------------------------------------------------

template <class T>
struct is_dual : detail::stdx::false_type {};
template <class T, int N, class Tag>
struct is_dual<Dual<T, N, Tag>> : detail::stdx::true_type {};
template <class T>
inline constexpr bool is_dual_v = is_dual<T>::value;

// Nesting depth: 0 for float/double, 1 for Dual<double, N>, 2 for Dual<Dual<double, 1>, 1>, ...
template <class T>
struct dual_depth : detail::stdx::integral_constant<int, 0> {};
template <class T, int N, class Tag>
struct dual_depth<Dual<T, N, Tag>> : detail::stdx::integral_constant<int, 1 + dual_depth<T>::value> {};
template <class T>
inline constexpr int dual_depth_v = dual_depth<T>::value;

// The innermost real type: double for Dual<Dual<double, 1, A>, 3, B>.
template <class T>
struct scalar_type {
  using type = T;
};
template <class T, int N, class Tag>
struct scalar_type<Dual<T, N, Tag>> : scalar_type<T> {};
template <class T>
using scalar_type_t = typename scalar_type<T>::type;

namespace detail {

template <class T>
using remove_cvref_t = stdx::remove_cv_t<stdx::remove_reference_t<T>>;

// S is a constant with respect to dual type D: an arithmetic scalar, or a value of one of D's
// inner levels (for nesting, a Dual<double, 1, A> is a constant inside Dual<Dual<double,1,A>,1,B>).
template <class S, class D>
struct is_constant_for : stdx::false_type {};
template <class S, class T, int N, class Tag>
struct is_constant_for<S, Dual<T, N, Tag>>
    : stdx::bool_constant<arithmetic<S> || stdx::is_same_v<S, T> || is_constant_for<S, T>::value> {};
template <class S, class D>
concept constant_for = is_constant_for<remove_cvref_t<S>, D>::value;

// Among the argument types, the Dual with the greatest nesting depth (the first one on a tie).
template <class... Ts>
struct outer_dual;
template <class T>
struct outer_dual<T> {
  using type = T;
};
template <class A, class B, class... Rest>
struct outer_dual<A, B, Rest...>
    : outer_dual<stdx::conditional_t<(dual_depth_v<B> > dual_depth_v<A>), B, A>, Rest...> {};
template <class... Ts>
using outer_dual_t = typename outer_dual<remove_cvref_t<Ts>...>::type;

// The arguments of a mixed operation are compatible when at least one is a Dual and every other
// one is either that same Dual type or a constant for it. This is the tag rule: two Duals of
// different tags (or lane counts, or value types) at the same level are never compatible.
template <class... Ts>
concept dual_args = is_dual_v<outer_dual_t<Ts...>> &&
                    ((stdx::is_same_v<remove_cvref_t<Ts>, outer_dual_t<Ts...>> ||
                      constant_for<Ts, outer_dual_t<Ts...>>) &&
                     ...);

// True when every component (value and partials, at every level) is exactly zero. A tangent lane
// that is zero contributes nothing, even when its coefficient is inf or NaN ("strong zero"):
// this matches the JIT's forward-mode pass, which never emits a structurally zero tangent, and
// keeps sqrt'(0) = inf in one lane from poisoning unrelated lanes with 0 * inf = NaN.
template <class T>
DUALCAST_HD constexpr bool is_zero(const T& x) {
  if constexpr (is_dual_v<T>) {
    if (!is_zero(x.value())) return false;
    for (int k = 0; k < T::lanes; ++k)
      if (!is_zero(x.partial(k))) return false;
    return true;
  } else {
    return x == T(0);
  }
}

// coef * lane with the strong-zero rule above.
template <class T>
DUALCAST_HD constexpr T scale(const T& coef, const T& lane) {
  return is_zero(lane) ? T(0) : coef * lane;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Dual<T, N, Tag>
// ---------------------------------------------------------------------------------------------

// A forward-mode dual number: value() plus N partials, each lane the derivative with respect to
// one input. T is float, double or another Dual (nesting gives higher derivatives). Tag keeps
// perturbations of different differentiations apart: Duals interoperate only with the same
// <T, N, Tag> or with constants (arithmetic scalars and values of their inner levels); mixing
// two tags at the same level is a compile error (see derivatives.hpp for how the helpers pick
// tags). Comparisons look at values only, so data-dependent branches follow the data.
//
// Example:
//   using D = dualcast::Dual<double, 2>;
//   D x = D::variable(3.0, 0), y = D::variable(4.0, 1);
//   D r = x * y + 1;                   // r.value() == 13, r.partial(0) == 4, r.partial(1) == 3
//   if (r > 10) r = dualcast::math::sqrt(r);
template <class T, int N, class Tag>
class Dual : public math::dual_adl<Dual<T, N, Tag>> {
  static_assert(N >= 1, "a Dual needs at least one tangent lane");
  static_assert(detail::floating_point<T> || is_dual_v<T>,
                "Dual<T, N>: T must be float, double (or long double) or another Dual");

 public:
  using value_type = T;
  using tag_type = Tag;
  static constexpr int lanes = N;

  // Zero value, zero partials.
  constexpr Dual() = default;

  // A constant: all partials zero. Implicit so that `Dual x = 1.0` and `return 0.0;` read naturally.
  template <class S>
    requires detail::constant_for<S, Dual>
  DUALCAST_HD constexpr Dual(const S& c) : value_(static_cast<T>(c)) {}

  // Value and all N partials spelled out: Dual<double, 2>(1.0, 0.5, -2.0).
  template <class... P>
    requires(sizeof...(P) == N && (detail::stdx::is_convertible_v<const P&, T> && ...))
  DUALCAST_HD constexpr Dual(const T& value, const P&... partials)
      : value_(value), partials_{static_cast<T>(partials)...} {}

  // x seeded in lane k, 0 <= k < N (partial k = 1, others 0): input number k of a differentiation.
  DUALCAST_HD static constexpr Dual variable(const T& x, int k) {
    Dual d(x);
    d.partials_[k] = T(1);
    return d;
  }
  DUALCAST_HD static constexpr Dual constant(const T& x) { return Dual(x); }

  DUALCAST_HD constexpr const T& value() const { return value_; }
  DUALCAST_HD constexpr T& value() { return value_; }
  DUALCAST_HD constexpr const T& partial(int k) const { return partials_[k]; }
  DUALCAST_HD constexpr T& partial(int k) { return partials_[k]; }

  template <class S>
    requires detail::dual_args<Dual, S> && detail::stdx::is_same_v<detail::outer_dual_t<Dual, S>, Dual>
  DUALCAST_HD constexpr Dual& operator+=(const S& s) {
    return *this = *this + s;
  }
  template <class S>
    requires detail::dual_args<Dual, S> && detail::stdx::is_same_v<detail::outer_dual_t<Dual, S>, Dual>
  DUALCAST_HD constexpr Dual& operator-=(const S& s) {
    return *this = *this - s;
  }
  template <class S>
    requires detail::dual_args<Dual, S> && detail::stdx::is_same_v<detail::outer_dual_t<Dual, S>, Dual>
  DUALCAST_HD constexpr Dual& operator*=(const S& s) {
    return *this = *this * s;
  }
  template <class S>
    requires detail::dual_args<Dual, S> && detail::stdx::is_same_v<detail::outer_dual_t<Dual, S>, Dual>
  DUALCAST_HD constexpr Dual& operator/=(const S& s) {
    return *this = *this / s;
  }

 private:
  T value_{};
  T partials_[N]{};
};

// The innermost real value of a (possibly nested) Dual; the argument itself for a plain number.
template <class T>
DUALCAST_HD constexpr const scalar_type_t<T>& primal(const T& x) {
  if constexpr (is_dual_v<T>)
    return primal(x.value());
  else
    return x;
}

namespace detail {

// Value and partials at the level of D: a D argument contributes its value and lanes; a constant
// is converted to D's value type and has no lanes.
template <class D, class X>
DUALCAST_HD constexpr typename D::value_type level_value(const X& x) {
  if constexpr (stdx::is_same_v<X, D>)
    return x.value();
  else
    return static_cast<typename D::value_type>(x);
}

// Apply a unary rule: result value y, every lane multiplied by dy.
template <class T, int N, class Tag>
DUALCAST_HD constexpr Dual<T, N, Tag> chain(const Dual<T, N, Tag>& x, const T& y, const T& dy) {
  Dual<T, N, Tag> r(y);
  for (int k = 0; k < N; ++k) r.partial(k) = scale(dy, x.partial(k));
  return r;
}

// Apply a binary rule with coefficients da, db on the lanes of a and b.
template <class T, int N, class Tag>
DUALCAST_HD constexpr Dual<T, N, Tag> chain2(const Dual<T, N, Tag>& a, const T& da, const Dual<T, N, Tag>& b,
                                             const T& db, const T& y) {
  Dual<T, N, Tag> r(y);
  for (int k = 0; k < N; ++k) r.partial(k) = scale(da, a.partial(k)) + scale(db, b.partial(k));
  return r;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Arithmetic: Dual op Dual (same type), Dual op constant, constant op Dual.
// ---------------------------------------------------------------------------------------------

template <class T, int N, class Tag>
DUALCAST_HD constexpr Dual<T, N, Tag> operator+(const Dual<T, N, Tag>& x) {
  return x;
}

template <class T, int N, class Tag>
DUALCAST_HD constexpr Dual<T, N, Tag> operator-(const Dual<T, N, Tag>& x) {
  Dual<T, N, Tag> r(-x.value());
  for (int k = 0; k < N; ++k) r.partial(k) = -x.partial(k);
  return r;
}

template <class A, class B>
  requires detail::dual_args<A, B>
DUALCAST_HD constexpr detail::outer_dual_t<A, B> operator+(const A& a, const B& b) {
  using D = detail::outer_dual_t<A, B>;
  D r(detail::level_value<D>(a) + detail::level_value<D>(b));
  for (int k = 0; k < D::lanes; ++k) {
    if constexpr (detail::stdx::is_same_v<A, D> && detail::stdx::is_same_v<B, D>)
      r.partial(k) = a.partial(k) + b.partial(k);
    else if constexpr (detail::stdx::is_same_v<A, D>)
      r.partial(k) = a.partial(k);
    else
      r.partial(k) = b.partial(k);
  }
  return r;
}

template <class A, class B>
  requires detail::dual_args<A, B>
DUALCAST_HD constexpr detail::outer_dual_t<A, B> operator-(const A& a, const B& b) {
  using D = detail::outer_dual_t<A, B>;
  D r(detail::level_value<D>(a) - detail::level_value<D>(b));
  for (int k = 0; k < D::lanes; ++k) {
    if constexpr (detail::stdx::is_same_v<A, D> && detail::stdx::is_same_v<B, D>)
      r.partial(k) = a.partial(k) - b.partial(k);
    else if constexpr (detail::stdx::is_same_v<A, D>)
      r.partial(k) = a.partial(k);
    else
      r.partial(k) = -b.partial(k);
  }
  return r;
}

template <class A, class B>
  requires detail::dual_args<A, B>
DUALCAST_HD constexpr detail::outer_dual_t<A, B> operator*(const A& a, const B& b) {
  using D = detail::outer_dual_t<A, B>;
  const auto av = detail::level_value<D>(a);
  const auto bv = detail::level_value<D>(b);
  D r(av * bv);
  for (int k = 0; k < D::lanes; ++k) {
    if constexpr (detail::stdx::is_same_v<A, D> && detail::stdx::is_same_v<B, D>)
      r.partial(k) = detail::scale(bv, a.partial(k)) + detail::scale(av, b.partial(k));
    else if constexpr (detail::stdx::is_same_v<A, D>)
      r.partial(k) = detail::scale(bv, a.partial(k));
    else
      r.partial(k) = detail::scale(av, b.partial(k));
  }
  return r;
}

// d(a/b) = (da - y db) / b with y = a/b: the value is a true division, as in the scalar code.
template <class A, class B>
  requires detail::dual_args<A, B>
DUALCAST_HD constexpr detail::outer_dual_t<A, B> operator/(const A& a, const B& b) {
  using D = detail::outer_dual_t<A, B>;
  using T = typename D::value_type;
  const T av = detail::level_value<D>(a);
  const T bv = detail::level_value<D>(b);
  D r(av / bv);
  const T& y = r.value();
  for (int k = 0; k < D::lanes; ++k) {
    T num;
    if constexpr (detail::stdx::is_same_v<A, D> && detail::stdx::is_same_v<B, D>)
      num = a.partial(k) - detail::scale(y, b.partial(k));
    else if constexpr (detail::stdx::is_same_v<A, D>)
      num = a.partial(k);
    else
      num = -detail::scale(y, b.partial(k));
    r.partial(k) = detail::is_zero(num) ? T(0) : num / bv;
  }
  return r;
}

// Comparisons see values only (recursively, so nested Duals compare their innermost values).
#define DUALCAST_DUAL_COMPARISON(op)                                                   \
  template <class A, class B>                                                          \
    requires detail::dual_args<A, B>                                                   \
  DUALCAST_HD constexpr bool operator op(const A& a, const B& b) {                     \
    using D = detail::outer_dual_t<A, B>;                                              \
    return detail::level_value<D>(a) op detail::level_value<D>(b);                     \
  }
DUALCAST_DUAL_COMPARISON(==)
DUALCAST_DUAL_COMPARISON(!=)
DUALCAST_DUAL_COMPARISON(<)
DUALCAST_DUAL_COMPARISON(<=)
DUALCAST_DUAL_COMPARISON(>)
DUALCAST_DUAL_COMPARISON(>=)
#undef DUALCAST_DUAL_COMPARISON

}  // namespace dualcast
