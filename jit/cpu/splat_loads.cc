// ReadSplatsFromMemory: splat FP constants as loads of variables, folded by codegen into their users (see splat_loads.h).
#include "jit/cpu/splat_loads.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"

namespace dualcast::jit::cpu {
namespace {

// A splat of a non-zero floating-point value (zero is an xor, no load).
bool IsFloatSplat(const llvm::Value* v) {
  const auto* c = llvm::dyn_cast<llvm::Constant>(v);
  return c != nullptr && c->getType()->isVectorTy() && c->getType()->getScalarType()->isFloatingPointTy() &&
         c->getSplatValue() != nullptr && !c->isNullValue();
}

// Operands that may become loads: those of plain instructions and of fmuladd
// (other intrinsics may want constants: immediate arguments, masks).
bool MayLoadOperands(const llvm::Instruction& inst) {
  if (llvm::isa<llvm::PHINode>(inst) || llvm::isa<llvm::ShuffleVectorInst>(inst)) return false;
  if (const auto* call = llvm::dyn_cast<llvm::CallBase>(&inst)) {
    const llvm::Function* callee = call->getCalledFunction();
    return callee != nullptr && callee->getIntrinsicID() == llvm::Intrinsic::fmuladd;
  }
  return true;
}

}  // namespace

void ReadSplatsFromMemory(llvm::Module& module) {
  llvm::DenseMap<llvm::Constant*, llvm::GlobalVariable*> variables;
  for (llvm::Function& fn : module) {
    for (llvm::BasicBlock& block : fn) {
      for (llvm::Instruction& inst : block) {
        if (!MayLoadOperands(inst)) continue;
        for (llvm::Use& use : inst.operands()) {
          if (!IsFloatSplat(use.get())) continue;
          auto* splat = llvm::cast<llvm::Constant>(use.get());
          llvm::GlobalVariable*& variable = variables[splat];
          if (variable == nullptr) {
            variable = new llvm::GlobalVariable(module, splat->getType(), /*isConstant=*/false,
                                                llvm::GlobalValue::InternalLinkage, splat, "splat");
          }
          llvm::IRBuilder<> b(&inst);
          use.set(b.CreateLoad(splat->getType(), variable));
        }
      }
    }
  }
}

}  // namespace dualcast::jit::cpu
