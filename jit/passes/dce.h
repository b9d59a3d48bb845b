// Dead-code elimination: drop every value no output depends on, If results included.
//
// Every op in the IR is pure, so an instruction is needed only if a function
// output depends on it, through operands, If conditions and the branch yields
// that feed a needed If result. Passes leave dead values behind on purpose
// (simplify rebuilds x*1 as x but the constant 1 stays; jvp emits tangents of
// outputs nobody asked for; fusion computes intermediates some consumer
// dropped), so they stay simple and DCE is the one place that cleans up.
//
// It is a mark phase over the source (a worklist from the outputs; a needed
// Result marks its If's condition and the k-th yield of both branches) and a
// rebuild through a Builder that emits only marked values: unneeded If
// results disappear from both branches' yields and the remaining Results are
// renumbered 0..n-1; an If with no needed result disappears with its blocks.
// Inputs are kept even when unused: they are the kernel's signature. The
// rebuild also hash-conses, so DCE never undoes CSE.
//
// Example:
//   %2 = mul %0, %1; %3 = exp %0; %4, %5 = if c {yield %2, %3} else {...}
//   return %5        ->  the mul and the If's first result are gone.
#pragma once

#include "jit/ir/ir.h"

namespace dualcast::jit {

Function EliminateDeadCode(const Function& f);

}  // namespace dualcast::jit
