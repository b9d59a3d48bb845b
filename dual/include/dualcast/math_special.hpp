// Special functions libm lacks (erfinv, digamma), written once so host, nvcc and NVRTC agree.
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

// digamma(x) = d/dx lgamma(x). Around its positive root x0 a Taylor series (coefficients from
// mpmath, 50 digits) avoids the cancellation of the recurrence; elsewhere on x > 0 the
// recurrence brings x into that window or up to 10, where the asymptotic series is used.
// x < 0 by reflection: psi(x) = psi(1 - x) - pi cot(pi x). Poles (x = 0, -1, ...) give NaN.
DUALCAST_HD inline double digamma_taylor(double dx) {
  constexpr double c[] = {
      0.967672245447621170427,     -0.442763168983592106093,     0.258499760955651010624,
      -0.163942705442406527504,    0.107824050691262365757,      -0.0721995612564547109261,
      0.0488042881641431072251,    -0.0331611264748473592923,    0.0225976482322181046596,
      -0.0154247659049489591388,   0.0105387916166121753881,     -0.00720453438635686824097,
      0.00492678139572985344635,   -0.00336980165543932808279,   0.00230512632673492783694,
      -0.00157693677143019725927,  0.00107882520191629658069,    -0.000738070938996005129566,
      0.000504953265834602035177,  -0.000345468025106307699556,  0.000236356015640270527924,
      -0.000161706220919748034494, 0.000110633727687474109041,   -0.0000756917958219506591924,
      0.0000517857579522208086899, -0.0000354300709476596063157, 0.0000242400661186013176527,
      -0.0000165842422718541333752, 0.0000113463845846638498067, -0.00000776281766846209442527,
      0.00000531106092088986338732, -0.00000363365078980104566837, 0.0000024860227331295379489,
      -0.00000170085388543326065825, 0.00000116366753635488427029, -7.96142543124197040035e-7};
  constexpr int n = sizeof(c) / sizeof(c[0]);
  double s = c[n - 1];
  for (int k = n - 2; k >= 0; --k) s = c[k] + s * dx;
  return s * dx;
}

DUALCAST_HD inline double digamma_positive(double x) {
  constexpr double x0_hi = 1.4616321449683622, x0_lo = 9.549995429965697e-17;
  if (x >= 10.0) {
    const double r = 1.0 / x, r2 = r * r;
    // -sum B_2k / (2k x^2k), k = 1..7
    const double s =
        r2 * (-1.0 / 12 +
              r2 * (1.0 / 120 +
                    r2 * (-1.0 / 252 + r2 * (1.0 / 240 + r2 * (-1.0 / 132 + r2 * (691.0 / 32760 - r2 / 12))))));
    return d_log(x) - 0.5 * r + s;
  }
  if (x < x0_hi - 0.5) return digamma_taylor(((x + 1.0) - x0_hi) - x0_lo) - 1.0 / x;
  // Shift down into [x0 - 1/2, x0 + 1/2): every correction term is positive.
  double sum = 0;
  while (x >= x0_hi + 0.5) {
    x -= 1.0;
    sum += 1.0 / x;
  }
  return digamma_taylor((x - x0_hi) - x0_lo) + sum;
}

DUALCAST_HD inline double digamma(double x) {
  if (x != x) return x;
  if (x > 0) return x == d_inf() ? x : digamma_positive(x);
  const double t = x - d_floor(x);  // exact; in [0, 1)
  if (t == 0) return (x - x) / (x - x);  // pole or -inf: NaN
  // pi cot(pi t) with the tangent's argument within pi/4 (well conditioned): 1/tan(pi t) near
  // the poles (t - 1 is exact), tan(pi (1/2 - t)) in the middle (1/2 - t is exact).
  const double cot = t < 0.25 ? 1.0 / d_tan(kPi * t) : t > 0.75 ? 1.0 / d_tan(kPi * (t - 1.0)) : d_tan(kPi * (0.5 - t));
  return digamma_positive(1.0 - x) - kPi * cot;
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
