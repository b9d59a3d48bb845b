// Dual overloads of the rest of <cmath> and the staples (fmod ... erfinv, clamp, logaddexp).
#pragma once

#include "dualcast/host_device.hpp"
#include "dualcast/dual_number.hpp"
#include "dualcast/math.hpp"

// Included at the end of dual_math.hpp; the conventions at kinks are in its table.
namespace dualcast::math {

// ---- unary, smooth ----

template <class T, int N, class Tag>
DUALCAST_HD Dual<T, N, Tag> square(const Dual<T, N, Tag>& x) {
  return x * x;
}

// rsqrt' = -y / (2x): one division, no y^3 that could overflow on the way.
template <class T, int N, class Tag>
DUALCAST_HD Dual<T, N, Tag> rsqrt(const Dual<T, N, Tag>& x) {
  const T& v = x.value();
  const T y = rsqrt(v);
  return ::dualcast::detail::chain(x, y, ::dualcast::detail::nan_guard(y, T(T(-0.5) * y / v)));
}

// lgamma' = digamma, tgamma' = tgamma * digamma; NaN at the poles.
template <class T, int N, class Tag>
DUALCAST_HD Dual<T, N, Tag> lgamma(const Dual<T, N, Tag>& x) {
  const T& v = x.value();
  const T y = lgamma(v);
  return ::dualcast::detail::chain(x, y, ::dualcast::detail::nan_guard(y, digamma(v)));
}
template <class T, int N, class Tag>
DUALCAST_HD Dual<T, N, Tag> tgamma(const Dual<T, N, Tag>& x) {
  const T& v = x.value();
  const T y = tgamma(v);
  const T p = digamma(v);
  return ::dualcast::detail::chain(x, y, ::dualcast::detail::nan_guard(p, T(y * p)));
}
// digamma' = trigamma (trigamma itself has no Dual overload: third derivatives of lgamma are
// not provided, a compile error rather than a wrong number).
template <class T, int N, class Tag>
DUALCAST_HD Dual<T, N, Tag> digamma(const Dual<T, N, Tag>& x) {
  const T& v = x.value();
  const T y = digamma(v);
  return ::dualcast::detail::chain(x, y, ::dualcast::detail::nan_guard(y, trigamma(v)));
}

// erfinv' = sqrt(pi)/2 exp(erfinv(x)^2), taken from the value's Newton iteration in double
// (see detail::special::erfinv): accurate to a few ulp up to the tails.
template <class T, int N, class Tag>
DUALCAST_HD Dual<T, N, Tag> erfinv(const Dual<T, N, Tag>& x) {
  const T& v = x.value();
  if constexpr (::dualcast::detail::floating_point<T>) {
    double d = 0;
    const T y = T(::dualcast::detail::special::erfinv(double(v), &d));
    return ::dualcast::detail::chain(x, y, ::dualcast::detail::nan_guard(y, T(d)));
  } else {
    const T y = erfinv(v);
    return ::dualcast::detail::chain(
        x, y, ::dualcast::detail::nan_guard(y, T(T(::dualcast::detail::kSqrtPiOverTwo) * exp(y * y))));
  }
}

// x^n with an int exponent: d/dx = n x^(n-1) (0 for n == 0).
template <class T, int N, class Tag>
DUALCAST_HD Dual<T, N, Tag> powi(const Dual<T, N, Tag>& x, int n) {
  const T& v = x.value();
  const T y = powi(v, n);
  const T d = n == 0 ? T(0) : T(T(n) * powi(v, n - 1));
  return ::dualcast::detail::chain(x, y, ::dualcast::detail::nan_guard(y, d));
}

// ---- int argument or result ----

template <class T, int N, class Tag>
DUALCAST_HD Dual<T, N, Tag> ldexp(const Dual<T, N, Tag>& x, int n) {
  Dual<T, N, Tag> r;
  r.value() = ldexp(x.value(), n);
  for (int k = 0; k < N; ++k) r.partial(k) = ldexp(x.partial(k), n);  // exact: times 2^n
  return r;
}
template <class T, int N, class Tag>
DUALCAST_HD Dual<T, N, Tag> scalbn(const Dual<T, N, Tag>& x, int n) {
  return ldexp(x, n);
}
// m = x 2^-e: dm = dx 2^-e (the exponent is piecewise constant).
template <class T, int N, class Tag>
DUALCAST_HD Dual<T, N, Tag> frexp(const Dual<T, N, Tag>& x, int* e) {
  const T m = frexp(x.value(), e);
  Dual<T, N, Tag> r = ldexp(x, -*e);
  r.value() = m;
  return r;
}
// The fractional part carries the derivative, the integral part has none.
template <class T, int N, class Tag>
DUALCAST_HD Dual<T, N, Tag> modf(const Dual<T, N, Tag>& x, Dual<T, N, Tag>* ipart) {
  T i{};
  Dual<T, N, Tag> r = x;
  r.value() = modf(x.value(), &i);
  *ipart = Dual<T, N, Tag>(i);
  return r;
}

// Rounding to an integer type and classification look at the value only (the scalar at the
// bottom of nested levels); there is no derivative to carry.
#define DUALCAST_DUAL_VALUE_ONLY(R, fn)          \
  template <class T, int N, class Tag>           \
  DUALCAST_HD R fn(const Dual<T, N, Tag>& x) {   \
    return fn(primal(x));                        \
  }
DUALCAST_DUAL_VALUE_ONLY(int, ilogb)
DUALCAST_DUAL_VALUE_ONLY(long, lround)
DUALCAST_DUAL_VALUE_ONLY(long long, llround)
DUALCAST_DUAL_VALUE_ONLY(long, lrint)
DUALCAST_DUAL_VALUE_ONLY(long long, llrint)
DUALCAST_DUAL_VALUE_ONLY(bool, isnan)
DUALCAST_DUAL_VALUE_ONLY(bool, isinf)
DUALCAST_DUAL_VALUE_ONLY(bool, isfinite)
DUALCAST_DUAL_VALUE_ONLY(bool, isnormal)
DUALCAST_DUAL_VALUE_ONLY(bool, signbit)
#undef DUALCAST_DUAL_VALUE_ONLY

// ---- binary ----

// fmod(a, b) = a - n b with n = trunc(a/b) (remainder: n = a/b rounded to even), r exact. The
// quotient n is recovered exactly from the exact r: n = (a - r) / b rounded to an integer.
#define DUALCAST_DUAL_REMAINDER(fn)                                                               \
  template <class A, class B>                                                                     \
    requires(::dualcast::detail::dual_args<A, B>)                                                 \
  DUALCAST_HD ::dualcast::detail::common_dual_t<A, B> fn(const A& a_, const B& b_) {              \
    using D = ::dualcast::detail::common_dual_t<A, B>;                                            \
    using T = typename D::value_type;                                                             \
    namespace dd = ::dualcast::detail;                                                            \
    const D a(a_), b(b_);                                                                         \
    const T y = fn(a.value(), b.value());                                                         \
    return dd::chain2(a, dd::nan_guard(y, T(1)), b,                                               \
                      dd::nan_guard(y, T(-round((a.value() - y) / b.value()))), y);               \
  }
DUALCAST_DUAL_REMAINDER(fmod)
DUALCAST_DUAL_REMAINDER(remainder)
#undef DUALCAST_DUAL_REMAINDER

// remquo: remainder's value and derivatives; the quotient bits go to *quo.
template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::common_dual_t<A, B> remquo(const A& a, const B& b, int* quo) {
  using S = scalar_type_t<::dualcast::detail::common_dual_t<A, B>>;
  (void)remquo(S(primal(a)), S(primal(b)), quo);
  return remainder(a, b);
}

template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::common_dual_t<A, B> fdim(const A& a_, const B& b_) {
  using D = ::dualcast::detail::common_dual_t<A, B>;
  using T = typename D::value_type;
  namespace dd = ::dualcast::detail;
  const D a(a_), b(b_);
  const T y = fdim(a.value(), b.value());
  const bool on = a.value() > b.value();
  return dd::chain2(a, dd::nan_guard(y, on ? T(1) : T(0)), b, dd::nan_guard(y, on ? T(-1) : T(0)), y);
}

template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::common_dual_t<A, B> nextafter(const A& a_, const B& b_) {
  using D = ::dualcast::detail::common_dual_t<A, B>;
  using T = typename D::value_type;
  namespace dd = ::dualcast::detail;
  const D a(a_), b(b_);
  const T y = nextafter(a.value(), b.value());
  return dd::chain2(a, dd::nan_guard(y, T(1)), b, dd::nan_guard(y, T(0)), y);
}

// logaddexp: d/da = 1 / (1 + e), d/db = e / (1 + e) for a > b, e = exp(-|a - b|) (the value's
// own e), mirrored for b > a; (1/2, 1/2) on a tie.
template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::common_dual_t<A, B> logaddexp(const A& a_, const B& b_) {
  using D = ::dualcast::detail::common_dual_t<A, B>;
  using T = typename D::value_type;
  namespace dd = ::dualcast::detail;
  const D a(a_), b(b_);
  const T& av = a.value();
  const T& bv = b.value();
  const T y = logaddexp(av, bv);
  if (av == bv) return dd::chain2(a, dd::nan_guard(y, T(0.5)), b, dd::nan_guard(y, T(0.5)), y);
  // e = exp(-|a - b|) with a - b = s + lo exactly (TwoSum): the rounding of a - b, amplified by
  // |a - b| in the exponential, would cost up to ~300 ulp on the smaller coefficient.
  const T s = av - bv;
  T e = exp(-abs(s));
  if constexpr (dd::floating_point<T>) {
    const T bb = s - av;
    const T lo = (av - (s - bb)) - (bv + bb);
    // An infinite argument makes lo NaN (inf - inf); e is then exact (0) and kept.
    if (lo - lo == lo - lo) e = s > 0 ? T(e - e * lo) : T(e + e * lo);
  }
  const T big = T(1) / (T(1) + e), small = e / (T(1) + e);
  const bool a_wins = av > bv;
  return dd::chain2(a, dd::nan_guard(y, a_wins ? big : small), b, dd::nan_guard(y, a_wins ? small : big), y);
}

// ---- ternary ----

// std::clamp: the chosen argument whole (value and partials); x on a bound is x.
template <class X, class L, class H>
  requires(::dualcast::detail::dual_args<X, L, H>)
DUALCAST_HD ::dualcast::detail::common_dual_t<X, L, H> clamp(const X& x_, const L& lo_, const H& hi_) {
  using D = ::dualcast::detail::common_dual_t<X, L, H>;
  const D x(x_), lo(lo_), hi(hi_);
  return (x < lo) ? lo : ((hi < x) ? hi : x);
}

// lerp(a, b, t): value from the scalar std::lerp formula; d = (1 - t) da + t db + (b - a) dt.
template <class A, class B, class C>
  requires(::dualcast::detail::dual_args<A, B, C>)
DUALCAST_HD ::dualcast::detail::common_dual_t<A, B, C> lerp(const A& a_, const B& b_, const C& t_) {
  using D = ::dualcast::detail::common_dual_t<A, B, C>;
  using T = typename D::value_type;
  namespace dd = ::dualcast::detail;
  const D a(a_), b(b_), t(t_);
  D r;
  r.value() = lerp(a.value(), b.value(), t.value());
  const T ca = T(1) - t.value(), cb = t.value(), ct = b.value() - a.value();
  for (int k = 0; k < D::lanes; ++k)
    r.partial(k) = dd::scale(ca, a.partial(k)) + dd::scale(cb, b.partial(k)) + dd::scale(ct, t.partial(k));
  return r;
}

}  // namespace dualcast::math
