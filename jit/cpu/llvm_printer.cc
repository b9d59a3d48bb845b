// LlvmPrinter: one LLVM lowering per IR op, and if/else as basic blocks with phis.
#include "jit/cpu/llvm_printer.h"

#include "jit/cpu/vector_math.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"

namespace dualcast::jit::cpu {

llvm::Type* LlvmType(llvm::LLVMContext& ctx, Type type) {
  switch (type) {
    case Type::kF32: return llvm::Type::getFloatTy(ctx);
    case Type::kF64: return llvm::Type::getDoubleTy(ctx);
    case Type::kBool: return llvm::Type::getInt1Ty(ctx);
  }
  return nullptr;
}

LlvmPrinter::Value LlvmPrinter::Constant(Type type, double value) {
  if (type == Type::kBool) return b_.getInt1(value != 0);
  return llvm::ConstantFP::get(LlvmType(b_.getContext(), type), value);
}

LlvmPrinter::Value LlvmPrinter::Intrinsic(unsigned id, Type type,
                                          std::span<const Value> args) {
  return b_.CreateIntrinsic(static_cast<llvm::Intrinsic::ID>(id),
                            {LlvmType(b_.getContext(), type)},
                            llvm::ArrayRef<Value>(args.data(), args.size()));
}

LlvmPrinter::Value LlvmPrinter::CallLibm(const char* name, Type type,
                                         std::span<const Value> args) {
  llvm::Function* fn = DeclareMathFunction(module_, name, LlvmType(b_.getContext(), type),
                                           static_cast<int>(args.size()));
  return b_.CreateCall(fn, llvm::ArrayRef<Value>(args.data(), args.size()));
}

LlvmPrinter::Value LlvmPrinter::Emit(Op op, Type type, std::span<const Type> arg_types,
                                     std::span<const Value> args) {
  switch (op) {
    case Op::kNeg: return b_.CreateFNeg(args[0]);
    case Op::kAdd: return b_.CreateFAdd(args[0], args[1]);
    case Op::kSub: return b_.CreateFSub(args[0], args[1]);
    case Op::kMul: return b_.CreateFMul(args[0], args[1]);
    case Op::kDiv: return b_.CreateFDiv(args[0], args[1]);
    case Op::kFma: return Intrinsic(llvm::Intrinsic::fma, type, args);
    case Op::kLt: return b_.CreateFCmpOLT(args[0], args[1]);
    case Op::kLe: return b_.CreateFCmpOLE(args[0], args[1]);
    case Op::kGt: return b_.CreateFCmpOGT(args[0], args[1]);
    case Op::kGe: return b_.CreateFCmpOGE(args[0], args[1]);
    case Op::kEq: return b_.CreateFCmpOEQ(args[0], args[1]);
    case Op::kNe: return b_.CreateFCmpUNE(args[0], args[1]);
    case Op::kAnd: return b_.CreateAnd(args[0], args[1]);
    case Op::kOr: return b_.CreateOr(args[0], args[1]);
    case Op::kNot: return b_.CreateNot(args[0]);
    case Op::kSelect: return b_.CreateSelect(args[0], args[1], args[2]);
    case Op::kCast: return EmitCast(type, arg_types[0], args[0]);
    default: break;
  }
  if (Info(op).kind == OpKind::Math) return EmitMath(op, type, args);
  // Leaf and control ops never reach a printer (CodegenWalk handles them).
  return llvm::PoisonValue::get(LlvmType(b_.getContext(), type));
}

LlvmPrinter::Value LlvmPrinter::EmitMath(Op op, Type type, std::span<const Value> args) {
  if (const char* libm = LibmName(op, type)) return CallLibm(libm, type, args);
  llvm::Value* zero = Constant(type, 0);
  llvm::Value* one = Constant(type, 1);
  switch (op) {
    case Op::kSqrt: return Intrinsic(llvm::Intrinsic::sqrt, type, args);
    case Op::kAbs: return Intrinsic(llvm::Intrinsic::fabs, type, args);
    case Op::kFloor: return Intrinsic(llvm::Intrinsic::floor, type, args);
    case Op::kCeil: return Intrinsic(llvm::Intrinsic::ceil, type, args);
    case Op::kRound: return Intrinsic(llvm::Intrinsic::round, type, args);
    case Op::kTrunc: return Intrinsic(llvm::Intrinsic::trunc, type, args);
    case Op::kCopysign: return Intrinsic(llvm::Intrinsic::copysign, type, args);
    case Op::kMin:
      return b_.CreateSelect(b_.CreateFCmpOLT(args[1], args[0]), args[1], args[0]);
    case Op::kMax:
      return b_.CreateSelect(b_.CreateFCmpOLT(args[0], args[1]), args[1], args[0]);
    case Op::kFmin: {
      // b wins when smaller or when a is NaN; a NaN b never wins.
      llvm::Value* b_wins =
          b_.CreateOr(b_.CreateFCmpOLT(args[1], args[0]), b_.CreateFCmpUNO(args[0], args[0]));
      return b_.CreateSelect(b_wins, args[1], args[0]);
    }
    case Op::kFmax: {
      llvm::Value* b_wins =
          b_.CreateOr(b_.CreateFCmpOLT(args[0], args[1]), b_.CreateFCmpUNO(args[0], args[0]));
      return b_.CreateSelect(b_wins, args[1], args[0]);
    }
    case Op::kSigmoid: {
      llvm::Value* neg = b_.CreateFNeg(args[0]);
      llvm::Value* e = CallLibm(LibmName(Op::kExp, type), type, {&neg, 1});
      return b_.CreateFDiv(one, b_.CreateFAdd(one, e));
    }
    case Op::kSoftplus: {
      llvm::Value* x = args[0];
      llvm::Value* neg = b_.CreateFNeg(x);
      llvm::Value* e_neg = CallLibm(LibmName(Op::kExp, type), type, {&neg, 1});
      llvm::Value* e_pos = CallLibm(LibmName(Op::kExp, type), type, {&x, 1});
      llvm::Value* pos_branch =
          b_.CreateFAdd(x, CallLibm(LibmName(Op::kLog1p, type), type, {&e_neg, 1}));
      llvm::Value* neg_branch = CallLibm(LibmName(Op::kLog1p, type), type, {&e_pos, 1});
      return b_.CreateSelect(b_.CreateFCmpOGT(x, zero), pos_branch, neg_branch);
    }
    case Op::kRelu:
      // ugt: greater or unordered, so NaN passes through and -0 becomes +0.
      return b_.CreateSelect(b_.CreateFCmpUGT(args[0], zero), args[0], zero);
    default:
      return llvm::PoisonValue::get(LlvmType(b_.getContext(), type));
  }
}

LlvmPrinter::Value LlvmPrinter::EmitCast(Type to, Type from, Value v) {
  llvm::Type* target = LlvmType(b_.getContext(), to);
  if (to == from) return v;
  if (from == Type::kBool) return b_.CreateUIToFP(v, target);
  if (to == Type::kBool) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
  return to == Type::kF32 ? b_.CreateFPTrunc(v, target) : b_.CreateFPExt(v, target);
}

void LlvmPrinter::BeginIf(Value cond, std::span<const Type> /*result_types*/) {
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b_.getContext();
  auto* then_block = llvm::BasicBlock::Create(ctx, "then", fn);
  auto* else_block = llvm::BasicBlock::Create(ctx, "else", fn);
  auto* merge_block = llvm::BasicBlock::Create(ctx, "endif", fn);
  b_.CreateCondBr(cond, then_block, else_block);
  b_.SetInsertPoint(then_block);
  open_ifs_.push_back(OpenIf{else_block, merge_block, nullptr, {}});
}

void LlvmPrinter::BeginElse(std::span<const Value> then_yields) {
  OpenIf& open = open_ifs_.back();
  open.then_yields.assign(then_yields.begin(), then_yields.end());
  open.then_end = b_.GetInsertBlock();
  b_.CreateBr(open.merge_block);
  b_.SetInsertPoint(open.else_block);
}

std::vector<LlvmPrinter::Value> LlvmPrinter::EndIf(std::span<const Value> else_yields) {
  OpenIf open = std::move(open_ifs_.back());
  open_ifs_.pop_back();
  llvm::BasicBlock* else_end = b_.GetInsertBlock();
  b_.CreateBr(open.merge_block);
  b_.SetInsertPoint(open.merge_block);
  std::vector<Value> results;
  for (size_t k = 0; k < else_yields.size(); ++k) {
    llvm::PHINode* phi = b_.CreatePHI(else_yields[k]->getType(), 2, "result");
    phi->addIncoming(open.then_yields[k], open.then_end);
    phi->addIncoming(else_yields[k], else_end);
    results.push_back(phi);
  }
  return results;
}

}  // namespace dualcast::jit::cpu
