// Splitting a CPU kernel launch over the thread pool (see launch.h).
#include "jit/cpu/launch.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>

#include "jit/cpu/thread_pool.h"
#include "jit/stats.h"

namespace dualcast::jit {

Tiles TransposeTiles(const KernelArgs& args, int rank, const LaunchOperands& operands) {
  // Fewer rows than a tile still pay: 16 rows of 250 000 read through a
  // stride of 16 floats walked the whole array once per row (32 ms; tiled 4).
  if (rank != 2 || args.sizes[1] <= kTileCols || args.sizes[0] < 2) return {};
  const int64_t line = 64 / operands.element_bytes;  // elements per cache line
  bool strided = false;
  for (int i = 0; i < operands.inputs; ++i) {
    strided |= args.inputs[i] != nullptr && std::abs(args.in_strides[i * 2 + 1]) >= line;
  }
  for (int m = 0; m < operands.outputs; ++m) {
    strided |= args.outputs[m] != nullptr && std::abs(args.out_strides[m * 2 + 1]) >= line;
  }
  return strided ? Tiles{kTileRows, kTileCols} : Tiles{};
}

namespace {

// Rows [args.begin, args.end) of a rank-2 launch, tile by tile: per tile the
// inner size is the tile's width and every pointer starts at its first column.
void RunTiled(KernelEntry entry, const KernelArgs& args, const Tiles& tiles,
              const LaunchOperands& operands) {
  const int64_t cols = args.sizes[1];
  const int64_t sizes[3] = {args.sizes[0], 0, 1};  // the ABI's trailing 1 kept
  std::vector<const void*> in(static_cast<size_t>(operands.inputs));
  std::vector<void*> out(static_cast<size_t>(operands.outputs));
  auto moved = [&](const void* p, int64_t stride, int64_t c0) -> const char* {
    return p == nullptr ? nullptr : static_cast<const char*>(p) + c0 * stride * operands.element_bytes;
  };
  for (int64_t r0 = args.begin; r0 < args.end; r0 += tiles.rows) {
    for (int64_t c0 = 0; c0 < cols; c0 += tiles.cols) {
      int64_t tile_sizes[3] = {sizes[0], std::min(tiles.cols, cols - c0), sizes[2]};
      for (int i = 0; i < operands.inputs; ++i) in[i] = moved(args.inputs[i], args.in_strides[i * 2 + 1], c0);
      for (int m = 0; m < operands.outputs; ++m) {
        out[m] = const_cast<char*>(moved(args.outputs[m], args.out_strides[m * 2 + 1], c0));
      }
      KernelArgs tile = args;
      tile.sizes = tile_sizes;
      tile.inputs = in.data();
      tile.outputs = out.data();
      tile.begin = r0;
      tile.end = std::min(r0 + tiles.rows, args.end);
      entry(&tile);
    }
  }
}

}  // namespace

void LaunchCpu(KernelEntry entry, const KernelArgs& args, int rank, const LaunchOperands& operands) {
  const auto start = std::chrono::steady_clock::now();
  int64_t elements = 1;
  if (rank == 0) {
    KernelArgs chunk = args;
    chunk.begin = 0;
    chunk.end = 1;
    entry(&chunk);
  } else {
    int64_t inner = 1;  // elements per index of the outer dim
    for (int d = 1; d < rank; ++d) inner *= args.sizes[d];
    const int64_t outer = args.sizes[0];
    elements = outer * inner;
    if (elements > 0) {
      const int64_t grain = (kMinElementsPerChunk + inner - 1) / inner;
      const Tiles tiles = TransposeTiles(args, rank, operands);
      ParallelFor(outer, grain, [&](int64_t begin, int64_t end) {
        KernelArgs chunk = args;
        chunk.begin = begin;
        chunk.end = end;
        if (tiles.cols == 0) {
          entry(&chunk);
        } else {
          RunTiled(entry, chunk, tiles, operands);
        }
      });
    }
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  RecordLaunch(elements, ms);
}

namespace {

// Elements a worker finishes at a time, and the tile in which partials are
// added partial by partial (partials sit a power of two apart and would share
// cache sets if walked element by element).
constexpr int64_t kFinishGrain = 16 * 1024;
constexpr int64_t kFinishTile = 512;

// Elements [begin, end) (row-major over the kept dims) of one reduced output:
// its partials added in chunk order, divided by its divisor, rounded once,
// stored or added into the destination.
template <class T>
void Finish(const double* scratch, int64_t kept, int64_t partials, bool accumulate, ReduceOp op,
            const ReducedDestination& dest, int64_t begin, int64_t end) {
  const size_t rank = dest.shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (size_t d = rank, rest = static_cast<size_t>(begin); d-- > 0;) {
    index[d] = static_cast<int64_t>(rest % static_cast<size_t>(dest.shape[d]));
    rest /= static_cast<size_t>(dest.shape[d]);
    offset += index[d] * dest.strides[d];
  }
  T* out = static_cast<T*>(dest.data);
  double sum[kFinishTile];
  for (int64_t t0 = begin; t0 < end; t0 += kFinishTile) {
    const int64_t n = std::min(kFinishTile, end - t0);
    std::copy(scratch + t0, scratch + t0 + n, sum);
    for (int64_t c = 1; c < partials; ++c) {
      const double* part = scratch + c * kept + t0;
      if (op == ReduceOp::kSum) {
        for (int64_t e = 0; e < n; ++e) sum[e] += part[e];
      } else {
        for (int64_t e = 0; e < n; ++e) sum[e] = ReduceCombine(op, sum[e], part[e]);
      }
    }
    if (dest.divisor != 1) {
      for (int64_t e = 0; e < n; ++e) sum[e] /= dest.divisor;
    }
    for (int64_t e = 0; e < n; ++e) {
      const T value = static_cast<T>(sum[e]);
      out[offset] = accumulate ? static_cast<T>(out[offset] + value) : value;
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < dest.shape[d]) {
          offset += dest.strides[d];
          break;
        }
        offset -= dest.strides[d] * (dest.shape[d] - 1);
        index[d] = 0;
      }
    }
  }
}

}  // namespace

void LaunchCpu(KernelEntry entry, const KernelArgs& args, const KernelSpec& spec,
               std::span<const ReducedDestination> destinations) {
  const int rank = spec.rank;
  const size_t n_out = spec.function->num_outputs();
  bool reduced = false;
  for (size_t m = 0; m < n_out; ++m) reduced |= spec.reduces(m) != 0;
  if (!reduced || rank == 0) {  // accumulating outputs only: the kernel adds in place
    LaunchCpu(entry, args, rank, LaunchOperands::For(spec));
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  int64_t inner = 1;
  for (int d = 1; d < rank; ++d) inner *= args.sizes[d];
  const int64_t outer = args.sizes[0];
  const int64_t elements = outer * inner;
  if (elements > 0) {
    // Scratch layout per reduced output: contiguous over its kept dims.
    std::vector<int64_t> kept(n_out, 0);
    std::vector<int64_t> out_strides(args.out_strides, args.out_strides + n_out * rank);
    int64_t widest_split = 0;  // the most kept elements of an output summed along dim 0
    for (size_t m = 0; m < n_out; ++m) {
      const uint32_t bits = spec.reduces(m);
      if (bits == 0 || !spec.writes(m)) continue;
      int64_t step = 1;
      for (int d = rank; d-- > 0;) {
        const bool summed = (bits >> d) & 1u;
        out_strides[m * rank + d] = summed ? 0 : step;
        if (!summed) step *= args.sizes[d];
      }
      kept[m] = step;
      if (bits & 1u) widest_split = std::max(widest_split, step);
    }
    // Chunks fixed by the sizes: about kMinElementsPerChunk elements, at most
    // kMaxPartials, and (when partials are per chunk) no more partials than
    // keep their memory under half the elements' count in doubles.
    int64_t max_chunks = kMaxPartials;
    if (widest_split > 0) max_chunks = std::clamp<int64_t>(elements / (2 * widest_split), 1, max_chunks);
    const int64_t rows = std::max({int64_t{1}, (kMinElementsPerChunk + inner - 1) / inner,
                                   (outer + max_chunks - 1) / max_chunks});
    const int64_t chunks = (outer + rows - 1) / rows;

    std::vector<std::unique_ptr<double[]>> scratch(n_out);
    std::vector<int64_t> partials(n_out, 1);
    for (size_t m = 0; m < n_out; ++m) {
      if (kept[m] == 0) continue;
      partials[m] = (spec.reduces(m) & 1u) ? chunks : 1;
      // Zeroed by the chunks below, in parallel.
      scratch[m] = std::make_unique_for_overwrite<double[]>(static_cast<size_t>(kept[m] * partials[m]));
    }
    ParallelFor(chunks, 1, [&](int64_t c_begin, int64_t c_end) {
      for (int64_t c = c_begin; c < c_end; ++c) {
        KernelArgs chunk = args;
        chunk.begin = c * rows;
        chunk.end = std::min(outer, chunk.begin + rows);
        std::vector<void*> outputs(args.outputs, args.outputs + n_out);
        for (size_t m = 0; m < n_out; ++m) {
          if (kept[m] == 0) continue;
          // This chunk's partial, or (kept along dim 0) its rows of the one buffer.
          const bool per_chunk = spec.reduces(m) & 1u;
          const int64_t stride0 = out_strides[m * rank];
          double* mine = per_chunk ? scratch[m].get() + c * kept[m]
                                   : scratch[m].get() + chunk.begin * stride0;
          std::fill_n(mine, per_chunk ? kept[m] : (chunk.end - chunk.begin) * stride0,
                      ReduceIdentity(spec.reduce_op(m)));
          outputs[m] = per_chunk ? mine : scratch[m].get();
        }
        chunk.outputs = outputs.data();
        chunk.out_strides = out_strides.data();
        entry(&chunk);
      }
    });
    for (size_t m = 0; m < n_out; ++m) {
      if (kept[m] == 0) continue;
      ParallelFor(kept[m], kFinishGrain, [&](int64_t begin, int64_t end) {
        if (spec.dtype == Type::kF32) {
          Finish<float>(scratch[m].get(), kept[m], partials[m], spec.accumulates(m),
                        spec.reduce_op(m), destinations[m], begin, end);
        } else {
          Finish<double>(scratch[m].get(), kept[m], partials[m], spec.accumulates(m),
                         spec.reduce_op(m), destinations[m], begin, end);
        }
      });
    }
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  RecordLaunch(elements, ms);
}

}  // namespace dualcast::jit
