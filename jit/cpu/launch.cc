// Splitting a CPU kernel launch over the thread pool (see launch.h).
#include "jit/cpu/launch.h"

#include <algorithm>
#include <chrono>

#include "jit/cpu/thread_pool.h"
#include "jit/stats.h"

namespace dualcast::jit {

void LaunchCpu(KernelEntry entry, const KernelArgs& args, int rank) {
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
      ParallelFor(outer, grain, [&](int64_t begin, int64_t end) {
        KernelArgs chunk = args;
        chunk.begin = begin;
        chunk.end = end;
        entry(&chunk);
      });
    }
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  RecordLaunch(elements, ms);
}

namespace {

// Adds the partials of one reduced output (in chunk order) and stores them
// into its destination, element by element in row-major order.
template <class T>
void Finish(const std::vector<double>& scratch, int64_t kept, int64_t partials, bool accumulate,
            const ReducedDestination& dest) {
  T* out = static_cast<T*>(dest.data);
  const size_t rank = dest.shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t e = 0; e < kept; ++e) {
    double sum = scratch[static_cast<size_t>(e)];
    for (int64_t c = 1; c < partials; ++c) sum += scratch[static_cast<size_t>(c * kept + e)];
    const T value = static_cast<T>(sum);
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

}  // namespace

void LaunchCpu(KernelEntry entry, const KernelArgs& args, const KernelSpec& spec,
               std::span<const ReducedDestination> destinations) {
  const int rank = spec.rank;
  const size_t n_out = spec.function->num_outputs();
  bool reduced = false;
  for (size_t m = 0; m < n_out; ++m) reduced |= spec.reduces(m) != 0;
  if (!reduced || rank == 0) {  // accumulating outputs only: the kernel adds in place
    LaunchCpu(entry, args, rank);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  int64_t inner = 1;
  for (int d = 1; d < rank; ++d) inner *= args.sizes[d];
  const int64_t outer = args.sizes[0];
  const int64_t elements = outer * inner;
  if (elements > 0) {
    const int64_t rows = std::max({int64_t{1}, (kMinElementsPerChunk + inner - 1) / inner,
                                   (outer + kMaxPartials - 1) / kMaxPartials});
    const int64_t chunks = (outer + rows - 1) / rows;

    // Scratch per reduced output: strides over its kept dims, per-chunk copies
    // when it is reduced along dim 0.
    std::vector<std::vector<double>> scratch(n_out);
    std::vector<int64_t> kept(n_out, 1), partials(n_out, 1);
    std::vector<int64_t> out_strides(args.out_strides, args.out_strides + n_out * rank);
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
      partials[m] = (bits & 1u) ? chunks : 1;
      scratch[m].assign(static_cast<size_t>(kept[m] * partials[m]), 0.0);
    }
    ParallelFor(chunks, 1, [&](int64_t c_begin, int64_t c_end) {
      for (int64_t c = c_begin; c < c_end; ++c) {
        std::vector<void*> outputs(args.outputs, args.outputs + n_out);
        for (size_t m = 0; m < n_out; ++m) {
          if (spec.reduces(m) == 0 || !spec.writes(m)) continue;
          outputs[m] = scratch[m].data() + (partials[m] > 1 ? c * kept[m] : 0);
        }
        KernelArgs chunk = args;
        chunk.outputs = outputs.data();
        chunk.out_strides = out_strides.data();
        chunk.begin = c * rows;
        chunk.end = std::min(outer, chunk.begin + rows);
        entry(&chunk);
      }
    });
    for (size_t m = 0; m < n_out; ++m) {
      if (spec.reduces(m) == 0 || !spec.writes(m)) continue;
      if (spec.dtype == Type::kF32) {
        Finish<float>(scratch[m], kept[m], partials[m], spec.accumulates(m), destinations[m]);
      } else {
        Finish<double>(scratch[m], kept[m], partials[m], spec.accumulates(m), destinations[m]);
      }
    }
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  RecordLaunch(elements, ms);
}

}  // namespace dualcast::jit
