// The LLVM module of one broadcast kernel: the KernelArgs entry point and its loop nest over the merged dims.
//
// From a KernelSpec this emits
//   extern "C" void <symbol>(const KernelArgs* args)      (see kernel_abi.h)
// which unpacks `args` (only the sizes and strides the spec does not compile
// in: a broadcast dim's stride is never loaded, a contiguous inner stride is
// the constant 1) and calls the internal, always-inlined
//   <symbol>.body(ptr noalias readonly in..., ptr noalias out..., i64 ...)
// whose noalias parameters become scoped-alias metadata after inlining. That
// is what lets the loop vectoriser widen the inner loop without runtime
// overlap checks, and LICM hoist the loads of inputs broadcast along it.
//
// Aliasing contract (the runtime guarantees it): outputs never overlap inputs
// or each other; inputs may overlap each other (they are only read).
//
// The nest: dim 0 (outermost) runs over [args->begin, args->end), dims
// 1..R-1 over [0, sizes[d]); offsets are sum_d i_d * stride_d per operand.
// Rank 0 is the single element at offset 0, done when begin <= 0 < end. A
// size-0 dim runs nothing. The body of the innermost loop is the Function,
// printed by LlvmPrinter through CodegenWalk, then one store per output the
// spec's `write` mask selects.
//
// Example:
//   llvm::LLVMContext ctx;
//   auto module = BuildKernelModule(spec, "dc_cell_1a2b", ctx);   // StatusOr
//   // module->getFunction("dc_cell_1a2b") is the entry point.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jit/kernel_spec.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace dualcast::jit::cpu {



// The unoptimised module; target triple and data layout are left to the JIT.
absl::StatusOr<std::unique_ptr<llvm::Module>> BuildKernelModule(const KernelSpec& spec,
                                                                const std::string& symbol,
                                                                llvm::LLVMContext& ctx);

}  // namespace dualcast::jit::cpu
