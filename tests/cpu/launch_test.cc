// Tests of the thread pool's ParallelFor and of LaunchCpu with a hand-written kernel.
#include <doctest/doctest.h>

#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdint>
#include <thread>
#include <vector>

#include "jit/codegen/broadcast_layout.h"
#include "jit/codegen/kernel_abi.h"
#include "jit/cpu/launch.h"
#include "jit/cpu/thread_pool.h"
#include "jit/stats.h"

namespace dualcast::jit {
namespace {

using Shapes = std::vector<std::vector<int64_t>>;
using V = std::vector<int64_t>;

void CheckCoversOnce(ThreadPool& pool, int64_t n, int64_t grain) {
  CAPTURE(n);
  CAPTURE(grain);
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::atomic<int> chunks{0};
  pool.ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
    ++chunks;
    CHECK(begin < end);
    for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i) REQUIRE(hits[i].load() == 1);
  if (n == 0) CHECK(chunks == 0);
}

TEST_CASE("ParallelFor covers every index exactly once") {
  ThreadPool pool(4);
  for (int64_t n : {0, 1, 2, 3, 7, 16, 17, 100, 1000, 4099}) {
    for (int64_t grain : {0, 1, 2, 5, 64, 5000}) CheckCoversOnce(pool, n, grain);
  }
  ThreadPool single(1);
  CheckCoversOnce(single, 1000, 1);
  CheckCoversOnce(ThreadPool::Global(), 12345, 3);
}

// Runs `check` in a child process (so that affinity and environment changes
// stay there) and returns its exit code: 0 when every step held, else the
// number of the first step that did not.
template <class F>
int InChild(F check) {
  fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(check());
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST_CASE("the default thread count follows the CPU affinity; DUALCAST_NUM_THREADS overrides it") {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  REQUIRE(::sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  REQUIRE(!cpus.empty());
  // Pinned to the first k allowed cores, as `taskset` or an MPI binding would.
  auto pin = [&](size_t k) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (size_t i = 0; i < k; ++i) CPU_SET(cpus[i], &set);
    return ::sched_setaffinity(0, sizeof(set), &set) == 0;
  };
  CHECK(InChild([&] {
          ::unsetenv("DUALCAST_NUM_THREADS");
          if (!pin(1)) return 10;
          if (ThreadPool::DefaultNumThreads() != 1) return 1;
          ::setenv("DUALCAST_NUM_THREADS", "3", 1);
          if (ThreadPool::DefaultNumThreads() != 3) return 2;  // overrides even one core
          ::setenv("DUALCAST_NUM_THREADS", "zero", 1);
          if (ThreadPool::DefaultNumThreads() != 1) return 3;  // malformed: the affinity again
          return 0;
        }) == 0);
  if (cpus.size() >= 2) {
    CHECK(InChild([&] {
            ::unsetenv("DUALCAST_NUM_THREADS");
            if (!pin(2)) return 10;
            return ThreadPool::DefaultNumThreads() == 2 ? 0 : 1;
          }) == 0);
  }
}

TEST_CASE("ParallelFor splits big ranges and runs small ones inline") {
  ThreadPool pool(4);
  std::atomic<int> chunks{0};
  pool.ParallelFor(1000, 1, [&](int64_t, int64_t) { ++chunks; });
  CHECK(chunks > 1);
  CHECK(chunks <= 16);  // about four per thread

  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> calls{0};
  pool.ParallelFor(10, 10, [&](int64_t begin, int64_t end) {
    ++calls;
    CHECK(begin == 0);
    CHECK(end == 10);
    CHECK(std::this_thread::get_id() == caller);
  });
  CHECK(calls == 1);
}

TEST_CASE("concurrent and nested ParallelFor calls all complete") {
  ThreadPool pool(3);
  std::vector<std::thread> users;
  std::atomic<int64_t> total{0};
  for (int u = 0; u < 4; ++u) {
    users.emplace_back([&] {
      for (int rep = 0; rep < 20; ++rep) {
        pool.ParallelFor(40, 1, [&](int64_t b, int64_t e) {
          pool.ParallelFor(e - b, 1, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
        });
      }
    });
  }
  for (auto& t : users) t.join();
  CHECK(total == 4 * 20 * 40);
}

// A hand-written kernel of the ABI: out = a + b over a rank-R layout.
template <int R>
void AddKernel(const KernelArgs* args) {
  const double* a = static_cast<const double*>(args->inputs[0]);
  const double* b = static_cast<const double*>(args->inputs[1]);
  double* out = static_cast<double*>(args->outputs[0]);
  if constexpr (R == 0) {
    if (args->begin == 0 && args->end > 0) out[0] = a[0] + b[0];
  } else {
    int64_t idx[R] = {};
    idx[0] = args->begin;
    if (args->begin >= args->end) return;
    for (int d = 1; d < R; ++d) {
      if (args->sizes[d] == 0) return;
    }
    while (idx[0] < args->end) {
      int64_t oa = 0, ob = 0, oo = 0;
      for (int d = 0; d < R; ++d) {
        oa += idx[d] * args->in_strides[d];
        ob += idx[d] * args->in_strides[R + d];
        oo += idx[d] * args->out_strides[d];
      }
      out[oo] = a[oa] + b[ob];
      for (int d = R - 1; d >= 0; --d) {
        if (++idx[d] < args->sizes[d] || d == 0) break;
        idx[d] = 0;
      }
    }
  }
}

KernelEntry AddFor(int rank) {
  switch (rank) {
    case 0: return &AddKernel<0>;
    case 1: return &AddKernel<1>;
    case 2: return &AddKernel<2>;
    case 3: return &AddKernel<3>;
    default: return nullptr;
  }
}

// Broadcast-adds `a` (shape sa) and `b` (shape sb, read through strides
// `stb`) with LaunchCpu and checks every element against direct NumPy
// indexing of the full result.
void CheckAdd(const V& sa, const V& sb, const V& stb, int expected_rank, bool tiled = false) {
  CAPTURE(expected_rank);
  Shapes shapes = {sa, sb};
  Shapes strides = {ContiguousStrides(sa), stb};
  BroadcastLayout l = MergeBroadcast(shapes, strides, "add").value();
  REQUIRE(l.rank() == expected_rank);

  auto extent = [](const V& shape, const V& st) {
    int64_t n = 1;
    for (size_t d = 0; d < shape.size(); ++d) n += (shape[d] - 1) * st[d];
    return n;
  };
  std::vector<double> a(extent(sa, strides[0])), b(extent(sb, stb));
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.5 * static_cast<double>(i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = 1000.0 * static_cast<double>(i) + 0.25;
  std::vector<double> out(static_cast<size_t>(l.num_elements), -1.0);

  std::vector<int64_t> in_strides;
  for (const auto& s : l.in_strides) in_strides.insert(in_strides.end(), s.begin(), s.end());
  std::vector<int64_t> out_strides = ContiguousStrides(l.out_shape);
  const void* inputs[] = {a.data(), b.data()};
  void* outputs[] = {out.data()};
  KernelArgs args{l.out_shape.data(), inputs, in_strides.data(), outputs, out_strides.data(), 0,
                  0};
  const LaunchOperands operands{2, 1, 8};
  CHECK((TransposeTiles(args, l.rank(), operands).cols != 0) == tiled);
  const Stats before = GetStats();
  LaunchCpu(AddFor(l.rank()), args, l.rank(), operands);
  const Stats after = GetStats();
  CHECK(after.launches >= before.launches + 1);

  // Reference: walk the full (unmerged) index space.
  const V& full = l.full_out_shape;
  V idx(full.size(), 0);
  for (int64_t flat = 0; flat < l.num_elements; ++flat) {
    auto offset = [&](const V& shape, const V& st) {
      int64_t off = 0;
      const size_t pad = full.size() - shape.size();
      for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] != 1) off += idx[d + pad] * st[d];
      }
      return off;
    };
    const double want = a[offset(sa, strides[0])] + b[offset(sb, stb)];
    if (out[flat] != want) {
      FAIL_CHECK("element ", flat, ": got ", out[flat], ", want ", want);
      return;
    }
    for (size_t d = full.size(); d-- > 0;) {
      if (++idx[d] < full[d]) break;
      idx[d] = 0;
    }
  }
}

TEST_CASE("LaunchCpu: small layouts run inline and are right") {
  CheckAdd({}, {}, {}, 0);
  CheckAdd({7}, {7}, {1}, 1);
  CheckAdd({5, 1}, {5, 5}, {5, 1}, 2);          // column broadcast
  CheckAdd({4, 1, 6}, {1, 3, 1}, {3, 1, 1}, 3);  // both broadcast
  CheckAdd({3, 4}, {3, 4}, {1, 3}, 2);          // transposed b
  CheckAdd({0, 3}, {1, 3}, {3, 1}, 1);          // size 0: no call
}

TEST_CASE("LaunchCpu: large layouts run threaded and are right") {
  CheckAdd({300000}, {1}, {1}, 1);
  CheckAdd({512, 1}, {512, 300}, {300, 1}, 2);
  CheckAdd({64, 1, 128}, {1, 40, 128}, {5120, 128, 1}, 3);
  CheckAdd({200, 300}, {200, 300}, {1, 200}, 2, /*tiled=*/true);  // transposed b, threaded
  CheckAdd({3, 50000}, {3, 1}, {1, 1}, 2);        // short outer dim, long inner dim
}

// Tiles cut the inner size and move every pointer: sizes that are no
// multiple of the tile (a last tile 45 wide, a last row group of 13),
// operands broadcast along either dim, and no tiling where nothing is strided.
TEST_CASE("LaunchCpu: a layout with a transposed operand runs in tiles and is right") {
  CheckAdd({77, 301}, {77, 301}, {1, 77}, 2, /*tiled=*/true);
  CheckAdd({77, 1}, {77, 301}, {1, 77}, 2, /*tiled=*/true);     // a broadcast along the inner dim
  CheckAdd({1, 301}, {77, 301}, {1, 77}, 2, /*tiled=*/true);    // ... and along the outer one
  CheckAdd({77, 301}, {77, 301}, {301, 1}, 1);                   // contiguous: merged, one row
  CheckAdd({77, 301}, {77, 301}, {700, 2}, 2);                   // a stepped slice: under a line apart
  CheckAdd({77, 301}, {77, 301}, {602, 8}, 2, /*tiled=*/true);   // a line apart: tiled
  CheckAdd({20, 301}, {20, 301}, {1, 20}, 2, /*tiled=*/true);    // fewer rows than a tile
  CheckAdd({77, 64}, {77, 64}, {1, 77}, 2);                      // one tile wide: nothing to cut
}

TEST_CASE("LaunchCpu from several user threads at once") {
  std::vector<std::thread> users;
  for (int u = 0; u < 3; ++u) {
    users.emplace_back([] {
      for (int rep = 0; rep < 3; ++rep) CheckAdd({256, 1}, {256, 256}, {256, 1}, 2);
    });
  }
  for (auto& t : users) t.join();
}

TEST_CASE("LaunchCpu counts launches and elements") {
  ResetStats();
  CheckAdd({10, 1}, {10, 10}, {10, 1}, 2);
  CheckAdd({}, {}, {}, 0);
  Stats s = GetStats();
  CHECK(s.launches == 2);
  CHECK(s.elements == 101);
}

}  // namespace
}  // namespace dualcast::jit
