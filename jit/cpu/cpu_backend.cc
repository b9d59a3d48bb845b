// CompileCpuKernel: names a spec's kernel, then builds, optimises and links it through OrcJit.
#include "jit/cpu/cpu_backend.h"

#include <cstdint>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jit/codegen/disk_cache.h"
#include "jit/cpu/llvm_kernel.h"
#include "jit/cpu/orc_jit.h"
#include "jit/ir/hash.h"
#include "llvm/IR/Module.h"

namespace dualcast::jit {

std::string CpuKernelSymbol(const KernelSpec& spec) {
  // Format tag "dc_cpu" + 8 (1: tanh/sigmoid formulas; 2: inline exp/expm1; 3: i32 lane masks;
  // 4: symmetric vector hypot; 5: exp's NaN lanes run through, k from the rounding's bits;
  // 6: plain loads, the tail through a stack copy; 7: reduced lanes selected in the tail only;
  // 8: one full/tail diamond for stores and reduced lanes; 9: ops.def gained rint, fdim, isinf,
  // signbit, renumbering the ops after them; 10: pointer selects stay above uniform branches;
  // 11: inputs broadcast along the inner dim loaded once per row; 12: ops.def gained fast_tanh
  // and fast_sigmoid, renumbering the ops after them; 13: long dependency chains run 2 or 4
  // host vectors per step, interleave.h; 14: also when an output is reduced, the row sums
  // fed one host vector at a time; 15: exp/expm1's common range inline, the full range an
  // outlined cold call; 16: a mixed if tests only its sides that cost more than the test;
  // 17: the full range is a call to a function the JIT links once per process; 18: splat
  // constants read from memory without AVX-512, splat_loads.h; 19: branch tests look at every
  // lane, not only the active ones):
  // bump whenever the generated code changes, so no process loads an object compiled by older
  // code from disk.
  return spec.Symbol(0x64635f637088ull);
}

std::string CpuFeaturesString() { return cpu::CpuFeaturesString(); }
std::string LlvmVersionString() { return cpu::LlvmVersionString(); }

std::string CpuObjectKey(const KernelSpec& spec) {
  // Options such as -disable-... change the object; diagnostics like -time-passes
  // do not, but telling them apart is not worth it. v2: explicit vector code
  // (objects stored by v1's loop-vectorised kernels are not reused).
  const uint64_t features = Fnv1a64(CpuFeaturesString() + cpu::LlvmExtraArgs());
  const std::string cpu_name = CpuFeaturesString().substr(0, CpuFeaturesString().find(':'));
  return absl::StrFormat("dualcast-cpu-obj-v2/%s/%s-%016x/%s", LlvmVersionString(), cpu_name,
                         features, CpuKernelSymbol(spec));
}

absl::StatusOr<CompiledCpuKernel> CompileCpuKernel(const KernelSpec& spec, ObjectStore* store) {
  if (absl::Status status = spec.Validate("cpu"); !status.ok()) return status;
  const std::string symbol = CpuKernelSymbol(spec);
  absl::StatusOr<cpu::JitCompiled> compiled = cpu::OrcJit::Get().Compile(
      symbol,
      [&](llvm::LLVMContext& ctx) { return cpu::BuildKernelModule(spec, symbol, ctx); },
      store, store != nullptr ? CpuObjectKey(spec) : std::string());
  if (!compiled.ok()) return compiled.status();
  CompiledCpuKernel kernel;
  kernel.entry = reinterpret_cast<KernelEntry>(compiled->address);
  kernel.symbol = symbol;
  kernel.compile_ms = compiled->compile_ms;
  kernel.from_object_store = compiled->from_object_store;
  kernel.already_linked = compiled->already_linked;
  kernel.code = std::move(compiled->code);
  return kernel;
}

absl::StatusOr<std::string> CpuKernelObject(const KernelSpec& spec) {
  if (absl::Status status = spec.Validate("cpu"); !status.ok()) return status;
  const std::string symbol = CpuKernelSymbol(spec);
  return cpu::OrcJit::Get().CompileToObject(
      symbol, [&](llvm::LLVMContext& ctx) { return cpu::BuildKernelModule(spec, symbol, ctx); });
}

std::string CpuKernelIr(const KernelSpec& spec) {
  const std::string symbol = CpuKernelSymbol(spec);
  absl::StatusOr<std::string> text = cpu::OrcJit::Get().OptimizedIr(
      [&](llvm::LLVMContext& ctx) { return cpu::BuildKernelModule(spec, symbol, ctx); });
  if (!text.ok()) return absl::StrCat("; error: ", text.status().message(), "\n");
  return *std::move(text);
}

}  // namespace dualcast::jit
