// Special functions libm lacks (erfinv, trigamma; digamma is digamma_steps.hpp), written once so host, nvcc and NVRTC agree.
#pragma once

#include "dualcast/host_device.hpp"

#if !DUALCAST_RTC
#include <cmath>
#endif

namespace dualcast::detail::special {

// Everything here is evaluated in double (float callers round the double result once), so the
// float results are correctly rounded up to the double error, and the code exists only once.
#if DUALCAST_CUDA
DUALCAST_HD inline double d_log(double x) { return ::log(x); }
DUALCAST_HD inline double d_exp(double x) { return ::exp(x); }
DUALCAST_HD inline double d_erf(double x) { return ::erf(x); }
DUALCAST_HD inline double d_erfc(double x) { return ::erfc(x); }
DUALCAST_HD inline double d_sqrt(double x) { return ::sqrt(x); }
DUALCAST_HD inline double d_tan(double x) { return ::tan(x); }
DUALCAST_HD inline double d_floor(double x) { return ::floor(x); }
DUALCAST_HD inline double d_sin(double x) { return ::sin(x); }
DUALCAST_HD inline double d_fma(double x, double y, double z) { return ::fma(x, y, z); }
#else
inline double d_log(double x) { return std::log(x); }
inline double d_exp(double x) { return std::exp(x); }
inline double d_erf(double x) { return std::erf(x); }
inline double d_erfc(double x) { return std::erfc(x); }
inline double d_sqrt(double x) { return std::sqrt(x); }
inline double d_tan(double x) { return std::tan(x); }
inline double d_floor(double x) { return std::floor(x); }
inline double d_sin(double x) { return std::sin(x); }
inline double d_fma(double x, double y, double z) { return std::fma(x, y, z); }
#endif

// +inf without <cmath> or a division by zero (which NVRTC warns about).
DUALCAST_HD inline double d_inf() {
  double x = 1e300;
  return x * 1e300;
}

inline constexpr double kPi = 3.141592653589793238462643383279502884;
inline constexpr double kTwoOverSqrtPi = 1.128379167095512573896158903121545172;

// erfinv(y): Giles' single-precision approximation ("Approximating the erfinv function", GPU
// Computing Gems, 2011) as a start, then Newton steps on erf (|y| <= 1/2) or on log(erfc) (the
// tail: 1 - |y| is exact there, and log(erfc) is nearly quadratic, so Newton cannot overshoot).
//
// With deriv != nullptr it also stores erfinv'(y) = sqrt(pi)/2 exp(x^2), evaluated with x as an
// unevaluated sum hi + lo (the last Newton step kept in two parts) and x^2 split exactly with
// fma: the rounding of x alone, amplified by 2 x^2 (up to 70 at the tail), would cost ~70 ulp.
DUALCAST_HD inline double erfinv(double y, double* deriv = nullptr) {
  if (deriv != nullptr) *deriv = (y - y) / (y - y);
  if (y != y) return y;
  const double a = y < 0 ? -y : y;
  if (a > 1) return (y - y) / (y - y);  // NaN
  if (a == 1) {
    if (deriv != nullptr) *deriv = d_inf();
    return y * d_inf();  // +-inf
  }
  if (a == 0) {
    if (deriv != nullptr) *deriv = 0.886226925452758013649083741671139;
    return y;  // keeps -0
  }
  double w = -d_log((1.0 - a) * (1.0 + a));
  double p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = d_sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double x = p * a, step = 0;
  if (a <= 0.5) {
    for (int i = 0; i < 3; ++i) {
      x += step;
      step = -(d_erf(x) - a) / (kTwoOverSqrtPi * d_exp(-x * x));
    }
  } else {
    const double q = 1.0 - a;  // exact (Sterbenz)
    const double lq = d_log(q);
    for (int i = 0; i < 4; ++i) {
      x += step;
      const double e = d_erfc(x);
      // The last step on erfc itself: log's absolute error (~36 eps at the tail) would cost ~16 ulp.
      step = (i < 3 ? (d_log(e) - lq) * e : e - q) / (kTwoOverSqrtPi * d_exp(-x * x));
    }
  }
  const double hi = x + step;
  if (deriv != nullptr) {
    const double lo = (x - hi) + step;
    const double s = hi * hi;
    const double s_lo = d_fma(hi, hi, -s) + 2.0 * hi * lo;
    const double e = d_exp(s);
    *deriv = 0.886226925452758013649083741671139 * (e + e * s_lo);
  }
  return y < 0 ? -hi : hi;
}

// trigamma(x) = d/dx digamma(x). For x > 0 the recurrence psi1(x) = psi1(x + 1) + 1/x^2 adds
// positive terms only, up to x >= 10 and the asymptotic series; x < 0 by reflection,
// psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x) (sin(pi t) with t = x - floor(x) exact).
DUALCAST_HD inline double trigamma(double x) {
  if (x != x) return x;
  if (x <= 0) {
    const double t = x - d_floor(x);
    if (t == 0) return (x - x) / (x - x);
    const double s = d_sin(kPi * (t <= 0.5 ? t : 1.0 - t));
    return (kPi / s) * (kPi / s) - trigamma(1.0 - x);
  }
  if (x == d_inf()) return 0.0;
  double sum = 0;
  while (x < 10.0) {
    sum += 1.0 / (x * x);
    x += 1.0;
  }
  const double r = 1.0 / x, r2 = r * r;
  // 1/x + 1/(2x^2) + sum B_2k / x^(2k+1), k = 1..7
  const double s =
      r * (1.0 + r * (0.5 + r * (1.0 / 6 +
                                 r2 * (-1.0 / 30 +
                                       r2 * (1.0 / 42 + r2 * (-1.0 / 30 + r2 * (5.0 / 66 + r2 * (-691.0 / 2730 + r2 * 7.0 / 6))))))));
  return sum + s;
}

}  // namespace dualcast::detail::special
