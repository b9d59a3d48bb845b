// The LLVM module of one broadcast kernel: the KernelArgs entry point and its loop nest over the merged dims, W lanes at a time.
//
// From a KernelSpec this emits
//   extern "C" void <symbol>(const KernelArgs* args)      (see kernel_abi.h)
// which unpacks `args` in its entry block (only the sizes and strides the
// spec does not compile in: a broadcast dim's stride is never loaded, a
// contiguous inner stride is the constant 1) and runs the loop nest. Every
// access through an input or output pointer carries scoped-alias metadata
// saying the contract below, so LICM may hoist the loads of inputs broadcast
// along the inner loop past the stores.
//
// Aliasing contract (the runtime guarantees it): outputs never overlap inputs
// or each other; inputs may overlap each other (they are only read).
//
// The nest: dim 0 (outermost) runs over [args->begin, args->end), dims
// 1..R-1 over [0, sizes[d]); offsets are sum_d i_d * stride_d per operand.
// The innermost dim steps by W = host vector bits / dtype bits (AVX-512: 16
// f32 or 8 f64; AVX2: 8 / 4; else 4 / 2), times 2 or 4 for a kernel that is
// one long dependency chain (interleave.h), or TraceOptions::vector_width
// when given: lane k holds element i + k, lanes
// at or past the end of the row are masked off. Each step loads every input
// (a broadcast one as a scalar load and splat, a contiguous one as a plain
// vector load, which in the row's last step reads a stack copy of the
// remaining elements filled by one masked load, a strided one as a masked
// gather),
// runs the Function once on W-lane vectors (LlvmPrinter through
// CodegenWalk), and stores every output the spec's `write` mask selects the
// same way. The tail runs the very same code as the full vectors, so a
// value never depends on where in the array it sits. Rank 0 is lane 0 alone
// of one step, done when begin <= 0 < end. A size-0 dim runs nothing.
//
// Reduced outputs (spec.output_reduce; see launch.h for the scratch the
// launcher passes): summed along the inner dim, a V-lane double accumulator
// per row (V: the host's lanes, or the hinted width; an interleaved step adds
// its host vectors in order, so lane k sums elements k, k + V, ... as at one
// vector per step; inactive lanes add 0), its lanes added in order at the row's end
// into the scratch element; kept along the inner dim, the row's values
// widened to double and added into the scratch row — in blocks of 4 rows
// summed in registers first when the dim outside the inner one is summed
// (and no output is summed along the inner dim). An accumulating output
// loads its destination and adds the value in the element type.
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
#include "jit/codegen/kernel_spec.h"

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
