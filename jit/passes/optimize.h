// The standard pass pipeline: simplify and dead-code elimination, repeated to a fixpoint.
//
// Simplify rewrites (and hash-conses) but leaves dead values behind; DCE
// removes them. One round usually suffices, because simplify sees operands
// already rewritten; a second is needed when DCE exposes more, e.g. an If
// whose results all became outer values disappears, and its condition's
// computation with it. The loop stops when the instruction count no longer
// changes, or after a few rounds (each round never grows the function, so
// the bound only guards against a rule that flip-flops).
//
// Every result is semantically identical, bit for bit, to the input for every
// input (see simplify.h for the rules that guarantee it).
//
// Example:
//   Function g = Optimize(Compose("fused", leaf_types, nodes, outputs));
#pragma once

#include "jit/ir/ir.h"

namespace dualcast::jit {

Function Optimize(const Function& f);

}  // namespace dualcast::jit
