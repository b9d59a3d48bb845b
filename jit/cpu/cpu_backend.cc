// CompileCpuKernel: names a spec's kernel, then builds, optimises and links it through OrcJit.
#include "jit/cpu/cpu_backend.h"

#include <cctype>
#include <cstdint>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jit/cpu/llvm_kernel.h"
#include "jit/cpu/orc_jit.h"
#include "jit/hash.h"
#include "llvm/IR/Module.h"

namespace dualcast::jit {
namespace {

// FNV-1a over explicit little pieces: stable across runs and machines
// (absl::Hash is seeded per process and must not reach a persistent key).
struct StableHash {
  uint64_t state = 0xcbf29ce484222325ull;
  void Bytes(std::string_view bytes) {
    for (unsigned char c : bytes) {
      state ^= c;
      state *= 0x100000001b3ull;
    }
  }
  void Word(uint64_t value) {
    char bytes[8];
    for (int k = 0; k < 8; ++k) bytes[k] = static_cast<char>(value >> (8 * k));
    Bytes(std::string_view(bytes, 8));
  }
};

std::string SanitizedName(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (out.size() >= 40) break;
    out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  }
  return out.empty() ? "kernel" : out;
}

}  // namespace

std::string CpuKernelSymbol(const KernelSpec& spec) {
  StableHash h;
  h.Word(0x64635f637075ull);  // format tag: bump when the generated code changes meaning
  h.Word(spec.function == nullptr      ? 0
         : spec.function_hash != 0     ? spec.function_hash
                                       : StructuralHash(*spec.function));
  h.Word(static_cast<uint64_t>(spec.dtype));
  h.Word(static_cast<uint64_t>(spec.rank));
  h.Word(spec.inner_contiguous ? 1 : 0);
  h.Word(spec.input_broadcast.size());
  for (uint32_t bits : spec.input_broadcast) h.Word(bits);
  h.Word(spec.write.size());
  for (bool w : spec.write) h.Word(w ? 1 : 0);
  const std::string name = spec.function == nullptr ? "" : spec.function->name;
  return absl::StrFormat("dc_%s_%s_%016x", SanitizedName(name), TypeName(spec.dtype), h.state);
}

std::string CpuFeaturesString() { return cpu::CpuFeaturesString(); }
std::string LlvmVersionString() { return cpu::LlvmVersionString(); }

std::string CpuObjectKey(const KernelSpec& spec) {
  StableHash features;
  features.Bytes(CpuFeaturesString());
  // Options such as -disable-... change the object; diagnostics like -time-passes
  // do not, but telling them apart is not worth it.
  features.Bytes(cpu::LlvmExtraArgs());
  const std::string cpu_name = CpuFeaturesString().substr(0, CpuFeaturesString().find(':'));
  return absl::StrFormat("dualcast-cpu-obj-v1/%s/%s-%016x/%s", LlvmVersionString(), cpu_name,
                         features.state, CpuKernelSymbol(spec));
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
