// Dual<T, N, Tag>: a value with N tangent lanes, its arithmetic, comparisons and type traits.
#pragma once

#include "dualcast/host_device.hpp"
#include "dualcast/dual_levels.hpp"
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

// The scalar type of an argument of a mixed operation: the innermost real of a Dual, the type
// itself for an arithmetic constant.
template <class X>
using real_of_t = scalar_type_t<remove_cvref_t<X>>;

// Levels of several types, merged and sorted (see dual_levels.hpp).
template <class Acc, class... Ts>
struct merged_levels {
  using type = Acc;
};
template <class Acc, class T, class... Ts>
struct merged_levels<Acc, T, Ts...>
    : merged_levels<typename merge_levels<Acc, typename levels_of<remove_cvref_t<T>>::type>::type, Ts...> {};

// Among the arguments, the first Dual (its real type is the operation's real type).
template <class... Ts>
struct outer_real {
  using type = void;
};
template <class T, class... Ts>
struct outer_real<T, Ts...> {
  using type = stdx::conditional_t<is_dual_v<remove_cvref_t<T>>, remove_cvref_t<T>, typename outer_real<Ts...>::type>;
};

// The type of a mixed operation on Ts: the first argument that already holds every level of all
// the others (so Dual op same Dual, Dual op constant and Dual op inner-level value keep the
// Dual's type), otherwise the canonical nesting of the union of their levels.
template <class All, class... Ts>
struct first_holding {
  using type = void;
};
template <class All, class T, class... Ts>
struct first_holding<All, T, Ts...> {
  using type = stdx::conditional_t<
      is_dual_v<T> && levels_subset<All, typename levels_of<T>::type>::value, T,
      typename first_holding<All, Ts...>::type>;
};
template <class... Ts>
struct common_dual {
  using all = typename merged_levels<level_list<>, Ts...>::type;
  using holder = typename first_holding<all, remove_cvref_t<Ts>...>::type;
  using type = stdx::conditional_t<!stdx::is_same_v<holder, void>, holder,
                                   typename build_dual<all, scalar_type_t<typename outer_real<Ts...>::type>>::type>;
};

template <class... Ts>
using common_dual_t = typename common_dual<Ts...>::type;

// Every tag has one lane count wherever it appears.
template <class Merged, class... Ts>
inline constexpr bool levels_agree_v =
    (levels_subset<typename levels_of<remove_cvref_t<Ts>>::type, Merged>::value && ...);

// The arguments of a mixed operation are compatible when at least one is a Dual, all Duals
// have the same real type (float, double) and agree on the lane count of each tag they share,
// and the rest are arithmetic constants. Duals of different tags combine: each tag is one
// level of the result, so no perturbation is ever confused with another (see dual_levels.hpp).
template <class... Ts>
concept dual_args =
    is_dual_v<typename outer_real<Ts...>::type> &&
    ((is_dual_v<remove_cvref_t<Ts>> ? stdx::is_same_v<real_of_t<Ts>, real_of_t<typename outer_real<Ts...>::type>>
                                    : arithmetic<remove_cvref_t<Ts>>) &&
     ...) &&
    levels_agree_v<typename merged_levels<level_list<>, Ts...>::type, Ts...>;

// S can be converted to Dual type D without losing anything: an arithmetic constant, or a Dual
// of D's real type whose levels are all levels of D.
template <class S, class D>
concept embeddable_in =
    !stdx::is_same_v<remove_cvref_t<S>, D> &&
    (arithmetic<remove_cvref_t<S>> ||
     (is_dual_v<remove_cvref_t<S>> && stdx::is_same_v<real_of_t<S>, scalar_type_t<D>> &&
      levels_subset<typename levels_of<remove_cvref_t<S>>::type, typename levels_of<D>::type>::value));

// Kept for the helpers: S is a constant with respect to dual type D.
template <class S, class D>
concept constant_for = embeddable_in<S, D> && !has_tag_v<remove_cvref_t<S>, typename D::tag_type>;

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

namespace detail {
template <class M, class X>
DUALCAST_HD constexpr M embed(const X& x);
}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Dual<T, N, Tag>
// ---------------------------------------------------------------------------------------------

// A forward-mode dual number: value() plus N partials, each lane the derivative with respect to
// one input. T is float, double or another Dual (nesting gives higher derivatives). Tag keeps
// perturbations of different differentiations apart: Duals of different tags combine into a
// nested Dual with one level per tag (ordered as in dual_levels.hpp), so a perturbation is never
// confused with another; they also combine with arithmetic constants. Comparisons look at
// values only, so data-dependent branches follow the data.
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
    requires detail::arithmetic<S>
  DUALCAST_HD constexpr Dual(const S& c) : value_(static_cast<T>(c)) {}

  // A Dual whose levels (tags) are all levels of this type, in any nesting order: an inner-level
  // value (a constant here) or the same perturbations nested the other way round. Lossless.
  template <class S>
    requires(is_dual_v<S> && detail::embeddable_in<S, Dual>)
  DUALCAST_HD constexpr Dual(const S& s) : Dual(detail::embed<Dual>(s)) {}

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
    requires detail::dual_args<Dual, S> && detail::stdx::is_same_v<detail::common_dual_t<Dual, S>, Dual>
  DUALCAST_HD constexpr Dual& operator+=(const S& s) {
    return *this = *this + s;
  }
  template <class S>
    requires detail::dual_args<Dual, S> && detail::stdx::is_same_v<detail::common_dual_t<Dual, S>, Dual>
  DUALCAST_HD constexpr Dual& operator-=(const S& s) {
    return *this = *this - s;
  }
  template <class S>
    requires detail::dual_args<Dual, S> && detail::stdx::is_same_v<detail::common_dual_t<Dual, S>, Dual>
  DUALCAST_HD constexpr Dual& operator*=(const S& s) {
    return *this = *this * s;
  }
  template <class S>
    requires detail::dual_args<Dual, S> && detail::stdx::is_same_v<detail::common_dual_t<Dual, S>, Dual>
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

// X without the level of Tag.
template <class X, class Tag>
using without_tag_t =
    typename build_dual<typename drop_level<typename levels_of<X>::type, Tag>::type, scalar_type_t<X>>::type;

// The component of x along Tag's perturbation: k < 0 gives the part free of it, k >= 0 the
// coefficient of Tag's lane k (zero when x does not depend on Tag), each of type without_tag_t.
// This is how a helper reads its derivative out of a result that also carries other tags.
template <class Tag, class X>
DUALCAST_HD constexpr without_tag_t<X, Tag> tag_part(const X& x, int k) {
  if constexpr (!has_tag_v<X, Tag>) {
    return k < 0 ? x : X(0);
  } else if constexpr (stdx::is_same_v<typename X::tag_type, Tag>) {
    return k < 0 ? x.value() : x.partial(k);
  } else {
    without_tag_t<X, Tag> r;
    r.value() = tag_part<Tag>(x.value(), k);
    for (int j = 0; j < X::lanes; ++j) r.partial(j) = tag_part<Tag>(x.partial(j), k);
    return r;
  }
}

// x as a value of M, whose levels include all of x's (M may nest them in another order).
template <class M, class X>
DUALCAST_HD constexpr M embed(const X& x) {
  if constexpr (stdx::is_same_v<M, X>) {
    return x;
  } else if constexpr (!is_dual_v<M>) {
    return static_cast<M>(x);
  } else {
    using Tag = typename M::tag_type;
    using I = typename M::value_type;
    M r;
    r.value() = embed<I>(tag_part<Tag>(x, -1));
    if constexpr (has_tag_v<X, Tag>)
      for (int k = 0; k < M::lanes; ++k) r.partial(k) = embed<I>(tag_part<Tag>(x, k));
    return r;
  }
}

// x at the level of D: a D (with lanes) when x carries D's outer tag, otherwise a constant of
// D's value type (no lanes at this level).
template <class D, class X>
DUALCAST_HD constexpr auto at_level(const X& x) {
  if constexpr (has_tag_v<X, typename D::tag_type>)
    return embed<D>(x);
  else
    return embed<typename D::value_type>(x);
}
template <class D, class E>
inline constexpr bool has_lanes_v = stdx::is_same_v<remove_cvref_t<E>, D>;
template <class D, class E>
DUALCAST_HD constexpr const typename D::value_type& level_value(const E& e) {
  if constexpr (stdx::is_same_v<E, D>)
    return e.value();
  else
    return e;
}

// Apply a unary rule: result value y, every lane multiplied by dy.
template <class T, int N, class Tag>
DUALCAST_HD constexpr Dual<T, N, Tag> chain(const Dual<T, N, Tag>& x, const T& y, const T& dy) {
  Dual<T, N, Tag> r;
  r.value() = y;
  for (int k = 0; k < N; ++k) r.partial(k) = scale(dy, x.partial(k));
  return r;
}

// Apply a binary rule with coefficients da, db on the lanes of a and b.
template <class T, int N, class Tag>
DUALCAST_HD constexpr Dual<T, N, Tag> chain2(const Dual<T, N, Tag>& a, const T& da, const Dual<T, N, Tag>& b,
                                             const T& db, const T& y) {
  Dual<T, N, Tag> r;
  r.value() = y;
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
DUALCAST_HD constexpr detail::common_dual_t<A, B> operator+(const A& a, const B& b) {
  using D = detail::common_dual_t<A, B>;
  const auto ea = detail::at_level<D>(a);
  const auto eb = detail::at_level<D>(b);
  constexpr bool la = detail::has_lanes_v<D, decltype(ea)>, lb = detail::has_lanes_v<D, decltype(eb)>;
  D r;
  r.value() = detail::level_value<D>(ea) + detail::level_value<D>(eb);
  for (int k = 0; k < D::lanes; ++k) {
    if constexpr (la && lb)
      r.partial(k) = ea.partial(k) + eb.partial(k);
    else if constexpr (la)
      r.partial(k) = ea.partial(k);
    else
      r.partial(k) = eb.partial(k);
  }
  return r;
}

template <class A, class B>
  requires detail::dual_args<A, B>
DUALCAST_HD constexpr detail::common_dual_t<A, B> operator-(const A& a, const B& b) {
  using D = detail::common_dual_t<A, B>;
  const auto ea = detail::at_level<D>(a);
  const auto eb = detail::at_level<D>(b);
  constexpr bool la = detail::has_lanes_v<D, decltype(ea)>, lb = detail::has_lanes_v<D, decltype(eb)>;
  D r;
  r.value() = detail::level_value<D>(ea) - detail::level_value<D>(eb);
  for (int k = 0; k < D::lanes; ++k) {
    if constexpr (la && lb)
      r.partial(k) = ea.partial(k) - eb.partial(k);
    else if constexpr (la)
      r.partial(k) = ea.partial(k);
    else
      r.partial(k) = -eb.partial(k);
  }
  return r;
}

template <class A, class B>
  requires detail::dual_args<A, B>
DUALCAST_HD constexpr detail::common_dual_t<A, B> operator*(const A& a, const B& b) {
  using D = detail::common_dual_t<A, B>;
  const auto ea = detail::at_level<D>(a);
  const auto eb = detail::at_level<D>(b);
  constexpr bool la = detail::has_lanes_v<D, decltype(ea)>, lb = detail::has_lanes_v<D, decltype(eb)>;
  const auto& av = detail::level_value<D>(ea);
  const auto& bv = detail::level_value<D>(eb);
  D r;
  r.value() = av * bv;
  for (int k = 0; k < D::lanes; ++k) {
    if constexpr (la && lb)
      r.partial(k) = detail::scale(bv, ea.partial(k)) + detail::scale(av, eb.partial(k));
    else if constexpr (la)
      r.partial(k) = detail::scale(bv, ea.partial(k));
    else
      r.partial(k) = detail::scale(av, eb.partial(k));
  }
  return r;
}

// d(a/b) = (da - y db) / b with y = a/b: the value is a true division, as in the scalar code.
// A NaN quotient (0/0, inf/inf, a NaN operand) gives NaN partials, as in compiled kernels
// (docs/ops.md): the formula alone would give +-inf at 0/0 and 0 at inf/inf.
template <class A, class B>
  requires detail::dual_args<A, B>
DUALCAST_HD constexpr detail::common_dual_t<A, B> operator/(const A& a, const B& b) {
  using D = detail::common_dual_t<A, B>;
  using T = typename D::value_type;
  const auto ea = detail::at_level<D>(a);
  const auto eb = detail::at_level<D>(b);
  constexpr bool la = detail::has_lanes_v<D, decltype(ea)>, lb = detail::has_lanes_v<D, decltype(eb)>;
  const T& bv = detail::level_value<D>(eb);
  D r;
  r.value() = detail::level_value<D>(ea) / bv;
  const T& y = r.value();
  for (int k = 0; k < D::lanes; ++k) {
    T num;
    if constexpr (la && lb)
      num = ea.partial(k) - detail::scale(y, eb.partial(k));
    else if constexpr (la)
      num = ea.partial(k);
    else
      num = -detail::scale(y, eb.partial(k));
    r.partial(k) = detail::is_zero(num) ? T(0) : (y != y ? y : T(num / bv));
  }
  return r;
}

namespace detail {
// One side of a comparison as the operation's real type: a constant is converted first, as in
// arithmetic and as a compiled kernel does, so that x > 0.1 on Dual<float> compares with 0.1f
// and takes the same branch as the kernel (comparing in double would not, at x = 0.1f).
template <class A, class B, class X>
DUALCAST_HD constexpr real_of_t<typename outer_real<A, B>::type> compared(const X& x) {
  return static_cast<real_of_t<typename outer_real<A, B>::type>>(primal(x));
}
}  // namespace detail

// Comparisons see values only (recursively, so nested Duals compare their innermost values).
#define DUALCAST_DUAL_COMPARISON(op)                                                   \
  template <class A, class B>                                                          \
    requires detail::dual_args<A, B>                                                   \
  DUALCAST_HD constexpr bool operator op(const A& a, const B& b) {                     \
    return detail::compared<A, B>(a) op detail::compared<A, B>(b);                     \
  }
DUALCAST_DUAL_COMPARISON(==)
DUALCAST_DUAL_COMPARISON(!=)
DUALCAST_DUAL_COMPARISON(<)
DUALCAST_DUAL_COMPARISON(<=)
DUALCAST_DUAL_COMPARISON(>)
DUALCAST_DUAL_COMPARISON(>=)
#undef DUALCAST_DUAL_COMPARISON

}  // namespace dualcast
