// The CPU backend's entry point: KernelSpec in, callable kernel (and its LLVM IR text) out.
//
// CompileCpuKernel generates LLVM vector code for the spec (llvm_kernel.h:
// W elements per step, libmvec math, branches as lane-mask tests), optimises
// it for the host CPU, and links it into the
// process-wide ORC JIT (orc_jit.h; orc_jit.cc lists the pass pipeline and its
// measured compile times). The returned entry point follows
// kernel_abi.h and is safe to call from any thread, concurrently.
//
// Lifetime: `entry` is callable while any copy of the result's `code` lives
// (the kernel cache keeps it as the cached kernel's owner); when the last
// copy goes, the kernel is unlinked from the JIT and its memory unmapped
// (orc_jit.h says why kernels cannot stay linked for the process's life).
//
// Caching: a kernel is named by its spec (CpuKernelSymbol), so compiling the
// same spec twice in one process returns the already linked kernel (at no
// cost). With an ObjectStore, the compiled object is saved under
// CpuObjectKey(spec), which also names the LLVM version and the host CPU and
// its features, so a store shared between machines never hands out code for
// another CPU; a later process links the stored object without running LLVM's
// optimiser or code generator.
//
// Aliasing contract: the runtime never passes an output buffer that overlaps
// an input or another output (the kernel is compiled with noalias on them).
// Output slots follow the spec's `write` mask, not the pointers: a slot the
// mask writes must hold a valid pointer; a slot it skips is never read.
//
// Example:
//   absl::StatusOr<CompiledCpuKernel> k = CompileCpuKernel(spec, /*store=*/nullptr);
//   if (!k.ok()) ThrowStatus(k.status());
//   KernelArgs args{sizes, inputs, in_strides, outputs, out_strides, 0, sizes[0]};
//   k->entry(&args);  // while k (k->code) is alive
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "jit/codegen/kernel_abi.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/codegen/object_store.h"

namespace dualcast::jit {

struct CompiledCpuKernel {
  KernelEntry entry = nullptr;
  std::string symbol;              // the exported name, e.g. "dc_cell_f32_0123456789abcdef"
  double compile_ms = 0;           // wall time of this call; 0 when it was already linked
  bool from_object_store = false;  // linked from the store's bytes, not compiled
  bool already_linked = false;     // found linked (asked for again while still held)
  std::shared_ptr<void> code;      // keeps `entry` linked (see Lifetime above)
};

// Compiles (or finds) the kernel of `spec`. `store` may be null. Errors:
// kInternal for an invalid spec (names the kernel and the field), kCompile
// with LLVM's message and the kernel name when LLVM rejects the code.
absl::StatusOr<CompiledCpuKernel> CompileCpuKernel(const KernelSpec& spec, ObjectStore* store);

// The optimised LLVM IR of the kernel, as text (the REPL's `:code`). On an
// error, a one-line "; error: ..." comment instead.
std::string CpuKernelIr(const KernelSpec& spec);
inline std::string LlvmIrText(const KernelSpec& spec) { return CpuKernelIr(spec); }

// The ELF object CompileCpuKernel would link (and save), without linking it;
// what an ObjectStore holds under CpuObjectKey(spec).
absl::StatusOr<std::string> CpuKernelObject(const KernelSpec& spec);

// The kernel's exported symbol: the function's name (sanitised) and a stable
// 64-bit fingerprint of everything in `spec` that changes the generated code.
std::string CpuKernelSymbol(const KernelSpec& spec);

// The ObjectStore key: format version, LLVM version, host CPU and features,
// DUALCAST_LLVM_ARGS when set, symbol.
std::string CpuObjectKey(const KernelSpec& spec);

// For cache keys elsewhere: host CPU name and enabled features; "LLVM x.y.z".
std::string CpuFeaturesString();
std::string LlvmVersionString();

}  // namespace dualcast::jit
