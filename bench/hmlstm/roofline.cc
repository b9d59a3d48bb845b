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
  // Per-chunk partial sums, kept so the reads cannot be optimised away.
  std::vector<double> partial(static_cast<size_t>(n / (1 << 16) + 1), 0.0);
  double t_read = time([&](int64_t lo, int64_t hi) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t k = lo;
    for (; k + 4 <= hi; k += 4) {
      s0 += pb[k];
      s1 += pb[k + 1];
      s2 += pb[k + 2];
      s3 += pb[k + 3];
    }
    for (; k < hi; ++k) s0 += pb[k];
    partial[static_cast<size_t>(lo >> 16)] = s0 + s1 + s2 + s3;
  });
  volatile double sink = partial[0];
  (void)sink;
  bw.copy_gbps = 2.0 * 8 * n / t_copy / 1e9;
  bw.read_gbps = 1.0 * 8 * n / t_read / 1e9;
  bw.triad_gbps = 3.0 * 8 * n / t_triad / 1e9;
  return bw;
}

std::string FormatBandwidth(const Bandwidth& bw) {
  return absl::StrFormat(
      "memory bandwidth (STREAM-like, %d threads): copy %.1f GB/s, triad %.1f GB/s, read %.1f GB/s",
      bw.threads, bw.copy_gbps, bw.triad_gbps, bw.read_gbps);
}

}  // namespace dualcast::bench
