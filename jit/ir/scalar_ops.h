// The scalar meaning of every IR op: the one definition the interpreter and the constant folder share.
//
// Every layer of dualcast must agree on what `tanh` or `min` of a value is, so
// the semantics live here once. Arithmetic and math ops are evaluated in the
// instruction's own precision — f32 in float (arguments narrowed, the float
// overload called, the result widened back), f64 in double — through the
// scalar functions of `dualcast::math`, so an interpreted primal value is bit
// for bit the one `dualcast::Dual<float|double, N>` computes. Values travel as
// double because every float is exactly representable in one.
//
// Conventions: comparisons and logic give 0 or 1; select takes args[1] when
// args[0] != 0; fma is fused; cast rounds to the target type (to bool: x != 0).
//
// Example:
//   double args[] = {0.5};
//   double y = EvalScalarOp(Op::kTanh, Type::kF32, args);  // == double(tanhf(0.5f))
#pragma once

#include "jit/ir/ir.h"

namespace dualcast::jit {

// `type` is the instruction's result type (the target type for kCast; for
// comparisons, which yield bool, the operands' precision does not matter
// because their values are exact in both). `args` holds Info(op).arity
// values. Leaf and control ops have no scalar meaning: asking is a bug
// (dualcast::Error, kInternal).
double EvalScalarOp(Op op, Type type, const double* args);

}  // namespace dualcast::jit
