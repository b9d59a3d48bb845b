// The CUDA C source of one broadcast kernel: a grid-stride loop over the merged index space around the printed Function.
//
// From a KernelSpec this writes two entry points sharing one templated body:
//   extern "C" __global__ void <symbol>_i32(params...)   index arithmetic in 32 bits
//   extern "C" __global__ void <symbol>_i64(params...)   for index spaces >= 2^31
// The launcher picks one per launch (32-bit division and modulo are several
// times cheaper than 64-bit on the GPU). An elementwise spec over unit-stride
// rows also gets a loop of 16-byte accesses in _i32 (V = 4 floats or 2
// doubles per thread and iteration), which a `vec` parameter turns on where
// the launch's pointers and strides allow it (MarshalCudaLaunch decides). Each thread takes linear indices
// idx = blockIdx.x * blockDim.x + threadIdx.x, idx + gridDim.x * blockDim.x,
// ... below n (one element per iteration, so any grid size is correct),
// splits idx into merged-dim indices (inner dim fastest: consecutive threads
// touch consecutive addresses, so loads and stores coalesce), and forms one
// offset per operand from its strides. What the spec compiles in never
// becomes a parameter: an input's stride along a dim where it is broadcast
// is 0 (the index is not even formed), and with inner_contiguous the
// innermost stride of every operand read or written along it is 1.
//
// Parameters (the plan in CudaKernelSource::params, launch order): input
// pointers, written output pointers, n (elements in all), sizes of dims
// 1..R-1 (dim 0 needs none: it is what remains after the others), then the
// strides that are not compiled in. Every integer parameter is a 64-bit
// `long long`, every pointer a device address. Pointers are `__restrict__`:
// the runtime never lets an output overlap an input or another output.
//
// Reduced and accumulating outputs (KernelSpec::output_reduce / accumulate):
// an accumulating output stores dest = dest + value. A REDUCED output (summed
// over the merged dims of its reduce bits) is never summed with atomics, so
// its bits are the same run to run: the main entry points write partial sums
// in double to a scratch buffer, one per (kept element k, split s of the
// reduced range), each summed in a fixed order (by a warp: lanes stride the
// split, then a fixed shuffle tree; or, when the inner dim is kept, by one
// lane of a warp covering 32 consecutive k); a second entry point <symbol>_fin, launched after it
// with the SAME parameters and kCudaFinishBlock threads per block, adds each
// element's partials in split order (serially when there are few splits,
// else one block per element: shuffles + shared-memory warp totals) and
// stores dest = T(sum) or dest = dest + T(sum). The splits and the scratch
// layout come from the sizes alone (PlanCudaReduction), never from the grid.
// Reduced specs take every size (dim 0 too), a scratch pointer and per
// reduced output its split count and scratch offset; a launch must cover the
// whole of dim 0 (begin 0, end sizes[0]), and a main block must be a whole
// number of warps. Coalescing: with the inner dim reduced a warp's lanes
// stride the reduced range; with it kept, they take 32 consecutive kept
// elements (see WriteReducePass). Not tuned on a GPU yet.
//
// Example:
//   absl::StatusOr<CudaKernelSource> src = BuildCudaKernelSource(spec);
//   // src->text holds "for (I idx = ...; idx < count; idx += step)" and the body.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jit/codegen/kernel_abi.h"
#include "jit/codegen/kernel_spec.h"

namespace dualcast::jit::cuda {

// One kernel parameter and where its value comes from in KernelArgs.
struct CudaParam {
  enum class Kind {
    kInputPtr, kOutputPtr, kCount, kSize, kInStride, kOutStride,
    kScratch,      // double* partial sums (reduced specs)
    kSplits,       // reduced output `operand`: splits of its reduced range
    kScratchBase,  // reduced output `operand`: its first double in scratch
    kDivisor,      // reduced output `operand`: its double total is divided by this
                   // before the one rounding to the element type (a mean's count)
    kVectorized,   // 1: the _i32 entry takes 16 bytes of each operand per iteration
                   // (elementwise specs over unit-stride rows; see MarshalCudaLaunch)
  };
  Kind kind;
  int operand = 0;  // input or output index (pointers and strides)
  int dim = 0;      // merged dim (sizes and strides)
};

struct CudaKernelSource {
  std::string text;                // the whole translation unit
  std::string symbol;              // entry points are symbol + "_i32" / "_i64"
  std::vector<CudaParam> params;   // in parameter order
  // Per output: its reduce bits when written and reduced, else 0.
  std::vector<uint32_t> output_reduce;
  bool has_finish = false;         // <symbol>_fin exists (some output is reduced)
};

// Threads per block of <symbol>_fin (its summation order depends on it).
inline constexpr int kCudaFinishBlock = 256;
// Up to this many splits, <symbol>_fin sums an element's partials in one thread.
inline constexpr int kCudaFinishSerialSplits = 16;

// The scratch layout of one launch: per output, splits and first double
// (0 for outputs that are not reduced); partial (s, k) of output m lives at
// base[m] + s * kept_m + k.
struct CudaReductionPlan {
  std::vector<int64_t> splits, base;
  std::vector<double> divisors;  // per output (none: 1), as the launcher was given them
  int64_t scratch_doubles = 0;
  int64_t max_kept = 0;  // the largest output element count (the finish's work)
};
// Whether an output with these reduce bits keeps the innermost merged dim
// (then a warp's lanes take 32 consecutive kept elements, else 32 strides of
// the reduced range).
bool CudaReductionLanesOverKept(uint32_t reduce_bits, int rank);
// Splits of a reduced range of `red` elements: at most 8192, of at least 1024
// elements (lanes over the range: 32 per lane) or 64 (lanes over kept
// elements: each lane sums a chunk alone).
int64_t CudaReductionSplits(int64_t red, bool lanes_over_kept);
CudaReductionPlan PlanCudaReduction(const std::vector<uint32_t>& output_reduce,
                                    const int64_t* sizes, int rank);

// One launch's parameter values, in plan order (what cuLaunchKernel's
// kernelParams point at: every value is 8 bytes, a device address, a
// `long long` or a double's bits), over the whole index space of `args`: dims 1..R-1 whole,
// dim 0 restricted to [begin, end) by shifting every pointer to row `begin`.
// The values are filled in even when n == 0 (the kernel then does nothing).
struct CudaLaunchValues {
  int64_t n = 0;                 // elements to compute; 0 launches nothing
  bool narrow = true;            // n < 2^31: the _i32 entry point runs
  // Elements per thread and iteration of the _i32 entry: 16 / element bytes
  // when the spec has a kVectorized parameter, the launch is narrow, rows hold
  // whole groups and every operand varying along them starts each row 16-byte
  // aligned; else 1. The grid is sized for n / vector_width work items.
  int vector_width = 1;
  std::vector<uint64_t> values;  // one per CudaParam
};
// Reduced specs pass their plan and the scratch buffer's device address.
CudaLaunchValues MarshalCudaLaunch(const std::vector<CudaParam>& params, int element_bytes,
                                   const KernelArgs& args, int rank,
                                   const CudaReductionPlan* plan = nullptr, uint64_t scratch = 0);

// Blocks for `n` elements at `block` threads each: min(ceil(n / block),
// 4 * min_grid), min_grid being the occupancy calculator's grid that fills
// the device; the grid-stride loop covers what a smaller grid leaves.
int64_t CudaGridSize(int64_t n, int block, int min_grid);

// The kernel's base symbol: "dc_<name>_<dtype>_<16 hex digits>", a stable
// fingerprint of everything in the spec that changes the generated source.
std::string CudaKernelSymbol(const KernelSpec& spec);

absl::StatusOr<CudaKernelSource> BuildCudaKernelSource(const KernelSpec& spec);

}  // namespace dualcast::jit::cuda
