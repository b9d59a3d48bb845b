// Scalar definitions of the IR math ops dualcast::math has no form for (erfinv in the op's precision, ldexp of a float count).
//
// The interpreter and constant folder evaluate these (scalar_ops.cc) and the CPU
// printer lowers exactly the same expressions, so a JIT value equals an
// interpreted one bit for bit. erfinv is written once as a template over the
// arithmetic it needs (`ErfinvSteps`), instantiated on float/double here and on
// LLVM values in jit/cpu/llvm_printer.cc.
//
// Conventions (the derivative rules in jvp.cc follow them):
//   sign, square, rsqrt, clamp, logaddexp: dualcast::math's definitions (one implementation);
//     the CPU printer's lowering of logaddexp, max(a, b) + log1p(exp(-|a - b|)), equals
//     dualcast::math::logaddexp bit for bit (a - b = -(b - a) exactly).
//   ldexp(x, n) = x * 2^trunc(n), n clamped to [-100000, 100000]; NaN n gives NaN
//   erfinv(y): Giles' single-precision approximation, then two Halley steps on
//     erf (|y| <= 0.5) or four Newton steps on log erfc (|y| > 0.5, where 1 - |y|
//     is exact); +-1 -> +-inf.
//
// Example:
//   double z = dualcast::jit::staple::Erfinv(0.5);   // 0.4769362762044699
#pragma once

#include <cmath>
#include <limits>
#include <numbers>

namespace dualcast::jit::staple {

// sign, square, rsqrt, clamp and logaddexp are dualcast::math's (dual/include/dualcast/math.hpp):
// the interpreter calls those, and the CPU printer lowers the same expressions.

// The integer count of ldexp from a float operand (see the file comment).
template <class T>
int LdexpCount(T n) {
  const T c = std::fmin(std::fmax(std::trunc(n), T(-100000)), T(100000));
  return static_cast<int>(c);
}
template <class T>
T Ldexp(T x, T n) {
  if (n != n) return n;
  return std::ldexp(x, LdexpCount(n));
}

// erfinv as a sequence of elementary steps on an arithmetic `M` with
// M::V values: Const, Add, Sub, Mul, Div, Neg, Abs, Log, Sqrt, Exp, Erf,
// Erfc, Lt(a, b) -> mask, Eq, Select(mask, a, b), Copysign. Every step is
// IEEE in V's precision, so two instantiations agree bit for bit.
template <class M>
typename M::V ErfinvSteps(M& m, typename M::V y) {
  using V = typename M::V;
  const V a = m.Abs(y);
  const V one = m.Const(1);
  // Giles (2010), "Approximating the erfinv function", single-precision branch.
  const V w = m.Neg(m.Log(m.Mul(m.Sub(one, a), m.Add(one, a))));
  auto poly = [&](V t, const double* c, int n) {
    V p = m.Const(c[0]);
    for (int i = 1; i < n; ++i) p = m.Add(m.Const(c[i]), m.Mul(p, t));
    return p;
  };
  static constexpr double kCentral[] = {2.81022636e-08,  3.43273939e-07, -3.5233877e-06,
                                        -4.39150654e-06, 0.00021858087,  -0.00125372503,
                                        -0.00417768164,  0.246640727,    1.50140941};
  static constexpr double kTail[] = {-0.000200214257, 0.000100950558, 0.00134934322,
                                     -0.00367342844,  0.00573950773,  -0.0076224613,
                                     0.00943887047,   1.00167406,     2.83297682};
  const V central = poly(m.Sub(w, m.Const(2.5)), kCentral, 9);
  // The tail polynomial reads sqrt(w) only where w >= 5; elsewhere w may be 0.
  const V tail = poly(m.Sub(m.Sqrt(m.Select(m.Lt(w, m.Const(5)), m.Const(5), w)), m.Const(3)),
                      kTail, 9);
  const V z0 = m.Mul(m.Select(m.Lt(w, m.Const(5)), central, tail), a);
  // Refinement. Centre (|y| <= 0.5): two Halley steps on f(z) = erf(z) - a, with
  // f' = 2/sqrt(pi) exp(-z^2) and f'' = -2 z f'. Tail (|y| > 0.5): four Newton steps
  // on g(z) = log(erfc(z)) - log(1 - a) (1 - a is exact there); g is nearly
  // quadratic in z, so this converges from the approximation's tail, which is only
  // fitted to the f32 range (z = 5.18 for 1 - a = 2^-53, against 5.87).
  const V c = m.Const(2 * std::numbers::inv_sqrtpi);
  auto halley = [&](V z) {
    const V r = m.Div(m.Sub(m.Erf(z), a), m.Mul(c, m.Exp(m.Neg(m.Mul(z, z)))));
    return m.Sub(z, m.Div(r, m.Add(one, m.Mul(z, r))));
  };
  const V log_q = m.Log(m.Sub(one, a));
  auto newton_log = [&](V z) {
    const V e = m.Erfc(z);
    const V g = m.Sub(m.Log(e), log_q);
    const V g_prime = m.Neg(m.Div(m.Mul(c, m.Exp(m.Neg(m.Mul(z, z)))), e));
    return m.Sub(z, m.Div(g, g_prime));
  };
  const V central_z = halley(halley(z0));
  const V tail_z = newton_log(newton_log(newton_log(newton_log(z0))));
  const V z1 = m.Select(m.Lt(m.Const(0.5), a), tail_z, central_z);
  // |y| = 1 gives inf; |y| > 1 and NaN give NaN through the log above.
  const V z = m.Select(m.Eq(a, one), m.Const(std::numeric_limits<double>::infinity()), z1);
  return m.Copysign(z, y);
}

// ErfinvSteps on plain float or double.
template <class T>
struct ScalarArith {
  using V = T;
  V Const(double c) { return static_cast<T>(c); }
  V Add(V a, V b) { return a + b; }
  V Sub(V a, V b) { return a - b; }
  V Mul(V a, V b) { return a * b; }
  V Div(V a, V b) { return a / b; }
  V Neg(V a) { return -a; }
  V Abs(V a) { return std::fabs(a); }
  V Log(V a) { return std::log(a); }
  V Sqrt(V a) { return std::sqrt(a); }
  V Exp(V a) { return std::exp(a); }
  V Erf(V a) { return std::erf(a); }
  V Erfc(V a) { return std::erfc(a); }
  bool Lt(V a, V b) { return a < b; }
  bool Eq(V a, V b) { return a == b; }
  V Select(bool c, V a, V b) { return c ? a : b; }
  V Copysign(V a, V b) { return std::copysign(a, b); }
};

template <class T>
T Erfinv(T y) {
  ScalarArith<T> m;
  return ErfinvSteps(m, y);
}

}  // namespace dualcast::jit::staple
