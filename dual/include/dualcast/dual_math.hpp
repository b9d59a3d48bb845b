// Math on Dual numbers in dualcast::math: derivative rules and the conventions at kinks.
#pragma once

#include "dualcast/host_device.hpp"
#include "dualcast/dual_number.hpp"
#include "dualcast/math.hpp"

namespace dualcast::detail {
inline constexpr double kLn2 = 0.693147180559945309417232121458176568;
inline constexpr double kLn10 = 2.302585092994045684017999645468;
inline constexpr double kTwoOverSqrtPi = 1.128379167095512573896158903121545172;

// sign(x) with sign(0) = 0 and NaN propagated.
template <class T>
DUALCAST_HD constexpr T sign(const T& v) {
  return v > 0 ? T(1) : (v < 0 ? T(-1) : (v == v ? T(0) : v));
}
}  // namespace dualcast::detail

// Every function of math.hpp has an overload here for Dual<T, N, Tag>; they are found by
// qualified calls (dualcast::math::tanh(d)), after `using namespace dualcast::math;`, and by
// argument-dependent lookup on a Dual. Values are computed by the scalar function at the level
// below (recursively for nested Duals), so they equal the scalar results bit for bit. Binary
// functions accept a Dual together with a constant (arithmetic scalar or inner-level value) on
// either side; the constant has no lanes.
//
// Derivative rules reuse the primal result y where possible (exp' = y, tanh' = 1 - y*y,
// sigmoid' = y*(1 - y), sqrt' = 0.5/y), so CSE can share work between primal and partials.
// A lane that is exactly zero stays zero whatever its coefficient (see detail::scale).
//
// Conventions where the derivative is not classical (every layer must follow this table):
//
//   function              convention
//   --------------------  --------------------------------------------------------------------
//   abs, fabs             d = sign(x), sign(0) = 0 (sign(NaN) = NaN)
//   relu                  relu(x) = x > 0 ? x : 0 (+0; NaN stays NaN); relu'(0) = 0
//   min(a, b)             (b < a) ? b : a   - a tie takes value AND derivative of a
//   max(a, b)             (a < b) ? b : a   - a tie takes value AND derivative of a
//   fmin, fmax            IEEE: a NaN loses (the other argument, with its derivative);
//                         otherwise as min/max, ties take the first argument
//   floor, ceil,          derivative 0 everywhere (also at the jumps)
//   round, trunc
//   copysign(x, y)        d/dx = (signbit(x) == signbit(y) ? 1 : -1), d/dy = 0
//   pow(x, p), p const    d/dx = p * x^(p-1); p == 0 gives 0 (no 0 * inf at x == 0)
//   pow(c, y), c const    d/dy = log(c) * c^y; defined as 0 when c == 0 and y > 0
//   pow(x, y), both dual  both rules above, summed
//   sqrt, cbrt at 0       +inf (honest); a lane seeded with 0 still gives 0
//   hypot(a, b) at (0,0)  both derivatives 0 (like abs: hypot(x, 0) = |x|)
//   atan2(y, x) at (0,0)  NaN (no meaningful limit)
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

#define DUALCAST_DUAL_UNARY(fn, ...)                                   \
  template <class T, int N, class Tag>                                 \
  DUALCAST_HD Dual<T, N, Tag> fn(const Dual<T, N, Tag>& x) {           \
    const T& v = x.value();                                            \
    const T y = fn(v);                                                 \
    return ::dualcast::detail::chain(x, y, T(__VA_ARGS__));            \
  }

DUALCAST_DUAL_UNARY(exp, y)
DUALCAST_DUAL_UNARY(expm1, y + T(1))
DUALCAST_DUAL_UNARY(log, T(1) / v)
DUALCAST_DUAL_UNARY(log1p, T(1) / (T(1) + v))
DUALCAST_DUAL_UNARY(log2, T(1) / (v * T(::dualcast::detail::kLn2)))
DUALCAST_DUAL_UNARY(log10, T(1) / (v * T(::dualcast::detail::kLn10)))
DUALCAST_DUAL_UNARY(sqrt, T(0.5) / y)
DUALCAST_DUAL_UNARY(cbrt, T(1) / (T(3) * y * y))
DUALCAST_DUAL_UNARY(sin, cos(v))
DUALCAST_DUAL_UNARY(cos, -sin(v))
DUALCAST_DUAL_UNARY(tan, T(1) + y * y)
// (1 - v)(1 + v) instead of 1 - v*v: no cancellation near |v| = 1.
DUALCAST_DUAL_UNARY(asin, T(1) / sqrt((T(1) - v) * (T(1) + v)))
DUALCAST_DUAL_UNARY(acos, T(-1) / sqrt((T(1) - v) * (T(1) + v)))
DUALCAST_DUAL_UNARY(atan, T(1) / (T(1) + v * v))
DUALCAST_DUAL_UNARY(sinh, cosh(v))
DUALCAST_DUAL_UNARY(cosh, sinh(v))
DUALCAST_DUAL_UNARY(tanh, T(1) - y * y)
DUALCAST_DUAL_UNARY(asinh, T(1) / hypot(v, T(1)))
DUALCAST_DUAL_UNARY(acosh, T(1) / (sqrt(v - T(1)) * sqrt(v + T(1))))
DUALCAST_DUAL_UNARY(atanh, T(1) / ((T(1) - v) * (T(1) + v)))
DUALCAST_DUAL_UNARY(erf, T(::dualcast::detail::kTwoOverSqrtPi) * exp(-(v * v)))
DUALCAST_DUAL_UNARY(erfc, T(-::dualcast::detail::kTwoOverSqrtPi) * exp(-(v * v)))
DUALCAST_DUAL_UNARY(abs, ::dualcast::detail::sign(v))
DUALCAST_DUAL_UNARY(fabs, ::dualcast::detail::sign(v))
DUALCAST_DUAL_UNARY(sigmoid, y * (T(1) - y))
DUALCAST_DUAL_UNARY(softplus, sigmoid(v))
#undef DUALCAST_DUAL_UNARY

// Piecewise constant: value only, all partials zero.
#define DUALCAST_DUAL_STEP(fn)                               \
  template <class T, int N, class Tag>                       \
  DUALCAST_HD Dual<T, N, Tag> fn(const Dual<T, N, Tag>& x) { \
    return Dual<T, N, Tag>(fn(x.value()));                   \
  }
DUALCAST_DUAL_STEP(floor)
DUALCAST_DUAL_STEP(ceil)
DUALCAST_DUAL_STEP(round)
DUALCAST_DUAL_STEP(trunc)
#undef DUALCAST_DUAL_STEP

template <class T, int N, class Tag>
DUALCAST_HD Dual<T, N, Tag> relu(const Dual<T, N, Tag>& x) {
  if (x.value() > 0) return x;
  return Dual<T, N, Tag>(relu(x.value()));
}

// ---------------------------------------------------------------------------------------------
// Binary and ternary functions. Arguments: Duals of one type and/or constants for it; constants
// are promoted to Duals without lanes (their lanes are zero, so they cost nothing in a rule).
// ---------------------------------------------------------------------------------------------

// pow has three rules so that a constant exponent never evaluates log(x) and a constant base
// never evaluates x^(p-1).
template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::outer_dual_t<A, B> pow(const A& a, const B& b) {
  using D = ::dualcast::detail::outer_dual_t<A, B>;
  using T = typename D::value_type;
  namespace dd = ::dualcast::detail;
  const T av = dd::level_value<D>(a);
  const T bv = dd::level_value<D>(b);
  const T y = pow(av, bv);
  // d/dx x^p = p x^(p-1); an exactly-zero exponent (all levels) makes x^p constant.
  auto dbase = [&] { return dd::is_zero(bv) ? T(0) : T(bv * pow(av, bv - T(1))); };
  // d/dy c^y = log(c) c^y; 0 at c == 0, y > 0, where c^y is identically 0 near y.
  auto dexp = [&] { return (av == 0 && bv > 0) ? T(0) : T(log(av) * y); };
  if constexpr (dd::stdx::is_same_v<A, D> && dd::stdx::is_same_v<B, D>)
    return dd::chain2(a, dbase(), b, dexp(), y);
  else if constexpr (dd::stdx::is_same_v<A, D>)
    return dd::chain(a, y, dbase());
  else
    return dd::chain(b, y, dexp());
}

// atan2(a, b) = angle of (b, a): d/da = b / r^2, d/db = -a / r^2, with r = hypot(a, b) so that
// r^2 neither overflows nor underflows.
template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::outer_dual_t<A, B> atan2(const A& a_, const B& b_) {
  using D = ::dualcast::detail::outer_dual_t<A, B>;
  using T = typename D::value_type;
  const D a(a_), b(b_);
  const T& av = a.value();
  const T& bv = b.value();
  const T r = hypot(av, bv);
  return ::dualcast::detail::chain2(a, T((bv / r) / r), b, T(-(av / r) / r), T(atan2(av, bv)));
}

template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::outer_dual_t<A, B> hypot(const A& a_, const B& b_) {
  using D = ::dualcast::detail::outer_dual_t<A, B>;
  using T = typename D::value_type;
  const D a(a_), b(b_);
  const T& av = a.value();
  const T& bv = b.value();
  const T y = hypot(av, bv);
  const bool origin = (y == 0);
  return ::dualcast::detail::chain2(a, origin ? T(0) : T(av / y), b, origin ? T(0) : T(bv / y), y);
}

template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::outer_dual_t<A, B> copysign(const A& a_, const B& b_) {
  using D = ::dualcast::detail::outer_dual_t<A, B>;
  using T = typename D::value_type;
  const D a(a_), b(b_);
  const bool same = ::dualcast::detail::signbit(primal(a)) == ::dualcast::detail::signbit(primal(b));
  return ::dualcast::detail::chain(a, T(copysign(a.value(), b.value())), same ? T(1) : T(-1));
}

// Selections return one argument whole (value and partials), so ties are decided by the
// comparison alone: the first argument wins.
template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::outer_dual_t<A, B> min(const A& a_, const B& b_) {
  using D = ::dualcast::detail::outer_dual_t<A, B>;
  const D a(a_), b(b_);
  return (b < a) ? b : a;
}

template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::outer_dual_t<A, B> max(const A& a_, const B& b_) {
  using D = ::dualcast::detail::outer_dual_t<A, B>;
  const D a(a_), b(b_);
  return (a < b) ? b : a;
}

template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::outer_dual_t<A, B> fmin(const A& a_, const B& b_) {
  using D = ::dualcast::detail::outer_dual_t<A, B>;
  const D a(a_), b(b_);
  return (a != a) ? b : ((b != b) ? a : ((b < a) ? b : a));
}

template <class A, class B>
  requires(::dualcast::detail::dual_args<A, B>)
DUALCAST_HD ::dualcast::detail::outer_dual_t<A, B> fmax(const A& a_, const B& b_) {
  using D = ::dualcast::detail::outer_dual_t<A, B>;
  const D a(a_), b(b_);
  return (a != a) ? b : ((b != b) ? a : ((a < b) ? b : a));
}

// fma(a, b, c) = a*b + c with one rounding in the value; d = b da + a db + dc.
template <class A, class B, class C>
  requires(::dualcast::detail::dual_args<A, B, C>)
DUALCAST_HD ::dualcast::detail::outer_dual_t<A, B, C> fma(const A& a_, const B& b_, const C& c_) {
  using D = ::dualcast::detail::outer_dual_t<A, B, C>;
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
DUALCAST_HD ::dualcast::detail::outer_dual_t<A, B> select(C cond, const A& a, const B& b) {
  using D = ::dualcast::detail::outer_dual_t<A, B>;
  return cond ? D(a) : D(b);
}

}  // namespace dualcast::math
