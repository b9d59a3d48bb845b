// digamma(x) written once, each side without branches, over an arithmetic that dual/ (Dual's lgamma', tgamma', digamma) and the jvp rules instantiate.
//
// Why one template: lgamma' = digamma and tgamma' = tgamma digamma are derivative rules in
// two places (Dual in dual/, the jvp pass in jit/). A second, shorter formula in the jvp pass
// (the asymptotic series at x + 10 stepped down by ten reciprocals) cancelled near digamma's
// positive root x0 = 1.4616...: 4,600 ulp at x = 1.4616 and 74 at 1.5, where Dual's was within
// one ulp. Written once, both take the same steps; `m` supplies V values and Const, Add, Sub,
// Mul, Div, Neg, Fma, Lt, Eq -> mask, Select(mask, a, b), Log, Log2, Ldexp, Floor, each one IEEE
// operation in double (a float caller converts to double and back, as Dual<float> does).
//
// Two sides, x > 0 and the rest; callers branch between them (a C++ conditional in scalar
// code, a structured If in the jvp pass's IR, so vector code runs the costly double-double
// side only where some lane needs it). Within a side every case is computed and the right
// one selected, so vector code has no further branches:
//   x > 0 and below x0 - 1/2:  taylor(((x + 1) - x0) - x0_lo) - 1/x   (psi(x) = psi(x + 1) - 1/x)
//   x0 - 1/2 <= x < 10:        taylor((x - n - x0) - x0_lo) + sum_{j=1..n} 1/(x - j), the n <= 9
//                              steps that bring x below x0 + 1/2 (positive terms: no cancellation)
//   x >= 10:                   log x - 1/(2x) - sum_k B_2k / (2k x^2k), k = 1..7
//   x <= 0:                    psi(1 - x) - pi cot(pi x) in double-double (the two cancel near
//                              digamma's negative roots); NaN at the poles 0, -1, -2, ...;
//                              -1/x - gamma above -2^-60 (+inf where 1/x overflows)
// taylor() is the series of digamma about x0 (36 terms, mpmath). Within 1 ulp in f64 with
// glibc's scalar log for x > 0; docs/accuracy.md has the measured bounds.
//
// Example (internal: the names are in dualcast::detail; ScalarSteps comes with <dualcast/math.hpp>):
//   #include <dualcast/math.hpp>
//   #include <dualcast/digamma_steps.hpp>
//   using namespace dualcast::detail;
//   ScalarSteps<double> m;
//   double psi = digamma_positive_steps(m, 0.5);             // -gamma - 2 ln 2
//   double at_root = digamma_nonpositive_steps(m, -0.5040830082644554);  // ~0, to ~1 ulp
#pragma once

#include "dualcast/double_double_steps.hpp"
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

// psi(x) for x < 0, not an integer: psi(1 - x) - pi cot(pi x) with both terms in double-double.
// The two cancel near each negative root of digamma (one in every (-n-1, -n)), and the relative
// condition there is ln|x| / |psi(x)|: a double reflection lost up to 107 ulp at random points
// in (-10, 0). With each term to ~2^-104 the result is within a few ulp except at the doubles
// within ~2^-50 |x| of a root (docs/accuracy.md). Steps:
//   pi cot(pi x) = pi cot(pi s), s = x - nearest integer (|s| <= 1/2); with h = s/2 and
//     g = pi h cot(pi h) = 1 - sum_k 2 zeta(2k) h^2k (|h| <= 1/4: each term 16x smaller),
//     the double angle gives (g^2 - pi^2 h^2) / (s g).
//   psi(1 - x) = psi(v) - sum_{j < n} 1/(1 - x + j), v = 1 - x + n >= 13 (n <= 12 positive
//     terms; 1 + j - x and v are exact TwoSums), and psi(v) = ln v - 1/(2v) - sum_k B_2k/(2k v^2k),
//     k <= 28 (the divergent series is below 2^-110 there).
//   ln v = e ln 2 + 2 atanh((m - 1)/(m + 1)), v = m 2^e with m in [0.70, 1.42].
// Terms smaller than 2^-52 of the sum run in double; the rest in double-double.
template <class M, class V>
DUALCAST_HD V digamma_reflection_steps(M& m, V x) {
  using D = DoubleDouble<V>;
  // 2 zeta(2k), k = 1..27 (mpmath); the first 13 as double-doubles.
  constexpr double zeta_hi[] = {
      3.289868133696453, 2.1646464674222763, 2.0346861239688985, 2.0081547123958887, 2.001989150255636,
      2.000492173106616, 2.0001224962701176, 2.0000305645188172, 2.00000763458653, 2.0000019079240676,
      2.0000004769010054, 2.000000119216378, 2.0000000298031098, 2.000000007450668, 2.000000001862655,
      2.000000000465662, 2.0000000001164153, 2.000000000029104, 2.000000000007276, 2.000000000001819,
      2.0000000000004547, 2.0000000000001137, 2.0000000000000284, 2.000000000000007, 2.0000000000000018,
      2.0000000000000004, 2.0};
  constexpr double zeta_lo[] = {
      6.081344700796952e-17,  9.49702408571073e-17,    -1.9517198332883063e-16, -4.034349661547569e-17,
      2.1873826341294005e-16, 7.113198248766341e-18,   -2.1277148994144281e-16, 8.163518284861808e-17,
      -8.118713784376256e-17, 1.2218006976829918e-16,  1.0255162665490708e-16,  -2.2991747459888093e-19,
      -1.0113429419170146e-16};
  // B_2k / (2k), k = 1..28; the first 6 as double-doubles.
  constexpr double bern_hi[] = {
      0.08333333333333333,    -0.008333333333333333,  0.003968253968253968,   -0.004166666666666667,
      0.007575757575757576,   -0.021092796092796094,  0.08333333333333333,    -0.4432598039215686,
      3.0539543302701198,     -26.456212121212122,    281.46014492753625,     -3607.5105463980462,
      54827.583333333336,     -974936.8238505747,     20052695.79668808,      -472384867.7216299,
      12635724795.916666,     -380879311252.4537,     12850850499305.084,     -482414483548501.7,
      2.0040310656516252e+16, -9.16774360319533e+17,  4.5979888343656505e+19, -2.5180471921451095e+21,
      1.5001733492153928e+23, -9.689957887463594e+24, 6.764588237929281e+26,  -5.089065946866229e+28};
  constexpr double bern_lo[] = {4.625929269271485e-18,  -1.1564823173178714e-19, 2.20282346155785e-19,
                                -5.782411586589357e-20, -2.1026951223961299e-19, 1.3911677399530732e-18};
  // 1/(2j + 1), j = 1..21; the first 10 as double-doubles.
  constexpr double odd_hi[] = {
      0.3333333333333333,   0.2,                  0.14285714285714285,  0.1111111111111111,
      0.09090909090909091,  0.07692307692307693,  0.06666666666666667,  0.058823529411764705,
      0.05263157894736842,  0.047619047619047616, 0.043478260869565216, 0.04,
      0.037037037037037035, 0.034482758620689655, 0.03225806451612903,  0.030303030303030304,
      0.02857142857142857,  0.02702702702702703,  0.02564102564102564,  0.024390243902439025,
      0.023255813953488372};
  constexpr double odd_lo[] = {1.850371707708594e-17,  -1.1102230246251566e-17, 7.93016446160826e-18,
                               6.1679056923619804e-18, -2.523234146875356e-18,  -4.270088556250602e-18,
                               9.251858538542971e-19,  8.163404592832033e-19,   2.921639538487254e-18,
                               2.64338815386942e-18};
  constexpr double pi2_hi = 9.869604401089358, pi2_lo = 6.265295508739711e-16;
  constexpr double ln2_hi = 0.6931471805599453, ln2_lo = 2.3190468138462996e-17;
  const V one = m.Const(1);
  // Horner from the top: c[top..n_dd] in double, c[n_dd - 1..0] in double-double, times t.
  auto series = [&](const double* hi, const double* lo, int top, int n_dd, const D& t) {
    V tail = m.Const(hi[top]);
    for (int k = top - 1; k >= n_dd; --k) tail = m.Add(m.Const(hi[k]), m.Mul(tail, t.hi));
    D acc{tail, m.Const(0)};
    for (int k = n_dd - 1; k >= 0; --k) acc = dd_add_sloppy(m, dd_mul(m, acc, t), dd_const<M, V>(m, hi[k], lo[k]));
    return dd_mul(m, acc, t);
  };

  // pi cot(pi x).
  // x - floor(x) would round for tiny |x| (1 + x); x minus its nearest integer n is exact (x/n
  // is within [1/2, 2], or n = 0), also where x + 1/2 rounds and |s| is a hair above 1/2.
  const V s = m.Sub(x, m.Floor(m.Add(x, m.Const(0.5))));
  const V h = m.Mul(m.Const(0.5), s);
  const D t = two_prod(m, h, h);
  const D g = dd_add_d(m, dd_neg(m, series(zeta_hi, zeta_lo, 26, 13, t)), one);
  const D cot = dd_div(m, dd_sub(m, dd_mul(m, g, g), dd_mul(m, dd_const<M, V>(m, pi2_hi, pi2_lo), t)),
                       dd_mul_d(m, g, s));

  // The steps up from 1 - x to v >= 13: step j is taken when 1 + j - x < 13.
  D steps{m.Const(0), m.Const(0)};
  V n = m.Const(0);
  for (int j = 0; j < 12; ++j) {
    const auto taken = m.Lt(m.Const(j - 12.0), x);
    const D term = dd_recip(m, two_sum(m, m.Const(1.0 + j), m.Neg(x)));
    steps = dd_add_sloppy(m, steps, D{m.Select(taken, term.hi, m.Const(0)), m.Select(taken, term.lo, m.Const(0))});
    n = m.Add(n, m.Select(taken, one, m.Const(0)));
  }
  const D v = two_sum(m, m.Add(one, n), m.Neg(x));

  // ln v.
  V e = m.Floor(m.Log2(v.hi));
  V mant = m.Ldexp(v.hi, m.Neg(e));  // [1, 2), or just outside where log2 rounds: still fine
  const auto fold = m.Lt(m.Const(1.4142135623730951), mant);
  mant = m.Select(fold, m.Mul(mant, m.Const(0.5)), mant);
  e = m.Select(fold, m.Add(e, one), e);
  const D z = dd_div(m, D{m.Sub(mant, one), m.Const(0)}, two_sum(m, mant, one));  // mant - 1 exact
  const D atanh_z = dd_mul(m, z, dd_add_d(m, series(odd_hi, odd_lo, 20, 10, dd_mul(m, z, z)), one));
  D ln_v = dd_add(m, two_prod(m, e, m.Const(ln2_hi)), D{m.Mul(e, m.Const(ln2_lo)), m.Const(0)});
  ln_v = dd_add(m, ln_v, D{m.Mul(m.Const(2), atanh_z.hi), m.Mul(m.Const(2), atanh_z.lo)});
  ln_v = dd_add_d(m, ln_v, m.Div(v.lo, v.hi));  // ln(v.hi + v.lo) - ln v.hi, to 2^-106

  // psi(v), then psi(1 - x) and psi(x).
  const D r = dd_recip(m, v);
  D psi = dd_sub(m, ln_v, D{m.Mul(m.Const(0.5), r.hi), m.Mul(m.Const(0.5), r.lo)});
  psi = dd_sub(m, psi, series(bern_hi, bern_lo, 27, 6, dd_mul(m, r, r)));
  psi = dd_sub(m, dd_sub(m, psi, steps), cot);
  return m.Add(psi.hi, psi.lo);
}

// psi(x) for x <= 0 (and NaN): NaN at the poles 0, -1, -2, ... (and -inf), else the reflection.
// Just below 0 psi(x) = -1/x - gamma + O(x): taken so for -2^-60 < x < 0, where the O(x) terms
// are below 2^-118 of it. The reflection cannot be used where 1/x overflows (x > -5.6e-309):
// its cot term's double-double quotient is inf - inf = NaN there, for psi = +inf.
template <class M, class V>
DUALCAST_HD V digamma_nonpositive_steps(M& m, V x) {
  constexpr double euler_gamma = 0.57721566490153286061;
  const V pole = m.Div(m.Sub(x, x), m.Sub(x, x));  // 0/0 = NaN where selected (x finite there)
  const V near_zero = m.Sub(m.Div(m.Const(-1), x), m.Const(euler_gamma));
  return m.Select(m.Eq(m.Floor(x), x), pole,
                  m.Select(m.Lt(m.Const(-0x1p-60), x), near_zero, digamma_reflection_steps(m, x)));
}

}  // namespace dualcast::detail
