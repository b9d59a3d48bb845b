// The reference executor: runs a Function on one set of scalar inputs, op by op.
//
// Every backend (CPU, CUDA) and every pass (jvp, simplify, compose) is tested
// against this interpreter, so it is deliberately plain: values live in one
// array indexed by ValueId, each op is evaluated by EvalScalarOp (the shared
// scalar semantics), and an `if` runs only the branch whose condition holds —
// the untaken branch is never evaluated, exactly as in generated code.
//
// Values are carried as double; an f32 value is always exactly representable
// (inputs of type f32 are rounded to float on entry, every f32 op rounds), and
// bools are 0 or 1.
//
// Example:
//   Function f = ...;  // func cell(%0: f32, %1: f32) -> (f32)
//   std::vector<double> y = Interpret(f, std::vector<double>{1.0, 0.5});
//   std::vector<float> yf = Interpret(f, std::vector<float>{1.0f, 0.5f});
#pragma once

#include <span>
#include <vector>

#include "jit/ir/ir.h"

namespace dualcast::jit {

// Runs `f` on `inputs` (one value per function input, in order) and returns
// its outputs. Throws dualcast::Error (kArity) when the input count is wrong.
// `taken_blocks`, when given, receives the blocks entered, in order: the path
// this point took (tests use it to check every path of a kernel is covered).
std::vector<double> Interpret(const Function& f, std::span<const double> inputs,
                              std::vector<BlockId>* taken_blocks = nullptr);

// Convenience for float kernels: inputs widened to double, outputs narrowed
// (exact for f32 outputs; bool outputs become 0 or 1).
std::vector<float> Interpret(const Function& f, std::span<const float> inputs);

}  // namespace dualcast::jit
