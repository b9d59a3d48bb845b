// Vector math calls: libmvec variants chosen per width, chunking, scalar fallback, range clamps.
#include "jit/cpu/vector_math.h"

#include <array>
#include <cstring>

#include <string>
#include <vector>

#include "jit/cpu/inline_exp.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/IR/Attributes.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/ModRef.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

namespace dualcast::jit::cpu {
namespace {

// The widest libmvec variant the host runs for `elem` whose lane count
// divides `lanes` (0 when none): its ISA letter and lane count.
struct Variant {
  char isa = 0;
  int lanes = 0;
};

Variant PickVariant(const VectorIsa& isa, bool f32, int lanes) {
  const int scale = f32 ? 2 : 1;  // f32 lanes per f64 lane
  const struct {
    bool available;
    char letter;
    int f64_lanes;
  } options[] = {{isa.avx512, 'e', 8}, {isa.avx2, 'd', 4}, {isa.sse2, 'b', 2}};
  for (const auto& o : options) {
    const int l = o.f64_lanes * scale;
    if (o.available && l <= lanes && lanes % l == 0) return Variant{o.letter, l};
  }
  return Variant{};
}

// "_ZGVeN16vv_powf": the vector-function ABI name of `scalar` (x86, unmasked).
std::string VectorName(const Variant& v, const char* scalar, int arity) {
  return "_ZGV" + std::string(1, v.isa) + "N" + std::to_string(v.lanes) + std::string(arity, 'v') +
         "_" + scalar;
}

}  // namespace

llvm::Value* SliceLanes(llvm::IRBuilder<>& b, llvm::Value* v, int first, int count) {
  std::vector<int> mask(count);
  for (int k = 0; k < count; ++k) mask[k] = first + k;
  return b.CreateShuffleVector(v, mask);
}

llvm::Value* ConcatLanes(llvm::IRBuilder<>& b, std::vector<llvm::Value*> parts) {
  while (parts.size() > 1) {
    std::vector<llvm::Value*> joined;
    for (size_t k = 0; k + 1 < parts.size(); k += 2) {
      const int n = llvm::cast<llvm::FixedVectorType>(parts[k]->getType())->getNumElements();
      std::vector<int> mask(2 * n);
      for (int j = 0; j < 2 * n; ++j) mask[j] = j;
      joined.push_back(b.CreateShuffleVector(parts[k], parts[k + 1], mask));
    }
    parts = std::move(joined);
  }
  return parts[0];
}

bool LibmvecAvailable() {
  static const bool available = [] {
    std::string error;
    return llvm::sys::DynamicLibrary::getPermanentLibrary("libmvec.so.1", &error).isValid();
  }();
  return available;
}

VectorIsa HostVectorIsa() {
  static const VectorIsa isa = [] {
    VectorIsa result;
    const llvm::Triple triple(llvm::sys::getProcessTriple());
    if (!triple.isX86() || !triple.isArch64Bit() || !LibmvecAvailable()) return result;
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    auto has = [&](const char* name) {
      auto it = features.find(name);
      return it != features.end() && it->second;
    };
    result.sse2 = true;  // baseline of x86-64
    result.avx2 = has("avx2") && has("fma");
    result.avx512 = has("avx512f") && has("avx512dq");
    return result;
  }();
  return isa;
}

int HostVectorBits() {
  static const int bits = [] {
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    auto has = [&](const char* name) {
      auto it = features.find(name);
      return it != features.end() && it->second;
    };
    if (has("avx512f") && has("avx512dq")) return 512;
    if (has("avx2")) return 256;
    return 128;
  }();
  return bits;
}

llvm::Function* DeclareMathFunction(llvm::Module& module, const std::string& name,
                                    llvm::Type* type, int arity) {
  std::vector<llvm::Type*> params(arity, type);
  llvm::FunctionType* fn_type = llvm::FunctionType::get(type, params, /*isVarArg=*/false);
  llvm::Function* fn = module.getFunction(name);
  if (fn == nullptr) {
    fn = llvm::Function::Create(fn_type, llvm::Function::ExternalLinkage, name, module);
  }
  MarkPureMathFunction(*fn);
  return fn;
}

void MarkPureMathFunction(llvm::Function& fn) {
  fn.addFnAttr(llvm::Attribute::NoUnwind);
  fn.addFnAttr(llvm::Attribute::WillReturn);
  fn.addFnAttr(llvm::Attribute::NoSync);
  fn.addFnAttr(llvm::Attribute::NoFree);
  fn.addFnAttr(llvm::Attribute::getWithMemoryEffects(fn.getContext(), llvm::MemoryEffects::none()));
}

static llvm::Value* EmitLibmvecCall(llvm::IRBuilder<>& b, llvm::Module& module, const char* scalar_name,
                                    llvm::Type* elem, int lanes, std::span<llvm::Value* const> args);

llvm::Value* EmitMathCall(llvm::IRBuilder<>& b, llvm::Module& module, const char* scalar_name,
                          llvm::Type* elem, int lanes, std::span<llvm::Value* const> args) {
  const int arity = static_cast<int>(args.size());
  auto call = [&](const std::string& name, llvm::Type* type, std::vector<llvm::Value*> a) {
    return b.CreateCall(DeclareMathFunction(module, name, type, arity), a);
  };
  if (lanes == 1) return call(scalar_name, elem, {args.begin(), args.end()});
  // The activations' exp and expm1 are written out inline (inline_exp.h: a
  // call would spill every live vector register around it).
  const bool is_f32 = elem->isFloatTy();
  if (std::strcmp(scalar_name, is_f32 ? "expf" : "exp") == 0) return EmitInlineExp(b, args[0]);
  if (std::strcmp(scalar_name, is_f32 ? "expm1f" : "expm1") == 0) return EmitInlineExpm1(b, args[0]);

  // hypot depends only on |a| and |b|, but libmvec's is not symmetric: hypot(a, b) and
  // hypot(b, a) differ by an ulp for some pairs (0.92347928243645860, 0.27943795070880384),
  // so `hypot(x, y) > hypot(y, x)` could be true. Ordered (larger magnitude first) it is
  // symmetric, as glibc's scalar hypot is. With a NaN the compare is false, (|b|, |a|):
  // hypot of an infinity and a NaN is still inf in either order (IEEE 754), else NaN.
  if (arity == 2 && std::strcmp(scalar_name, is_f32 ? "hypotf" : "hypot") == 0) {
    llvm::Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, args[0]);
    llvm::Value* c = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, args[1]);
    llvm::Value* first = b.CreateFCmpOGE(a, c);
    std::array<llvm::Value*, 2> ordered = {b.CreateSelect(first, a, c), b.CreateSelect(first, c, a)};
    return EmitLibmvecCall(b, module, scalar_name, elem, lanes, ordered);
  }
  return EmitLibmvecCall(b, module, scalar_name, elem, lanes, args);
}

// A libmvec variant of `scalar_name` for `lanes` lanes (chunked), or one libm call per lane.
static llvm::Value* EmitLibmvecCall(llvm::IRBuilder<>& b, llvm::Module& module, const char* scalar_name,
                                    llvm::Type* elem, int lanes, std::span<llvm::Value* const> args) {
  const int arity = static_cast<int>(args.size());
  auto call = [&](const std::string& name, llvm::Type* type, std::vector<llvm::Value*> a) {
    return b.CreateCall(DeclareMathFunction(module, name, type, arity), a);
  };
  const Variant v = PickVariant(HostVectorIsa(), elem->isFloatTy(), lanes);
  const std::string vector_name = v.lanes > 0 ? VectorName(v, scalar_name, arity) : "";
  // Only names libmvec really exports (a math op added later may have none).
  if (v.lanes > 0 && llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(vector_name) != nullptr) {
    llvm::Type* chunk_type = llvm::FixedVectorType::get(elem, v.lanes);
    if (v.lanes == lanes) return call(vector_name, chunk_type, {args.begin(), args.end()});
    std::vector<llvm::Value*> parts;
    for (int first = 0; first < lanes; first += v.lanes) {
      std::vector<llvm::Value*> chunk_args;
      for (llvm::Value* a : args) chunk_args.push_back(SliceLanes(b, a, first, v.lanes));
      parts.push_back(call(vector_name, chunk_type, chunk_args));
    }
    return ConcatLanes(b, std::move(parts));
  }
  // Scalarised: one libm call per lane.
  llvm::Value* result = llvm::PoisonValue::get(llvm::FixedVectorType::get(elem, lanes));
  for (int k = 0; k < lanes; ++k) {
    std::vector<llvm::Value*> lane_args;
    for (llvm::Value* a : args) lane_args.push_back(b.CreateExtractElement(a, uint64_t(k)));
    result = b.CreateInsertElement(result, call(scalar_name, elem, lane_args), uint64_t(k));
  }
  return result;
}

llvm::Value* ClampRange(llvm::IRBuilder<>& b, llvm::Value* v, double lo, double hi) {
  llvm::Value* lo_v = llvm::ConstantFP::get(v->getType(), lo);
  llvm::Value* hi_v = llvm::ConstantFP::get(v->getType(), hi);
  // Ordered compares are false on NaN, so a NaN is kept.
  v = b.CreateSelect(b.CreateFCmpOGT(v, hi_v), hi_v, v);
  return b.CreateSelect(b.CreateFCmpOLT(v, lo_v), lo_v, v);
}

}  // namespace dualcast::jit::cpu
