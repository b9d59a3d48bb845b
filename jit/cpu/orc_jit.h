// The process-wide LLVM ORC JIT: a kernel pass pipeline + codegen for the host CPU, libmvec, and the object-store hook.
//
// One LLJIT per process, created on first use and never destroyed. Each
// kernel is linked as an object of its own and stays linked while any copy
// of its JitCompiled::code lives; the last copy to go unlinks it (its code
// and data are unmapped and its symbol removed). Kernels cannot stay linked
// for the life of the process: every linked object holds two or three memory
// mappings, and a process that compiled ~30,000 kernels (a long randomised
// test, a service making kernels on the fly) met Linux's limit of 65,530
// mappings, after which every allocation failed and the process died in
// std::bad_alloc. Compilation is serialised by one mutex: IR building,
// the optimiser, codegen to an object file, linking and lookup all run on
// the calling thread under it (the machines this targets have few cores and
// kernels compile in milliseconds; concurrent callers wait, never race).
//
// Every kernel goes through an in-memory ELF object: the module is optimised
// (new pass manager, the short pipeline that orc_jit.cc lists with its
// measured compile times), compiled by a TargetMachine for the host CPU and
// its features (without loop strength reduction, and without the machine
// scheduler above a size threshold: see orc_jit.cc), and the object is linked
// with LLJIT::addObjectFile. That
// makes the ObjectStore hook trivial: on a hit the stored bytes are linked
// without touching LLVM's optimiser; on a miss the fresh object is saved.
// Symbols resolve against the process (libm) and libmvec.so.1, which is
// loaded into the JITDylib, and the shared functions kernels call without
// defining (inline_exp.h's full-range exp/expm1): before an object is linked,
// those it names that are not linked yet are built in one module, compiled
// and linked for the life of the process (the first kernel that needs them
// pays their compile, a few ms; every later one saves it).
//
// LLVM's command-line options are process-wide; the JIT sets its own once
// (-disable-lsr, -post-RA-scheduler=false) and then DUALCAST_LLVM_ARGS, a
// diagnostic knob (e.g. "-time-passes" prints where compile time goes). Its
// text is part of CpuObjectKey, so objects built under it stay apart. Words
// that make LLVM print and exit(0) the host process (-help, -version, ...,
// see LlvmArgThatExits) are refused like unknown ones: the JIT reports why
// at the first compile instead of starting.
//
// Example:
//   OrcJit& jit = OrcJit::Get();
//   absl::StatusOr<JitCompiled> k = jit.Compile("dc_axpy_1234",
//       [&](llvm::LLVMContext& ctx) { return BuildKernelModule(spec, "dc_axpy_1234", ctx); },
//       store, "cpu/" + CpuFeaturesString() + "/dc_axpy_1234");
//   auto entry = reinterpret_cast<KernelEntry>(k->address);  // callable while k->code lives
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "jit/codegen/object_store.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace dualcast::jit::cpu {

// Builds the module that defines the requested symbol, in the given context.
using ModuleBuilder =
    std::function<absl::StatusOr<std::unique_ptr<llvm::Module>>(llvm::LLVMContext&)>;

struct JitCompiled {
  uint64_t address = 0;
  double compile_ms = 0;           // wall time of this call (0 when already linked)
  bool from_object_store = false;  // linked from stored bytes, LLVM's optimiser not run
  bool already_linked = false;     // linked by an earlier call: nothing built or loaded
  // Keeps the code at `address` linked; shared by every JitCompiled of this
  // symbol, and the last copy to go unlinks it. Call `address` only while
  // holding a copy.
  std::shared_ptr<void> code;
};

class OrcJit {
 public:
  // The process-wide instance; aborts with LLVM's message only if the host
  // target cannot be initialised at all (no native target compiled in).
  static OrcJit& Get();

  // The address of `symbol`. Still linked (some JitCompiled of it alive): returned at once.
  // Otherwise, with a store: `store_key`'s bytes are linked when present and
  // define `symbol`; else `build` is compiled and its object saved under
  // `store_key`. Errors (invalid IR, codegen, link) -> kCompile with LLVM's text;
  // a failed compile Abandons `store_key` in the store (nobody waits for it).
  absl::StatusOr<JitCompiled> Compile(const std::string& symbol, const ModuleBuilder& build,
                                      ObjectStore* store, const std::string& store_key);

  // The object file Compile would link for `build` (optimised, host code),
  // without linking it: for tests of the store path and ahead-of-time warmup.
  absl::StatusOr<std::string> CompileToObject(const std::string& symbol,
                                              const ModuleBuilder& build);

  // The module after the same pipeline, as LLVM assembly text (for `:code`).
  absl::StatusOr<std::string> OptimizedIr(const ModuleBuilder& build);

  struct State;

 private:
  OrcJit();
  State* state_;  // leaked on purpose: a kernel's owner may be dropped during exit
};

// The host CPU name and its enabled features ("znver4+avx2+avx512f+..."), for cache keys.
std::string CpuFeaturesString();
// "LLVM 19.1.7": an object compiled by another LLVM is not reused.
std::string LlvmVersionString();
// $DUALCAST_LLVM_ARGS as read once at first use ("" when unset).
std::string LlvmExtraArgs();
// The first word of `args` (DUALCAST_LLVM_ARGS) that would make LLVM's option
// parser print and exit(0) the host process (-help*, -version*, -print-options,
// -print-all-options, -h, with one or two dashes, or an @response file that
// could hold them), or that would end it in report_fatal_error when used
// (-start/stop-before/after naming no registered pass, -pass-remarks* with
// an invalid regular expression); "" when none. The JIT refuses to start on such args, with
// the same error as for an option LLVM does not know.
std::string LlvmArgThatExits(std::string_view args);

}  // namespace dualcast::jit::cpu
