// Scalar math for float/double in dualcast::math: the reference primal formulas every layer shares.
#pragma once

#include "dualcast/activation_steps.hpp"
#include "dualcast/digamma_steps.hpp"
#include "dualcast/host_device.hpp"
#include "dualcast/math_special.hpp"

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
DUALCAST_LIBM_1(exp2)
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
DUALCAST_LIBM_1(rint)
DUALCAST_LIBM_1(nearbyint)
DUALCAST_LIBM_1(tgamma)
DUALCAST_LIBM_1(lgamma)
DUALCAST_LIBM_1(logb)
DUALCAST_LIBM_2(pow)
DUALCAST_LIBM_2(fmod)
DUALCAST_LIBM_2(remainder)
DUALCAST_LIBM_2(fdim)
DUALCAST_LIBM_2(nextafter)
DUALCAST_LIBM_2(atan2)
DUALCAST_LIBM_2(hypot)
DUALCAST_LIBM_2(copysign)
DUALCAST_LIBM_3(fma)
#undef DUALCAST_LIBM_1
#undef DUALCAST_LIBM_2
#undef DUALCAST_LIBM_3
// The ones with an int argument or result.
#if DUALCAST_CUDA
DUALCAST_HD inline float ldexp(float x, int n) { return ::ldexpf(x, n); }
DUALCAST_HD inline double ldexp(double x, int n) { return ::ldexp(x, n); }
DUALCAST_HD inline float scalbn(float x, int n) { return ::scalbnf(x, n); }
DUALCAST_HD inline double scalbn(double x, int n) { return ::scalbn(x, n); }
DUALCAST_HD inline int ilogb(float x) { return ::ilogbf(x); }
DUALCAST_HD inline int ilogb(double x) { return ::ilogb(x); }
DUALCAST_HD inline float frexp(float x, int* e) { return ::frexpf(x, e); }
DUALCAST_HD inline double frexp(double x, int* e) { return ::frexp(x, e); }
DUALCAST_HD inline float modf(float x, float* i) { return ::modff(x, i); }
DUALCAST_HD inline double modf(double x, double* i) { return ::modf(x, i); }
DUALCAST_HD inline float remquo(float x, float y, int* q) { return ::remquof(x, y, q); }
DUALCAST_HD inline double remquo(double x, double y, int* q) { return ::remquo(x, y, q); }
DUALCAST_HD inline long lround(float x) { return ::lroundf(x); }
DUALCAST_HD inline long lround(double x) { return ::lround(x); }
DUALCAST_HD inline long long llround(float x) { return ::llroundf(x); }
DUALCAST_HD inline long long llround(double x) { return ::llround(x); }
DUALCAST_HD inline long lrint(float x) { return ::lrintf(x); }
DUALCAST_HD inline long lrint(double x) { return ::lrint(x); }
DUALCAST_HD inline long long llrint(float x) { return ::llrintf(x); }
DUALCAST_HD inline long long llrint(double x) { return ::llrint(x); }
#else
template <class T>
inline T ldexp(T x, int n) { return std::ldexp(x, n); }
template <class T>
inline T scalbn(T x, int n) { return std::scalbn(x, n); }
template <class T>
inline int ilogb(T x) { return std::ilogb(x); }
template <class T>
inline T frexp(T x, int* e) { return std::frexp(x, e); }
template <class T>
inline T modf(T x, T* i) { return std::modf(x, i); }
template <class T>
inline T remquo(T x, T y, int* q) { return std::remquo(x, y, q); }
template <class T>
inline long lround(T x) { return std::lround(x); }
template <class T>
inline long long llround(T x) { return std::llround(x); }
template <class T>
inline long lrint(T x) { return std::lrint(x); }
template <class T>
inline long long llrint(T x) { return std::llrint(x); }
#endif
}  // namespace libm

// The smallest normal number (numeric_limits<T>::min() without <limits>, which NVRTC lacks).
template <floating_point T>
DUALCAST_HD constexpr T min_normal() {
  if constexpr (sizeof(T) == sizeof(float))
    return T(1.17549435082228750797e-38f);
  else if constexpr (sizeof(T) == sizeof(double))
    return T(2.2250738585072013830902327173324040642e-308);
  else
    return T(3.36210314311209350626e-4932L);
}

// The steps' arithmetic on plain T (activation_steps.hpp, digamma_steps.hpp, hypot_steps.hpp): one
// C++ operation per step, so scalar code, Dual and the JIT backends' lowerings agree bit for bit.
template <floating_point T>
struct ScalarSteps {
  using V = T;
  DUALCAST_HD T Const(double c) const { return T(c); }
  DUALCAST_HD T Add(const T& a, const T& b) const { return a + b; }
  DUALCAST_HD T Sub(const T& a, const T& b) const { return a - b; }
  DUALCAST_HD T Mul(const T& a, const T& b) const { return a * b; }
  DUALCAST_HD T Div(const T& a, const T& b) const { return a / b; }
  DUALCAST_HD T Neg(const T& a) const { return -a; }
  DUALCAST_HD T Abs(const T& a) const { return libm::fabs(a); }
  DUALCAST_HD T Exp(const T& a) const { return libm::exp(a); }
  DUALCAST_HD T Expm1(const T& a) const { return libm::expm1(a); }
  DUALCAST_HD T Copysign(const T& a, const T& b) const { return libm::copysign(a, b); }
  DUALCAST_HD T Hypot(const T& a, const T& b) const { return libm::hypot(a, b); }
  DUALCAST_HD bool Lt(const T& a, const T& b) const { return a < b; }
  DUALCAST_HD bool Eq(const T& a, const T& b) const { return a == b; }
  DUALCAST_HD T Select(bool c, const T& a, const T& b) const { return c ? a : b; }
  DUALCAST_HD T Log(const T& a) const { return libm::log(a); }
  DUALCAST_HD T Floor(const T& a) const { return libm::floor(a); }
  DUALCAST_HD T Fma(const T& a, const T& b, const T& c) const { return libm::fma(a, b, c); }
  DUALCAST_HD T Log2(const T& a) const { return libm::log2(a); }
  // ldexp with a T exponent, as the IR's: NaN passes through, the exponent saturates.
  DUALCAST_HD T Ldexp(const T& a, const T& n) const {
    if (n != n) return n;
    return libm::ldexp(a, n < T(-100000) ? -100000 : n > T(100000) ? 100000 : int(n));
  }
};
// The value of an activation (activation_steps.hpp) in T's own arithmetic.
template <Activation A, floating_point T>
DUALCAST_HD inline T activation_value(T x) {
  ScalarSteps<T> m;
  return activation_steps(A, m, x).value;
}
template <floating_point T>
DUALCAST_HD inline T softplus_from_exp(const T& x, const T& e) {
  return x > T(0) ? x + libm::log1p(e) : libm::log1p(e);
}

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
DUALCAST_SCALAR_1(exp2)
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
DUALCAST_SCALAR_1(rint)       // current rounding mode (ties to even by default)
DUALCAST_SCALAR_1(nearbyint)  // as rint, without raising FE_INEXACT
DUALCAST_SCALAR_1(tgamma)
DUALCAST_SCALAR_1(lgamma)     // log|gamma(x)|
DUALCAST_SCALAR_1(logb)
#undef DUALCAST_SCALAR_1

template <detail::floating_point T>
DUALCAST_HD inline T abs(T x) {
  return detail::libm::fabs(x);
}

// The activation functions are defined here, once, by formula: backends must lower them to
// exactly these expressions (in T's precision) so that all layers agree bit for bit.
// tanh and sigmoid: activation_steps.hpp (value and derivative from one exponential; sigmoid
// keeps its subnormal tail exp(x) below -88.7 in float, -709.8 in double). tanh is fdlibm's
// formula, so with glibc it equals <cmath>'s ::tanh bit for bit (an unqualified tanh(double)
// under `using namespace dualcast::math` finds ::tanh); another libm may differ in the last bit.
// fast_tanh and fast_sigmoid: the cheaper formulas with absolute error bounds
// (activation_steps.hpp; docs/fast-activations.md).
template <detail::floating_point T>
DUALCAST_HD inline T tanh(T x) { return detail::activation_value<detail::Activation::kTanh>(x); }
template <detail::floating_point T>
DUALCAST_HD inline T sigmoid(T x) { return detail::activation_value<detail::Activation::kSigmoid>(x); }
template <detail::floating_point T>
DUALCAST_HD inline T fast_tanh(T x) { return detail::activation_value<detail::Activation::kFastTanh>(x); }
template <detail::floating_point T>
DUALCAST_HD inline T fast_sigmoid(T x) {
  return detail::activation_value<detail::Activation::kFastSigmoid>(x);
}

// softplus = max(x, 0) + log1p(e), e = exp(-|x|): no overflow, no cancellation.
template <detail::floating_point T>
DUALCAST_HD inline T softplus(T x) {
  const T e = detail::libm::exp(-detail::libm::fabs(x));
  return detail::softplus_from_exp(x, e);
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
// fmod: a - trunc(a/b) b, exact, sign of a. remainder: a - n b, n = a/b rounded to even; exact.
DUALCAST_SCALAR_2(fmod, detail::libm::fmod(a, b))
DUALCAST_SCALAR_2(remainder, detail::libm::remainder(a, b))
// fdim(a, b) = a > b ? a - b : +0 (NaN if either is NaN).
DUALCAST_SCALAR_2(fdim, detail::libm::fdim(a, b))
DUALCAST_SCALAR_2(nextafter, detail::libm::nextafter(a, b))
// std::min/std::max: ties (and min(+0, -0)) return the first argument; a NaN first argument is
// returned, a NaN second argument is dropped (NumPy's minimum/maximum propagate either).
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


// ---- <cmath> functions with an int argument or result ----

template <detail::floating_point T>
DUALCAST_HD inline T ldexp(T x, int n) {
  return detail::libm::ldexp(x, n);
}
template <detail::floating_point T>
DUALCAST_HD inline T scalbn(T x, int n) {
  return detail::libm::scalbn(x, n);
}
template <detail::floating_point T>
DUALCAST_HD inline int ilogb(T x) {
  return detail::libm::ilogb(x);
}
// x = m * 2^e with 0.5 <= |m| < 1; *e receives e.
template <detail::floating_point T>
DUALCAST_HD inline T frexp(T x, int* e) {
  return detail::libm::frexp(x, e);
}
// Fractional part returned, integral part (with x's sign) stored in *ipart.
template <detail::floating_point T>
DUALCAST_HD inline T modf(T x, T* ipart) {
  return detail::libm::modf(x, ipart);
}

// remainder(x, y), with the low bits and the sign of the quotient in *quo.
template <detail::floating_point T>
DUALCAST_HD inline T remquo(T x, T y, int* quo) {
  return detail::libm::remquo(x, y, quo);
}
// Rounding to integer types (values only: also for Duals, through their value).
template <detail::floating_point T>
DUALCAST_HD inline long lround(T x) {
  return detail::libm::lround(x);
}
template <detail::floating_point T>
DUALCAST_HD inline long long llround(T x) {
  return detail::libm::llround(x);
}
template <detail::floating_point T>
DUALCAST_HD inline long lrint(T x) {
  return detail::libm::lrint(x);
}
template <detail::floating_point T>
DUALCAST_HD inline long long llrint(T x) {
  return detail::libm::llrint(x);
}

// ---- Classification (values only; they also accept Duals through primal(), dual_math.hpp) ----

template <detail::floating_point T>
DUALCAST_HD inline bool isnan(T x) {
  return x != x;
}
template <detail::floating_point T>
DUALCAST_HD inline bool isinf(T x) {
  return x == x && x - x != x - x;
}
template <detail::floating_point T>
DUALCAST_HD inline bool isfinite(T x) {
  return x - x == x - x;
}
template <detail::floating_point T>
DUALCAST_HD inline bool isnormal(T x) {
  const T a = detail::libm::fabs(x);
  return a >= detail::min_normal<T>() && a - a == a - a;
}
template <detail::floating_point T>
DUALCAST_HD inline bool signbit(T x) {
  return detail::signbit(x);
}

// ---- ML and simulation staples ----

// -1, +1, or x itself for +-0 and NaN (so sign(-0.0) = -0.0 and NaN propagates).
template <detail::floating_point T>
DUALCAST_HD inline T sign(T x) {
  return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);
}

template <detail::floating_point T>
DUALCAST_HD inline T square(T x) {
  return x * x;
}

// 1 / sqrt(x), two correctly rounded steps (<= 1.5 ulp); rsqrt(0) = +inf, rsqrt(-0) = -inf.
template <detail::floating_point T>
DUALCAST_HD inline T rsqrt(T x) {
  return T(1) / detail::libm::sqrt(x);
}

// std::clamp: lo if x < lo, hi if hi < x, else x (a NaN x stays NaN; x on a bound returns x).
template <detail::floating_point T>
DUALCAST_HD inline T clamp(T x, T lo, T hi) {
  return (x < lo) ? lo : ((hi < x) ? hi : x);
}
template <class A, class B, class C>
  requires detail::arithmetic<A> && detail::arithmetic<B> && detail::arithmetic<C> &&
           (detail::floating_point<A> || detail::floating_point<B> || detail::floating_point<C>) &&
           (!(detail::stdx::is_same_v<A, B> && detail::stdx::is_same_v<B, C>))
DUALCAST_HD inline detail::stdx::common_type_t<A, B, C> clamp(A x, B lo, C hi) {
  using R = detail::stdx::common_type_t<A, B, C>;
  return clamp(R(x), R(lo), R(hi));
}

// log(exp(a) + exp(b)) without overflow, as NumPy: a == b gives a + log 2 (also for +-inf).
template <detail::floating_point T>
DUALCAST_HD inline T logaddexp(T a, T b) {
  if (a == b) return a + T(0.693147180559945309417232121458176568);
  const T d = a - b;
  if (d > T(0)) return a + detail::libm::log1p(detail::libm::exp(-d));
  if (d <= T(0)) return b + detail::libm::log1p(detail::libm::exp(d));
  return d;  // NaN
}
template <class A, class B>
  requires detail::mixed_real<A, B>
DUALCAST_HD inline detail::stdx::common_type_t<A, B> logaddexp(A a, B b) {
  using R = detail::stdx::common_type_t<A, B>;
  return logaddexp(R(a), R(b));
}

// Inverse error function on [-1, 1] (+-inf at +-1, NaN outside): in double, about 1.2 ulp at
// worst (1.19 measured at y = -0.1385: the last Newton step is as good as libm's erf), float
// rounded once from it.
template <detail::floating_point T>
DUALCAST_HD inline T erfinv(T y) {
  return T(detail::special::erfinv(double(y)));
}

// d/dx lgamma(x); NaN at the poles 0, -1, -2, ...
template <detail::floating_point T>
DUALCAST_HD inline T digamma(T x) {
  detail::ScalarSteps<double> m;  // in double, rounded once (as the jvp rules do)
  const double v = double(x);
  return T(v > 0 ? detail::digamma_positive_steps(m, v) : detail::digamma_nonpositive_steps(m, v));
}

// d/dx digamma(x) (the first polygamma function); NaN at the poles.
template <detail::floating_point T>
DUALCAST_HD inline T trigamma(T x) {
  return T(detail::special::trigamma(double(x)));
}

// x^n for an integer n: the libm pow value (exact-rounded for small n), with an int exponent so
// that the derivative is the plain n x^(n-1) and a negative base is fine.
template <detail::floating_point T>
DUALCAST_HD inline T powi(T x, int n) {
  return detail::libm::pow(x, T(n));
}

// C++20 std::lerp: a + t (b - a), exact at t = 0 and t = 1, monotonic in t (libstdc++'s formula).
template <detail::floating_point T>
DUALCAST_HD inline T lerp(T a, T b, T t) {
  if ((a <= T(0) && b >= T(0)) || (a >= T(0) && b <= T(0))) return t * b + (T(1) - t) * a;
  if (t == T(1)) return b;
  const T x = a + t * (b - a);
  return (t > T(1)) == (b > a) ? (b < x ? x : b) : (x < b ? x : b);
}

}  // namespace math
}  // namespace dualcast
