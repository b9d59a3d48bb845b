// STREAM-like copy and triad over large arrays, threaded with dualcast's pool (see roofline.h).
#include "bench/hmlstm/roofline.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "absl/strings/str_format.h"
#include "jit/cpu/thread_pool.h"

namespace dualcast::bench {

Bandwidth MeasureBandwidth(int mib) {
  const int64_t n = int64_t{mib} * 1024 * 1024 / 8;
  std::vector<double> a(static_cast<size_t>(n), 1.0), b(static_cast<size_t>(n), 2.0),
      c(static_cast<size_t>(n), 3.0);
  Bandwidth bw;
  bw.threads = jit::ThreadPool::Global().num_threads();
  auto time = [&](auto&& body) {
    double best = 1e300;
    for (int rep = 0; rep < 5; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      jit::ParallelFor(n, 1 << 16, body);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  double* pa = a.data();
  const double* pb = b.data();
  const double* pc = c.data();
  double t_copy = time([&](int64_t lo, int64_t hi) {
    for (int64_t k = lo; k < hi; ++k) pa[k] = pb[k];
  });
  double t_triad = time([&](int64_t lo, int64_t hi) {
    for (int64_t k = lo; k < hi; ++k) pa[k] = pb[k] + 3.0 * pc[k];
  });
  bw.copy_gbps = 2.0 * 8 * n / t_copy / 1e9;
  bw.triad_gbps = 3.0 * 8 * n / t_triad / 1e9;
  return bw;
}

std::string FormatBandwidth(const Bandwidth& bw) {
  return absl::StrFormat("memory bandwidth (STREAM-like, %d threads): copy %.1f GB/s, triad %.1f GB/s",
                         bw.threads, bw.copy_gbps, bw.triad_gbps);
}

}  // namespace dualcast::bench
