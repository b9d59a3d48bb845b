// tanh and sigmoid with their derivatives from ONE exponential, written once over an arithmetic that dual/ and every JIT backend instantiate.
//
// Why a template: the value and the derivative must share the exponential (an accurate
// derivative then costs no second transcendental), and every layer (dualcast::math, Dual, the
// interpreter, the jvp rules, the CPU and CUDA printers) must compute the same bits. Each layer
// supplies an arithmetic `m` with V values and Const, Add, Sub, Mul, Div, Neg, Abs, Exp, Expm1,
// Lt -> mask, Select(mask, a, b), Copysign; every step is one IEEE operation in V's precision.
//
//   tanh:    fdlibm's (glibc's) tanh, so a value equals libm's tanh bit for bit with glibc's
//            expm1: t = expm1(-2|x|) below |x| = 1, else expm1(2|x|) (ONE call on the selected
//            argument), u = t + 2, s = 2/u; tanh = copysign(|x| < 1 ? -t/u : 1 - s, x)
//            (one division on the selected numerator).
//            tanh' = 4e/(1+e)^2 (e = exp(-2|x|)) from the same quotient q: (1 - q)(1 + q)
//            below 1 (= 4(1 + t)/u^2; q <= tanh 1 = 0.76, so no cancellation, and 1 - q is
//            exact from q = 1/2 on), s (2 - s) above (no overflow: 0 once t is inf). Either
//            way no second division. 1 - y^2 over all x would lose every digit once y rounds
//            to +-1 (|x| > 3.1 in f32).
//   sigmoid: t = exp(-|x|), r = 1/(1 + t); x < 0: t r, else r;   sigmoid' = (t r) r.
//            t never overflows, so the subnormal tail exp(x) for x below -88.7 (f32) / -709.8
//            (f64) comes out of the same formula, in vector lanes and scalar code alike.
// Measured against 80-bit references (4e6 points, glibc 2.36 libm): tanh value 2.2 ulp (and
// bit-identical to glibc's tanh/tanhf), derivative 5.9 ulp (worst just below |x| = 1, where
// q's own error is doubled: 4.3 with a second division, dropped as the costliest vector
// instruction in HM-LSTM's cell); sigmoid value 2.6 ulp, derivative 4.7 ulp (f32 and f64). Divisions are counted: both
// sides of each select run in vector code.
//
// Example (internal: the names are in dualcast::detail; ScalarSteps comes with <dualcast/math.hpp>):
//   #include <dualcast/math.hpp>
//   #include <dualcast/activation_steps.hpp>
//   using namespace dualcast::detail;
//   ScalarSteps<float> m;
//   auto [y, dy] = tanh_steps(m, 0.5f);                    // tanh(0.5), 1 - tanh(0.5)^2
#pragma once

#include "dualcast/host_device.hpp"

namespace dualcast::detail {

template <class V>
struct ValueAndSlope {
  V value;
  V slope;
};

template <class M, class V>
DUALCAST_HD ValueAndSlope<V> tanh_steps(M& m, V x) {
  const V a = m.Abs(x);
  const V two = m.Const(2);
  const auto small = m.Lt(a, m.Const(1));  // false for NaN: the large side, NaN throughout
  const V t = m.Expm1(m.Select(small, m.Neg(m.Mul(two, a)), m.Mul(two, a)));
  const V u = m.Add(t, two);
  const V q = m.Div(m.Select(small, m.Neg(t), two), u);  // -t/u or s = 2/u: one division
  const V y = m.Copysign(m.Select(small, q, m.Sub(m.Const(1), q)), x);
  const V one = m.Const(1);
  const V dy = m.Select(small, m.Mul(m.Sub(one, q), m.Add(one, q)), m.Mul(q, m.Sub(two, q)));
  return {y, dy};
}

// One division: r = 1/(1 + t), the value r or t r, the slope (t r) r.
template <class M, class V>
DUALCAST_HD ValueAndSlope<V> sigmoid_steps(M& m, V x) {
  const V one = m.Const(1);
  const V t = m.Exp(m.Neg(m.Abs(x)));
  const V r = m.Div(one, m.Add(one, t));
  return {m.Mul(m.Select(m.Lt(x, m.Const(0)), t, one), r), m.Mul(m.Mul(t, r), r)};
}

// The fast variants (dc::math::fast_tanh, fast_sigmoid): the formulas and slopes PyTorch's and
// JAX's backward passes use and a hand-tuned loop writes, for callers who trade accuracy near 0
// and in the tails for fewer instructions (no expm1, no selects):
//   fast_tanh:    y = 1 - 2/(1 + exp(2x)), slope 1 - y^2.
//   fast_sigmoid: y = 1/(1 + exp(-x)),     slope y (1 - y).
// Their errors are absolute, not relative (docs/fast-activations.md): tanh's value
// loses its relative accuracy as x -> 0 (1.7e-4 at x = 1e-4 in float) and both slopes theirs in
// the tails, where they round to 0 long before the exact slope does (tanh' once |x| > 9 in
// float). NaN stays NaN and the infinities give the exact limits.
template <class M, class V>
DUALCAST_HD ValueAndSlope<V> fast_tanh_steps(M& m, V x) {
  const V one = m.Const(1);
  const V y = m.Sub(one, m.Div(m.Const(2), m.Add(one, m.Exp(m.Add(x, x)))));
  return {y, m.Sub(one, m.Mul(y, y))};
}

template <class M, class V>
DUALCAST_HD ValueAndSlope<V> fast_sigmoid_steps(M& m, V x) {
  const V one = m.Const(1);
  const V y = m.Div(one, m.Add(one, m.Exp(m.Neg(x))));
  return {y, m.Mul(y, m.Sub(one, y))};
}

// Which of the four: the IR's ops map onto this (jit/ir/activation.h), so that every backend
// and the jvp pass pick the steps in one place.
enum class Activation { kTanh, kSigmoid, kFastTanh, kFastSigmoid };

template <class M, class V>
DUALCAST_HD ValueAndSlope<V> activation_steps(Activation which, M& m, V x) {
  switch (which) {
    case Activation::kTanh: return tanh_steps(m, x);
    case Activation::kSigmoid: return sigmoid_steps(m, x);
    case Activation::kFastTanh: return fast_tanh_steps(m, x);
    case Activation::kFastSigmoid: break;
  }
  return fast_sigmoid_steps(m, x);
}

}  // namespace dualcast::detail
