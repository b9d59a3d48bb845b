// Threads: the public-surface differential tester's random programs run on 4 threads at once, each with its own Tape.
//
// The fixed-kernel tests beside this one check chosen sharing patterns; here
// the programs are random (lazy broadcasts, fused reductions, views, slices,
// concat, matmul, float32 and float64, tapes opened at random points), so the
// threads meet in every cache the runtime has (kernels, composed IR, jvp and
// backward IR, launch plans, array blocks) in orders nobody chose. Each
// thread's gradients must match float64 finite differences or raise the
// documented Error, as in the single-threaded run (tests/differential/
// surface_test.cc). CI also runs this under ThreadSanitizer. More programs:
// DUALCAST_SURFACE_THREAD_PROGRAMS=<per thread>.
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "differential/surface.h"

namespace {

namespace surface = dualcast::surface;

TEST_CASE("4 threads run random public-surface programs at once: every gradient matches or is the documented Error") {
  constexpr int kThreads = 4;
  const char* env = std::getenv("DUALCAST_SURFACE_THREAD_PROGRAMS");
  const int programs = env != nullptr && *env != '\0' ? std::atoi(env) : 60;
  std::vector<surface::Stats> stats(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      // Seeds interleaved across threads, apart from the single-threaded run's 1, 2, ...
      for (int k = 0; k < programs && stats[t].reports.empty(); ++k) {
        surface::Check(surface::RandomProgram(1'000'000 + static_cast<uint64_t>(k * kThreads + t)), stats[t]);
      }
    });
  }
  for (auto& th : threads) th.join();
  int64_t cases = 0, elements = 0;
  for (int t = 0; t < kThreads; ++t) {
    cases += stats[t].cases;
    elements += stats[t].elements;
    for (const std::string& r : stats[t].reports) FAIL_CHECK("thread ", t, ": ", r);
    CHECK(stats[t].failures == 0);
    CHECK(stats[t].programs == programs);
  }
  std::cout << "public surface on " << kThreads << " threads: " << cases << " gradient cases, " << elements
            << " elements vs finite differences" << std::endl;
  CHECK(elements > 0);
}

}  // namespace
