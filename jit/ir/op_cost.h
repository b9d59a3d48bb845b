// What one IR instruction costs per element: the one table the CPU interleaving decision and kAuto's recompute-or-cache choice both read.
//
// Why one table: both decisions weigh "how much arithmetic is this kernel",
// one against its dependency chain (jit/cpu/interleave.h), one against the
// bytes of partial arrays caching would store (runtime/auto_partials.h). Two
// tables drifted apart once (a transcendental weighed 8 in one and 20 in the
// other), and the lighter one made kAuto recompute kernels that were 1.3x
// faster cached on an AVX2 host.
//
// Weights are rough vector instruction counts (work) and latencies: 1 and 1
// for an arithmetic op, compare, select or cast, and for the math that is one
// or two instructions (abs, min, floor, copysign...); 4 and 4 for a division
// or square root; 20 and 12 for a transcendental (exp, tanh, sin, pow, ...: a
// range reduction and a polynomial, serial with side work). Leaves (inputs,
// constants) and control (if, its results) cost nothing.
//
// Example:
//   int64_t work = 0;
//   for (const Inst& inst : f.insts) work += CostOf(inst.op).work;
#pragma once

#include <cstdint>

#include "jit/ir/ir.h"

namespace dualcast::jit {

struct OpCost {
  int64_t work = 0;     // instructions per element, roughly
  int64_t latency = 0;  // what it adds to the dependency chain through it
};

OpCost CostOf(Op op);

// The work of every instruction of `f`, both sides of each if (a vector
// whose lanes disagree runs both).
int64_t TotalWork(const Function& f);

}  // namespace dualcast::jit
