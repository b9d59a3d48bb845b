// SinkIntoUniformBranches: pure instructions above a uniform branch cloned into the sides that use them.
#include "jit/cpu/sink_uniform.h"

#include <algorithm>
#include <vector>

#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"

namespace dualcast::jit::cpu {
namespace {

// The block where a use happens (a phi uses its value at the end of the incoming block).
llvm::BasicBlock* UseBlock(const llvm::Use& use) {
  auto* user = llvm::cast<llvm::Instruction>(use.getUser());
  if (auto* phi = llvm::dyn_cast<llvm::PHINode>(user)) return phi->getIncomingBlock(use);
  return user->getParent();
}

// A read of a kernel input (`input_pointers`): inputs are only read and
// never overlap an output, so nothing the kernel stores can change what the
// load sees, and moving it later (into a side) or cloning it is safe. The
// same holds for a read through a select of such a pointer and an input copy
// (see the header).
bool ReadsOnlyAnInput(const llvm::Instruction& inst, const SinkContext& context) {
  const llvm::Value* pointer = nullptr;
  if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst)) {
    if (load->isVolatile() || load->isAtomic()) return false;
    pointer = load->getPointerOperand();
  } else if (const auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst)) {
    if (call->getIntrinsicID() != llvm::Intrinsic::masked_load) return false;
    pointer = call->getArgOperand(0);
  } else {
    return false;
  }
  llvm::SmallVector<const llvm::Value*, 2> objects;
  llvm::getUnderlyingObjects(pointer, objects);
  auto listed = [](const auto& list, const llvm::Value* v) {
    return std::find(list.begin(), list.end(), v) != list.end();
  };
  for (const llvm::Value* object : objects) {
    if (!listed(context.input_copies, object) && !listed(context.input_pointers, object)) return false;
  }
  return !objects.empty();
}

bool Sinkable(const llvm::Instruction& inst, const SinkContext& context) {
  if (inst.isTerminator() || llvm::isa<llvm::PHINode>(inst)) return false;
  // A pointer select is an input's address or its tail copy's, on the same
  // test as the branch into the tail copy: left above the branch, codegen
  // merges it into that branch (a phi, no instruction on full vectors);
  // cloned into a side, it is a compare and a cmov there on every iteration.
  if (llvm::isa<llvm::SelectInst>(inst) && inst.getType()->isPointerTy()) return false;
  if (ReadsOnlyAnInput(inst, context)) return true;
  return !inst.mayReadOrWriteMemory() && !inst.mayHaveSideEffects();
}

}  // namespace

void SinkIntoUniformBranches(llvm::Function& fn, const std::vector<llvm::BranchInst*>& branches,
                             const SinkContext& context) {
  if (branches.empty()) return;
  // Cloning instructions never changes the CFG, so one dominator tree serves all branches.
  llvm::DominatorTree dom(fn);
  for (llvm::BranchInst* branch : branches) {
    llvm::BasicBlock* block = branch->getParent();
    llvm::BasicBlock* sides[2] = {branch->getSuccessor(0), branch->getSuccessor(1)};
    // Last instruction first: by the time an operand is considered, its
    // users from this block have already moved into the sides.
    std::vector<llvm::Instruction*> candidates;
    for (llvm::Instruction& inst : *block) {
      if (&inst == branch) break;
      if (Sinkable(inst, context)) candidates.push_back(&inst);
    }
    for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
      llvm::Instruction* inst = *it;
      bool used[2] = {false, false};
      bool only_in_sides = !inst->use_empty();
      for (const llvm::Use& use : inst->uses()) {
        llvm::BasicBlock* at = UseBlock(use);
        if (dom.dominates(sides[0], at)) {
          used[0] = true;
        } else if (dom.dominates(sides[1], at)) {
          used[1] = true;
        } else {
          only_in_sides = false;
          break;
        }
      }
      if (!only_in_sides) continue;
      for (int s = 0; s < 2; ++s) {
        if (!used[s]) continue;
        llvm::Instruction* clone = inst->clone();
        clone->setName(inst->getName());
        clone->insertBefore(sides[s]->getFirstInsertionPt());
        inst->replaceUsesWithIf(clone, [&](llvm::Use& use) {
          return dom.dominates(sides[s], UseBlock(use));
        });
      }
      inst->eraseFromParent();
    }
  }
}

}  // namespace dualcast::jit::cpu
