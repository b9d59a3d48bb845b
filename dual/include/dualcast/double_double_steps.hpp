// Double-double arithmetic (a value as the unevaluated sum hi + lo, about 106 bits) over the steps arithmetic of math.hpp and the jvp pass.
//
// Why: a few results are differences of two nearly equal quantities that each must be known
// beyond double precision; digamma's reflection psi(1 - x) - pi cot(pi x) near its negative
// roots is the one that needs it (digamma_steps.hpp). Written over `m` (Add, Sub, Mul, Div,
// Neg, Fma, each one IEEE operation), so scalar code, Dual and the JIT take the same steps.
// The algorithms are Dekker's and Knuth's (as in the QD library): TwoSum and TwoProd (by fma)
// are exact; dd_add keeps ~2^-106 relative to the result even when a and b cancel, which the
// last steps of a reflection need (the sloppy sum, 2^-106 of |a| + |b|, left 5.5 ulp at a
// double next to a digamma root; this one 1.5), and dd_add_sloppy serves sums of one sign
// (series, positive terms) for about half the instructions. Nothing here survives fast-math reassociation; the jvp pass and the
// printers keep IEEE order (no fast-math flags anywhere).
//
// Example (internal: the names are in dualcast::detail; ScalarSteps comes with <dualcast/math.hpp>):
//   #include <dualcast/math.hpp>
//   #include <dualcast/double_double_steps.hpp>
//   using namespace dualcast::detail;
//   ScalarSteps<double> m;
//   DoubleDouble<double> third = dd_recip(m, DoubleDouble<double>{3.0, 0.0});  // 1/3 to ~2^-106
#pragma once

#include "dualcast/host_device.hpp"

namespace dualcast::detail {

template <class V>
struct DoubleDouble {
  V hi, lo;
};

// a + b exactly, as s + e (any magnitudes).
template <class M, class V>
DUALCAST_HD DoubleDouble<V> two_sum(M& m, V a, V b) {
  const V s = m.Add(a, b), bb = m.Sub(s, a);
  return {s, m.Add(m.Sub(a, m.Sub(s, bb)), m.Sub(b, bb))};
}

// a + b exactly when |a| >= |b| (or a = 0).
template <class M, class V>
DUALCAST_HD DoubleDouble<V> fast_two_sum(M& m, V a, V b) {
  const V s = m.Add(a, b);
  return {s, m.Sub(b, m.Sub(s, a))};
}

// a * b exactly (barring underflow), the error by fma.
template <class M, class V>
DUALCAST_HD DoubleDouble<V> two_prod(M& m, V a, V b) {
  const V p = m.Mul(a, b);
  return {p, m.Fma(a, b, m.Neg(p))};
}

template <class M, class V>
DUALCAST_HD DoubleDouble<V> dd_const(M& m, double hi, double lo) {
  return {m.Const(hi), m.Const(lo)};
}

template <class M, class V>
DUALCAST_HD DoubleDouble<V> dd_neg(M& m, const DoubleDouble<V>& a) {
  return {m.Neg(a.hi), m.Neg(a.lo)};
}

template <class M, class V>
DUALCAST_HD DoubleDouble<V> dd_add(M& m, const DoubleDouble<V>& a, const DoubleDouble<V>& b) {
  const DoubleDouble<V> s = two_sum(m, a.hi, b.hi), t = two_sum(m, a.lo, b.lo);
  const DoubleDouble<V> u = fast_two_sum(m, s.hi, m.Add(s.lo, t.hi));
  return fast_two_sum(m, u.hi, m.Add(u.lo, t.lo));
}

// a + b when both have one sign (or one is much the smaller): no cancellation to guard.
template <class M, class V>
DUALCAST_HD DoubleDouble<V> dd_add_sloppy(M& m, const DoubleDouble<V>& a, const DoubleDouble<V>& b) {
  const DoubleDouble<V> s = two_sum(m, a.hi, b.hi);
  return fast_two_sum(m, s.hi, m.Add(s.lo, m.Add(a.lo, b.lo)));
}

template <class M, class V>
DUALCAST_HD DoubleDouble<V> dd_sub(M& m, const DoubleDouble<V>& a, const DoubleDouble<V>& b) {
  return dd_add(m, a, dd_neg(m, b));
}

template <class M, class V>
DUALCAST_HD DoubleDouble<V> dd_add_d(M& m, const DoubleDouble<V>& a, V b) {
  const DoubleDouble<V> s = two_sum(m, a.hi, b);
  return fast_two_sum(m, s.hi, m.Add(s.lo, a.lo));
}

template <class M, class V>
DUALCAST_HD DoubleDouble<V> dd_mul(M& m, const DoubleDouble<V>& a, const DoubleDouble<V>& b) {
  const DoubleDouble<V> p = two_prod(m, a.hi, b.hi);
  return fast_two_sum(m, p.hi, m.Add(p.lo, m.Add(m.Mul(a.hi, b.lo), m.Mul(a.lo, b.hi))));
}

template <class M, class V>
DUALCAST_HD DoubleDouble<V> dd_mul_d(M& m, const DoubleDouble<V>& a, V b) {
  const DoubleDouble<V> p = two_prod(m, a.hi, b);
  return fast_two_sum(m, p.hi, m.Add(p.lo, m.Mul(a.lo, b)));
}

// 1/a: q = 1/a.hi and the residual 1 - q a, which fma gives exactly for a.hi.
template <class M, class V>
DUALCAST_HD DoubleDouble<V> dd_recip(M& m, const DoubleDouble<V>& a) {
  const V q = m.Div(m.Const(1), a.hi);
  const V r = m.Sub(m.Fma(m.Neg(q), a.hi, m.Const(1)), m.Mul(q, a.lo));
  return fast_two_sum(m, q, m.Mul(q, r));
}

// a / b: a quotient and two corrections from double-double remainders.
template <class M, class V>
DUALCAST_HD DoubleDouble<V> dd_div(M& m, const DoubleDouble<V>& a, const DoubleDouble<V>& b) {
  const V q1 = m.Div(a.hi, b.hi);
  const DoubleDouble<V> r = dd_sub(m, a, dd_mul_d(m, b, q1));
  const V q2 = m.Div(r.hi, b.hi);
  const DoubleDouble<V> r2 = dd_sub(m, r, dd_mul_d(m, b, q2));
  const DoubleDouble<V> q = fast_two_sum(m, q1, q2);
  return dd_add_d(m, q, m.Div(r2.hi, b.hi));
}

}  // namespace dualcast::detail
