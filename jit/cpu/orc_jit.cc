// OrcJit: host TargetMachine, O3 with libmvec-aware TLI, object emission, linking into one LLJIT.
#include "jit/cpu/orc_jit.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jit/cpu/vector_math.h"
#include "jit/error.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

namespace dualcast::jit::cpu {

struct OrcJit::State {
  std::mutex mutex;  // serialises every use of jit, target_machine and linked
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> target_machine;
  std::string cpu;
  std::string features;
  absl::flat_hash_map<std::string, uint64_t> linked;  // symbol -> address
  std::string init_error;                             // non-empty: the JIT is unusable
};

namespace {

absl::Status CompileError(const std::string& symbol, const std::string& what) {
  return MakeStatus(ErrorKind::kCompile,
                    absl::StrCat("cpu kernel '", symbol, "': ", what,
                                 " (generated code was rejected; please report it as a bug "
                                 "in dualcast with the kernel's IR)"));
}

std::string TakeMessage(llvm::Error error) { return llvm::toString(std::move(error)); }

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// Target, attributes, verification and the O3 pipeline, in place.
absl::Status Optimize(OrcJit::State& s, llvm::Module& module, const std::string& symbol) {
  module.setTargetTriple(s.target_machine->getTargetTriple().str());
  module.setDataLayout(s.target_machine->createDataLayout());
  for (llvm::Function& fn : module) {
    if (fn.isDeclaration()) continue;
    fn.addFnAttr("target-cpu", s.cpu);
    fn.addFnAttr("target-features", s.features);
  }
  std::string problems;
  llvm::raw_string_ostream problems_os(problems);
  if (llvm::verifyModule(module, &problems_os)) {
    return CompileError(symbol, "invalid LLVM IR: " + problems);
  }
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder pb(s.target_machine.get(), tuning);
  // Our TLI (with the vector mappings) must be registered before the default
  // analyses, or registerFunctionAnalyses installs a plain one first.
  llvm::TargetLibraryInfoImpl tlii(llvm::Triple(module.getTargetTriple()));
  AddVectorMathMappings(tlii, HostVectorIsa());
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
  return absl::OkStatus();
}

absl::StatusOr<std::string> EmitObject(OrcJit::State& s, llvm::Module& module,
                                       const std::string& symbol) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager codegen;
  if (s.target_machine->addPassesToEmitFile(codegen, os, nullptr,
                                            llvm::CodeGenFileType::ObjectFile)) {
    return CompileError(symbol, "the host target cannot emit object files");
  }
  codegen.run(module);
  return std::string(buffer.data(), buffer.size());
}

// Builds `build`'s module in a context of its own, optimises it and emits the object file.
absl::StatusOr<std::string> BuildObject(OrcJit::State& s, const ModuleBuilder& build,
                                        const std::string& symbol) {
  llvm::LLVMContext context;
  absl::StatusOr<std::unique_ptr<llvm::Module>> module = build(context);
  if (!module.ok()) return module.status();
  if (absl::Status status = Optimize(s, **module, symbol); !status.ok()) return status;
  return EmitObject(s, **module, symbol);
}

// Stored bytes are only linked when they parse as an object defining `symbol`.
bool DefinesSymbol(const std::string& bytes, const std::string& symbol) {
  auto object = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(bytes.data(), bytes.size()), symbol));
  if (!object) {
    llvm::consumeError(object.takeError());
    return false;
  }
  for (const llvm::object::SymbolRef& sym : (*object)->symbols()) {
    auto name = sym.getName();
    auto flags = sym.getFlags();
    if (!name || !flags) {
      if (!name) llvm::consumeError(name.takeError());
      if (!flags) llvm::consumeError(flags.takeError());
      continue;
    }
    if (*name == symbol && !(*flags & llvm::object::SymbolRef::SF_Undefined) &&
        (*flags & llvm::object::SymbolRef::SF_Global)) {
      return true;
    }
  }
  return false;
}

// Links `bytes` under its own resource tracker, so a failed link leaves nothing behind.
absl::StatusOr<uint64_t> Link(OrcJit::State& s, const std::string& bytes,
                              const std::string& symbol) {
  llvm::orc::ResourceTrackerSP tracker = s.jit->getMainJITDylib().createResourceTracker();
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(bytes.data(), bytes.size()), symbol);
  if (llvm::Error error = s.jit->addObjectFile(tracker, std::move(buffer))) {
    return CompileError(symbol, "linking failed: " + TakeMessage(std::move(error)));
  }
  llvm::Expected<llvm::orc::ExecutorAddr> address = s.jit->lookup(symbol);
  if (!address) {
    std::string message = TakeMessage(address.takeError());
    if (llvm::Error error = tracker->remove()) llvm::consumeError(std::move(error));
    return CompileError(symbol, "linking failed: " + message);
  }
  return address->getValue();
}

std::string SortedFeatures(const llvm::StringMap<bool>& features) {
  std::vector<std::string> enabled;
  for (const auto& entry : features) {
    if (entry.second) enabled.push_back(entry.first().str());
  }
  std::sort(enabled.begin(), enabled.end());
  return absl::StrJoin(enabled, ",", [](std::string* out, const std::string& name) {
    absl::StrAppend(out, "+", name);
  });
}

}  // namespace

OrcJit::OrcJit() : state_(new State) {
  State& s = *state_;
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) {
    s.init_error = "no JIT for this host: " + TakeMessage(builder.takeError());
    return;
  }
  // JITLink (LLJIT's linker on x86-64 ELF) wants position-independent code
  // in the small code model; the objects we emit must match what it expects.
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  builder->setRelocationModel(llvm::Reloc::PIC_);
  builder->setCodeModel(llvm::CodeModel::Small);
  s.cpu = builder->getCPU();
  s.features = builder->getFeatures().getString();
  auto machine = builder->createTargetMachine();
  if (!machine) {
    s.init_error = "cannot create a target machine: " + TakeMessage(machine.takeError());
    return;
  }
  s.target_machine = std::move(*machine);
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*builder).create();
  if (!jit) {
    s.init_error = "cannot create the ORC JIT: " + TakeMessage(jit.takeError());
    return;
  }
  s.jit = std::move(*jit);
  const char prefix = s.jit->getDataLayout().getGlobalPrefix();
  llvm::orc::JITDylib& dylib = s.jit->getMainJITDylib();
  if (auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix)) {
    dylib.addGenerator(std::move(*process));
  } else {
    s.init_error = "cannot search the process for libm: " + TakeMessage(process.takeError());
    return;
  }
  if (LibmvecAvailable()) {
    if (auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", prefix)) {
      dylib.addGenerator(std::move(*mvec));
    } else {
      s.init_error = "cannot load libmvec.so.1: " + TakeMessage(mvec.takeError());
    }
  }
}

OrcJit& OrcJit::Get() {
  static OrcJit* const instance = new OrcJit();  // never destroyed: kernels outlive statics
  return *instance;
}

absl::StatusOr<JitCompiled> OrcJit::Compile(const std::string& symbol,
                                            const ModuleBuilder& build, ObjectStore* store,
                                            const std::string& store_key) {
  const auto start = std::chrono::steady_clock::now();
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.init_error.empty()) return CompileError(symbol, s.init_error);
  if (auto it = s.linked.find(symbol); it != s.linked.end()) return JitCompiled{it->second, 0, false};

  if (store != nullptr) {
    if (std::optional<std::string> bytes = store->Load(store_key);
        bytes && DefinesSymbol(*bytes, symbol)) {
      // A stored object that fails to link is ignored; we compile afresh below.
      if (absl::StatusOr<uint64_t> address = Link(s, *bytes, symbol); address.ok()) {
        s.linked[symbol] = *address;
        return JitCompiled{*address, MillisecondsSince(start), true};
      }
    }
  }

  absl::StatusOr<std::string> object = BuildObject(s, build, symbol);
  if (!object.ok()) return object.status();
  absl::StatusOr<uint64_t> address = Link(s, *object, symbol);
  if (!address.ok()) return address.status();
  if (store != nullptr) store->Save(store_key, *object);
  s.linked[symbol] = *address;
  return JitCompiled{*address, MillisecondsSince(start), false};
}

absl::StatusOr<std::string> OrcJit::CompileToObject(const std::string& symbol,
                                                    const ModuleBuilder& build) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.init_error.empty()) return CompileError(symbol, s.init_error);
  return BuildObject(s, build, symbol);
}

absl::StatusOr<std::string> OrcJit::OptimizedIr(const ModuleBuilder& build) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.init_error.empty()) return CompileError("<ir>", s.init_error);
  llvm::LLVMContext context;
  absl::StatusOr<std::unique_ptr<llvm::Module>> module = build(context);
  if (!module.ok()) return module.status();
  const std::string name = (*module)->getModuleIdentifier();
  if (absl::Status status = Optimize(s, **module, name); !status.ok()) return status;
  std::string text;
  llvm::raw_string_ostream os(text);
  (*module)->print(os, nullptr);
  return text;
}

std::string CpuFeaturesString() {
  static const std::string features =
      absl::StrCat(llvm::sys::getHostCPUName().str(), ":",
                   SortedFeatures(llvm::sys::getHostCPUFeatures()));
  return features;
}

std::string LlvmVersionString() { return "LLVM " LLVM_VERSION_STRING; }

}  // namespace dualcast::jit::cpu
