// Shared helpers for the dual/ tests: random points, long-double finite differences, tolerances.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string_view>

namespace dualcast::dual_testing {

// Sampling domains for random test points.
struct Domain {
  enum Kind { kUniform, kLog, kSignedLog };
  double lo, hi;
  Kind kind = kUniform;

  static Domain uniform(double lo, double hi) { return {lo, hi, kUniform}; }
  // log-uniform in [lo, hi] (0 < lo < hi): relative spacing matters for log, sqrt, ...
  static Domain log(double lo, double hi) { return {lo, hi, kLog}; }
  // +/- a log-uniform magnitude in [lo, hi].
  static Domain signed_log(double lo, double hi) { return {lo, hi, kSignedLog}; }

  double sample(std::mt19937_64& rng) const {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    switch (kind) {
      case kUniform:
        return lo + (hi - lo) * u(rng);
      case kLog:
        return std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * u(rng));
      case kSignedLog: {
        const double m = std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * u(rng));
        return u(rng) < 0.5 ? -m : m;
      }
    }
    return lo;
  }

  // Finite-difference step: relative to |x| for log domains, absolute otherwise.
  long double step(double x) const {
    return kind == kUniform ? 1e-4L : 1e-4L * std::fabs(static_cast<long double>(x));
  }
};

// A fixed seed per test name, so every function gets its own reproducible points.
inline std::uint64_t seed_for(std::string_view name) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

// Central difference with one Richardson step: error O(h^4), evaluated in long double so that
// rounding (~1e-19 / h) stays far below the 1e-7 tolerance.
template <class G>
long double richardson(G g, long double x, long double h) {
  auto central = [&](long double hh) { return (g(x + hh) - g(x - hh)) / (2 * hh); };
  return (4 * central(h / 2) - central(h)) / 3;
}

inline bool same_or_both_nan(double a, double b) { return (a != a && b != b) || a == b; }
inline bool same_or_both_nan(float a, float b) { return (a != a && b != b) || a == b; }

// |got - want| <= rel * |want| + abs (NaN never passes unless both are NaN).
inline bool close(long double got, long double want, long double rel, long double abs = 0) {
  if (got != got || want != want) return got != got && want != want;
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::fabs(got - want) <= rel * std::fabs(want) + abs;
}

inline constexpr double kFloatEps = std::numeric_limits<float>::epsilon();

}  // namespace dualcast::dual_testing
