// exp and expm1 on W-lane vectors as inline LLVM instructions (see inline_exp.h for why and how).
#include "jit/cpu/inline_exp.h"

#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "jit/cpu/vector_math.h"
#include "jit/error.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/Cloning.h"

namespace dualcast::jit::cpu {
namespace {

// What differs between float and double: the constants.
struct Format {
  bool f32;
  int mantissa_bits;  // 23 / 52
  int bias;           // 127 / 1023
  // Cody-Waite split of ln 2: `hi` has few significant bits, so k * hi is
  // exact for every k the clamped range gives, with or without FMA.
  double ln2_hi, ln2_lo;
  double exp_lo, exp_hi;  // exp(x) is +0 below exp_lo and +inf above exp_hi
  double expm1_lo;        // expm1(x) rounds to -1 below it
  int expm1_kmax;         // above this k, expm1(x) = exp(x) (the -1 is below an ulp)
  int taylor_degree;      // f64: highest power of r in the Taylor series (f32 uses Cephes' fit)
  // The common range, where the clamps do nothing and one power of two
  // scales: |x| <= exp_plain gives |k| <= bias - 1 (2^k normal, the result
  // finite and normal: exp(-87) = 1.6e-38, exp(-708) = 3.3e-308),
  // |x| <= expm1_plain gives |k| <= expm1_kmax (no lane needs `big`).
  double exp_plain, expm1_plain;
};

constexpr Format kF32{true, 23, 127, 0.693359375, -2.12194440e-4, -104.0, 89.0, -30.0, 100, 0,
                      87.0, 69.0};
constexpr Format kF64{false, 52, 1023, 6.93145751953125e-1, 1.42860682030941723212e-6,
                      -746.0, 710.0, -40.0, 1000, 13, 708.0, 693.0};

enum class Which { kExp, kExpm1 };

// "dualcast.exp.v8f32", "dualcast.expm1.full.v4f64": one function per kind, form and vector type
// (the full forms under kSharedFunctionPrefix: "dualcast.shared.expm1.full.v4f64").
std::string FunctionName(absl::string_view prefix, Which which, const char* form, llvm::Type* type) {
  auto* v = llvm::cast<llvm::FixedVectorType>(type);
  return absl::StrCat(prefix, which == Which::kExp ? "exp" : "expm1", form, ".v",
                      v->getNumElements(), v->getElementType()->isFloatTy() ? "f32" : "f64");
}

class ExpEmitter {
 public:
  ExpEmitter(llvm::IRBuilder<>& b, llvm::Value* x)
      : b_(b),
        x_(x),
        type_(llvm::cast<llvm::FixedVectorType>(x->getType())),
        fmt_(type_->getElementType()->isFloatTy() ? kF32 : kF64),
        i32_(llvm::FixedVectorType::get(b.getInt32Ty(), type_->getNumElements())),
        bits_(llvm::FixedVectorType::get(fmt_.f32 ? b.getInt32Ty() : b.getInt64Ty(),
                                         type_->getNumElements())) {}

  // The full range: specials, subnormal and overflowing results.
  llvm::Value* Full(Which which) { return which == Which::kExp ? Exp() : Expm1(); }

  // Integer scaling (no vscalef) is the one with a cheaper common form.
  bool HasCommonForm() const { return !HasScalef(); }

  // The common form, right for lanes inside the common range: Full's steps
  // without the clamps (which do nothing there) and, for exp, (1 + q) 2^k in
  // one product, which rounds exactly as Full's two do (both factors of
  // 2^k1 2^k2 scale exactly while the result is normal); for expm1 without
  // the `over` lanes (below expm1_lo both give -1: 2^k - 1 rounds to -1 and
  // 2^k q is below its half-ulp). So a lane's bits do not depend on which
  // form ran it. Only with HasCommonForm().
  llvm::Value* Common(Which which) {
    Reduce(x_);
    if (which == Which::kExp) return b_.CreateFMul(b_.CreateFAdd(C(1), q_), Pow2Int(k_));
    llvm::Value* t = Pow2Int(k_);
    return KeepZero(FmulAdd(t, q_, b_.CreateFSub(t, C(1))));
  }

  // Whether some lane lies outside the common range (NaN lanes do not: both
  // forms carry them to NaN).
  llvm::Value* AnyOutsideCommon(Which which) {
    const double limit = which == Which::kExp ? fmt_.exp_plain : fmt_.expm1_plain;
    llvm::Value* a = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x_);
    return b_.CreateOrReduce(b_.CreateFCmpOGT(a, C(limit)));
  }

 private:
  llvm::Value* Exp() {
    Reduce(Clamped(fmt_.exp_lo));
    return Scale(b_.CreateFAdd(C(1), q_));
  }

  llvm::Value* Expm1() {
    Reduce(Clamped(fmt_.expm1_lo));
    llvm::Value* big = Scale(b_.CreateFAdd(C(1), q_));
    // 2^k q + (2^k - 1); k is capped so 2^k stays finite (the lanes above the
    // cap take `big`, where the -1 no longer shows).
    llvm::Value* over = b_.CreateFCmpOGT(kf_, C(fmt_.expm1_kmax));
    llvm::Value* t = HasScalef() ? Scalef(C(1), b_.CreateSelect(over, C(fmt_.expm1_kmax), kf_))
                                 : Pow2Int(b_.CreateSelect(over, Int(fmt_.expm1_kmax), k_));
    llvm::Value* small = FmulAdd(t, q_, b_.CreateFSub(t, C(1)));
    return KeepZero(b_.CreateSelect(over, big, small));
  }

  // r + r^2 p adds +0 to -0 when x = -0; expm1(±0) = ±0.
  llvm::Value* KeepZero(llvm::Value* y) { return b_.CreateSelect(b_.CreateFCmpOEQ(x_, C(0)), x_, y); }

  llvm::Constant* C(double v) { return llvm::ConstantFP::get(type_, v); }
  llvm::Constant* Int(int v) { return llvm::ConstantInt::get(i32_, v); }

  llvm::Value* FmulAdd(llvm::Value* a, llvm::Value* m, llvm::Value* c) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {type_}, {a, m, c});
  }

  // AVX-512's vscalef: v * 2^k in one instruction, one rounding, subnormal
  // and overflowing results included, NaN through. It takes 512-bit vectors:
  // a wider one (an interleaved kernel step, interleave.h) is done in
  // 512-bit pieces.
  bool HasScalef() const {
    return HostVectorBits() == 512 && type_->getPrimitiveSizeInBits() % 512 == 0;
  }
  llvm::Value* Scalef(llvm::Value* v, llvm::Value* k) {
    const bool f32 = fmt_.f32;
    const int piece = f32 ? 16 : 8;
    const int lanes = static_cast<int>(type_->getNumElements());
    llvm::Value* all = f32 ? b_.getInt16(0xffff) : b_.getInt8(0xff);
    auto scalef = [&](llvm::Value* pv, llvm::Value* pk) -> llvm::Value* {
      return b_.CreateIntrinsic(f32 ? llvm::Intrinsic::x86_avx512_mask_scalef_ps_512
                                    : llvm::Intrinsic::x86_avx512_mask_scalef_pd_512,
                                {}, {pv, pk, pv, all, b_.getInt32(4 /* current rounding */)});
    };
    if (lanes == piece) return scalef(v, k);
    std::vector<llvm::Value*> parts;
    for (int first = 0; first < lanes; first += piece) {
      parts.push_back(scalef(SliceLanes(b_, v, first, piece), SliceLanes(b_, k, first, piece)));
    }
    return ConcatLanes(b_, std::move(parts));
  }

  // v 2^k for the integer-valued lanes kf: each factor of 2^k1 2^k2 is a
  // normal number, so only the last product rounds, also when the result is
  // subnormal or overflows.
  llvm::Value* Scale(llvm::Value* v) {
    if (HasScalef()) return Scalef(v, kf_);
    llvm::Value* k1 = b_.CreateAShr(k_, Int(1));
    return b_.CreateFMul(b_.CreateFMul(v, Pow2Int(k1)), Pow2Int(b_.CreateSub(k_, k1)));
  }
  llvm::Value* Pow2Int(llvm::Value* k) {
    llvm::Value* wide = fmt_.f32 ? k : b_.CreateSExt(k, bits_);
    llvm::Value* biased = b_.CreateAdd(wide, llvm::ConstantInt::get(bits_, fmt_.bias));
    return b_.CreateBitCast(b_.CreateShl(biased, llvm::ConstantInt::get(bits_, fmt_.mantissa_bits)),
                            type_);
  }

  // x clamped to [lo, exp_hi]. A NaN keeps x (the compares are false for it).
  llvm::Value* Clamped(double lo) {
    llvm::Value* x = b_.CreateSelect(b_.CreateFCmpOGT(x_, C(fmt_.exp_hi)), C(fmt_.exp_hi), x_);
    return b_.CreateSelect(b_.CreateFCmpOLT(x, C(lo)), C(lo), x);
  }

  // k and q = expm1(r), r = x - k ln 2. A NaN runs through every step and
  // comes out NaN: no float-to-int conversion is made (its result for NaN is
  // poison); the integer k is read from the rounding sum's bits instead,
  // garbage for a NaN lane but only ever multiplied by NaN.
  void Reduce(llvm::Value* x) {
    // Round x / ln 2 to the nearest integer by adding and removing 1.5 * 2^p
    // (exact for |x / ln 2| < 2^(p-1); LLVM keeps the pair without fast-math).
    // The sum lies in [2^p, 2^(p+1)), where an ulp is 1: its bits minus the
    // constant's are k as an integer.
    const double magic = fmt_.f32 ? 0x1.8p23 : 0x1.8p52;
    llvm::Value* rounded = b_.CreateFAdd(b_.CreateFMul(x, C(1.4426950408889634)), C(magic));
    llvm::Value* kf = b_.CreateFSub(rounded, C(magic));
    if (!HasScalef()) {
      llvm::Value* magic_bits = b_.CreateBitCast(C(magic), bits_);
      k_ = b_.CreateSub(b_.CreateBitCast(rounded, bits_), magic_bits);
      if (!fmt_.f32) k_ = b_.CreateTrunc(k_, i32_);
    }
    llvm::Value* neg_k = b_.CreateFNeg(kf);
    llvm::Value* r = FmulAdd(neg_k, C(fmt_.ln2_hi), x);
    r = FmulAdd(neg_k, C(fmt_.ln2_lo), r);
    // p(r) ~ (e^r - 1 - r) / r^2, Horner from the highest power: in f32
    // Cephes expf's minimax coefficients (degree 5, two fewer steps than the
    // Taylor series to the same accuracy), in f64 the Taylor series 1/j!.
    llvm::Value* p = nullptr;
    if (fmt_.f32) {
      static constexpr double kCephes[] = {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                           4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1};
      p = C(kCephes[0]);
      for (size_t j = 1; j < std::size(kCephes); ++j) p = FmulAdd(p, r, C(kCephes[j]));
    } else {
      double factorial = 1;
      for (int j = 2; j <= fmt_.taylor_degree; ++j) factorial *= j;
      p = C(1 / factorial);
      for (int j = fmt_.taylor_degree - 1; j >= 2; --j) {
        factorial /= (j + 1);
        p = FmulAdd(p, r, C(1 / factorial));
      }
    }
    q_ = FmulAdd(b_.CreateFMul(r, r), p, r);
    kf_ = kf;
  }

  llvm::IRBuilder<>& b_;
  llvm::Value* x_;
  llvm::FixedVectorType* type_;
  Format fmt_;
  llvm::FixedVectorType* i32_;   // k
  llvm::FixedVectorType* bits_;  // integers as wide as an element
  llvm::Value* kf_ = nullptr;  // k as an integer-valued float
  llvm::Value* k_ = nullptr;   // k as i32 lanes (not with vscalef)
  llvm::Value* q_ = nullptr;
};

llvm::Function* NewFunction(llvm::Module& module, const std::string& name, llvm::Type* type,
                            llvm::GlobalValue::LinkageTypes linkage) {
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(type, {type}, false), linkage, name, module);
  MarkPureMathFunction(*fn);
  return fn;
}

// The whole range (specials, subnormal and overflowing results): called only
// for vectors with a lane outside the common range, under preserve_all (the
// callee saves the vector registers it uses, so the hot code around the call
// keeps its values in registers). A kernel's module only declares it: the
// JIT links one definition per process (BuildSharedFunctionsModule).
llvm::Function* FullRangeFunction(llvm::Module& module, llvm::Type* type, Which which) {
  const std::string name = FunctionName(kSharedFunctionPrefix, which, ".full", type);
  if (llvm::Function* fn = module.getFunction(name)) return fn;
  llvm::Function* fn = NewFunction(module, name, type, llvm::Function::ExternalLinkage);
  fn->addFnAttr(llvm::Attribute::NoInline);
  fn->addFnAttr(llvm::Attribute::Cold);
  fn->setCallingConv(llvm::CallingConv::PreserveAll);
  return fn;
}

// One instruction at the call site (a pure call, so the printer's passes move
// and merge it like any other op), inlined by InlineExpCalls: the
// common-range form, and the full one behind a branch no lane of typical
// data takes.
llvm::Function* ExpFunction(llvm::Module& module, llvm::Type* type, Which which) {
  const std::string name = FunctionName("dualcast.", which, "", type);
  if (llvm::Function* fn = module.getFunction(name)) return fn;
  llvm::Function* fn = NewFunction(module, name, type, llvm::Function::InternalLinkage);
  fn->addFnAttr(llvm::Attribute::AlwaysInline);
  llvm::LLVMContext& ctx = module.getContext();
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  llvm::Value* x = fn->getArg(0);
  ExpEmitter e(b, x);
  if (!e.HasCommonForm()) {
    b.CreateRet(e.Full(which));
    return fn;
  }
  llvm::Value* common = e.Common(which);
  llvm::Value* beyond = e.AnyOutsideCommon(which);
  llvm::BasicBlock* entry = b.GetInsertBlock();
  auto* full = llvm::BasicBlock::Create(ctx, "full.range", fn);
  auto* done = llvm::BasicBlock::Create(ctx, "done", fn);
  b.CreateCondBr(beyond, full, done, llvm::MDBuilder(ctx).createBranchWeights(1, 1 << 20));
  b.SetInsertPoint(full);
  llvm::CallInst* call = b.CreateCall(FullRangeFunction(module, type, which), {x});
  call->setCallingConv(llvm::CallingConv::PreserveAll);
  b.CreateBr(done);
  b.SetInsertPoint(done);
  llvm::PHINode* y = b.CreatePHI(type, 2);
  y->addIncoming(common, entry);
  y->addIncoming(call, full);
  b.CreateRet(y);
  return fn;
}

llvm::Value* Call(llvm::IRBuilder<>& b, llvm::Value* x, Which which) {
  llvm::Module& module = *b.GetInsertBlock()->getModule();
  return b.CreateCall(ExpFunction(module, x->getType(), which), {x});
}

}  // namespace

void InlineExpCalls(llvm::Module& module) {
  std::vector<llvm::Function*> functions;
  for (llvm::Function& fn : module) {
    if (fn.hasFnAttribute(llvm::Attribute::AlwaysInline)) functions.push_back(&fn);
  }
  for (llvm::Function* fn : functions) {
    std::vector<llvm::CallBase*> calls;
    for (llvm::User* user : fn->users()) calls.push_back(llvm::cast<llvm::CallBase>(user));
    for (llvm::CallBase* call : calls) {
      llvm::InlineFunctionInfo info;
      // Cannot fail: the callee is a defined, non-recursive, non-varargs function of ours.
      (void)llvm::InlineFunction(*call, info);
    }
    fn->eraseFromParent();
  }
}

absl::StatusOr<std::unique_ptr<llvm::Module>> BuildSharedFunctionsModule(
    const std::vector<std::string>& symbols, llvm::LLVMContext& context) {
  auto module = std::make_unique<llvm::Module>(symbols.empty() ? "dualcast.shared" : symbols[0], context);
  for (const std::string& symbol : symbols) {
    // kSharedFunctionPrefix + ("exp" | "expm1") + ".full.v" + lanes + ("f32" | "f64")
    absl::string_view rest = symbol;
    const bool known_prefix = absl::ConsumePrefix(&rest, kSharedFunctionPrefix);
    Which which = Which::kExp;
    if (absl::ConsumePrefix(&rest, "expm1")) which = Which::kExpm1;
    else if (!absl::ConsumePrefix(&rest, "exp")) rest = {};
    bool f32 = false;
    if (absl::ConsumeSuffix(&rest, "f32")) f32 = true;
    else if (!absl::ConsumeSuffix(&rest, "f64")) rest = {};
    int lanes = 0;
    if (!known_prefix || !absl::ConsumePrefix(&rest, ".full.v") || !absl::SimpleAtoi(rest, &lanes) ||
        lanes < 1 || lanes > 1024) {
      return MakeStatus(ErrorKind::kCompile,
                        absl::StrCat("cpu kernel calls '", symbol,
                                     "', which is no function the JIT knows (an object compiled by "
                                     "another dualcast? clear DUALCAST_CACHE_DIR)"));
    }
    llvm::Type* elem = f32 ? llvm::Type::getFloatTy(context) : llvm::Type::getDoubleTy(context);
    llvm::Type* type = llvm::FixedVectorType::get(elem, static_cast<unsigned>(lanes));
    llvm::Function* fn = FullRangeFunction(*module, type, which);
    if (!fn->isDeclaration()) continue;  // named twice
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", fn));
    ExpEmitter e(b, fn->getArg(0));
    b.CreateRet(e.Full(which));
  }
  return module;
}

llvm::Value* EmitInlineExp(llvm::IRBuilder<>& b, llvm::Value* x) { return Call(b, x, Which::kExp); }

llvm::Value* EmitInlineExpm1(llvm::IRBuilder<>& b, llvm::Value* x) {
  return Call(b, x, Which::kExpm1);
}

}  // namespace dualcast::jit::cpu
