// The rebuild walk every transforming pass shares: copy a Function through a Builder, op by op.
//
// Passes (simplify, compose, jvp's primal part) derive from Rewriter and
// override `RewriteInst` for the ops they change; everything else is cloned.
// Because the copy goes through a Builder, the output is hash-consed: CSE is a
// side effect of every rewrite. If-blocks are walked recursively; `RewriteIf`
// may be overridden to, e.g., inline a branch whose condition is constant.
//
// Example (a pass that turns every tanh into 2*sigmoid(2x)-1):
//   struct TanhToSigmoid : Rewriter {
//     ValueId RewriteInst(const Inst& inst, std::span<const ValueId> args,
//                         Builder& b) override {
//       if (inst.op != Op::kTanh) return Rewriter::RewriteInst(inst, args, b);
//       ValueId two = b.Const(inst.type, 2), one = b.Const(inst.type, 1);
//       return b.Sub(b.Mul(two, b.Emit(Op::kSigmoid, {b.Mul(two, args[0])})), one);
//     }
//   };
//   Function g = TanhToSigmoid().Run(f);
#pragma once

#include <span>
#include <vector>

#include "jit/ir/ir.h"

namespace dualcast::jit {

class Rewriter {
 public:
  virtual ~Rewriter() = default;

  // Rebuilds `in`; inputs keep their positions and types.
  Function Run(const Function& in);

  // Rebuilds `in`'s body into `b`'s current block with its inputs bound to
  // `args` (one caller value per input, already type-checked); returns the
  // caller values of its outputs. This is inlining (compose.h).
  std::vector<ValueId> RunInto(Builder& b, const Function& in, std::span<const ValueId> args);

 protected:
  // Re-emits `inst` with operands already mapped to the new function.
  virtual ValueId RewriteInst(const Inst& inst, std::span<const ValueId> args, Builder& b);

  // Rebuilds an If (cond already mapped) and returns the new values of its
  // results. The default keeps the branch structure and walks both blocks.
  virtual std::vector<ValueId> RewriteIf(const Inst& inst, ValueId cond, Builder& b);

  // Walks one old block into the builder's current block; returns the new
  // values of its yields.
  std::vector<ValueId> WalkBlock(BlockId block, Builder& b);

  const Function& source() const { return *in_; }
  ValueId Mapped(ValueId old) const { return map_[old]; }

 private:
  const Function* in_ = nullptr;
  std::vector<ValueId> map_;
};

// Re-emits one instruction with new operands (the default of RewriteInst).
ValueId CloneInst(const Inst& inst, std::span<const ValueId> args, Builder& b);

}  // namespace dualcast::jit
