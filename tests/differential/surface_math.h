// The Array math vocabulary the surface tester draws: one generic definition per function for the runtime (Array) and the reference (double).
//
// Why generic: the same expression, `log(x * x + 0.5)`, is the program the
// runtime runs (dualcast::log of a pending broadcast, found by argument-
// dependent lookup) and the reference value (std::log, or a plain formula
// here where <cmath> has none), so the two cannot drift apart. Functions with
// a restricted domain get an argument mapped into it by ordinary arithmetic
// (x * x + 0.5 > 0; tanh(x) * 0.9 in (-1, 1)), which is part of what is
// tested. Every derivative is checked against finite differences of the
// double reference, never against a formula. One table per arity holds each
// function's spelling, where it has a kink or a jump, and its definition, so
// the three cannot fall out of step.
//
// Example:
//   Array<double> y = MathOf(16, x);    // dualcast::log(x * x + 0.5)
//   double r = MathOf(16, 0.25);         // std::log(0.5625)
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

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

// Where a function's value or slope jumps (a tie for HostLoss).
enum class Kink {
  kNone,
  kAtZero,       // x == 0 (abs, relu)
  kWholeThirds,  // x * 3 a whole number (floor, ceil, trunc of x * 3)
  kHalfThirds,   // x * 3 halfway between two (round of x * 3)
};
enum class Kink2 {
  kNone,
  kEqual,       // a == b (min, max)
  kAtan2Cut,    // a == 0 with b < 0 (the branch cut), and the origin
  kOrigin,      // a == b == 0 (hypot)
  kEitherZero,  // a == 0 or b == 0 (copysign)
};

// One function: how a reproducer spells it (`@` the argument; `@a @b @c`
// for the binary ones), its kinks, and its generic definition.
template <class K, class F>
struct MathFn {
  const char* pattern;
  K kink;
  F fn;
};

inline constexpr std::tuple kMathFns{
    MathFn{"dc::sin(@)", Kink::kNone, [](const auto& x) { using std::sin; return sin(x); }},
    MathFn{"dc::tanh(@)", Kink::kNone, [](const auto& x) { using std::tanh; return tanh(x); }},
    MathFn{"dc::sigmoid(@)", Kink::kNone, [](const auto& x) { return sigmoid(x); }},
    MathFn{"dc::exp(@)", Kink::kNone, [](const auto& x) { using std::exp; return exp(x); }},
    MathFn{"dc::abs(@)", Kink::kAtZero, [](const auto& x) { using std::abs; return abs(x); }},
    MathFn{"dc::cos(@)", Kink::kNone, [](const auto& x) { using std::cos; return cos(x); }},
    MathFn{"dc::tan(dc::tanh(@))", Kink::kNone, [](const auto& x) { using std::tan, std::tanh; return tan(tanh(x)); }},
    MathFn{"dc::atan(@)", Kink::kNone, [](const auto& x) { using std::atan; return atan(x); }},
    MathFn{"dc::sinh(@)", Kink::kNone, [](const auto& x) { using std::sinh; return sinh(x); }},
    MathFn{"dc::cosh(@)", Kink::kNone, [](const auto& x) { using std::cosh; return cosh(x); }},
    MathFn{"dc::asinh(@)", Kink::kNone, [](const auto& x) { using std::asinh; return asinh(x); }},
    MathFn{"dc::acosh(@ * @ + 1.5)", Kink::kNone, [](const auto& x) { using std::acosh; return acosh(x * x + 1.5); }},
    MathFn{"dc::asin(dc::tanh(@) * 0.9)", Kink::kNone, [](const auto& x) { using std::asin, std::tanh; return asin(tanh(x) * 0.9); }},
    MathFn{"dc::acos(dc::tanh(@) * 0.9)", Kink::kNone, [](const auto& x) { using std::acos, std::tanh; return acos(tanh(x) * 0.9); }},
    MathFn{"dc::atanh(dc::tanh(@) * 0.9)", Kink::kNone, [](const auto& x) { using std::atanh, std::tanh; return atanh(tanh(x) * 0.9); }},
    MathFn{"dc::expm1(@)", Kink::kNone, [](const auto& x) { using std::expm1; return expm1(x); }},
    MathFn{"dc::log(@ * @ + 0.5)", Kink::kNone, [](const auto& x) { using std::log; return log(x * x + 0.5); }},
    MathFn{"dc::log1p(@ * @)", Kink::kNone, [](const auto& x) { using std::log1p; return log1p(x * x); }},
    MathFn{"dc::log2(@ * @ + 0.5)", Kink::kNone, [](const auto& x) { using std::log2; return log2(x * x + 0.5); }},
    MathFn{"dc::log10(@ * @ + 0.5)", Kink::kNone, [](const auto& x) { using std::log10; return log10(x * x + 0.5); }},
    MathFn{"dc::sqrt(@ * @ + 0.5)", Kink::kNone, [](const auto& x) { using std::sqrt; return sqrt(x * x + 0.5); }},
    MathFn{"dc::cbrt(@ * @ + 0.5)", Kink::kNone, [](const auto& x) { using std::cbrt; return cbrt(x * x + 0.5); }},
    MathFn{"dc::erf(@)", Kink::kNone, [](const auto& x) { using std::erf; return erf(x); }},
    MathFn{"dc::erfc(@)", Kink::kNone, [](const auto& x) { using std::erfc; return erfc(x); }},
    MathFn{"dc::softplus(@)", Kink::kNone, [](const auto& x) { return softplus(x); }},
    MathFn{"dc::relu(@)", Kink::kAtZero, [](const auto& x) { return relu(x); }},
    MathFn{"dc::fabs(@)", Kink::kAtZero, [](const auto& x) { using std::fabs; return fabs(x); }},
    MathFn{"dc::floor(@ * 3.0)", Kink::kWholeThirds, [](const auto& x) { using std::floor; return floor(x * 3.0); }},
    MathFn{"dc::ceil(@ * 3.0)", Kink::kWholeThirds, [](const auto& x) { using std::ceil; return ceil(x * 3.0); }},
    MathFn{"dc::round(@ * 3.0)", Kink::kHalfThirds, [](const auto& x) { using std::round; return round(x * 3.0); }},
    MathFn{"dc::trunc(@ * 3.0)", Kink::kWholeThirds, [](const auto& x) { using std::trunc; return trunc(x * 3.0); }},
    MathFn{"dc::fast_tanh(@)", Kink::kNone, [](const auto& x) { return fast_tanh(x); }},
    MathFn{"dc::fast_sigmoid(@)", Kink::kNone, [](const auto& x) { return fast_sigmoid(x); }},
    MathFn{"-@", Kink::kNone, [](const auto& x) { return -x; }},
};
inline constexpr std::tuple kMath2Fns{
    MathFn{"@a / (@b * @b + 0.5)", Kink2::kNone, [](const auto& a, const auto& b, const auto& c) { (void)c; return a / (b * b + 0.5); }},
    MathFn{"dc::pow(@a * @a + 0.5, @b)", Kink2::kNone, [](const auto& a, const auto& b, const auto& c) { (void)c; using std::pow; return pow(a * a + 0.5, b); }},
    MathFn{"dc::atan2(@a, @b)", Kink2::kAtan2Cut, [](const auto& a, const auto& b, const auto& c) { (void)c; using std::atan2; return atan2(a, b); }},
    MathFn{"dc::min(@a, @b)", Kink2::kEqual, [](const auto& a, const auto& b, const auto& c) { (void)c; return min(a, b); }},
    MathFn{"dc::max(@a, @b)", Kink2::kEqual, [](const auto& a, const auto& b, const auto& c) { (void)c; return max(a, b); }},
    MathFn{"dc::fmin(@a, @b)", Kink2::kEqual, [](const auto& a, const auto& b, const auto& c) { (void)c; using std::fmin; return fmin(a, b); }},
    MathFn{"dc::fmax(@a, @b)", Kink2::kEqual, [](const auto& a, const auto& b, const auto& c) { (void)c; using std::fmax; return fmax(a, b); }},
    MathFn{"dc::hypot(@a, @b)", Kink2::kOrigin, [](const auto& a, const auto& b, const auto& c) { (void)c; using std::hypot; return hypot(a, b); }},
    MathFn{"dc::copysign(@a, @b)", Kink2::kEitherZero, [](const auto& a, const auto& b, const auto& c) { (void)c; using std::copysign; return copysign(a, b); }},
    MathFn{"dc::fma(@a, @b, @c)", Kink2::kNone, [](const auto& a, const auto& b, const auto& c) { using std::fma; return fma(a, b, c); }},
};
inline constexpr int kMathCount = static_cast<int>(std::tuple_size_v<decltype(kMathFns)>);
inline constexpr int kMath2Count = static_cast<int>(std::tuple_size_v<decltype(kMath2Fns)>);

// `visit(entry)` for entry `which` of a table.
template <class Table, class Visit>
auto AtIndex(const Table& table, int which, Visit visit) {
  decltype(visit(std::get<0>(table))) result{};
  [&]<size_t... I>(std::index_sequence<I...>) {
    (void)((static_cast<int>(I) == which && (result = visit(std::get<I>(table)), true)) || ...);
  }(std::make_index_sequence<std::tuple_size_v<Table>>());
  return result;
}

// Function `which` of x: an Array (the runtime) or a double (the reference).
template <class X>
X MathOf(int which, const X& x) {
  return AtIndex(kMathFns, which, [&](const auto& f) { return X(f.fn(x)); });
}
template <class X>
X Math2Of(int which, const X& a, const X& b, const X& c) {
  return AtIndex(kMath2Fns, which, [&](const auto& f) { return X(f.fn(a, b, c)); });
}
inline const char* MathPattern(int which) {
  return AtIndex(kMathFns, which, [](const auto& f) { return f.pattern; });
}
inline const char* Math2Pattern(int which) {
  return AtIndex(kMath2Fns, which, [](const auto& f) { return f.pattern; });
}
// fma: a third argument.
inline bool Math2Ternary(int which) { return std::string_view(Math2Pattern(which)).find("@c") != std::string_view::npos; }

// Where function `which` has a kink or a jump at x: through `near(x, point)`.
template <class Near>
void MathTies(int which, double x, Near near) {
  switch (AtIndex(kMathFns, which, [](const auto& f) { return f.kink; })) {
    case Kink::kNone: break;
    case Kink::kAtZero: near(x, 0.0); break;
    case Kink::kWholeThirds: near(x * 3, std::round(x * 3)); break;
    case Kink::kHalfThirds: near(x * 3 - std::floor(x * 3), 0.5); break;
  }
}
template <class Near>
void Math2Ties(int which, double a, double b, Near near) {
  switch (AtIndex(kMath2Fns, which, [](const auto& f) { return f.kink; })) {
    case Kink2::kNone: break;
    case Kink2::kEqual: near(a, b); break;
    case Kink2::kAtan2Cut:
      if (b < 0) near(a, 0.0);
      near(std::hypot(a, b), 0.0);
      break;
    case Kink2::kOrigin: near(std::hypot(a, b), 0.0); break;
    case Kink2::kEitherZero:
      near(a, 0.0);
      near(b, 0.0);
      break;
  }
}

// A pattern with its arguments written in.
inline std::string MathText(const char* pattern, const std::string& a, const std::string& b = "",
                            const std::string& c = "") {
  return absl::StrReplaceAll(pattern, {{"@a", a}, {"@b", b}, {"@c", c}, {"@", a}});
}

}  // namespace dualcast::surface
