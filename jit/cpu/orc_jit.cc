// OrcJit: host TargetMachine, the kernel pass pipeline (chosen by kernel size), object emission, one LLJIT.
//
// Compile time is what a user waits for on the first call of a new kernel.
// The printer writes vector code itself (llvm_printer.h), so the optimiser
// only cleans up and hoists (kKernelPipeline: no loop vectoriser, no
// unswitching), and codegen skips loop strength reduction, post-RA
// scheduling and, for kernels above kLargeKernelInstructions, the machine
// scheduler. Measured (thread CPU time, minimum of 5 rebuilds, 2-core Zen 4
// VM with AVX-512, shared and noisy) on the HM-LSTM jvp kernel (rank 2, four
// partials stored, value masked):
//   loop-vectoriser design (scalar body, O3 subset with loop-vectorize,
//   unswitching, libmvec TLI mappings):          rows ~13-14 ms, columns ~11 ms
//   explicit vector code, this pipeline:         rows ~6.5-7.5 ms, columns ~6.5 ms
// and on straight-line kernels (dualcast-cpu-kernel-bench --only line):
//   1k / 5k / 10k ops, machine scheduler on:     16 / 58 / 149 ms (10k/5k 2.6x)
//   off above 2,500 instructions:                11 / 38 / 78 ms  (10k/5k 2.0x)
// (the loop-vectoriser design: 10k ops 3.8 s; LoopVectorizePass about half).
// Earlier measurements that still hold: -disable-lsr saves about a third of
// codegen at no cost in kernel speed (x86 addresses base + index*4 for
// free); -post-RA-scheduler=false ~1.5 ms, kernels unchanged (an
// out-of-order core reorders on its own); CodeGenOptLevel Default or Less
// instead of Aggressive: 0-1 ms. InstCombine is 70% of the optimiser's time
// (4.5-5 ms of the 26 ms rows jvp kernel on a Zen 1 AVX2 VM); without it, or
// with instsimplify in its place, the rows kernels ran 6-9% slower (A/B,
// three interleaved runs against the same-math hand loop). About half of
// that was its folding of each operand's row offset into a row address,
// which the emitter now does itself (llvm_kernel.cc, RowBases); without
// InstCombine the partials kernel is still 3.5-5% slower in the rows layout,
// for 4.5 ms (17%) less compile time, even when the emitter writes every
// canonical form InstCombine produces and the optimised IR prints the same:
// the objects then differ through the order of use lists, which instruction
// selection and register allocation follow (docs/cpu-codegen.md). It stays:
// a kernel compiles once and runs many times. The kernel is one function
// with hand-made alias scopes, not an entry calling a noalias body: the
// always-inline pass was another 1.2 ms (17% of the optimiser) on the jvp
// kernel. Reproduce with DUALCAST_LLVM_ARGS=-time-passes (both pass managers
// report) and dualcast-cpu-kernel-bench.
#include "jit/cpu/orc_jit.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "jit/cpu/inline_exp.h"
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
#include "llvm/IR/PassTimingInfo.h"
#include "llvm/IR/Verifier.h"
#include "llvm/InitializePasses.h"
#include "llvm/PassRegistry.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

namespace dualcast::jit::cpu {

// One linked object: its entry's address, the tracker that unlinks it, and
// its owners (JitCompiled::code): the last owner to go unlinks it.
struct LinkedObject {
  uint64_t address = 0;
  llvm::orc::ResourceTrackerSP tracker;
  std::weak_ptr<void> owner;
};

struct OrcJit::State {
  std::mutex mutex;  // serialises every use of jit, target_machine and linked
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> target_machine;
  std::string cpu;
  std::string features;
  absl::flat_hash_map<std::string, LinkedObject> linked;  // by symbol
  absl::flat_hash_set<std::string> shared;                // kSharedFunctionPrefix symbols linked
  uint64_t unlinks = 0;
  std::string init_error;                                 // non-empty: the JIT is unusable
};

namespace {

absl::Status CompileError(const std::string& symbol, const std::string& what) {
  return MakeStatus(ErrorKind::kCompile,
                    absl::StrCat("cpu kernel '", symbol, "': ", what,
                                 " (generated code was rejected; please report it as a bug "
                                 "in dualcast with the kernel's IR)"));
}

// The JIT could not start (no native target, bad DUALCAST_LLVM_ARGS): no kernel compiles.
absl::Status JitUnusable(const std::string& symbol, const std::string& why) {
  return MakeStatus(ErrorKind::kCompile,
                    absl::StrCat("cpu kernel '", symbol, "': the CPU JIT is unusable: ", why));
}

std::string TakeMessage(llvm::Error error) { return llvm::toString(std::move(error)); }

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// The printer already writes vector code (one lane per element, libmvec
// calls at the host's width, branches as mask tests), so the pipeline has no
// loop vectoriser, no unswitching and no TLI mappings: what is left is
// clean-up of straight-line code and hoisting what a loop does not change.
constexpr char kKernelPipeline[] =
    "function("
    // The printer's straight-line code: common subexpressions, folds, empty blocks.
    "early-cse<>,"
    "simplifycfg<keep-loops>,"
    "instcombine<max-iterations=1;no-verify-fixpoint>,"
    // Hoist what the inner loop does not change (loads and splats of inputs
    // broadcast along it, row offsets, the tests of ifs on such inputs).
    // Rotation first: in a do-while loop the body is guaranteed to run, so
    // its loads can be hoisted without proving them dereferenceable.
    "loop-mssa(loop-rotate<header-duplication>,licm<allowspeculation>),"
    "simplifycfg<keep-loops>)";

// The same without InstCombine, for kernels above kLargeKernelInstructions.
// On long chains InstCombine's time grows with the square of their length
// (a rank-0 kernel of 20,000 f64 multiplies by a literal: 1.1 s of 1.2 s,
// 60,000: 9.4 s), while on such kernels it bought nothing measurable: 100,000
// elements of 5k-20k-op chains ran equally fast without it, and a 300-deep
// dc::cond's partials kernel 20% faster (8.5 vs 10.7 ms). Below the threshold
// it stays: the HM-LSTM kernels run 3.5-4.5% faster with it
// (docs/cpu-codegen.md).
constexpr char kLargeKernelPipeline[] =
    "function("
    "early-cse<>,"
    "simplifycfg<keep-loops>,"
    "loop-mssa(loop-rotate<header-duplication>,licm<allowspeculation>),"
    "simplifycfg<keep-loops>)";

// Above this many LLVM instructions a kernel is compiled without InstCombine
// (kLargeKernelPipeline) and without the machine instruction scheduler: the
// scheduler's register-pressure tracking
// (ScheduleDAGMILive::collectVRegUses) grows with the square of a basic
// block's length and was a third of the compile time of a 10,000-op kernel,
// while on kernels of a few hundred instructions it changes nothing
// measurable (the HM-LSTM kernel's object is byte for byte the same size and
// as fast without it; an out-of-order core reorders on its own). Measured
// (thread CPU, straight-line f32 kernels): 5k ops 58 -> 37 ms, 10k ops
// 149 -> 75 ms, so 10k/5k 2.6x -> 2.0x.
constexpr size_t kLargeKernelInstructions = 2500;

size_t InstructionCount(const llvm::Module& module) {
  size_t count = 0;
  for (const llvm::Function& fn : module) count += fn.getInstructionCount();
  return count;
}

// Target, attributes, verification and the kernel pipeline, in place.
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
  // Pass timings (-time-passes in DUALCAST_LLVM_ARGS) need the instrumentation.
  llvm::PassInstrumentationCallbacks instrumentation_callbacks;
  std::optional<llvm::StandardInstrumentations> instrumentation;
  if (llvm::TimePassesIsEnabled) {
    instrumentation.emplace(module.getContext(), /*DebugLogging=*/false);
    instrumentation->registerCallbacks(instrumentation_callbacks, &mam);
  }
  llvm::PassBuilder pb(s.target_machine.get(), llvm::PipelineTuningOptions(), std::nullopt,
                       llvm::TimePassesIsEnabled ? &instrumentation_callbacks : nullptr);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  const char* pipeline =
      InstructionCount(module) <= kLargeKernelInstructions ? kKernelPipeline : kLargeKernelPipeline;
  if (llvm::Error error = pb.parsePassPipeline(mpm, pipeline)) {
    return CompileError(symbol, "kernel pass pipeline: " + TakeMessage(std::move(error)));
  }
  mpm.run(module, mam);
  return absl::OkStatus();
}

// Sets the process-wide -enable-misched for one code generation (under the
// JIT's mutex, the only user of LLVM in the process), unless
// DUALCAST_LLVM_ARGS set it. The scheduler pass reads the option only when it
// occurred, so the override counts as an occurrence; `true` is what the x86
// subtarget would choose anyway.
class MachineSchedulerSwitch {
 public:
  explicit MachineSchedulerSwitch(bool enable) {
    auto& options = llvm::cl::getRegisteredOptions();
    auto it = options.find("enable-misched");
    if (it == options.end() || LlvmExtraArgs().find("enable-misched") != std::string::npos) return;
    option_ = it->second;
    Set(enable);
  }
  ~MachineSchedulerSwitch() {
    if (option_ != nullptr) Set(true);
  }

 private:
  void Set(bool enable) {
    (void)option_->addOccurrence(0, "enable-misched", enable ? "true" : "false");
  }
  llvm::cl::Option* option_ = nullptr;
};

absl::StatusOr<std::string> EmitObject(OrcJit::State& s, llvm::Module& module,
                                       const std::string& symbol) {
  MachineSchedulerSwitch misched(InstructionCount(module) <= kLargeKernelInstructions);
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

// Calls `visit(name, flags)` for each symbol of the object file `bytes`
// (named `buffer_name` in errors); false when the bytes are no object file.
bool ForEachObjectSymbol(const std::string& bytes, const std::string& buffer_name,
                         absl::FunctionRef<void(llvm::StringRef, uint32_t)> visit) {
  auto object = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(bytes.data(), bytes.size()), buffer_name));
  if (!object) {
    llvm::consumeError(object.takeError());
    return false;
  }
  for (const llvm::object::SymbolRef& sym : (*object)->symbols()) {
    auto name = sym.getName();
    auto flags = sym.getFlags();
    if (name && flags) visit(*name, *flags);
    if (!name) llvm::consumeError(name.takeError());
    if (!flags) llvm::consumeError(flags.takeError());
  }
  return true;
}

// Stored bytes are only linked when they parse as an object defining `symbol`.
bool DefinesSymbol(const std::string& bytes, const std::string& symbol) {
  bool defines = false;
  ForEachObjectSymbol(bytes, symbol, [&](llvm::StringRef name, uint32_t flags) {
    defines |= name == symbol && !(flags & llvm::object::SymbolRef::SF_Undefined) &&
               (flags & llvm::object::SymbolRef::SF_Global);
  });
  return defines;
}

// Unlinks `object` (its code, data and symbol) and forgets it. Under s.mutex.
void Unlink(OrcJit::State& s, absl::flat_hash_map<std::string, LinkedObject>::iterator object) {
  if (llvm::Error error = object->second.tracker->remove()) llvm::consumeError(std::move(error));
  s.linked.erase(object);
  // ORC interns every symbol name and keeps the strings nobody uses any more
  // until asked to drop them: without this a process that makes kernels
  // without end still grows, by each unlinked kernel's names.
  if (++s.unlinks % 1024 == 0) {
    s.jit->getExecutionSession().getSymbolStringPool()->clearDeadEntries();
  }
}

// What JitCompiled::code points to: the owners share it, and the last one
// unlinks the object, unless a newer link of the symbol has replaced it (a
// Compile that found this one's owners gone unlinks it itself first).
class LinkedCode {
 public:
  LinkedCode(OrcJit::State& s, std::string symbol, llvm::orc::ResourceTrackerSP tracker)
      : s_(s), symbol_(std::move(symbol)), tracker_(std::move(tracker)) {}
  LinkedCode(const LinkedCode&) = delete;
  LinkedCode& operator=(const LinkedCode&) = delete;
  ~LinkedCode() {
    std::lock_guard<std::mutex> lock(s_.mutex);
    auto it = s_.linked.find(symbol_);
    if (it != s_.linked.end() && it->second.tracker == tracker_) Unlink(s_, it);
  }

 private:
  OrcJit::State& s_;
  std::string symbol_;
  llvm::orc::ResourceTrackerSP tracker_;
};

// Records `object` as linked and hands out its first owner. Under s.mutex.
std::shared_ptr<void> Adopt(OrcJit::State& s, const std::string& symbol, LinkedObject object) {
  auto code = std::make_shared<LinkedCode>(s, symbol, object.tracker);
  object.owner = code;
  s.linked[symbol] = std::move(object);
  return code;
}

// The kSharedFunctionPrefix symbols an object calls without defining them
// (none for bytes that are no object: the link reports those).
std::vector<std::string> SharedFunctionsCalled(const std::string& bytes, const std::string& symbol) {
  std::vector<std::string> names;
  ForEachObjectSymbol(bytes, symbol, [&](llvm::StringRef name, uint32_t flags) {
    if ((flags & llvm::object::SymbolRef::SF_Undefined) && name.starts_with(kSharedFunctionPrefix)) {
      names.push_back(name.str());
    }
  });
  return names;
}

// Links the shared functions `bytes` calls that no earlier object needed:
// each is built, compiled and linked once per process and never unlinked
// (inline_exp.h says why kernels share them). Under s.mutex.
absl::Status LinkSharedFunctions(OrcJit::State& s, const std::string& bytes, const std::string& symbol) {
  std::vector<std::string> missing;
  for (std::string& name : SharedFunctionsCalled(bytes, symbol)) {
    if (!s.shared.contains(name)) missing.push_back(std::move(name));
  }
  if (missing.empty()) return absl::OkStatus();
  // One module for all of them: each compile has a fixed cost of its own.
  absl::StatusOr<std::string> object = BuildObject(
      s, [&](llvm::LLVMContext& context) { return BuildSharedFunctionsModule(missing, context); },
      missing[0]);
  if (!object.ok()) return object.status();
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object->data(), object->size()),
                                                     missing[0]);
  if (llvm::Error error = s.jit->addObjectFile(std::move(buffer))) {
    return CompileError(symbol, "linking " + absl::StrJoin(missing, ", ") +
                                    " failed: " + TakeMessage(std::move(error)));
  }
  s.shared.insert(missing.begin(), missing.end());
  return absl::OkStatus();
}

// Links `bytes` under its own resource tracker, so a failed link leaves
// nothing behind and a dropped kernel can be unlinked on its own.
absl::StatusOr<LinkedObject> Link(OrcJit::State& s, const std::string& bytes,
                                  const std::string& symbol) {
  if (absl::Status status = LinkSharedFunctions(s, bytes, symbol); !status.ok()) return status;
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
  return LinkedObject{address->getValue(), std::move(tracker), {}};
}

// Process-wide LLVM options for our code generation, then DUALCAST_LLVM_ARGS
// (diagnostics such as -time-passes; later words win). Global state of the
// LLVM library, which only this backend uses in the process. Returns LLVM's
// complaint about a bad DUALCAST_LLVM_ARGS, empty on success.
std::string SetLlvmOptions() {
  std::vector<std::string> words = {
      "dualcast",
      // Loop strength reduction: a third of the compile time, and no faster
      // code on x86 (see the measurements at the top of this file).
      "-disable-lsr",
      // Post-RA list scheduling: -1.5 ms, no measurable effect on the kernels.
      "-post-RA-scheduler=false",
  };
  if (std::string word = LlvmArgThatExits(LlvmExtraArgs()); !word.empty()) {
    return "DUALCAST_LLVM_ARGS='" + LlvmExtraArgs() + "' holds '" + word +
           "', which makes LLVM print and end the process (unset or fix it; run `llc " + word +
           "` to see that output)";
  }
  for (absl::string_view word : absl::StrSplit(LlvmExtraArgs(), ' ', absl::SkipEmpty())) {
    words.emplace_back(word);
  }
  std::vector<const char*> argv;
  for (const std::string& word : words) argv.push_back(word.c_str());
  std::string problems;
  llvm::raw_string_ostream problems_os(problems);
  if (!llvm::cl::ParseCommandLineOptions(static_cast<int>(argv.size()), argv.data(), "",
                                         &problems_os)) {
    // Some options' parsers print their reason to stderr, not to `problems`.
    return "DUALCAST_LLVM_ARGS='" + LlvmExtraArgs() + "' was rejected by LLVM (unset or fix it): " +
           (problems.empty() ? std::string("LLVM printed its reason on stderr") : problems);
  }
  return "";
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
  if (std::string problem = SetLlvmOptions(); !problem.empty()) {
    s.init_error = problem;
    return;
  }
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
  if (!s.init_error.empty()) return JitUnusable(symbol, s.init_error);
  if (auto it = s.linked.find(symbol); it != s.linked.end()) {
    if (std::shared_ptr<void> code = it->second.owner.lock()) {
      return JitCompiled{it->second.address, 0, false, true, std::move(code)};
    }
    // Its last owner is on its way out, waiting for the mutex to unlink it:
    // unlink it here, so the link below does not define the symbol twice.
    Unlink(s, it);
  }

  if (store != nullptr) {
    if (std::optional<std::string> bytes = store->Load(store_key);
        bytes && DefinesSymbol(*bytes, symbol)) {
      // A stored object that fails to link is ignored; we compile afresh below.
      if (absl::StatusOr<LinkedObject> object = Link(s, *bytes, symbol); object.ok()) {
        const uint64_t address = object->address;
        std::shared_ptr<void> code = Adopt(s, symbol, *std::move(object));
        return JitCompiled{address, MillisecondsSince(start), true, false, std::move(code)};
      }
    }
  }

  // From here the missed Load may hold the key for this thread; any way out
  // but the Save (an error, an exception) gives it back.
  StoreReservation reservation(store, store_key);
  absl::StatusOr<std::string> object = BuildObject(s, build, symbol);
  if (!object.ok()) return object.status();
  absl::StatusOr<LinkedObject> linked = Link(s, *object, symbol);
  if (!linked.ok()) return linked.status();
  reservation.Save(*object);
  const uint64_t address = linked->address;
  std::shared_ptr<void> code = Adopt(s, symbol, *std::move(linked));
  return JitCompiled{address, MillisecondsSince(start), false, false, std::move(code)};
}

absl::StatusOr<std::string> OrcJit::CompileToObject(const std::string& symbol,
                                                    const ModuleBuilder& build) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.init_error.empty()) return JitUnusable(symbol, s.init_error);
  return BuildObject(s, build, symbol);
}

absl::StatusOr<std::string> OrcJit::OptimizedIr(const ModuleBuilder& build) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.init_error.empty()) return JitUnusable("<ir>", s.init_error);
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

std::string LlvmArgThatExits(std::string_view args) {
  const absl::string_view all(args.data(), args.size());  // absl's may not be std's here
  for (absl::string_view word : absl::StrSplit(all, ' ', absl::SkipEmpty())) {
    // LLVM reads the words of @file as arguments too: they could hold any of the below.
    if (absl::StartsWith(word, "@")) return std::string(word);
    absl::string_view name = word;
    if (!absl::ConsumePrefix(&name, "--")) absl::ConsumePrefix(&name, "-");
    if (name == word) continue;  // a positional word: LLVM rejects it with an error
    // -help, -help-hidden, -help-list..., -version: ParseCommandLineOptions
    // prints and calls exit(0). -print-options/-print-all-options print the
    // option values. -h is LLVM's alias of -help.
    if (absl::StartsWith(name, "help") || absl::StartsWith(name, "version") ||
        absl::StartsWith(name, "print-options") || absl::StartsWith(name, "print-all-options") ||
        name == "h" || absl::StartsWith(name, "h=")) {
      return std::string(word);
    }
    // Values LLVM checks only when it uses them, then ends the process in
    // report_fatal_error ("pass is not registered", "Invalid regular
    // expression"): -stop-after=<unknown pass>, -pass-remarks=(.
    const size_t equals = name.find('=');
    if (equals == absl::string_view::npos) continue;
    const absl::string_view option = name.substr(0, equals), value = name.substr(equals + 1);
    if (absl::StartsWith(option, "pass-remarks") && option != "pass-remarks-output" &&
        option != "pass-remarks-format" && option != "pass-remarks-hotness-threshold" &&
        option != "pass-remarks-with-hotness") {
      std::string error;
      if (!llvm::Regex(llvm::StringRef(value.data(), value.size())).isValid(error)) return std::string(word);
    }
    if (option == "start-before" || option == "start-after" || option == "stop-before" ||
        option == "stop-after") {
      const absl::string_view pass = value.substr(0, value.find(','));  // "pass,N": its Nth instance
      static const bool registered = [] {  // codegen's passes (the target's come with the target)
        llvm::initializeCodeGen(*llvm::PassRegistry::getPassRegistry());
        return true;
      }();
      (void)registered;
      if (llvm::PassRegistry::getPassRegistry()->getPassInfo(llvm::StringRef(pass.data(), pass.size())) ==
          nullptr) {
        return std::string(word);
      }
    }
  }
  return "";
}

std::string LlvmExtraArgs() {
  static const std::string args = [] {
    const char* value = std::getenv("DUALCAST_LLVM_ARGS");
    return std::string(value == nullptr ? "" : value);
  }();
  return args;
}

}  // namespace dualcast::jit::cpu
