// Moves work above a uniform branch into the sides that use it, so a row whose flags pick one side computes only that side's inputs.
//
// The IR keeps work that both sides of an if need above the if (trace.h): in
// mixed vectors both sides run, and computing it once is right. When the
// condition is the same in every lane (LlvmPrinter's uniform ifs: the rows
// layout's flags), exactly one side runs, and work above the branch that
// only the sides use is wasted whenever the side that runs does not need all
// of it (HM-LSTM: a COPY row needs neither tanh nor sigmoid). This pass
// clones each such pure instruction into every side that uses it and drops
// the original, innermost uses first, so nested uniform ifs sink it further.
// Loads of kernel inputs (the `input_pointers` the kernel loaded from its
// arguments: read-only, never overlapping an output) move like pure work, so
// a side reads only the arrays it uses (also through a select of such a
// pointer and an `input_copies` alloca: the kernel's stack copy of an input's
// tail, stored before the loads that read it and not again before they run;
// the select itself stays above the branch, where codegen folds it into the
// tail test);
// work used after the if stays. It runs before the optimiser, which never
// hoists identical code out of two sides again (SimplifyCFG's hoisting of common
// instructions is off in our pipeline).
//
// Example:
//   SinkIntoUniformBranches(*kernel, printer.uniform_branches(), {copies, input_pointers});
#pragma once

#include <vector>

namespace llvm {
class AllocaInst;
class BranchInst;
class Function;
class Value;
}  // namespace llvm

namespace dualcast::jit::cpu {

struct SinkContext {
  std::vector<llvm::AllocaInst*> input_copies;  // the tails' stack copies of inputs
  std::vector<llvm::Value*> input_pointers;     // where the kernel's inputs start
};

// `branches` are conditional branches of `fn` whose successors each have the
// branch's block as their only predecessor, outer ifs before inner ones.
void SinkIntoUniformBranches(llvm::Function& fn, const std::vector<llvm::BranchInst*>& branches,
                             const SinkContext& context);

}  // namespace dualcast::jit::cpu
