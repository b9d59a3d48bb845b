// The process-wide JIT counters and DUALCAST_LOG output (see stats.h).
#include "jit/stats.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jit/env.h"

namespace dualcast::jit {

namespace {

// Times are kept in nanoseconds so that every counter is an integer atomic.
// Counters are sharded per thread (a thread keeps to one shard, on its own
// cache lines): launches from several threads would otherwise bounce the
// same line between cores on every call. Readers sum the shards.
struct alignas(64) Counters {
  std::atomic<int64_t> compiles{0}, compile_failures{0}, disk_hits{0};
  std::atomic<int64_t> compile_ns{0}, launches{0}, exec_ns{0}, elements{0};
  std::atomic<int64_t> hits[kNumCaches]{}, misses[kNumCaches]{}, evictions[kNumCaches]{};
};
constexpr int kShards = 16;

Counters* Shards() {
  static Counters* shards = new Counters[kShards];  // never destroyed: usable during exit
  return shards;
}

Counters& Mine() {
  static std::atomic<int> next{0};
  thread_local Counters* mine = &Shards()[next.fetch_add(1, std::memory_order_relaxed) % kShards];
  return *mine;
}

int64_t ToNs(double ms) { return static_cast<int64_t>(ms * 1e6); }

// Prints the summary at exit when logging is on. A static object rather than
// atexit so it exists exactly when this file is linked in.
struct ExitSummary {
  ~ExitSummary() {
    if (LogEnabled()) std::fprintf(stderr, "%s\n", FormatStats().c_str());
  }
} exit_summary;

void Bump(std::atomic<int64_t>& a, int64_t n = 1) { a.fetch_add(n, std::memory_order_relaxed); }

// Every counter of a shard, in one order (for sums and resets).
template <class Fn>
void ForEachCounter(Counters& c, Fn fn) {
  for (std::atomic<int64_t>* a : {&c.compiles, &c.compile_failures, &c.disk_hits, &c.compile_ns,
                                  &c.launches, &c.exec_ns, &c.elements}) {
    fn(*a);
  }
  for (int k = 0; k < kNumCaches; ++k) {
    fn(c.hits[k]);
    fn(c.misses[k]);
    fn(c.evictions[k]);
  }
}

}  // namespace

const char* CacheName(Cache cache) {
  switch (cache) {
    case Cache::kKernel: return "kernel";
    case Cache::kCompose: return "compose";
    case Cache::kJvp: return "jvp";
    case Cache::kBackward: return "backward";
  }
  return "?";
}

Stats GetStats() {
  Stats s;
  int64_t compile_ns = 0, exec_ns = 0;
  for (int i = 0; i < kShards; ++i) {
    const Counters& c = Shards()[i];
    auto get = [](const std::atomic<int64_t>& a) { return a.load(std::memory_order_relaxed); };
    s.compiles += get(c.compiles);
    s.compile_failures += get(c.compile_failures);
    s.disk_hits += get(c.disk_hits);
    compile_ns += get(c.compile_ns);
    s.launches += get(c.launches);
    exec_ns += get(c.exec_ns);
    s.elements += get(c.elements);
    for (int k = 0; k < kNumCaches; ++k) {
      s.caches[k].hits += get(c.hits[k]);
      s.caches[k].misses += get(c.misses[k]);
      s.caches[k].evictions += get(c.evictions[k]);
    }
  }
  s.compile_ms = compile_ns / 1e6;
  s.exec_ms = exec_ns / 1e6;
  s.cache_hits = s.caches[static_cast<int>(Cache::kKernel)].hits;
  return s;
}

void ResetStats() {
  for (int i = 0; i < kShards; ++i) {
    ForEachCounter(Shards()[i], [](std::atomic<int64_t>& a) { a.store(0, std::memory_order_relaxed); });
  }
}

std::string FormatStats() {
  Stats s = GetStats();
  std::string line = absl::StrFormat(
      "dualcast: %d compiles (%.1f ms), %d failed, %d cache hits, %d disk hits, %d launches, "
      "%.3g elements in %.1f ms; caches hit/miss/evict:",
      s.compiles, s.compile_ms, s.compile_failures, s.cache_hits, s.disk_hits, s.launches,
      static_cast<double>(s.elements), s.exec_ms);
  for (int k = 0; k < kNumCaches; ++k) {
    absl::StrAppendFormat(&line, "%s %s %d/%d/%d", k == 0 ? "" : ",",
                          CacheName(static_cast<Cache>(k)), s.caches[k].hits, s.caches[k].misses,
                          s.caches[k].evictions);
  }
  return line;
}

void RecordCompile(double ms, bool from_disk) {
  Counters& c = Mine();
  Bump(from_disk ? c.disk_hits : c.compiles);
  Bump(c.compile_ns, ToNs(ms));
}

void RecordCompileFailure() { Bump(Mine().compile_failures); }

void RecordCacheHit() { RecordCacheLookup(Cache::kKernel, true); }

void RecordCacheLookup(Cache cache, bool hit) {
  Counters& c = Mine();
  Bump((hit ? c.hits : c.misses)[static_cast<int>(cache)]);
}

void RecordCacheEvictions(Cache cache, int64_t n) {
  Bump(Mine().evictions[static_cast<int>(cache)], n);
}

void RecordLaunch(int64_t elements, double ms) {
  Counters& c = Mine();
  Bump(c.launches);
  Bump(c.elements, elements);
  Bump(c.exec_ns, ToNs(ms));
}

size_t EnvCapacity(const char* name, size_t fallback) {
  const std::string fallback_text = absl::StrCat("the default of ", fallback);
  const uint64_t n = EnvInteger(
      name, {.fallback = fallback,
             .accepted = "a whole number of entries (0 for no cap)",
             .fallback_text = fallback_text});
  // 0 is "no cap", as for DUALCAST_CACHE_MAX: the LRU caches only compare
  // their size with the capacity, so the largest size_t never evicts.
  if (n == 0 || n > SIZE_MAX) return SIZE_MAX;
  return static_cast<size_t>(n);
}

bool LogEnabled() {
  // Anything but an on/off word is not guessed at (DUALCAST_LOG=off used to log).
  static const bool enabled = EnvSwitch("DUALCAST_LOG", false);
  return enabled;
}

void LogLine(std::string_view line) {
  if (!LogEnabled()) return;
  std::fprintf(stderr, "dualcast: %.*s\n", static_cast<int>(line.size()), line.data());
}

}  // namespace dualcast::jit
