// LaunchCpu: runs a compiled CPU kernel over a merged broadcast layout, in parallel when it pays.
//
// The kernel ABI (kernel_abi.h) lets a kernel process any [begin, end) range
// of the outermost merged dim, so the launcher splits that dim into chunks
// of about 32K elements (fewer elements than that run inline on the calling
// thread, waking nobody) and gives each chunk its own copy of the arguments.
// Merging (broadcast_layout.h) makes the outer dim as long as memory allows,
// which is what gives the split room to balance.
//
// Safe from several user threads at once: launches share the global thread
// pool (see thread_pool.h) and each caller also runs chunks of its own launch.
// Counts launches, elements and wall time in stats.h.
//
// Example:
//   KernelArgs args{layout.out_shape.data(), inputs, in_strides, outputs, out_strides, 0, 0};
//   LaunchCpu(entry, args, layout.rank());
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "jit/codegen/kernel_abi.h"
#include "jit/codegen/kernel_spec.h"

namespace dualcast::jit {

// Output elements a chunk should have at least, and below which a launch
// runs inline.
inline constexpr int64_t kMinElementsPerChunk = 32 * 1024;

// How many operands a launch has and how wide an element is: what the
// launcher needs to walk a rank-2 layout in tiles (TransposeTiles).
struct LaunchOperands {
  int inputs = 0;
  int outputs = 0;
  int element_bytes = 4;
  static LaunchOperands For(const KernelSpec& spec) {
    return {static_cast<int>(spec.function->num_inputs()), static_cast<int>(spec.function->num_outputs()),
            spec.dtype == Type::kF32 ? 4 : 8};
  }
};

// Rank-2 layouts in which some operand steps a cache line or more along the
// inner dim (a transposed input: x.T + x, or a transposed destination) run
// in tiles of kTileRows x kTileCols: the kernel is called per tile with the
// inner size cut and the pointers moved, so that the lines such an operand
// touches across a tile's first row serve its next rows too. Walked row by
// row, every element read was a new line and, 8 KiB apart, a new page:
// x.T * 2 + 1 at 2048^2 f32 took 30x x * 2 + 1, at 4096^2 47x; in 64 x 64
// tiles 5x (one thread, AVX2 Zen 1; 32 x 128, 16 x 256, 128 x 32 and
// 256 x 256 measured 5-40% slower). The rest is the strided operand's gathers.
inline constexpr int64_t kTileRows = 64;
inline constexpr int64_t kTileCols = 64;
struct Tiles {
  int64_t rows = 0, cols = 0;  // 0: no tiling
};
Tiles TransposeTiles(const KernelArgs& args, int rank, const LaunchOperands& operands);

// Runs `entry` over every index of args.sizes[0..rank); args.begin/end are
// ignored (each chunk sets its own). Rank 0 is one call with begin 0, end 1;
// a size-0 layout makes no call. Rank-2 layouts with a transposed operand run
// tiled (TransposeTiles); each element is still computed once, by the same
// code, so values do not change. Without `operands` (benchmarks timing one
// kernel call shape) nothing is tiled.
void LaunchCpu(KernelEntry entry, const KernelArgs& args, int rank, const LaunchOperands& operands = {});

// Where the launcher stores a reduced output: the destination's first
// element and its own (unmerged) shape and strides, in elements, listed in
// the order of the loop nest's dims (the caller pads them to the iteration
// rank and permutes them when it reordered the dims; see jit::LoopOrder), so
// that their row-major walk meets the scratch's kept elements in order.
struct ReducedDestination {
  void* data = nullptr;
  std::vector<int64_t> shape, strides;
  // The sum is divided by this in double before its one rounding: a mean's
  // element count, so mean(ones(49)) is 1 (not 49 * fl(1/49)) and a float32
  // mean of large values does not overflow on the way.
  double divisor = 1;
};

// Most scratch partials one reduced output gets (bounds the scratch memory).
inline constexpr int64_t kMaxPartials = 64;

// Runs a kernel compiled for `spec`, whose outputs may be reduced
// (spec.output_reduce) or accumulating (spec.accumulate). The outermost dim
// is cut into chunks whose boundaries depend only on the sizes (about
// kMinElementsPerChunk elements, at most kMaxPartials chunks), never on the
// thread count. A reduced output's kernel slot is replaced by a zeroed
// double scratch buffer, contiguous over its kept merged dims (whose
// row-major order is the order of the destination's dims as given); when the output is
// reduced along the outermost dim, each chunk gets its own. Afterwards the
// partials are added in chunk order, divided by the destination's divisor
// (in double), rounded to the element type once and stored into
// `destinations[m]` (or added to it when accumulating). So a
// result is bitwise the same for any thread count. `destinations` has one
// entry per output; only reduced outputs' are used.
void LaunchCpu(KernelEntry entry, const KernelArgs& args, const KernelSpec& spec,
               std::span<const ReducedDestination> destinations);

}  // namespace dualcast::jit
