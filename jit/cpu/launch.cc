// Splitting a CPU kernel launch over the thread pool (see launch.h).
#include "jit/cpu/launch.h"

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

}  // namespace dualcast::jit
