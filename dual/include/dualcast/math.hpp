// Scalar math for float/double in dualcast::math: the reference primal formulas every layer shares.
#pragma once

#include "dualcast/host_device.hpp"

#if !DUALCAST_RTC
#include <cmath>
#include <concepts>
#endif

namespace dualcast {
namespace detail {

// The scalar overloads are constrained to real floating-point types so that they never compete
// with overloads for other number-like types (Dual, jit::Var, user types with conversions).
#if DUALCAST_RTC
template <class T>
concept floating_point = stdx::is_floating_point_v<T>;
#else
template <class T>
concept floating_point = std::floating_point<T>;
#endif

// Arithmetic, but not bool: `x * true` is almost certainly a bug, and a traced boolean must not
// be mistaken for a number either.
template <class T>
concept arithmetic = stdx::is_arithmetic_v<T> && !stdx::is_same_v<T, bool>;

// Two arithmetic types of which at least one is floating, not both the same: pow(x, 2), max(x, 0).
template <class A, class B>
concept mixed_real = arithmetic<A> && arithmetic<B> && !stdx::is_same_v<A, B> &&
                     (floating_point<A> || floating_point<B>);

// libm, spelled once per platform. On the host the std:: overloads keep float in float (and
// allow long double); under CUDA the C names (expf/exp) are the device builtins NVRTC knows
// without any header.
namespace libm {
#if DUALCAST_CUDA
#define DUALCAST_LIBM_1(fn)                                        \
  DUALCAST_HD inline float fn(float x) { return ::fn##f(x); }      \
  DUALCAST_HD inline double fn(double x) { return ::fn(x); }
#define DUALCAST_LIBM_2(fn)                                                         \
  DUALCAST_HD inline float fn(float x, float y) { return ::fn##f(x, y); }          \
  DUALCAST_HD inline double fn(double x, double y) { return ::fn(x, y); }
#define DUALCAST_LIBM_3(fn)                                                                 \
  DUALCAST_HD inline float fn(float x, float y, float z) { return ::fn##f(x, y, z); }      \
  DUALCAST_HD inline double fn(double x, double y, double z) { return ::fn(x, y, z); }
#else
#define DUALCAST_LIBM_1(fn) \
  template <class T>        \
  inline T fn(T x) {        \
    return std::fn(x);      \
  }
#define DUALCAST_LIBM_2(fn) \
  template <class T>        \
  inline T fn(T x, T y) {   \
    return std::fn(x, y);   \
  }
#define DUALCAST_LIBM_3(fn)    \
  template <class T>           \
  inline T fn(T x, T y, T z) { \
    return std::fn(x, y, z);   \
  }
#endif
DUALCAST_LIBM_1(exp)
DUALCAST_LIBM_1(expm1)
DUALCAST_LIBM_1(log)
DUALCAST_LIBM_1(log1p)
DUALCAST_LIBM_1(log2)
DUALCAST_LIBM_1(log10)
DUALCAST_LIBM_1(sqrt)
DUALCAST_LIBM_1(cbrt)
DUALCAST_LIBM_1(sin)
DUALCAST_LIBM_1(cos)
DUALCAST_LIBM_1(tan)
DUALCAST_LIBM_1(asin)
DUALCAST_LIBM_1(acos)
DUALCAST_LIBM_1(atan)
DUALCAST_LIBM_1(sinh)
DUALCAST_LIBM_1(cosh)
DUALCAST_LIBM_1(tanh)
DUALCAST_LIBM_1(asinh)
DUALCAST_LIBM_1(acosh)
DUALCAST_LIBM_1(atanh)
DUALCAST_LIBM_1(erf)
DUALCAST_LIBM_1(erfc)
DUALCAST_LIBM_1(fabs)
DUALCAST_LIBM_1(floor)
DUALCAST_LIBM_1(ceil)
DUALCAST_LIBM_1(round)
DUALCAST_LIBM_1(trunc)
DUALCAST_LIBM_2(pow)
DUALCAST_LIBM_2(atan2)
DUALCAST_LIBM_2(hypot)
DUALCAST_LIBM_2(copysign)
DUALCAST_LIBM_3(fma)
#undef DUALCAST_LIBM_1
#undef DUALCAST_LIBM_2
#undef DUALCAST_LIBM_3
}  // namespace libm

// signbit without <cmath>'s macro games: true for -0.0 and negative NaNs as well.
template <floating_point T>
DUALCAST_HD inline bool signbit(T x) {
  return libm::copysign(T(1), x) < T(0);
}

}  // namespace detail

// Scalar math. Every function here has a Dual overload (dual_math.hpp) with the same primal
// value, so a generic lambda gives bit-identical values on T and on Dual<T, N>.
//
// Example:
//   using namespace dualcast::math;
//   double s = sigmoid(0.5) * tanh(2.0);          // also works for float, Dual, jit::Var
//   float  r = relu(-1.0f) + max(2.0f, 0);        // mixed arithmetic promotes like std::pow
namespace math {

#define DUALCAST_SCALAR_1(fn)                     \
  template <detail::floating_point T>                     \
  DUALCAST_HD inline T fn(T x) {                  \
    return detail::libm::fn(x);                   \
  }
DUALCAST_SCALAR_1(exp)
DUALCAST_SCALAR_1(expm1)
DUALCAST_SCALAR_1(log)
DUALCAST_SCALAR_1(log1p)
DUALCAST_SCALAR_1(log2)
DUALCAST_SCALAR_1(log10)
DUALCAST_SCALAR_1(sqrt)
DUALCAST_SCALAR_1(cbrt)
DUALCAST_SCALAR_1(sin)
DUALCAST_SCALAR_1(cos)
DUALCAST_SCALAR_1(tan)
DUALCAST_SCALAR_1(asin)
DUALCAST_SCALAR_1(acos)
DUALCAST_SCALAR_1(atan)
DUALCAST_SCALAR_1(sinh)
DUALCAST_SCALAR_1(cosh)
DUALCAST_SCALAR_1(tanh)
DUALCAST_SCALAR_1(asinh)
DUALCAST_SCALAR_1(acosh)
DUALCAST_SCALAR_1(atanh)
DUALCAST_SCALAR_1(erf)
DUALCAST_SCALAR_1(erfc)
DUALCAST_SCALAR_1(fabs)
DUALCAST_SCALAR_1(floor)
DUALCAST_SCALAR_1(ceil)
DUALCAST_SCALAR_1(round)
DUALCAST_SCALAR_1(trunc)
#undef DUALCAST_SCALAR_1

template <detail::floating_point T>
DUALCAST_HD inline T abs(T x) {
  return detail::libm::fabs(x);
}

// The three activation functions are defined here, once, by formula: backends must lower them
// to exactly these expressions (in T's precision) so that all layers agree bit for bit.
template <detail::floating_point T>
DUALCAST_HD inline T sigmoid(T x) {
  return T(1) / (T(1) + detail::libm::exp(-x));
}

template <detail::floating_point T>
DUALCAST_HD inline T softplus(T x) {
  return x > T(0) ? x + detail::libm::log1p(detail::libm::exp(-x))
                  : detail::libm::log1p(detail::libm::exp(x));
}

// +0 for x <= 0 (also for -0), NaN stays NaN.
template <detail::floating_point T>
DUALCAST_HD inline T relu(T x) {
  return x > T(0) ? x : (x != x ? x : T(0));
}

// Binary functions: same-type overloads, plus mixed arithmetic that promotes to the common type
// (pow(x, 2) stays float for float x, as std::pow does for integers).
#define DUALCAST_SCALAR_2(fn, ...)                                    \
  template <detail::floating_point T>                                         \
  DUALCAST_HD inline T fn(T a, T b) {                                 \
    return __VA_ARGS__;                                               \
  }                                                                   \
  template <class A, class B>                                         \
    requires detail::mixed_real<A, B>                                 \
  DUALCAST_HD inline detail::stdx::common_type_t<A, B> fn(A a, B b) { \
    using R = detail::stdx::common_type_t<A, B>;                      \
    return fn(R(a), R(b));                                            \
  }
DUALCAST_SCALAR_2(pow, detail::libm::pow(a, b))
DUALCAST_SCALAR_2(atan2, detail::libm::atan2(a, b))
DUALCAST_SCALAR_2(hypot, detail::libm::hypot(a, b))
DUALCAST_SCALAR_2(copysign, detail::libm::copysign(a, b))
// Ties (and min(+0, -0)) return the first argument; a NaN first argument is returned.
DUALCAST_SCALAR_2(min, (b < a) ? b : a)
DUALCAST_SCALAR_2(max, (a < b) ? b : a)
// IEEE fmin/fmax: a NaN loses to a number; ties return the first argument.
DUALCAST_SCALAR_2(fmin, (a != a) ? b : ((b != b) ? a : ((b < a) ? b : a)))
DUALCAST_SCALAR_2(fmax, (a != a) ? b : ((b != b) ? a : ((a < b) ? b : a)))
#undef DUALCAST_SCALAR_2

template <detail::floating_point T>
DUALCAST_HD inline T fma(T a, T b, T c) {
  return detail::libm::fma(a, b, c);
}
template <class A, class B, class C>
  requires detail::arithmetic<A> && detail::arithmetic<B> && detail::arithmetic<C> &&
           (detail::floating_point<A> || detail::floating_point<B> || detail::floating_point<C>) &&
           (!(detail::stdx::is_same_v<A, B> && detail::stdx::is_same_v<B, C>))
DUALCAST_HD inline detail::stdx::common_type_t<A, B, C> fma(A a, B b, C c) {
  using R = detail::stdx::common_type_t<A, B, C>;
  return detail::libm::fma(R(a), R(b), R(c));
}

// Branch-free choice. The condition must be a real bool so that traced booleans (which need the
// tracer's own select) are never converted silently.
template <class C, detail::floating_point T>
  requires detail::stdx::is_same_v<C, bool>
DUALCAST_HD inline T select(C cond, T a, T b) {
  return cond ? a : b;
}
template <class C, class A, class B>
  requires detail::stdx::is_same_v<C, bool> && detail::mixed_real<A, B>
DUALCAST_HD inline detail::stdx::common_type_t<A, B> select(C cond, A a, B b) {
  using R = detail::stdx::common_type_t<A, B>;
  return cond ? R(a) : R(b);
}

}  // namespace math
}  // namespace dualcast
