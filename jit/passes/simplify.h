// Constant folding and IEEE-exact algebraic simplification of a Function.
//
// The kernels we compile are differentiated numerics: a rewrite that changes
// one bit of one output for one input (a signed zero, an infinity, a NaN) is a
// wrong answer that the tests against Dual<T> will find, and that a user will
// find much later. So this pass only applies rules that are identities in
// IEEE-754 binary32/binary64 arithmetic with round-to-nearest for EVERY input,
// including ±0, ±inf, NaN and subnormals. Two NaNs count as equal whatever
// their payload or sign: IEEE leaves those unspecified for arithmetic, and the
// builder canonicalises NaN constants anyway. The rules also assume no
// flush-to-zero mode (backends must keep subnormals; with FTZ x*1 would flush
// a subnormal x while x does not).
//
// The pass is a Rewriter: the function is rebuilt through a Builder, so every
// rewrite is also hash-consed (CSE for free), and a rule sees its operands
// already simplified. Dead values are left behind; run DCE afterwards (or
// use Optimize, which iterates both).
//
// What it does:
//   * folds every op whose operands are all constants (EvalScalarOp, the same
//     scalar semantics the interpreter uses), the result rounded to its type
//     (except to a NaN: the builder keeps one canonical NaN constant, while
//     the sign of a computed NaN, e.g. -(NaN), is visible to copysign);
//   * x*1, 1*x, x/1, x-(+0), x+(-0), (-0)+x -> x;  (-0)-x -> -x;
//   * -(-x) -> x;  abs(abs x), abs(-x) -> abs x;  rounding of a rounded value
//     (floor/ceil/round/trunc of floor/ceil/round/trunc) -> the inner value;
//   * min/max/fmin/fmax(x, x) -> x (a tie takes the first argument, NaN
//     propagates the same way in both);
//   * fma(1,b,c) -> b+c, fma(a,1,c) -> a+c (one rounding either way),
//     fma(a,b,-0) -> a*b (a*b + -0 is a*b for every a*b, zeros included);
//   * select(true,a,b) -> a, select(false,a,b) -> b, select(c,a,a) -> a,
//     select(c,true,false) -> c, select(c,false,true) -> not c;
//   * not(not b) -> b; and/or with a constant operand; and(b,b), or(b,b) -> b;
//   * cast to the same type -> x; f32 -> f64 -> f32 round trip -> x;
//   * an If on a constant condition becomes its taken branch, inlined into
//     the enclosing block; a Result whose two branches yield the same value
//     (necessarily defined outside the If) or the same constant becomes that
//     value, and the If dies in DCE when no result is left.
//
// What it does NOT do, and why:
//   * x*0 -> 0: inf*0 and NaN*0 are NaN, and -1*0 is -0.
//   * x+0 -> x (with +0): -0 + +0 is +0. (x+(-0) is exact and done.)
//   * 0-x -> -x: 0 - 0 is +0 but -(0) is -0. ((-0)-x is exact and done.)
//   * x-x -> 0, x/x -> 1: inf-inf, inf/inf, 0/0 and NaN give NaN.
//   * x*-1 -> -x, x*2 -> x+x and other strength reductions: gain nothing
//     here (LLVM/NVRTC do them) and the first changes the sign of a NaN.
//   * fma(0,b,c) -> c or fma(a,b,+0) -> a*b: inf*0 is NaN; -0 + +0 is +0.
//   * x==x -> true, x<x -> false, x!=x -> false: all wrong for NaN.
//   * not(a<b) -> a>=b: wrong for NaN (both comparisons are false).
//   * reassociation ((a+b)+c -> a+(b+c)), distribution, a/b -> a*(1/b):
//     change rounding.
//   * f64 -> f32 -> f64 round trip: rounds.
//   * structural-zero tangents: jvp never emits them.
//
// Example:
//   x*1 + (-0.0)  with x: f64       ->  return %0
//   if true { yield tanh(x) } else { yield x }  ->  %1 = tanh %0; return %1
//   x*0 stays x*0 (x = inf must give NaN).
#pragma once

#include "jit/ir/ir.h"

namespace dualcast::jit {

// Returns the simplified function (same signature). Not DCE'd.
Function Simplify(const Function& f);

}  // namespace dualcast::jit
