// hypot's partial derivatives written once, over an arithmetic that dual/ (Dual's hypot) and the jvp rules instantiate.
//
// d/da hypot(a, b) = a / h and d/db = b / h. Taken as a / h wherever h is a normal number.
// Where h is not, a / h itself is no use although the partials are ordinary numbers: finite
// arguments whose hypot overflows (hypot(1.5e308, 1.5e308) = inf: a / h = 0, exact 0.7071) or
// whose hypot is subnormal (hypot(5e-324, 5e-324): a / h = 1; hypot(1e-310, 3e-311): 150 ulp
// off). There both arguments are first scaled by a power of two (exactly; `up` = 2^(emax/2)
// of the type, or its reciprocal when h > 1) into a range where hypot is a normal number.
// Conventions (dual_math.hpp's table, docs/ops.md):
//   h = 0 (the origin)        both 0 (like abs'(0): hypot(x, 0) = |x|)
//   an infinite argument      sign(arg) for an infinite argument, 0 for a finite or NaN one:
//                             hypot(inf, y) = inf for every y (IEEE 754), flat in y
//   NaN h                     the caller's NaN guard (NaN partials)
// `m` supplies V values and Const, Mul, Div, Abs, Copysign, Hypot, Lt, Eq -> mask, Select.
//
// Example:
//   ScalarSteps<double> m;                                               // math.hpp
//   auto [da, db] = hypot_partials_steps(m, 1.5e308, 1.5e308, INFINITY,  // 0.7071, 0.7071
//                                        hypot_scale<double>(), 2.2250738585072014e-308);
#pragma once

#include "dualcast/host_device.hpp"

namespace dualcast::detail {

template <class V>
struct HypotPartials {
  V da;
  V db;
};

// 2^(emax/2) of S: the arguments of an overflowed hypot times its reciprocal, or of a subnormal
// one times it, have a normal hypot (and the scaling is exact for every normal argument).
template <class S>
DUALCAST_HD constexpr S hypot_scale() {
  if constexpr (sizeof(S) == sizeof(float)) {
    return S(0x1p64f);
  } else {
    S s = S(0x1p512);
    if constexpr (sizeof(S) > sizeof(double)) {
      for (int i = 1; i < 16; ++i) s = s * S(0x1p512);  // x87 long double: 2^8192
    }
    return s;
  }
}

// One partial: of the argument `mine` (`mine_s` scaled; `mine_inf`, `a_inf`, `b_inf` whether
// it, a and b are infinite).
template <class M, class V, class Mask>
DUALCAST_HD V hypot_partial_steps(M& m, const V& mine, const V& mine_s, const Mask& mine_inf, const Mask& a_inf,
                                  const Mask& b_inf, const V& h, const V& hs, const V& inf, const V& min_normal) {
  const V zero = m.Const(0);
  const V at_inf = m.Select(mine_inf, m.Copysign(m.Const(1), mine), zero);
  // Scaled where h is subnormal (0 is the origin, below) or overflowed.
  const V scaled = m.Div(mine_s, hs);
  const V finite = m.Select(m.Lt(h, min_normal), scaled, m.Select(m.Eq(h, inf), scaled, m.Div(mine, h)));
  return m.Select(m.Eq(h, zero), zero, m.Select(a_inf, at_inf, m.Select(b_inf, at_inf, finite)));
}

// The partials of h = hypot(a, b); `up` as hypot_scale, `min_normal` the type's least normal.
template <class M, class V>
DUALCAST_HD HypotPartials<V> hypot_partials_steps(M& m, const V& a, const V& b, const V& h, const V& up,
                                                  const V& min_normal) {
  const V one = m.Const(1);
  const V inf = m.Mul(up, up);  // 2^emax: overflows (no infinity literal under NVRTC)
  const auto a_inf = m.Eq(m.Abs(a), inf), b_inf = m.Eq(m.Abs(b), inf);
  // Scaled by 2^-(emax/2) above 1, by 2^(emax/2) below (h >= |a|, |b|).
  const V s = m.Select(m.Lt(one, h), m.Div(one, up), up);
  const V as = m.Mul(a, s), bs = m.Mul(b, s);
  const V hs = m.Hypot(as, bs);
  return {hypot_partial_steps(m, a, as, a_inf, a_inf, b_inf, h, hs, inf, min_normal),
          hypot_partial_steps(m, b, bs, b_inf, a_inf, b_inf, h, hs, inf, min_normal)};
}

}  // namespace dualcast::detail
