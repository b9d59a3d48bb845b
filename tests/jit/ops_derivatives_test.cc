// Values and jvp partials of the math staples (exp2 ... clamp) against independent references, and the accuracy conventions of the jvp rules at their edges.
//
// References: <cmath> in long double for values, central finite differences in
// long double (h = 1e-5, truncation ~1e-10 relative) or closed forms for
// derivatives; edge cases against the exact limits.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "jit/ir/interpret.h"
#include "jit/ir/ir.h"
#include "jit/ir/verify.h"
#include "jit/passes/jvp.h"
#include "jit/trace/trace.h"

namespace dualcast::jit {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
using L = long double;

// f(x...) = op(x...) and its jvp with respect to every input, interpreted:
// returns {value, d/dx0, d/dx1, ...}.
std::vector<double> ValueAndPartials(Op op, Type type, std::vector<double> x) {
  Function f(Spelling(op));
  Builder b(f);
  std::vector<ValueId> args;
  for (size_t k = 0; k < x.size(); ++k) args.push_back(b.Input(type));
  b.Return({b.Emit(op, args)});
  std::vector<int> wrt;
  for (size_t k = 0; k < x.size(); ++k) wrt.push_back(static_cast<int>(k));
  JvpResult r = Jvp(f, wrt);
  REQUIRE(Verify(r.function).ok());
  return Interpret(r.function, std::span<const double>(x));
}

bool Near(double got, L want, double rel) {
  if (std::isnan(static_cast<double>(want))) return std::isnan(got);
  if (std::isinf(static_cast<double>(want))) return got == static_cast<double>(want);
  return std::abs(static_cast<L>(got) - want) <= rel * std::max<L>(std::abs(want), 1e-300L);
}

// Long-double reference functions of the staples.
L RefValue(Op op, const L* x) {
  switch (op) {
    case Op::kExp2: return std::exp2(x[0]);
    case Op::kLgamma: return std::lgamma(x[0]);
    case Op::kTgamma: return std::tgamma(x[0]);
    case Op::kSquare: return x[0] * x[0];
    case Op::kRsqrt: return 1 / std::sqrt(x[0]);
    case Op::kLogaddexp: return std::log(std::exp(x[0]) + std::exp(x[1]));
    case Op::kFmod: return std::fmod(x[0], x[1]);
    case Op::kRemainder: return std::remainder(x[0], x[1]);
    case Op::kLdexp: return std::ldexp(x[0], static_cast<int>(std::trunc(x[1])));
    case Op::kClamp: return x[0] < x[1] ? x[1] : (x[2] < x[0] ? x[2] : x[0]);
    case Op::kFdim: return x[0] > x[1] ? x[0] - x[1] : 0;
    default: break;
  }
  FAIL("no reference for ", Spelling(op));
  return 0;
}

// Central differences in long double along input k, Richardson-extrapolated
// (error O(h^4) + rounding ~1e-19 / h: about 1e-13 relative).
L RefPartial(Op op, std::vector<L> x, size_t k) {
  if (op == Op::kLogaddexp) {  // closed form: the smaller side's e^-40 is below FD's noise
    return 1 / (1 + std::exp(x[1 - k] - x[k]));
  }
  auto central = [&](L h) {
    std::vector<L> up = x, down = x;
    up[k] += h;
    down[k] -= h;
    return (RefValue(op, up.data()) - RefValue(op, down.data())) / (2 * h);
  };
  const L h = 1e-5L * std::max<L>(1, std::abs(x[k]));
  return (4 * central(h / 2) - central(h)) / 3;
}

struct Domain {
  Op op;
  double lo[3], hi[3];
};

TEST_CASE("staples: values match long-double <cmath>, partials match finite differences") {
  const std::vector<Domain> domains = {
      {Op::kExp2, {-30}, {30}},
      {Op::kLgamma, {0.05}, {40}},
      {Op::kTgamma, {0.05}, {20}},
      {Op::kSquare, {-1e5}, {1e5}},
      {Op::kRsqrt, {1e-6}, {1e6}},
      {Op::kLogaddexp, {-40, -40}, {40, 40}},
      {Op::kFmod, {-50, 0.5}, {50, 7}},
      {Op::kRemainder, {-50, 0.5}, {50, 7}},
      {Op::kLdexp, {-4, -30}, {4, 30}},
      {Op::kClamp, {-3, -2, 0.5}, {3, -0.5, 2}},
      {Op::kFdim, {-3, -3}, {3, 3}},
  };
  std::mt19937_64 rng(20);
  for (const Domain& d : domains) {
    const std::string op_name = Spelling(d.op);
    CAPTURE(op_name);
    const int arity = Info(d.op).arity;
    for (int n = 0; n < 300; ++n) {
      std::vector<double> x(arity);
      for (int k = 0; k < arity; ++k) {
        x[k] = std::uniform_real_distribution<double>(d.lo[k], d.hi[k])(rng);
      }
      if (d.op == Op::kLdexp) x[1] = std::trunc(x[1]) + 0.25;  // stay off the integer steps
      std::vector<L> xl(x.begin(), x.end());
      // Finite differences are meaningless across fmod/remainder/clamp jumps: skip points
      // within h of one.
      if (d.op == Op::kFmod || d.op == Op::kRemainder) {
        const L q = xl[0] / xl[1];
        const L frac = q - std::floor(q);
        if (frac < 1e-3L || frac > 1 - 1e-3L || std::abs(frac - 0.5L) < 1e-3L) continue;
      }
      if (d.op == Op::kFdim && std::abs(xl[0] - xl[1]) < 1e-3L) continue;  // the kink
      CAPTURE(x);
      std::vector<double> got = ValueAndPartials(d.op, Type::kF64, x);
      // (glibc's lgamma/tgamma are a few ulp; lgamma is near 0 at x = 1 and 2,
      // so it is compared to 1e-15 of max(1, |value|).)
      const L want = RefValue(d.op, xl.data());
      if (d.op == Op::kLgamma) {
        CHECK(std::abs(got[0] - want) <= 1e-15L * std::max<L>(1, std::abs(want)));
      } else {
        CHECK(Near(got[0], want, d.op == Op::kTgamma ? 1e-15 : 4e-16));
      }
      for (int k = 0; k < arity; ++k) {
        CAPTURE(k);
        if (d.op == Op::kLdexp && k == 1) {
          CHECK(got[1 + k] == 0);  // the count is an integer: no derivative
          continue;
        }
        CHECK(Near(got[1 + k], RefPartial(d.op, xl, k), 1e-8));
      }
    }
  }
}

TEST_CASE("staples: conventions at kinks, ties, bounds and domain edges") {
  auto vp = [](Op op, std::vector<double> x) { return ValueAndPartials(op, Type::kF64, x); };
  // sign: +-0 kept, NaN kept, derivative 0.
  CHECK(vp(Op::kSign, {-3})[0] == -1);
  CHECK(std::signbit(vp(Op::kSign, {-0.0})[0]));
  CHECK(std::isnan(vp(Op::kSign, {kNaN})[0]));
  CHECK(vp(Op::kSign, {2})[1] == 0);
  // clamp: at a bound, x's tangent; below, lo's; above, hi's; NaN x stays NaN.
  CHECK(vp(Op::kClamp, {0, 0, 1}) == std::vector<double>{0, 1, 0, 0});
  CHECK(vp(Op::kClamp, {-1, 0, 1}) == std::vector<double>{0, 0, 1, 0});
  CHECK(vp(Op::kClamp, {2, 0, 1}) == std::vector<double>{1, 0, 0, 1});
  CHECK(std::isnan(vp(Op::kClamp, {kNaN, 0, 1})[0]));
  // logaddexp: a tie splits the derivative, infinities are handled.
  std::vector<double> tie = vp(Op::kLogaddexp, {3, 3});
  CHECK(tie[0] == doctest::Approx(3 + std::numbers::ln2));
  CHECK(tie[1] == 0.5);
  CHECK(tie[2] == 0.5);
  CHECK(vp(Op::kLogaddexp, {1000, 0})[0] == 1000);  // no overflow
  CHECK(vp(Op::kLogaddexp, {1000, 0})[1] == 1);
  CHECK(vp(Op::kLogaddexp, {-kInf, 2}) == std::vector<double>{2, 0, 1});  // the limit, not NaN
  CHECK(vp(Op::kLogaddexp, {-kInf, -kInf})[0] == -kInf);
  CHECK(vp(Op::kLogaddexp, {kInf, 1})[0] == kInf);
  // fmod/remainder: NaN value (x mod 0) => NaN partials; d/db = -n.
  std::vector<double> m0 = vp(Op::kFmod, {5, 0});
  CHECK(std::isnan(m0[0]));
  CHECK(std::isnan(m0[1]));
  CHECK(std::isnan(m0[2]));
  CHECK(vp(Op::kFmod, {7.5, 2}) == std::vector<double>{1.5, 1, -3});
  CHECK(vp(Op::kRemainder, {7.5, 2}) == std::vector<double>{-0.5, 1, -4});  // 3.75 -> 4
  CHECK(std::signbit(vp(Op::kFmod, {-0.0, 2})[0]));
  // ldexp: exact scaling, count truncated, NaN count.
  CHECK(vp(Op::kLdexp, {1.5, 3.9}) == std::vector<double>{12, 8, 0});
  CHECK(vp(Op::kLdexp, {1e-300, 1100})[0] == std::ldexp(1e-300, 1100));
  CHECK(std::isnan(vp(Op::kLdexp, {1, kNaN})[0]));
  // rsqrt and square.
  CHECK(vp(Op::kRsqrt, {4}) == std::vector<double>{0.5, -0.0625});
  CHECK(vp(Op::kRsqrt, {0})[0] == kInf);
  CHECK(vp(Op::kRsqrt, {0})[1] == -kInf);
  CHECK(std::isnan(vp(Op::kRsqrt, {-1})[1]));
  CHECK(vp(Op::kSquare, {-3}) == std::vector<double>{9, -6});
  // exp2.
  CHECK(vp(Op::kExp2, {10}) == std::vector<double>{1024, 1024 * std::numbers::ln2});
  // lgamma/tgamma: digamma at known points, poles.
  const double euler = 0.57721566490153286061;
  CHECK(vp(Op::kLgamma, {1})[1] == doctest::Approx(-euler).epsilon(1e-14));
  CHECK(vp(Op::kLgamma, {0.5})[1] == doctest::Approx(-euler - 2 * std::numbers::ln2).epsilon(1e-14));
  CHECK(vp(Op::kLgamma, {-0.5})[1] ==
        doctest::Approx(2 - euler - 2 * std::numbers::ln2).epsilon(1e-13));  // psi(1/2) + 2
  CHECK(vp(Op::kTgamma, {5})[1] == doctest::Approx(24 * (25.0 / 12 - euler)).epsilon(1e-14));
  CHECK(vp(Op::kLgamma, {0})[0] == kInf);
  CHECK(std::isnan(vp(Op::kTgamma, {-2})[1]));
}

TEST_CASE("erfinv: inverse of erf to a few ulp, derivative, edges") {
  for (double y : {-0.999999, -0.9, -0.5, -1e-3, 1e-300, 1e-8, 0.1, 0.3, 0.5, 0.7, 0.95,
                   0.99999, 1 - 1e-12, 1 - 0x1p-53}) {
    CAPTURE(y);
    std::vector<double> got = ValueAndPartials(Op::kErfinv, Type::kF64, {y});
    // Refine in long double from the result: one Newton step on erf.
    const L z = got[0];
    const L tail = y > 0.5 ? (1 - L(y)) - std::erfc(z) : std::erf(z) - L(y);
    const L ref = z - tail / (2 / std::sqrt(std::numbers::pi_v<L>) * std::exp(-z * z));
    CHECK(Near(got[0], ref, 4 * 1.1e-16));
    CHECK(Near(got[1], std::sqrt(std::numbers::pi_v<L>) / 2 * std::exp(ref * ref), 1e-14));
  }
  CHECK(ValueAndPartials(Op::kErfinv, Type::kF64, {1})[0] == kInf);
  CHECK(ValueAndPartials(Op::kErfinv, Type::kF64, {-1})[0] == -kInf);
  CHECK(std::signbit(ValueAndPartials(Op::kErfinv, Type::kF64, {-0.0})[0]));
  CHECK(std::isnan(ValueAndPartials(Op::kErfinv, Type::kF64, {1.5})[0]));
  CHECK(std::isnan(ValueAndPartials(Op::kErfinv, Type::kF64, {kNaN})[0]));
  // f32: within a few ulp of the double result.
  for (float y : {-0.9f, 0.001f, 0.25f, 0.75f, 0.999f}) {
    CAPTURE(y);
    const double want = ValueAndPartials(Op::kErfinv, Type::kF64, {y})[0];
    const double got = ValueAndPartials(Op::kErfinv, Type::kF32, {y})[0];
    CHECK(std::abs(got - want) <= 4 * 6e-8 * std::abs(want));
  }
}

TEST_CASE("isnan and isfinite are tests of one value (bool), traced and interpreted") {
  Function f = Trace("tests", [](auto x) { return select(isnan(x) || !isfinite(x), x * 0, x); },
                     std::vector<Type>{Type::kF64});
  REQUIRE(Verify(f).ok());
  auto run = [&](double x) { return Interpret(f, std::span<const double>(&x, 1))[0]; };
  CHECK(run(2) == 2);
  CHECK(std::isnan(run(kInf)));  // inf * 0
  CHECK(std::isnan(run(kNaN)));
}

TEST_CASE("integer powers: pow(x, n) with n an integer constant, negative x included") {
  Function f = Trace("cube", [](auto x) { return pow(x, 3) + pow(x, -2); },
                     std::vector<Type>{Type::kF64});
  JvpResult r = Jvp(f, std::vector<int>{0});
  for (double x : {-2.0, -0.5, 0.5, 3.0}) {
    CAPTURE(x);
    std::vector<double> got = Interpret(r.function, std::span<const double>(&x, 1));
    CHECK(got[0] == doctest::Approx(x * x * x + 1 / (x * x)).epsilon(1e-15));
    CHECK(got[1] == doctest::Approx(3 * x * x - 2 / (x * x * x)).epsilon(1e-15));
  }
  // x = 0: d/dx x^3 = 0 and d/dx x^1 = 1, by the p x^(p-1) edge formula.
  double zero = 0;
  Function cube = Trace("c", [](auto x) { return pow(x, 3); }, std::vector<Type>{Type::kF64});
  CHECK(Interpret(Jvp(cube, std::vector<int>{0}).function, std::span<const double>(&zero, 1))[1] == 0);
}

// ---- The accuracy conventions of the existing rules (issue 20 point 2).

TEST_CASE("accuracy: tanh', sigmoid', expm1' keep their digits where 1 - y^2, y(1 - y), y + 1 lose them") {
  for (double x : {3.5, 9.0, 20.0, -20.0, 40.0}) {
    CAPTURE(x);
    const float xf = static_cast<float>(x);
    const L e = std::exp(-2 * std::abs(L(x)));
    // f32: the reference in long double, the answer within 8 ulp.
    const double tanh_d = ValueAndPartials(Op::kTanh, Type::kF32, {xf})[1];
    CHECK(Near(tanh_d, 4 * e / ((1 + e) * (1 + e)), 8 * 6e-8));
    const L em = std::exp(-L(x));  // sigmoid' = e/(1+e)^2 (1 - s would cancel in long double too)
    const double sig_d = ValueAndPartials(Op::kSigmoid, Type::kF32, {xf})[1];
    if (x > 0) CHECK(Near(sig_d, em / ((1 + em) * (1 + em)), 8 * 6e-8));
  }
  for (double x : {-6.0, -17.5, -40.0, -700.0}) {
    CAPTURE(x);
    CHECK(Near(ValueAndPartials(Op::kExpm1, Type::kF64, {x})[1], std::exp(L(x)), 2.3e-16));
    if (x > -87) {  // exp(x) is a normal f32
      CHECK(Near(ValueAndPartials(Op::kExpm1, Type::kF32, {x})[1], std::exp(L(float(x))), 1.2e-7));
    }
  }
}

TEST_CASE("accuracy: pow d/dx does not overflow where the exact value is finite") {
  // d/dx x^p = p x^(p-1): x = 1e-310 (subnormal), p = 1e-3 -> about 1e307, finite,
  // though x^(p-1) alone overflows.
  const double x = 1e-310, p = 1e-3;
  std::vector<double> got = ValueAndPartials(Op::kPow, Type::kF64, {x, p});
  const L want = L(p) * std::pow(L(x), L(p) - 1);
  CHECK(std::isfinite(got[1]));
  CHECK(Near(got[1], want, 1e-13));
  CHECK(Near(ValueAndPartials(Op::kPow, Type::kF64, {2, 10})[1], 5120, 0));
  CHECK(ValueAndPartials(Op::kPow, Type::kF64, {0, 0.5})[1] == kInf);
  CHECK(ValueAndPartials(Op::kPow, Type::kF64, {0, 2})[1] == 0);
  CHECK(ValueAndPartials(Op::kPow, Type::kF64, {3, 0})[1] == 0);
}

TEST_CASE("accuracy: erf' and erfc' from an exact split of x^2") {
  for (double x : {-5.9, -3.3, 1.7, 4.1, 5.5, 26.0}) {
    CAPTURE(x);
    const L want = 2 / std::sqrt(std::numbers::pi_v<L>) * std::exp(-L(x) * L(x));
    CHECK(Near(ValueAndPartials(Op::kErf, Type::kF64, {x})[1], want, 8 * 1.1e-16));
    CHECK(Near(ValueAndPartials(Op::kErfc, Type::kF64, {x})[1], -want, 8 * 1.1e-16));
  }
  CHECK(ValueAndPartials(Op::kErf, Type::kF64, {kInf})[1] == 0);
}

TEST_CASE("accuracy: atan', log2', log10' where the exact derivative is tiny") {
  // f32: x^2 overflows from 1.8e19, where 1/x^2 is a subnormal (was 0): within 2 of its steps.
  const float big = 2e19f;
  CHECK(std::abs(ValueAndPartials(Op::kAtan, Type::kF32, {big})[1] - 1 / (L(big) * L(big))) <=
        2 * std::numeric_limits<float>::denorm_min());
  CHECK(ValueAndPartials(Op::kAtan, Type::kF32, {big})[1] > 0);
  CHECK(Near(ValueAndPartials(Op::kAtan, Type::kF64, {1e200})[1], 0, 0));  // 1e-400 underflows
  CHECK(Near(ValueAndPartials(Op::kAtan, Type::kF64, {1e150})[1], 1e-300L, 8 * 1.1e-16));
  const double huge = 1e308;
  CHECK(Near(ValueAndPartials(Op::kLog10, Type::kF64, {huge})[1],
             1 / (L(huge) * std::log(10.0L)), 8 * 1.1e-16));
  CHECK(Near(ValueAndPartials(Op::kLog2, Type::kF64, {huge})[1], 1 / (L(huge) * std::log(2.0L)),
             8 * 1.1e-16));
}

TEST_CASE("NaN value => NaN partials, where a finite formula would hide it") {
  for (auto [op, x] : std::vector<std::pair<Op, double>>{{Op::kLog, -1},
                                                         {Op::kLog1p, -2},
                                                         {Op::kAtanh, 2},
                                                         {Op::kLog2, -1},
                                                         {Op::kLog10, -1},
                                                         {Op::kSqrt, -1},
                                                         {Op::kAcosh, 0.5}}) {
    const std::string op_name = Spelling(op);
    CAPTURE(op_name);
    std::vector<double> got = ValueAndPartials(op, Type::kF64, {x});
    CHECK(std::isnan(got[0]));
    CHECK(std::isnan(got[1]));
  }
  std::vector<double> div = ValueAndPartials(Op::kDiv, Type::kF64, {0, 0});
  CHECK(std::isnan(div[1]));
  CHECK(std::isnan(div[2]));
}

TEST_CASE("atan2 and hypot follow the one-sided limits at infinite arguments") {
  std::vector<double> a = ValueAndPartials(Op::kAtan2, Type::kF64, {kInf, 1});
  CHECK(a[0] == doctest::Approx(std::numbers::pi / 2));
  CHECK(a[1] == 0);
  CHECK(a[2] == 0);
  std::vector<double> a2 = ValueAndPartials(Op::kAtan2, Type::kF64, {2, -kInf});
  CHECK(a2[1] == 0);
  CHECK(a2[2] == 0);
  CHECK(std::isnan(ValueAndPartials(Op::kAtan2, Type::kF64, {kNaN, kInf})[1]));
  std::vector<double> h = ValueAndPartials(Op::kHypot, Type::kF64, {-kInf, 3});
  CHECK(h[0] == kInf);
  CHECK(h[1] == -1);
  CHECK(h[2] == 0);
  // hypot(inf, y) = inf for every y, NaN included (IEEE 754): an infinite argument gets its
  // sign, a finite or NaN one 0; both infinite, each its sign (dual_math.hpp's table).
  for (Type t : {Type::kF32, Type::kF64}) {
    CHECK(ValueAndPartials(Op::kHypot, t, {kInf, kInf}) == std::vector<double>{kInf, 1, 1});
    CHECK(ValueAndPartials(Op::kHypot, t, {kInf, -kInf}) == std::vector<double>{kInf, 1, -1});
    CHECK(ValueAndPartials(Op::kHypot, t, {-kInf, kInf}) == std::vector<double>{kInf, -1, 1});
    CHECK(ValueAndPartials(Op::kHypot, t, {kInf, kNaN}) == std::vector<double>{kInf, 1, 0});
    CHECK(ValueAndPartials(Op::kHypot, t, {kNaN, -kInf}) == std::vector<double>{kInf, 0, -1});
    std::vector<double> nan_finite = ValueAndPartials(Op::kHypot, t, {kNaN, 2});
    CHECK(std::isnan(nan_finite[0]));
    CHECK(std::isnan(nan_finite[1]));
    CHECK(std::isnan(nan_finite[2]));
  }
  std::vector<double> origin = ValueAndPartials(Op::kHypot, Type::kF64, {0, 0});
  CHECK(origin[1] == 0);
  CHECK(origin[2] == 0);
  // Far from the edges the partials are the plain a/h and b/(a^2 + b^2).
  CHECK(ValueAndPartials(Op::kHypot, Type::kF64, {3, 4})[1] == doctest::Approx(0.6));
  CHECK(ValueAndPartials(Op::kAtan2, Type::kF64, {3, 4})[1] == doctest::Approx(4.0 / 25));
}

TEST_CASE("hypot: partials a/h, b/h where h overflows from finite arguments or is subnormal") {
  // They were 0 where h = inf (hypot(1.5e308, 1.5e308)), 1 at hypot(5e-324, 5e-324) and 150 ulp
  // off at hypot(1e-310, 3e-311). Reference: a / sqrt(a^2 + b^2) in long double, whose range
  // holds these squares.
  auto ref = [](L a, L b) { return a / std::sqrt(a * a + b * b); };
  struct P {
    double a, b;
  };
  for (P p : {P{1.5e308, 1.5e308}, P{1e308, -1.5e308}, P{1e-310, 3e-311}, P{5e-324, 5e-324},
              P{-3e-320, 4e-320}, P{1e-310, 0.0}}) {
    CAPTURE(p.a);
    CAPTURE(p.b);
    const std::vector<double> r = ValueAndPartials(Op::kHypot, Type::kF64, {p.a, p.b});
    CHECK(r[0] == std::hypot(p.a, p.b));
    CHECK(Near(r[1], ref(p.a, p.b), 2e-16));
    CHECK(Near(r[2], ref(p.b, p.a), 2e-16));
  }
  for (P p : {P{2e38, 3e38}, P{-3e38, 3e38}, P{7e-45, 7e-45}, P{1e-40, 3e-41}}) {
    CAPTURE(p.a);
    CAPTURE(p.b);
    const L a = static_cast<float>(p.a), b = static_cast<float>(p.b);  // the f32 inputs
    const std::vector<double> r = ValueAndPartials(Op::kHypot, Type::kF32, {p.a, p.b});
    CHECK(Near(r[1], ref(a, b), 2.4e-7));
    CHECK(Near(r[2], ref(b, a), 2.4e-7));
  }
}

TEST_CASE("lgamma' and tgamma' just below 0: +inf and -inf where digamma overflows (were NaN)") {
  // psi(x) = -1/x - gamma + O(x) (mpmath: psi(-1e-310) = 1.0e310, beyond the double range).
  for (double x : {-5.5626846462680035e-309, -1e-310, -5e-324}) {
    CAPTURE(x);
    CHECK(ValueAndPartials(Op::kLgamma, Type::kF64, {x})[1] == kInf);
    CHECK(ValueAndPartials(Op::kTgamma, Type::kF64, {x}) == std::vector<double>{-kInf, -kInf});
  }
  CHECK(ValueAndPartials(Op::kLgamma, Type::kF32, {-1e-40})[1] == kInf);  // f32: 1e40 overflows
  const L euler = 0.577215664901532860606512090082402431L;
  for (double x : {-1e-300, -1e-308, -0x1p-61, -0x1p-59}) {
    CAPTURE(x);
    CHECK(Near(ValueAndPartials(Op::kLgamma, Type::kF64, {x})[1], -1 / static_cast<L>(x) - euler, 2.3e-16));
  }
}

TEST_CASE("fdim and rint at their edges: kink, ties, infinities, NaN") {
  // fdim: a - b above the kink; at and below it +0 with partials (0, 0), the flat side's.
  std::vector<double> above = ValueAndPartials(Op::kFdim, Type::kF64, {5, 2});
  CHECK(above == std::vector<double>{3, 1, -1});
  std::vector<double> kink = ValueAndPartials(Op::kFdim, Type::kF64, {2, 2});
  CHECK(kink == std::vector<double>{0, 0, 0});
  CHECK_FALSE(std::signbit(kink[0]));
  CHECK(ValueAndPartials(Op::kFdim, Type::kF64, {-1, 2}) == std::vector<double>{0, 0, 0});
  // C: fdim(inf, inf) = +0 (not inf - inf); a NaN operand gives NaN and NaN partials.
  CHECK(ValueAndPartials(Op::kFdim, Type::kF64, {kInf, kInf})[0] == 0);
  CHECK(ValueAndPartials(Op::kFdim, Type::kF64, {kInf, 1})[0] == kInf);
  for (const std::vector<double>& x : {std::vector<double>{kNaN, 1}, std::vector<double>{1, kNaN}}) {
    std::vector<double> r = ValueAndPartials(Op::kFdim, Type::kF32, x);
    CHECK(std::isnan(r[0]));
    CHECK(std::isnan(r[1]));
    CHECK(std::isnan(r[2]));
  }
  // rint: ties to even, the sign of zero kept; derivative 0 (piecewise constant).
  for (Type t : {Type::kF32, Type::kF64}) {
    CHECK(ValueAndPartials(Op::kRint, t, {2.5}) == std::vector<double>{2, 0});
    CHECK(ValueAndPartials(Op::kRint, t, {3.5}) == std::vector<double>{4, 0});
    CHECK(std::signbit(ValueAndPartials(Op::kRint, t, {-0.25})[0]));
  }
}

}  // namespace
}  // namespace dualcast::jit
