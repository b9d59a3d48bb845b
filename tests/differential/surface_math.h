// The Array math vocabulary the surface tester draws: one generic definition per function for the runtime (Array) and the reference (double).
//
// Why generic: the same expression, `log(x * x + 0.5)`, is the program the
// runtime runs (dualcast::log of a pending broadcast, found by argument-
// dependent lookup) and the reference value (std::log, or a plain formula
// here where <cmath> has none), so the two cannot drift apart. Functions with
// a restricted domain get an argument mapped into it by ordinary arithmetic
// (x * x + 0.5 > 0; tanh(x) * 0.9 in (-1, 1)), which is part of what is
// tested. Every derivative is checked against finite differences of the
// double reference, never against a formula.
//
// Example:
//   Array<double> y = MathOf(kMathLog, x);    // dualcast::log(x * x + 0.5)
//   double r = MathOf(kMathLog, 0.25);         // std::log(0.5625)
#pragma once

#include <cmath>
#include <string>

#include "absl/strings/str_replace.h"

namespace dualcast::surface {

// Reference definitions of what <cmath> lacks (dualcast's conventions: the
// function's mathematical value; fast_* are the exact functions they approximate).
inline double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
inline double softplus(double x) { return std::log1p(std::exp(-std::abs(x))) + std::max(x, 0.0); }
inline double relu(double x) { return x > 0 ? x : 0; }
inline double fast_tanh(double x) { return std::tanh(x); }
inline double fast_sigmoid(double x) { return sigmoid(x); }
// Not std::min/max: as templates on one type they would outrank dualcast's for two Arrays.
inline double min(double a, double b) { return a < b ? a : b; }
inline double max(double a, double b) { return a > b ? a : b; }

// How each function is written, `@` standing for the argument (Describe).
inline constexpr const char* kMathPatterns[] = {
    "dc::sin(@)",                // 0 (the first five: the original set)
    "dc::tanh(@)",
    "dc::sigmoid(@)",
    "dc::exp(@)",
    "dc::abs(@)",
    "dc::cos(@)",                // 5
    "dc::tan(dc::tanh(@))",
    "dc::atan(@)",
    "dc::sinh(@)",
    "dc::cosh(@)",
    "dc::asinh(@)",              // 10
    "dc::acosh(@ * @ + 1.5)",
    "dc::asin(dc::tanh(@) * 0.9)",
    "dc::acos(dc::tanh(@) * 0.9)",
    "dc::atanh(dc::tanh(@) * 0.9)",
    "dc::expm1(@)",              // 15
    "dc::log(@ * @ + 0.5)",
    "dc::log1p(@ * @)",
    "dc::log2(@ * @ + 0.5)",
    "dc::log10(@ * @ + 0.5)",
    "dc::sqrt(@ * @ + 0.5)",     // 20
    "dc::cbrt(@ * @ + 0.5)",
    "dc::erf(@)",
    "dc::erfc(@)",
    "dc::softplus(@)",
    "dc::relu(@)",               // 25
    "dc::fabs(@)",
    "dc::floor(@ * 3.0)",
    "dc::ceil(@ * 3.0)",
    "dc::round(@ * 3.0)",
    "dc::trunc(@ * 3.0)",          // 30
    "dc::fast_tanh(@)",
    "dc::fast_sigmoid(@)",
    "-@",
};
inline constexpr int kMathCount = sizeof(kMathPatterns) / sizeof(kMathPatterns[0]);
inline constexpr int kMathLog = 16;

// Function `which` of x: an Array (the runtime) or a double (the reference).
template <class X>
X MathOf(int which, const X& x) {
  using std::abs, std::acos, std::acosh, std::asin, std::asinh, std::atan, std::atanh, std::cbrt,
      std::ceil, std::cos, std::cosh, std::erf, std::erfc, std::exp, std::expm1, std::fabs, std::floor,
      std::log, std::log10, std::log1p, std::log2, std::round, std::sin, std::sinh, std::sqrt, std::tan,
      std::tanh, std::trunc;
  switch (which) {
    case 0: return sin(x);
    case 1: return tanh(x);
    case 2: return sigmoid(x);
    case 3: return exp(x);
    case 4: return abs(x);
    case 5: return cos(x);
    case 6: return tan(tanh(x));
    case 7: return atan(x);
    case 8: return sinh(x);
    case 9: return cosh(x);
    case 10: return asinh(x);
    case 11: return acosh(x * x + 1.5);
    case 12: return asin(tanh(x) * 0.9);
    case 13: return acos(tanh(x) * 0.9);
    case 14: return atanh(tanh(x) * 0.9);
    case 15: return expm1(x);
    case 16: return log(x * x + 0.5);
    case 17: return log1p(x * x);
    case 18: return log2(x * x + 0.5);
    case 19: return log10(x * x + 0.5);
    case 20: return sqrt(x * x + 0.5);
    case 21: return cbrt(x * x + 0.5);
    case 22: return erf(x);
    case 23: return erfc(x);
    case 24: return softplus(x);
    case 25: return relu(x);
    case 26: return fabs(x);
    case 27: return floor(x * 3.0);
    case 28: return ceil(x * 3.0);
    case 29: return round(x * 3.0);
    case 30: return trunc(x * 3.0);
    case 31: return fast_tanh(x);
    case 32: return fast_sigmoid(x);
    default: return -x;
  }
}

// Where function `which` has a kink or a jump at x (a tie for HostLoss):
// through `near(x, point)`.
template <class Near>
void MathTies(int which, double x, Near near) {
  switch (which) {
    case 4:
    case 25:
    case 26: near(x, 0.0); break;  // abs, relu, fabs
    case 27:
    case 28:
    case 30: near(x * 3, std::round(x * 3)); break;  // jumps at whole numbers
    case 29: near(x * 3 - std::floor(x * 3), 0.5); break;  // round: at halves
    default: break;
  }
}

// The binary and ternary functions: a and b (and c for fma) broadcast together.
inline constexpr const char* kMath2Patterns[] = {
    "@a / (@b * @b + 0.5)",  // 0
    "dc::pow(@a * @a + 0.5, @b)",
    "dc::atan2(@a, @b)",
    "dc::min(@a, @b)",
    "dc::max(@a, @b)",
    "dc::fmin(@a, @b)",      // 5
    "dc::fmax(@a, @b)",
    "dc::hypot(@a, @b)",
    "dc::copysign(@a, @b)",
    "dc::fma(@a, @b, @c)",
};
inline constexpr int kMath2Count = sizeof(kMath2Patterns) / sizeof(kMath2Patterns[0]);
inline constexpr int kMath2Fma = 9;

template <class X>
X Math2Of(int which, const X& a, const X& b, const X& c) {
  using std::atan2, std::copysign, std::fma, std::fmax, std::fmin, std::hypot, std::pow;
  switch (which) {
    case 0: return a / (b * b + 0.5);
    case 1: return pow(a * a + 0.5, b);
    case 2: return atan2(a, b);
    case 3: return min(a, b);
    case 4: return max(a, b);
    case 5: return fmin(a, b);
    case 6: return fmax(a, b);
    case 7: return hypot(a, b);
    case 8: return copysign(a, b);
    default: return fma(a, b, c);
  }
}

template <class Near>
void Math2Ties(int which, double a, double b, Near near) {
  switch (which) {
    case 2:  // atan2: the branch cut along a == 0, b < 0; the origin
      if (b < 0) near(a, 0.0);
      near(std::hypot(a, b), 0.0);
      break;
    case 3:
    case 4:
    case 5:
    case 6: near(a, b); break;
    case 7: near(std::hypot(a, b), 0.0); break;
    case 8:
      near(a, 0.0);
      near(b, 0.0);
      break;
    default: break;
  }
}

// A pattern with its arguments written in.
inline std::string MathText(const char* pattern, const std::string& a, const std::string& b = "",
                            const std::string& c = "") {
  return absl::StrReplaceAll(pattern, {{"@a", a}, {"@b", b}, {"@c", c}, {"@", a}});
}

}  // namespace dualcast::surface
