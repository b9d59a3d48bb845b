// HoistCommonWork: work that both sides of an if compute is computed once, above the if — for vector backends.
//
// The tracer keeps only the work that *every* path needs above an if. Work
// that the then-side and *some* path of the else-side both compute stays in
// each side: the HM-LSTM's sigmoid(i) * tanh(g) is in FLUSH and in UPDATE but
// not in COPY, so it is written twice. A scalar backend (the interpreter, a
// CUDA thread) runs one path per element and never pays twice. A vector
// backend runs every side that some lane takes, under a mask (jit/cpu): with
// lanes that disagree (the HM-LSTM columns layout) it computed both copies —
// two more exponentials and three more divisions per vector.
//
// This pass moves such work above the if, once. Where the CPU backend can
// prove a branch uniform (every lane the same way), SinkIntoUniformBranches
// (jit/cpu/sink_uniform.h) moves it back into the sides that use it, so a
// uniform COPY row still computes none of it. The values are the same ops on
// the same operands: results are bitwise those of the unhoisted function.
//
// What moves: pure instructions (not ifs, their results, or inputs) whose
// operands are defined outside the if or are themselves moving, found on both
// sides (anywhere in each side, nested ifs included). Structural identity,
// not value identity, decides "the same": op, type, constant bits, operands.
//
// Example:
//   Function vec = HoistCommonWork(f);   // then print `vec` with the CPU printer
#pragma once

#include "jit/ir/ir.h"

namespace dualcast::jit {

// `f` with the work common to both sides of each if computed above it.
Function HoistCommonWork(const Function& f);

}  // namespace dualcast::jit
