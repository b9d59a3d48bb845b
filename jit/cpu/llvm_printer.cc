// LlvmPrinter: one LLVM lowering per IR op on W-lane vectors, and if/else as lane-mask tests, skippable sides and blends.
#include "jit/cpu/llvm_printer.h"

#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "dualcast/activation_steps.hpp"
#include "jit/cpu/vector_math.h"
#include "jit/ir/activation.h"
#include "jit/ir/staple_math.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"

namespace dualcast::jit::cpu {

llvm::Type* LlvmType(llvm::LLVMContext& ctx, Type type, int lanes) {
  llvm::Type* scalar = nullptr;
  switch (type) {
    case Type::kF32: scalar = llvm::Type::getFloatTy(ctx); break;
    case Type::kF64: scalar = llvm::Type::getDoubleTy(ctx); break;
    case Type::kBool: scalar = llvm::Type::getInt1Ty(ctx); break;
  }
  return lanes > 1 ? llvm::FixedVectorType::get(scalar, lanes) : scalar;
}

LlvmPrinter::Value LlvmPrinter::Constant(Type type, double value) {
  if (type == Type::kBool) return llvm::ConstantInt::get(VType(type), value != 0 ? 1 : 0);
  return llvm::ConstantFP::get(VType(type), value);
}

LlvmPrinter::Value LlvmPrinter::Intrinsic(unsigned id, Type type,
                                          std::span<const Value> args) {
  return b_.CreateIntrinsic(static_cast<llvm::Intrinsic::ID>(id),
                            {VType(type)},
                            llvm::ArrayRef<Value>(args.data(), args.size()));
}

LlvmPrinter::Value LlvmPrinter::CallLibm(const char* name, Type type,
                                         std::span<const Value> args) {
  return EmitMathCall(b_, module_, name, LlvmType(b_.getContext(), type), lanes_, args);
}

bool LlvmPrinter::IsUniform(Value v) const {
  return llvm::isa<llvm::Constant>(v) || uniform_.contains(v);
}

LlvmPrinter::Value LlvmPrinter::Emit(Op op, Type type, std::span<const Type> arg_types,
                                     std::span<const Value> args) {
  Value result = EmitOp(op, type, arg_types, args);
  // Every op is lane-wise: lane-invariant operands give a lane-invariant result.
  bool uniform = true;
  for (Value a : args) uniform = uniform && IsUniform(a);
  if (uniform) MarkUniform(result);
  return result;
}

LlvmPrinter::Value LlvmPrinter::EmitOp(Op op, Type type, std::span<const Type> arg_types,
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
    case Op::kIsnan: return b_.CreateFCmpUNO(args[0], args[0]);
    case Op::kIsfinite:  // |x| < inf, false for NaN
      return b_.CreateFCmpOLT(Intrinsic(llvm::Intrinsic::fabs, arg_types[0], args),
                              Constant(arg_types[0], HUGE_VAL));
    case Op::kIsinf:
      return b_.CreateFCmpOEQ(Intrinsic(llvm::Intrinsic::fabs, arg_types[0], args),
                              Constant(arg_types[0], HUGE_VAL));
    case Op::kSignbit: {  // the sign bit itself: -0 and negative NaNs too
      llvm::Type* t = args[0]->getType();
      llvm::Type* bits = b_.getIntNTy(t->getScalarSizeInBits());
      if (t->isVectorTy()) bits = llvm::VectorType::get(bits, llvm::cast<llvm::VectorType>(t));
      return b_.CreateICmpSLT(b_.CreateBitCast(args[0], bits), llvm::Constant::getNullValue(bits));
    }
    case Op::kAnd: return b_.CreateAnd(args[0], args[1]);
    case Op::kOr: return b_.CreateOr(args[0], args[1]);
    case Op::kNot: return b_.CreateNot(args[0]);
    case Op::kSelect: return b_.CreateSelect(args[0], args[1], args[2]);
    case Op::kCast: return EmitCast(type, arg_types[0], args[0]);
    default: break;
  }
  if (Info(op).kind == OpKind::Math) return EmitMath(op, type, args);
  // Leaf and control ops never reach a printer (CodegenWalk handles them).
  return Unlowered(op, type);
}

namespace {

// f(lane values of args) for every lane of `lanes`-wide vectors (f on the
// scalars themselves when lanes == 1): for libm functions with no vector form
// and a signature EmitMathCall does not cover (an int or pointer argument).
llvm::Value* PerLane(llvm::IRBuilder<>& b, int lanes, llvm::Type* elem,
                     std::span<llvm::Value* const> args,
                     const std::function<llvm::Value*(std::span<llvm::Value* const>)>& f) {
  if (lanes == 1) return f(args);
  llvm::Value* result = llvm::PoisonValue::get(llvm::FixedVectorType::get(elem, lanes));
  std::vector<llvm::Value*> lane_args(args.size());
  for (int k = 0; k < lanes; ++k) {
    for (size_t i = 0; i < args.size(); ++i) {
      lane_args[i] = b.CreateExtractElement(args[i], uint64_t(k));
    }
    result = b.CreateInsertElement(result, f(lane_args), uint64_t(k));
  }
  return result;
}

}  // namespace

// The arithmetic staple::ErfinvSteps runs on: the same IEEE steps as the
// interpreter's ScalarArith, as LLVM instructions on W-lane vectors (no
// fast-math flags). Log/Exp/Erf/Erfc go to libmvec like every other math call
// (within 4 ulp of scalar libm); Lt/Eq give lane masks and Select blends, so
// both of erfinv's branches run for every lane.
struct LlvmPrinter::LlvmArith {
  using V = llvm::Value*;
  LlvmPrinter& p;
  Type type;
  V Const(double c) { return p.Constant(type, c); }
  V Add(V a, V b) { return p.b_.CreateFAdd(a, b); }
  V Sub(V a, V b) { return p.b_.CreateFSub(a, b); }
  V Mul(V a, V b) { return p.b_.CreateFMul(a, b); }
  V Div(V a, V b) { return p.b_.CreateFDiv(a, b); }
  V Neg(V a) { return p.b_.CreateFNeg(a); }
  V Abs(V a) { return p.Intrinsic(llvm::Intrinsic::fabs, type, {&a, 1}); }
  V Sqrt(V a) { return p.Intrinsic(llvm::Intrinsic::sqrt, type, {&a, 1}); }
  V Log(V a) { return Libm(Op::kLog, a); }
  V Exp(V a) { return Libm(Op::kExp, a); }
  V Expm1(V a) { return Libm(Op::kExpm1, a); }
  V Erf(V a) { return Libm(Op::kErf, a); }
  V Erfc(V a) { return Libm(Op::kErfc, a); }
  V Lt(V a, V b) { return p.b_.CreateFCmpOLT(a, b); }
  V Eq(V a, V b) { return p.b_.CreateFCmpOEQ(a, b); }
  V Select(V c, V a, V b) { return p.b_.CreateSelect(c, a, b); }
  V Copysign(V a, V b) {
    V both[] = {a, b};
    return p.Intrinsic(llvm::Intrinsic::copysign, type, both);
  }
  V Libm(Op op, V a) { return p.CallLibm(LibmName(op, type), type, {&a, 1}); }
};

// The math switch: one lowering per math op (libm-backed ones through LibmName).
LlvmPrinter::Value LlvmPrinter::EmitMath(Op op, Type type, std::span<const Value> args) {
  if (const char* libm = LibmName(op, type)) {
    Value result = CallLibm(libm, type, args);
    switch (op) {
      case Op::kCos: {
        // cos(x) rounds to exactly 1 below |x| = 2^-27 (f64) / 2^-13 (f32),
        // where libmvec's f64 variant can return 1 - 2^-53 (cos(-1.9e-9)).
        Value tiny = Constant(type, type == Type::kF64 ? 0x1p-27 : 0x1p-13);
        Value abs_x = Intrinsic(llvm::Intrinsic::fabs, type, args.first(1));
        result = b_.CreateSelect(b_.CreateFCmpOLT(abs_x, tiny), Constant(type, 1), result);
        return ClampRange(b_, result, -1, 1);
      }
      // Functions bounded by 1 whose vector variants can step just past it.
      case Op::kSin:
      case Op::kErf:
        return ClampRange(b_, result, -1, 1);
      default:
        return result;
    }
  }
  llvm::Value* zero = Constant(type, 0);
  llvm::Value* one = Constant(type, 1);
  switch (op) {
    case Op::kSqrt: return Intrinsic(llvm::Intrinsic::sqrt, type, args);
    case Op::kAbs: return Intrinsic(llvm::Intrinsic::fabs, type, args);
    case Op::kFloor: return Intrinsic(llvm::Intrinsic::floor, type, args);
    case Op::kCeil: return Intrinsic(llvm::Intrinsic::ceil, type, args);
    case Op::kRound: return Intrinsic(llvm::Intrinsic::round, type, args);
    case Op::kTrunc: return Intrinsic(llvm::Intrinsic::trunc, type, args);
    case Op::kRint: return Intrinsic(llvm::Intrinsic::rint, type, args);  // ties to even
    // a - b above the kink, +0 at or below it, NaN when either is NaN (unordered).
    case Op::kFdim: {
      llvm::Value* flat = b_.CreateSelect(b_.CreateFCmpUNO(args[0], args[1]),
                                          b_.CreateFAdd(args[0], args[1]), zero);
      return b_.CreateSelect(b_.CreateFCmpOGT(args[0], args[1]), b_.CreateFSub(args[0], args[1]), flat);
    }
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
    // dualcast::math's formulas (activation_steps.hpp) on whole vectors: one exp each, and the
    // jvp's value+slope expansion gives the same bits. The slope here is dead code.
    case Op::kTanh:
    case Op::kSigmoid:
    case Op::kFastTanh:
    case Op::kFastSigmoid: {
      LlvmArith m{*this, type};
      return ::dualcast::detail::activation_steps(*ActivationOf(op), m, args[0]).value;
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
    // The staples, as staple_math.h spells them.
    case Op::kSign: {
      llvm::Value* x = args[0];
      return b_.CreateSelect(b_.CreateFCmpOGT(x, zero), one,
                             b_.CreateSelect(b_.CreateFCmpOLT(x, zero), Constant(type, -1), x));
    }
    case Op::kSquare: return b_.CreateFMul(args[0], args[0]);
    case Op::kRsqrt:
      return b_.CreateFDiv(one, Intrinsic(llvm::Intrinsic::sqrt, type, args));
    case Op::kClamp: {
      llvm::Value *x = args[0], *lo = args[1], *hi = args[2];
      return b_.CreateSelect(b_.CreateFCmpOLT(x, lo), lo,
                             b_.CreateSelect(b_.CreateFCmpOLT(hi, x), hi, x));
    }
    case Op::kLogaddexp: {
      llvm::Value *a = args[0], *b = args[1];
      llvm::Value* larger = b_.CreateSelect(b_.CreateFCmpOLT(a, b), b, a);
      llvm::Value* gap = b_.CreateFSub(a, b);
      llvm::Value* minus_gap = b_.CreateFNeg(Intrinsic(llvm::Intrinsic::fabs, type, {&gap, 1}));
      // Scalar libm per lane, not libmvec: max + log1p(e) cancels near 0, where
      // libmvec's few-ulp differences from the interpreter's libm become many
      // ulps of the result; the same scalar calls give the interpreter's bits.
      auto scalar = [&](Op libm_op, llvm::Value* v) {
        llvm::Function* fn = DeclareMathFunction(module_, LibmName(libm_op, type),
                                                 LlvmType(b_.getContext(), type), 1);
        return PerLane(b_, lanes_, fn->getReturnType(), {&v, 1},
                       [&](std::span<Value const> lane) -> Value { return b_.CreateCall(fn, {lane[0]}); });
      };
      llvm::Value* e = scalar(Op::kExp, minus_gap);
      llvm::Value* general = b_.CreateFAdd(larger, scalar(Op::kLog1p, e));
      llvm::Value* tie = b_.CreateFAdd(a, Constant(type, std::numbers::ln2));
      return b_.CreateSelect(b_.CreateFCmpOEQ(a, b), tie, general);
    }
    // No libmvec variant: EmitMathCall scalarises them (one libm call per lane);
    // frem on a vector is legalised to one fmod call per lane.
    case Op::kTgamma: return CallLibm(type == Type::kF32 ? "tgammaf" : "tgamma", type, args);
    case Op::kFmod: return b_.CreateFRem(args[0], args[1]);  // frem is C's fmod
    case Op::kRemainder:
      return CallLibm(type == Type::kF32 ? "remainderf" : "remainder", type, args);
    case Op::kLgamma: return EmitLgamma(type, args[0]);
    case Op::kLdexp: return EmitLdexp(type, args[0], args[1]);
    case Op::kErfinv: {
      LlvmArith m{*this, type};
      return staple::ErfinvSteps(m, args[0]);
    }
    default:
      return Unlowered(op, type);
  }
}

// An op this printer has no lowering for: a call to a function nothing
// defines, so the kernel fails to link (never a silently wrong value) and the
// IR names the op (vector IR is full of legitimate poison operands, so poison
// could not mark it).
LlvmPrinter::Value LlvmPrinter::Unlowered(Op op, Type type) {
  llvm::Type* t = VType(type);
  llvm::FunctionCallee callee = module_.getOrInsertFunction(
      std::string("dualcast_unlowered_") + Spelling(op), llvm::FunctionType::get(t, {}, false));
  return b_.CreateCall(callee);
}

// lgamma_r rather than lgamma: lgamma writes the global `signgam`, which
// kernels running on several threads must not race on.
LlvmPrinter::Value LlvmPrinter::EmitLgamma(Type type, Value x) {
  llvm::LLVMContext& ctx = b_.getContext();
  llvm::Type* t = LlvmType(ctx, type);
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
  llvm::Value* sign = entry.CreateAlloca(llvm::Type::getInt32Ty(ctx), nullptr, "signgam");
  llvm::FunctionCallee callee = module_.getOrInsertFunction(
      type == Type::kF32 ? "lgammaf_r" : "lgamma_r",
      llvm::FunctionType::get(t, {t, llvm::PointerType::getUnqual(ctx)}, false));
  if (auto* decl = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    decl->addFnAttr(llvm::Attribute::NoUnwind);
    decl->addFnAttr(llvm::Attribute::WillReturn);
  }
  Value in[] = {x};
  return PerLane(b_, lanes_, t, in, [&](std::span<Value const> lane) -> Value {
    return b_.CreateCall(callee, {lane[0], sign});
  });
}

// ldexp(x, n) with the float count truncated and clamped (staple::Ldexp); NaN n gives NaN.
LlvmPrinter::Value LlvmPrinter::EmitLdexp(Type type, Value x, Value n) {
  llvm::LLVMContext& ctx = b_.getContext();
  llvm::Type* t = LlvmType(ctx, type);
  llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
  Value truncated = Intrinsic(llvm::Intrinsic::trunc, type, {&n, 1});
  Value low = Constant(type, -100000), high = Constant(type, 100000);
  // minnum/maxnum are fmin/fmax; a NaN count is caught by the select below.
  Value clamped = b_.CreateBinaryIntrinsic(
      llvm::Intrinsic::minnum, b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, truncated, low),
      high);
  Value count = b_.CreateFPToSI(clamped, lanes_ > 1 ? llvm::FixedVectorType::get(i32, lanes_)
                                                    : static_cast<llvm::Type*>(i32));
  llvm::FunctionCallee callee = module_.getOrInsertFunction(
      type == Type::kF32 ? "ldexpf" : "ldexp", llvm::FunctionType::get(t, {t, i32}, false));
  if (auto* decl = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    decl->addFnAttr(llvm::Attribute::NoUnwind);
    decl->addFnAttr(llvm::Attribute::WillReturn);
    decl->addFnAttr(llvm::Attribute::getWithMemoryEffects(ctx, llvm::MemoryEffects::none()));
  }
  Value in[] = {x, count};
  Value scaled = PerLane(b_, lanes_, t, in, [&](std::span<Value const> lane) -> Value {
    return b_.CreateCall(callee, {lane[0], lane[1]});
  });
  return b_.CreateSelect(b_.CreateFCmpUNO(n, n), n, scaled);
}

LlvmPrinter::Value LlvmPrinter::EmitCast(Type to, Type from, Value v) {
  llvm::Type* target = VType(to);
  if (to == from) return v;
  if (from == Type::kBool) return b_.CreateUIToFP(v, target);
  if (to == Type::kBool) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
  return to == Type::kF32 ? b_.CreateFPTrunc(v, target) : b_.CreateFPExt(v, target);
}

LlvmPrinter::Value LlvmPrinter::Mask() const {
  if (!masks_.empty()) return masks_.back();
  return llvm::ConstantInt::get(LlvmType(b_.getContext(), Type::kBool, lanes_), 1);
}

LlvmPrinter::Value LlvmPrinter::AnyLane(Value mask) {
  if (lanes_ == 1) return mask;
  return b_.CreateOrReduce(mask);
}

void LlvmPrinter::BeginIf(Value cond, std::span<const Type> /*result_types*/, SideCosts costs) {
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b_.getContext();
  if (IsUniform(cond)) {
    // Every lane agrees, and lane 0 is active wherever code runs (the loop's
    // first lane, or a side entered because some lane of its mask is on).
    Value lane0 = lanes_ == 1 ? cond : b_.CreateExtractElement(cond, uint64_t{0});
    auto* then_block = llvm::BasicBlock::Create(ctx, "uthen", fn);
    auto* else_block = llvm::BasicBlock::Create(ctx, "uelse", fn);
    auto* merge_block = llvm::BasicBlock::Create(ctx, "uendif", fn);
    uniform_branches_.push_back(b_.CreateCondBr(lane0, then_block, else_block));
    b_.SetInsertPoint(then_block);
    open_ifs_.push_back(
        OpenIf{.uniform = true, .cond = cond, .else_block = else_block, .merge_block = merge_block});
    masks_.push_back(Mask());
    return;
  }
  // A side is tested only when it costs more than the test (SideCosts): a cheap
  // side runs inline for every lane and is blended.
  Value mask = Mask();
  OpenIf open{.uniform = false, .then_tested = costs.ThenTested(), .else_tested = costs.ElseTested(),
              .cond = cond, .else_mask = b_.CreateAnd(mask, b_.CreateNot(cond), "else.mask")};
  Value then_mask = b_.CreateAnd(mask, cond, "then.mask");
  if (open.then_tested) {
    auto* then_block = llvm::BasicBlock::Create(ctx, "then", fn);
    open.skip_block = llvm::BasicBlock::Create(ctx, "then.join", fn);
    open.begin_block = b_.GetInsertBlock();
    b_.CreateCondBr(AnyLane(then_mask), then_block, open.skip_block);
    b_.SetInsertPoint(then_block);
  }
  open_ifs_.push_back(std::move(open));
  masks_.push_back(then_mask);
}

void LlvmPrinter::BeginElse(std::span<const Value> then_yields) {
  OpenIf& open = open_ifs_.back();
  llvm::BasicBlock* then_end = b_.GetInsertBlock();  // nested ifs move it
  if (open.uniform) {
    open.then_end = then_end;
    open.then_results.assign(then_yields.begin(), then_yields.end());
    b_.CreateBr(open.merge_block);
    b_.SetInsertPoint(open.else_block);
    return;
  }
  if (open.then_tested) {
    b_.CreateBr(open.skip_block);
    b_.SetInsertPoint(open.skip_block);
    for (Value y : then_yields) {
      llvm::PHINode* phi = b_.CreatePHI(y->getType(), 2, "then.result");
      phi->addIncoming(y, then_end);
      phi->addIncoming(llvm::Constant::getNullValue(y->getType()), open.begin_block);
      open.then_results.push_back(phi);
    }
  } else {
    open.then_results.assign(then_yields.begin(), then_yields.end());
  }
  if (open.else_tested) {
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    open.else_block = llvm::BasicBlock::Create(b_.getContext(), "else", fn);
    open.merge_block = llvm::BasicBlock::Create(b_.getContext(), "endif", fn);
    open.else_begin = b_.GetInsertBlock();
    b_.CreateCondBr(AnyLane(open.else_mask), open.else_block, open.merge_block);
    b_.SetInsertPoint(open.else_block);
  }
  masks_.back() = open.else_mask;
}

std::vector<LlvmPrinter::Value> LlvmPrinter::EndIf(std::span<const Value> else_yields) {
  OpenIf open = std::move(open_ifs_.back());
  open_ifs_.pop_back();
  masks_.pop_back();
  llvm::BasicBlock* else_end = b_.GetInsertBlock();
  std::vector<Value> results;
  if (open.uniform) {
    b_.CreateBr(open.merge_block);
    b_.SetInsertPoint(open.merge_block);
    for (size_t k = 0; k < else_yields.size(); ++k) {
      llvm::PHINode* phi = b_.CreatePHI(else_yields[k]->getType(), 2, "result");
      phi->addIncoming(open.then_results[k], open.then_end);
      phi->addIncoming(else_yields[k], else_end);
      if (IsUniform(open.then_results[k]) && IsUniform(else_yields[k])) MarkUniform(phi);
      results.push_back(phi);
    }
    return results;
  }
  results.assign(else_yields.begin(), else_yields.end());
  if (open.else_tested) {
    b_.CreateBr(open.merge_block);
    b_.SetInsertPoint(open.merge_block);
    for (size_t k = 0; k < results.size(); ++k) {  // the phis first: a block opens with them
      llvm::PHINode* phi = b_.CreatePHI(else_yields[k]->getType(), 2, "else.result");
      phi->addIncoming(else_yields[k], else_end);
      phi->addIncoming(llvm::Constant::getNullValue(else_yields[k]->getType()), open.else_begin);
      results[k] = phi;
    }
  }
  for (size_t k = 0; k < results.size(); ++k) {
    results[k] = b_.CreateSelect(open.cond, open.then_results[k], results[k], "result");
  }
  return results;
}

}  // namespace dualcast::jit::cpu
