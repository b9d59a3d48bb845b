// digamma(x) written once, without branches, over an arithmetic that dual/ (Dual's lgamma', tgamma', digamma) and the jvp rules instantiate.
//
// Why one template: lgamma' = digamma and tgamma' = tgamma digamma are derivative rules in
// two places (Dual in dual/, the jvp pass in jit/). A second, shorter formula in the jvp pass
// (the asymptotic series at x + 10 stepped down by ten reciprocals) cancelled near digamma's
// positive root x0 = 1.4616...: 4,600 ulp at x = 1.4616 and 74 at 1.5, where Dual's was within
// one ulp. Written once, both take the same steps; `m` supplies V values and Const, Add, Sub,
// Mul, Div, Lt, Eq -> mask, Select(mask, a, b), Log, Tan, Floor, each one IEEE operation in
// double (a float caller converts to double and back, as Dual<float> does).
//
// The steps (every case computed, the right one selected, so vector code has no branches):
//   x > 0 and below x0 - 1/2:  taylor(((x + 1) - x0) - x0_lo) - 1/x   (psi(x) = psi(x + 1) - 1/x)
//   x0 - 1/2 <= x < 10:        taylor((x - n - x0) - x0_lo) + sum_{j=1..n} 1/(x - j), the n <= 9
//                              steps that bring x below x0 + 1/2 (positive terms: no cancellation)
//   x >= 10:                   log x - 1/(2x) - sum_k B_2k / (2k x^2k), k = 1..7
//   x <= 0:                    psi(1 - x) - pi cot(pi x); NaN at the poles 0, -1, -2, ...
// taylor() is the series of digamma about x0 (36 terms, mpmath). The reflection cancels near
// digamma's negative roots (docs/accuracy.md states the bound); elsewhere within 1 ulp in f64
// with glibc's scalar log and tan.
//
// Example:
//   ScalarSteps<double> m;                        // math.hpp
//   double psi = digamma_steps(m, 0.5);           // -gamma - 2 ln 2
#pragma once

#include "dualcast/host_device.hpp"

namespace dualcast::detail {

template <class M, class V>
DUALCAST_HD V digamma_taylor_steps(M& m, V dx) {
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
  V s = m.Const(c[n - 1]);
  for (int k = n - 2; k >= 0; --k) s = m.Add(m.Const(c[k]), m.Mul(s, dx));
  return m.Mul(s, dx);
}

// psi(u) for u > 0 (u = +inf gives +inf; NaN gives NaN).
template <class M, class V>
DUALCAST_HD V digamma_positive_steps(M& m, V u) {
  constexpr double x0_hi = 1.4616321449683622, x0_lo = 9.549995429965697e-17;
  const V one = m.Const(1);
  // u >= 10: the asymptotic series.
  const V r = m.Div(one, u), r2 = m.Mul(r, r);
  V s = m.Sub(m.Const(691.0 / 32760), m.Div(r2, m.Const(12)));
  s = m.Add(m.Const(-1.0 / 132), m.Mul(r2, s));
  s = m.Add(m.Const(1.0 / 240), m.Mul(r2, s));
  s = m.Add(m.Const(-1.0 / 252), m.Mul(r2, s));
  s = m.Add(m.Const(1.0 / 120), m.Mul(r2, s));
  s = m.Add(m.Const(-1.0 / 12), m.Mul(r2, s));
  s = m.Mul(r2, s);
  const V large = m.Add(m.Sub(m.Log(u), m.Mul(m.Const(0.5), r)), s);
  // u < x0 - 1/2: one step up, into the Taylor window.
  const V tiny = m.Sub(digamma_taylor_steps(m, m.Sub(m.Sub(m.Add(u, one), m.Const(x0_hi)), m.Const(x0_lo))),
                       m.Div(one, u));
  // Otherwise down into [x0 - 1/2, x0 + 1/2): step j is taken while the previous x >= x0 + 1/2.
  V x = u, sum = m.Const(0);
  for (int j = 1; j <= 9; ++j) {
    const auto stay = m.Lt(x, m.Const(x0_hi + 0.5));
    const V next = m.Sub(x, one);  // exact: x < 10
    sum = m.Select(stay, sum, m.Add(sum, m.Div(one, next)));
    x = m.Select(stay, x, next);
  }
  const V middle = m.Add(digamma_taylor_steps(m, m.Sub(m.Sub(x, m.Const(x0_hi)), m.Const(x0_lo))), sum);
  return m.Select(m.Lt(u, m.Const(10)), m.Select(m.Lt(u, m.Const(x0_hi - 0.5)), tiny, middle), large);
}

template <class M, class V>
DUALCAST_HD V digamma_steps(M& m, V x) {
  constexpr double pi = 3.141592653589793238462643383279502884;
  const V zero = m.Const(0), one = m.Const(1);
  const auto positive = m.Lt(zero, x);  // false for NaN: the reflection passes NaN on
  const V psi_u = digamma_positive_steps(m, m.Select(positive, x, m.Sub(one, x)));
  // pi cot(pi t), t = x - floor(x) (exact, in [0, 1)), with tan's argument within pi/4:
  // 1/tan(pi t) near the poles (t - 1 is exact), tan(pi (1/2 - t)) in the middle (1/2 - t is exact).
  const V t = m.Sub(x, m.Floor(x));
  const auto low = m.Lt(t, m.Const(0.25)), high = m.Lt(m.Const(0.75), t);
  const V arg = m.Select(low, t, m.Select(high, m.Sub(t, one), m.Sub(m.Const(0.5), t)));
  const V tn = m.Tan(m.Mul(m.Const(pi), arg));
  const V cot = m.Select(low, m.Div(one, tn), m.Select(high, m.Div(one, tn), tn));
  const V pole = m.Div(m.Sub(x, x), m.Sub(x, x));  // 0/0 = NaN where selected (x finite there)
  const V reflected = m.Select(m.Eq(t, zero), pole, m.Sub(psi_u, m.Mul(m.Const(pi), cot)));
  return m.Select(positive, psi_u, reflected);
}

}  // namespace dualcast::detail
