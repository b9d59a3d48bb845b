// Process-wide JIT counters (compiles, cache hits, launches, time) and the DUALCAST_LOG switch.
//
// Benchmarks and tests want to know whether a run compiled, hit the memory or
// disk cache, and where time went, without a profiler. The counters are
// relaxed atomics bumped by the kernel cache and the launchers; reading them
// is a snapshot. With DUALCAST_LOG=1 every compile is printed to stderr and
// a one-line summary is printed at exit.
//
// Example:
//   ResetStats();
//   ... run broadcasts ...
//   Stats s = GetStats();      // s.compiles == 1, s.cache_hits == 99
//   std::puts(FormatStats().c_str());
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dualcast::jit {

struct Stats {
  int64_t compiles = 0;          // kernels built by a backend compiler
  int64_t compile_failures = 0;  // compile callbacks that returned an error
  int64_t cache_hits = 0;        // requests served by the in-memory cache (incl. waits on a compile)
  int64_t disk_hits = 0;         // kernels loaded from the on-disk object store
  double compile_ms = 0;         // wall time producing kernels (compiling or loading)
  int64_t launches = 0;          // kernel launches
  double exec_ms = 0;            // wall time inside launches
  int64_t elements = 0;          // output elements processed by launches
};

Stats GetStats();
void ResetStats();
// e.g. "dualcast: 3 compiles (41.2 ms), 97 cache hits, 0 disk hits, 100 launches, 1.2e+07 elements in 35.1 ms"
std::string FormatStats();

void RecordCompile(double ms, bool from_disk);
void RecordCompileFailure();
void RecordCacheHit();
void RecordLaunch(int64_t elements, double ms);

// True when the environment has DUALCAST_LOG set to something other than "0"
// or empty (read once).
bool LogEnabled();
// Writes "dualcast: <line>\n" to stderr when LogEnabled().
void LogLine(std::string_view line);

}  // namespace dualcast::jit
