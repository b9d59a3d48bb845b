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

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dualcast::jit {

// The process-wide caches that grow per distinct kernel, each bounded with
// LRU eviction (lru_map.h, kernel_cache.h) and counted here.
enum class Cache : uint8_t {
  kKernel,    // compiled kernels (kernel_cache.h); misses are compiles, disk loads and
              // re-requests of evicted CPU kernels (still linked: neither)
  kCompose,   // fused groups' composed functions (runtime lazy.cc)
  kJvp,       // forward-mode (partials) functions (runtime lazy.cc CachedJvp)
  kBackward,  // reverse-sweep functions of broadcast tape nodes (runtime broadcast_grad.cc)
};
inline constexpr int kNumCaches = 4;
const char* CacheName(Cache cache);

struct CacheCounts {
  int64_t hits = 0, misses = 0, evictions = 0;
};

struct Stats {
  int64_t compiles = 0;          // kernels built by a backend compiler
  int64_t compile_failures = 0;  // compile callbacks that returned an error
  int64_t cache_hits = 0;        // requests served by the in-memory cache (incl. waits on a compile)
  int64_t disk_hits = 0;         // kernels loaded from the on-disk object store
  double compile_ms = 0;         // wall time producing kernels (compiling or loading)
  int64_t launches = 0;          // kernel launches
  double exec_ms = 0;            // wall time inside launches (CUDA: queuing them, not the kernels)
  int64_t elements = 0;          // output elements processed by launches
  CacheCounts caches[kNumCaches];  // indexed by Cache; caches[kKernel].hits == cache_hits
};

Stats GetStats();
void ResetStats();
// e.g. "dualcast: 3 compiles (41.2 ms), 0 failed, 97 cache hits, 0 disk hits, 100 launches,
// 1.2e+07 elements in 35.1 ms; caches hit/miss/evict: kernel 97/3/0, compose 97/3/0, ..."
std::string FormatStats();

void RecordCompile(double ms, bool from_disk);
void RecordCompileFailure();
void RecordCacheHit();  // a kernel cache hit
void RecordCacheLookup(Cache cache, bool hit);
void RecordCacheEvictions(Cache cache, int64_t n);

// A cache capacity: the environment variable `name` when it holds a whole
// non-negative decimal number, 0 meaning no cap (SIZE_MAX); `fallback` when
// unset or empty, and when malformed with a warning on stderr (env.h). Read
// on every call; callers read it once.
size_t EnvCapacity(const char* name, size_t fallback);
void RecordLaunch(int64_t elements, double ms);

// True when the environment has DUALCAST_LOG set to something other than "0"
// or empty (read once).
bool LogEnabled();
// Writes "dualcast: <line>\n" to stderr when LogEnabled().
void LogLine(std::string_view line);

}  // namespace dualcast::jit
