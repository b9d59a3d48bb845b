// libmvec mappings for the loop vectoriser and side-effect-free libm declarations.
#include "jit/cpu/vector_math.h"

#include <deque>
#include <mutex>
#include <string>

#include "jit/codegen.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/Attributes.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/ModRef.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

namespace dualcast::jit::cpu {
namespace {

// VecDesc holds StringRefs: the names must live as long as any TLI built from
// them, i.e. for the whole process.
struct MappingTable {
  std::deque<std::string> names;
  std::vector<llvm::VecDesc> descs;
};

void AddIsa(MappingTable& table, char isa, int f64_lanes) {
  for (int op = 0; op < kNumOps; ++op) {
    for (Type type : {Type::kF32, Type::kF64}) {
      const char* scalar = LibmName(static_cast<Op>(op), type);
      if (scalar == nullptr) continue;
      const int arity = Info(static_cast<Op>(op)).arity;
      const int lanes = type == Type::kF32 ? 2 * f64_lanes : f64_lanes;
      const std::string params(arity, 'v');
      const std::string& vector = table.names.emplace_back(
          "_ZGV" + std::string(1, isa) + "N" + std::to_string(lanes) + params + "_" + scalar);
      const std::string& abi =
          table.names.emplace_back("_ZGV_LLVM_N" + std::to_string(lanes) + params);
      // The libm call, and the intrinsic LLVM may canonicalise it to
      // (llvm.exp.f32 ...); a name with no such intrinsic is simply never asked.
      std::string base = LibmName(static_cast<Op>(op), Type::kF64);
      const std::string& intrinsic = table.names.emplace_back(
          "llvm." + base + (type == Type::kF32 ? ".f32" : ".f64"));
      const std::string& libm = table.names.emplace_back(scalar);
      for (const std::string* name : {&libm, &intrinsic}) {
        table.descs.emplace_back(*name, vector, llvm::ElementCount::getFixed(lanes),
                                 /*Masked=*/false, abi);
      }
    }
  }
}

}  // namespace

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
    if (!llvm::Triple(llvm::sys::getProcessTriple()).isX86() ||
        !llvm::Triple(llvm::sys::getProcessTriple()).isArch64Bit() || !LibmvecAvailable()) {
      return result;
    }
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

void AddVectorMathMappings(llvm::TargetLibraryInfoImpl& tlii, const VectorIsa& isa) {
  static std::mutex mutex;
  static MappingTable tables[3];
  static bool built = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!built) {
      AddIsa(tables[0], 'b', 2);
      AddIsa(tables[1], 'd', 4);
      AddIsa(tables[2], 'e', 8);
      built = true;
    }
  }
  if (isa.sse2) tlii.addVectorizableFunctions(tables[0].descs);
  if (isa.avx2) tlii.addVectorizableFunctions(tables[1].descs);
  if (isa.avx512) tlii.addVectorizableFunctions(tables[2].descs);
}

llvm::Function* DeclareMathFunction(llvm::Module& module, const std::string& name,
                                    llvm::Type* type, int arity) {
  std::vector<llvm::Type*> params(arity, type);
  llvm::FunctionType* fn_type = llvm::FunctionType::get(type, params, /*isVarArg=*/false);
  llvm::Function* fn = module.getFunction(name);
  if (fn == nullptr) {
    fn = llvm::Function::Create(fn_type, llvm::Function::ExternalLinkage, name, module);
  }
  llvm::LLVMContext& ctx = module.getContext();
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  fn->addFnAttr(llvm::Attribute::WillReturn);
  fn->addFnAttr(llvm::Attribute::NoSync);
  fn->addFnAttr(llvm::Attribute::NoFree);
  fn->addFnAttr(llvm::Attribute::getWithMemoryEffects(ctx, llvm::MemoryEffects::none()));
  return fn;
}

}  // namespace dualcast::jit::cpu
