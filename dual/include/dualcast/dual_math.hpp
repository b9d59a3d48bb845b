// Math on Dual numbers in dualcast::math: derivative rules and the conventions at kinks.
#pragma once

#include "dualcast/host_device.hpp"
#include "dualcast/dual_number.hpp"
#include "dualcast/hypot_steps.hpp"
#include "dualcast/math.hpp"

namespace dualcast::detail {
inline constexpr double kLn2 = 0.693147180559945309417232121458176568;
inline constexpr double kInvLn2 = 1.442695040888963407359924681001892137;
inline constexpr double kInvLn10 = 0.434294481903251827651128918916605082;
inline constexpr double kTwoOverSqrtPi = 1.128379167095512573896158903121545172;
inline constexpr double kSqrtPiOverTwo = 0.886226925452758013649083741671139;

// sign(x) with sign(0) = 0 and NaN propagated.
template <class T>
DUALCAST_HD constexpr T sign(const T& v) {
  return v > 0 ? T(1) : (v < 0 ? T(-1) : (v == v ? T(0) : v));
}

// NaN value => NaN derivative: log(-1), log1p(-2), atanh(2) have a finite formula derivative
// that would hide the NaN from a reverse sweep.
template <class T>
DUALCAST_HD constexpr T nan_guard(const T& y, const T& d) {
  return y != y ? y : d;
}

// exp(-v*v) with v*v split exactly into s + lo (fma), so the rounding of v*v (amplified by v^2
// in the exponential) does not reach the result: erf' and erfc' stay within a few ulp.
template <class T>
DUALCAST_HD T exp_neg_square(const T& v) {
  if constexpr (floating_point<T>) {
    const T s = v * v;
    const T e = libm::exp(-s);
    if (e == T(0) || s - s != s - s) return e;
    const T lo = libm::fma(v, v, -s);
    return libm::fma(-e, lo, e);
  } else {
    using ::dualcast::math::exp;  // the Dual overloads are found by ADL at instantiation
    return exp(-(v * v));
  }
}
}  // namespace dualcast::detail

// Every function of math.hpp has an overload here or in dual_cmath.hpp for Dual<T, N, Tag>;
// they are found by qualified calls (dualcast::math::tanh(d)), after
// `using namespace dualcast::math;`, and by argument-dependent lookup on a Dual (also after
// `using std::sin;`, the usual generic-code idiom). `std::sin(d)` itself cannot work: adding
// overloads to namespace std is undefined behaviour, and no std:: overload takes a Dual, so the
// compiler says "no matching function for call to sin(Dual...)"; write `dualcast::math::sin`.
// Values are computed by the scalar function at the level below (recursively for nested
// Duals), so they equal the scalar results bit for bit. Binary functions accept a Dual together
// with a constant (arithmetic scalar or inner-level value) or a Dual of another tag.
//
// Derivative rules reuse what the value computes where that is accurate (exp' = y,
// sqrt' = 0.5/y, sigmoid and softplus from their e = exp(-|x|)); where reusing y loses accuracy
// they take the intermediate instead (tanh' = 4e/(1+e)^2 with e = exp(-2|x|), not 1 - y^2;
// expm1' = exp(x), not y + 1). Every value is within 4 ulp and every derivative within 8 ulp of
// the exact one where that is a normal number (docs/accuracy.md, tests/dual/accuracy_test.cc).
// A lane that is exactly zero stays zero whatever its coefficient (see detail::scale).
//
// Conventions where the derivative is not classical (every layer must follow this table):
//
//   function              convention
//   --------------------  --------------------------------------------------------------------
//   any f, NaN value      all (nonzero) lanes NaN: log(-1), log1p(-2), atanh(2), pow(-1, 0.5)
//   abs, fabs             d = sign(x), sign(0) = 0 (sign(NaN) = NaN)
//   sign                  derivative 0 (also at 0)
//   relu                  relu(x) = x > 0 ? x : 0 (+0; NaN stays NaN); relu'(0) = 0
//   min(a, b)             (b < a) ? b : a   - a tie takes value AND derivative of a
//   max(a, b)             (a < b) ? b : a   - a tie takes value AND derivative of a
//                         (std::min/std::max: a NaN a is returned, a NaN b dropped; NumPy's
//                         minimum/maximum propagate either, fmin/fmax drop either)
//   fmin, fmax            IEEE: a NaN loses (the other argument, with its derivative);
//                         otherwise as min/max, ties take the first argument
//   clamp(x, lo, hi)      lo if x < lo, hi if hi < x, else x: on a bound x wins (d/dx = 1)
//   floor, ceil, round,   derivative 0 everywhere (also at the jumps)
//   trunc, rint, nearbyint, logb, ilogb
//   fmod(a, b)            d/da = 1, d/db = -trunc(a/b) (the n of a = n b + r, exact)
//   remainder(a, b)       d/da = 1, d/db = -n, n = a/b rounded to nearest even (exact)
//                         (both: the one-sided derivative of the branch the value took)
//   fdim(a, b)            a > b: (1, -1); otherwise (0, 0), also at a == b
//   nextafter(a, b)       d/da = 1, d/db = 0
//   copysign(x, y)        d/dx = (signbit(x) == signbit(y) ? 1 : -1), d/dy = 0
//   pow(x, p), p const    d/dx = p * x^(p-1); p == 0 gives 0 (no 0 * inf at x == 0);
//                         taken as p * (y / x) where y is normal and x != 0 (float: in double,
//                         any finite x != 0): no overflow of x^(p-1) where the result is finite,
//                         and a p - 1 rounded to p (|p| >= 2^53) cannot flip the sign there
//                         (f64 with y = +-inf or 0 still can: pow(-2, 2^60)' = +inf)
//   pow(c, y), c const    d/dy = log(c) * c^y; defined as 0 when c == 0 and y > 0
//   pow(x, y), both dual  both rules above, summed
//   powi(x, n)            d/dx = n * x^(n-1); n == 0 gives 0
//   sqrt, cbrt, rsqrt at 0  +-inf (honest); a lane seeded with 0 still gives 0
//   hypot(a, b) at (0,0)  both derivatives 0 (like abs: hypot(x, 0) = |x|)
//   hypot, an infinite    the infinite argument(s) get sign(arg), finite or NaN ones 0
//     argument            (hypot(inf, y) = inf for every y, NaN included: IEEE 754); finite
//                         arguments whose hypot overflows (or is subnormal) keep a/h, b/h,
//                         taken from the arguments scaled by a power of two (hypot_steps.hpp)
//   atan2(y, x) at (0,0)  NaN (no meaningful limit)
//   atan2 at +-inf        both derivatives 0 (the limit of b/r^2, -a/r^2)
//   logaddexp(a, b)       a == b (also +-inf): (1/2, 1/2)
//   lgamma, tgamma, digamma  poles (0, -1, -2, ...): derivative NaN; values as libm's:
//                         lgamma +inf, tgamma +-inf at +-0 and NaN at -1, -2, ..., digamma NaN
//   erfinv at +-1         +-inf, derivative +inf
//   select(c, a, b)       value and partials of the chosen side only
//   any rule, zero lane   a lane that is exactly 0 gives 0, even times inf or NaN ("strong zero")
//   x op constant         the constant is converted to T first (x * 0.1 on float uses 0.1f)
//
// Example:
//   using D = dualcast::Dual<double, 1>;
//   D x = D::variable(0.0, 0);
//   using namespace dualcast::math;
//   D s = sigmoid(x);                  // s.value() == 0.5, s.partial(0) == 0.25
//   D r = relu(x);                     // r.partial(0) == 0 (convention at the kink)
namespace dualcast::math {

// ---------------------------------------------------------------------------------------------
// Unary functions: y = f(v) at the level below, every lane times f'(v).
// ---------------------------------------------------------------------------------------------

#define DUALCAST_DUAL_UNARY(fn, ...)                                             \
  template <class T, int N, class Tag>                                           \
  DUALCAST_HD Dual<T, N, Tag> fn(const Dual<T, N, Tag>& x) {                     \
    const T& v = x.value();                                                      \
    const T y = fn(v);                                                           \
    return ::dualcast::detail::chain(x, y, ::dualcast::detail::nan_guard(y, T(__VA_ARGS__))); \
  }

DUALCAST_DUAL_UNARY(exp, y)
DUALCAST_DUAL_UNARY(exp2, y * T(::dualcast::detail::kLn2))
DUALCAST_DUAL_UNARY(expm1, exp(v))
DUALCAST_DUAL_UNARY(log, T(1) / v)
DUALCAST_DUAL_UNARY(log1p, T(1) / (T(1) + v))
// (1/ln 2) / v, not 1 / (v ln 2): v ln 2 is subnormal (inexact) for v near the smallest normal.
DUALCAST_DUAL_UNARY(log2, T(::dualcast::detail::kInvLn2) / v)
DUALCAST_DUAL_UNARY(log10, T(::dualcast::detail::kInvLn10) / v)
DUALCAST_DUAL_UNARY(sqrt, T(0.5) / y)
DUALCAST_DUAL_UNARY(cbrt, T(1) / (T(3) * y * y))
DUALCAST_DUAL_UNARY(sin, cos(v))
DUALCAST_DUAL_UNARY(cos, -sin(v))
DUALCAST_DUAL_UNARY(tan, T(1) + y * y)
// (1 - v)(1 + v) instead of 1 - v*v: no cancellation near |v| = 1.
DUALCAST_DUAL_UNARY(asin, T(1) / sqrt((T(1) - v) * (T(1) + v)))
DUALCAST_DUAL_UNARY(acos, T(-1) / sqrt((T(1) - v) * (T(1) + v)))
// 1/(1 + v^2); for |v| > 1 as t^2/(1 + t^2), t = 1/v, so v^2 cannot overflow to a 0 derivative.
DUALCAST_DUAL_UNARY(atan, (v > 1 || v < -1) ? T((T(1) / v) * (T(1) / v) / (T(1) + (T(1) / v) * (T(1) / v)))
                                            : T(T(1) / (T(1) + v * v)))
DUALCAST_DUAL_UNARY(sinh, cosh(v))
DUALCAST_DUAL_UNARY(cosh, sinh(v))
DUALCAST_DUAL_UNARY(asinh, T(1) / hypot(v, T(1)))
DUALCAST_DUAL_UNARY(acosh, T(1) / (sqrt(v - T(1)) * sqrt(v + T(1))))
DUALCAST_DUAL_UNARY(atanh, T(1) / ((T(1) - v) * (T(1) + v)))
DUALCAST_DUAL_UNARY(erf, T(::dualcast::detail::kTwoOverSqrtPi) * ::dualcast::detail::exp_neg_square(v))
DUALCAST_DUAL_UNARY(erfc, T(-::dualcast::detail::kTwoOverSqrtPi) * ::dualcast::detail::exp_neg_square(v))
DUALCAST_DUAL_UNARY(abs, ::dualcast::detail::sign(v))
DUALCAST_DUAL_UNARY(fabs, ::dualcast::detail::sign(v))
#undef DUALCAST_DUAL_UNARY

// tanh and sigmoid: value and derivative from one exponential (activation_steps.hpp); tanh' =
// 4e/(1+e)^2, not 1 - y^2, which loses everything once y rounds to +-1 (|x| > 3.1 in float);
// sigmoid' = (t/(1+t))/(1+t) with t = exp(-|x|), not y (1 - y). A nested level (T itself a
// Dual) takes the value from T's own rule and the slope from the same steps on T, so both
// levels see the same bits of f'.
namespace detail_dual {
template <class T>
struct DualSteps {
  using V = T;
  DUALCAST_HD T Const(double c) const { return T(c); }
  DUALCAST_HD T Add(const T& a, const T& b) const { return a + b; }
  DUALCAST_HD T Sub(const T& a, const T& b) const { return a - b; }
  DUALCAST_HD T Mul(const T& a, const T& b) const { return a * b; }
  DUALCAST_HD T Div(const T& a, const T& b) const { return a / b; }
  DUALCAST_HD T Neg(const T& a) const { return -a; }
  DUALCAST_HD T Abs(const T& a) const { return abs(a); }
  DUALCAST_HD T Exp(const T& a) const { return exp(a); }
  DUALCAST_HD T Expm1(const T& a) const { return expm1(a); }
  DUALCAST_HD T Copysign(const T& a, const T& b) const { return copysign(a, b); }
  DUALCAST_HD T Hypot(const T& a, const T& b) const { return hypot(a, b); }
  DUALCAST_HD bool Lt(const T& a, const T& b) const { return a < b; }
  DUALCAST_HD bool Eq(const T& a, const T& b) const { return a == b; }
  DUALCAST_HD T Select(bool c, const T& a, const T& b) const { return c ? a : b; }
};

template <::dualcast::detail::Activation A, class T, int N, class Tag>
DUALCAST_HD Dual<T, N, Tag> Activate(const Dual<T, N, Tag>& x) {
  const T& v = x.value();
  if constexpr (::dualcast::detail::floating_point<T>) {
    ::dualcast::detail::ScalarSteps<T> m;
    const auto r = ::dualcast::detail::activation_steps(A, m, v);
    return ::dualcast::detail::chain(x, r.value, r.slope);
  } else {
    DualSteps<T> m;
    return ::dualcast::detail::chain(x, Activate<A>(v), ::dualcast::detail::activation_steps(A, m, v).slope);
  }
}
}  // namespace detail_dual

// The four activations; fast_tanh and fast_sigmoid take the slopes 1 - y^2 and y (1 - y) from
// their value instead (docs/fast-activations.md).
#define DUALCAST_DUAL_ACTIVATION(fn, which)                                  \
  template <class T, int N, class Tag>                                       \
  DUALCAST_HD Dual<T, N, Tag> fn(const Dual<T, N, Tag>& x) {                 \
    return detail_dual::Activate<::dualcast::detail::Activation::which>(x);  \
  }
DUALCAST_DUAL_ACTIVATION(tanh, kTanh)
DUALCAST_DUAL_ACTIVATION(sigmoid, kSigmoid)
DUALCAST_DUAL_ACTIVATION(fast_tanh, kFastTanh)
DUALCAST_DUAL_ACTIVATION(fast_sigmoid, kFastSigmoid)
#undef DUALCAST_DUAL_ACTIVATION

// softplus' = sigmoid, from the value's e = exp(-|x|): 1/(1+e) for x > 0, e/(1+e) otherwise.
template <class T, int N, class Tag>
DUALCAST_HD Dual<T, N, Tag> softplus(const Dual<T, N, Tag>& x) {
  const T& v = x.value();
  const T e = exp(-abs(v));
  T y;
  if constexpr (::dualcast::detail::floating_point<T>)
    y = ::dualcast::detail::softplus_from_exp(v, e);
  else
    y = softplus(v);
  const T d = v > 0 ? T(T(1) / (T(1) + e)) : T(e / (T(1) + e));
  return ::dualcast::detail::chain(x, y, ::dualcast::detail::nan_guard(y, d));
}

// Piecewise constant: value only, all partials zero (NaN if the value is NaN).
#define DUALCAST_DUAL_STEP(fn)                                                          \
  template <class T, int N, class Tag>                                                  \
  DUALCAST_HD Dual<T, N, Tag> fn(const Dual<T, N, Tag>& x) {                            \
    const T y = fn(x.value());                                                          \
    return ::dualcast::detail::chain(x, y, ::dualcast::detail::nan_guard(y, T(0)));     \
  }
DUALCAST_DUAL_STEP(floor)
DUALCAST_DUAL_STEP(ceil)
DUALCAST_DUAL_STEP(round)
DUALCAST_DUAL_STEP(trunc)
DUALCAST_DUAL_STEP(rint)
DUALCAST_DUAL_STEP(nearbyint)
DUALCAST_DUAL_STEP(logb)
DUALCAST_DUAL_STEP(sign)
#undef DUALCAST_DUAL_STEP

template <class T, int N, class Tag>
DUALCAST_HD Dual<T, N, Tag> relu(const Dual<T, N, Tag>& x) {
  if (x.value() > 0) return x;
  const T y = relu(x.value());
  return ::dualcast::detail::chain(x, y, ::dualcast::detail::nan_guard(y, T(0)));
}

// ---------------------------------------------------------------------------------------------
// Binary and ternary functions. Arguments: Duals of one type and/or constants for it, or Duals
// of other tags (combined as in dual_number.hpp); constants are promoted to Duals without lanes
// (their lanes are zero, so they cost nothing in a rule).
// ---------------------------------------------------------------------------------------------

// pow has three rules so that a constant exponent never evaluates log(x) and a constant base
// never evaluates x^(p-1).
template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::common_dual_t<A, B> pow(const A& a, const B& b) {
  using D = ::dualcast::detail::common_dual_t<A, B>;
  using T = typename D::value_type;
  namespace dd = ::dualcast::detail;
  const auto ea = dd::at_level<D>(a);
  const auto eb = dd::at_level<D>(b);
  constexpr bool la = dd::has_lanes_v<D, decltype(ea)>, lb = dd::has_lanes_v<D, decltype(eb)>;
  const T& av = dd::level_value<D>(ea);
  const T& bv = dd::level_value<D>(eb);
  const T y = pow(av, bv);
  // d/dx x^p = p x^(p-1); an exactly-zero exponent (all levels) makes x^p constant. Taken as
  // p (y / x) where y is a normal number: x^(p-1) would round p - 1, an error amplified by
  // |log x| (hundreds of ulp for tiny x), and it can overflow where p x^(p-1) does not. float
  // is done in double as p (x^p / x) for a finite nonzero x (no overflow or underflow there
  // that float would see): p - 1 is not exact in double either once |p| >= 2^53, and a
  // rounded p - 1 flips the sign at x = -1 (pow(-1, 2^54)' = -2^54, not +2^54).
  auto dbase = [&] {
    if (dd::is_zero(bv)) return T(0);
    if constexpr (dd::stdx::is_same_v<T, float>) {
      const double x = av, p = bv;
      const bool divide = x - x == 0 && x != 0;
      const double w = pow(x, divide ? p : p - 1.0);
      return T(p * (divide ? w / x : w));
    } else {
      // The same formula at every nesting level (primal values decide), so that nested levels
      // agree bit for bit on f'.
      using S = scalar_type_t<T>;
      const S yp = primal(y), ay = yp < 0 ? -yp : yp;
      if (ay >= dd::min_normal<S>() && ay - ay == ay - ay && !(av == 0)) {
        const T q = y / av;
        const S qp = primal(q);
        return qp - qp == qp - qp ? T(bv * q) : T(bv * y / av);
      }
      return T(bv * pow(av, bv - T(1)));
    }
  };
  // d/dy c^y = log(c) c^y; 0 at c == 0, y > 0, where c^y is identically 0 near y. float in
  // double, so that a subnormal c^y does not cost the derivative its precision.
  auto dexp = [&] {
    if (av == 0 && bv > 0) return T(0);
    if constexpr (dd::stdx::is_same_v<T, float>)
      return T(log(double(av)) * pow(double(av), double(bv)));
    else
      return T(log(av) * y);
  };
  if constexpr (la && lb)
    return dd::chain2(ea, dd::nan_guard(y, dbase()), eb, dd::nan_guard(y, dexp()), y);
  else if constexpr (la)
    return dd::chain(ea, y, dd::nan_guard(y, dbase()));
  else
    return dd::chain(eb, y, dd::nan_guard(y, dexp()));
}

// atan2(a, b) = angle of (b, a): d/da = b / r^2, d/db = -a / r^2, with r = hypot(a, b) so that
// r^2 neither overflows nor underflows. At an infinite argument both tend to 0.
template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::common_dual_t<A, B> atan2(const A& a_, const B& b_) {
  using D = ::dualcast::detail::common_dual_t<A, B>;
  using T = typename D::value_type;
  namespace dd = ::dualcast::detail;
  const D a(a_), b(b_);
  const T& av = a.value();
  const T& bv = b.value();
  const T y = atan2(av, bv);
  const T r = hypot(av, bv);
  const bool inf = r - r != r - r && r == r;
  const T da = inf ? T(0) : T((bv / r) / r), db = inf ? T(0) : T(-(av / r) / r);
  return dd::chain2(a, dd::nan_guard(y, da), b, dd::nan_guard(y, db), y);
}

// hypot: d/da = a / h, d/db = b / h, also where h overflowed or is subnormal; the rule and its
// conventions at the origin and at infinity are hypot_steps.hpp's, shared with the jvp pass.
template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::common_dual_t<A, B> hypot(const A& a_, const B& b_) {
  using D = ::dualcast::detail::common_dual_t<A, B>;
  using T = typename D::value_type;
  using S = scalar_type_t<T>;
  namespace dd = ::dualcast::detail;
  const D a(a_), b(b_);
  const T& av = a.value();
  const T& bv = b.value();
  const T y = hypot(av, bv);
  const T up(dd::hypot_scale<S>()), least(dd::min_normal<S>());
  dd::stdx::conditional_t<dd::floating_point<T>, dd::ScalarSteps<S>, detail_dual::DualSteps<T>> m;
  const auto p = dd::hypot_partials_steps(m, av, bv, y, up, least);
  return dd::chain2(a, dd::nan_guard(y, p.da), b, dd::nan_guard(y, p.db), y);
}

template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::common_dual_t<A, B> copysign(const A& a_, const B& b_) {
  using D = ::dualcast::detail::common_dual_t<A, B>;
  using T = typename D::value_type;
  const D a(a_), b(b_);
  const bool same = ::dualcast::detail::signbit(primal(a)) == ::dualcast::detail::signbit(primal(b));
  return ::dualcast::detail::chain(a, T(copysign(a.value(), b.value())), same ? T(1) : T(-1));
}

// Selections return one argument whole (value and partials), so ties are decided by the
// comparison alone: the first argument wins.
template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::common_dual_t<A, B> min(const A& a_, const B& b_) {
  using D = ::dualcast::detail::common_dual_t<A, B>;
  const D a(a_), b(b_);
  return (b < a) ? b : a;
}

template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::common_dual_t<A, B> max(const A& a_, const B& b_) {
  using D = ::dualcast::detail::common_dual_t<A, B>;
  const D a(a_), b(b_);
  return (a < b) ? b : a;
}

template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::common_dual_t<A, B> fmin(const A& a_, const B& b_) {
  using D = ::dualcast::detail::common_dual_t<A, B>;
  const D a(a_), b(b_);
  return (a != a) ? b : ((b != b) ? a : ((b < a) ? b : a));
}

template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::common_dual_t<A, B> fmax(const A& a_, const B& b_) {
  using D = ::dualcast::detail::common_dual_t<A, B>;
  const D a(a_), b(b_);
  return (a != a) ? b : ((b != b) ? a : ((a < b) ? b : a));
}

// fma(a, b, c) = a*b + c with one rounding in the value; d = b da + a db + dc.
template <class A, class B, class C>
  requires(::dualcast::detail::dual_args<A, B, C>)
DUALCAST_HD ::dualcast::detail::common_dual_t<A, B, C> fma(const A& a_, const B& b_, const C& c_) {
  using D = ::dualcast::detail::common_dual_t<A, B, C>;
  namespace dd = ::dualcast::detail;
  const D a(a_), b(b_), c(c_);
  D r(fma(a.value(), b.value(), c.value()));
  for (int k = 0; k < D::lanes; ++k)
    r.partial(k) = dd::scale(b.value(), a.partial(k)) + dd::scale(a.value(), b.partial(k)) + c.partial(k);
  return r;
}

// Branch-free choice between two values: the chosen side's value and partials, nothing of the
// other (even if it is NaN). cond must be a real bool.
template <class C, class A, class B>
  requires(::dualcast::detail::stdx::is_same_v<C, bool> && ::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::common_dual_t<A, B> select(C cond, const A& a, const B& b) {
  using D = ::dualcast::detail::common_dual_t<A, B>;
  return cond ? D(a) : D(b);
}

}  // namespace dualcast::math

#include "dualcast/dual_cmath.hpp"
