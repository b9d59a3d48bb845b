// How many host vectors one step of a CPU kernel covers: more than one when the kernel is a long dependency chain.
//
// Why: a kernel step is one trip through the Function on W-lane vectors. When
// the Function is a long chain of dependent operations (an unrolled
// iteration, a polynomial in Horner form, a time stepper inside the kernel),
// every operation waits for the one before it; the core could start the next
// step's chain meanwhile, but its scheduler only looks a couple of hundred
// micro-ops ahead, all of them from the same chain. Measured on this
// project's AVX-512 VM, a 200-op multiply-add chain (the side of an if that
// every element takes) over 1M floats on one thread: 7.1 ms at 16 lanes, 5.1 ms at 32, 3.1 ms at 64 (the latter at the
// FP ports' throughput). With 2 or 4 vectors per step (the same IR printed
// at 2x or 4x the lanes; LLVM splits each wide operation into independent
// register-sized ones, interleaved) the chains overlap in program order.
// Kernels with parallel work of their own (HM-LSTM: three activations and
// their slopes side by side) run at throughput already, and wider steps only
// add register pressure and compile time, so they stay at one vector.
//
// The measure: `work`, the weighted count of operations a step runs (both
// sides of every if: mixed vectors run both), and `depth`, the weighted
// length of the longest dependency chain to an output. work / depth is the
// parallelism the Function offers; below 2 a step is interleaved 4-wide,
// below 4 2-wide, when the chain is long enough for the scheduler's window
// to matter (depth >= kMinInterleaveDepth) and the widened code stays within
// kInterleaveBudget weighted ops (compile time grows with it). An explicit
// TraceOptions::vector_width is left alone (KernelStepLanes). A row sum keeps
// host-wide accumulators fed one host vector after another (llvm_kernel.cc),
// so its rounding does not change with the factor.
//
// Weights are jit/ir/op_cost.h's (shared with kAuto's recompute-or-cache
// choice): rough instruction counts (work) and latencies (depth). HM-LSTM's
// cell measures work 112, depth 27; a forced second vector made it 3-8% slower.
//
// Example:
//   const int factor = InterleaveFactor(*spec.function);   // 1, 2 or 4
//   const int lanes = KernelStepLanes(spec);                // e.g. 64 f32 lanes with AVX-512
#pragma once

#include <cstdint>

#include "jit/codegen/kernel_spec.h"
#include "jit/ir/ir.h"

namespace dualcast::jit::cpu {

inline constexpr int64_t kMinInterleaveDepth = 32;
inline constexpr int64_t kInterleaveBudget = 8192;

struct ChainShape {
  int64_t work = 0;   // weighted operations per element, both sides of each if
  int64_t depth = 0;  // weighted longest chain from an input or constant to an output
};

ChainShape MeasureChains(const Function& f);

// 1, 2 or 4: host vectors per kernel step (see the header comment).
int InterleaveFactor(const Function& f);

// The host's vector register width in elements of `dtype` (AVX-512: 16 f32, 8 f64).
int HostLanes(Type dtype);

// The lanes one step of the CPU kernel for `spec` covers: TraceOptions::vector_width when
// given (at least 2), else HostLanes times InterleaveFactor.
int KernelStepLanes(const KernelSpec& spec);

}  // namespace dualcast::jit::cpu
