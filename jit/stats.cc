// The process-wide JIT counters and DUALCAST_LOG output (see stats.h).
#include "jit/stats.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_format.h"

namespace dualcast::jit {

namespace {

// Times are kept in nanoseconds so that every counter is an integer atomic.
struct Counters {
  std::atomic<int64_t> compiles{0}, compile_failures{0}, cache_hits{0}, disk_hits{0};
  std::atomic<int64_t> compile_ns{0}, launches{0}, exec_ns{0}, elements{0};
};

Counters& Global() {
  static Counters* counters = new Counters;  // never destroyed: usable during exit
  return *counters;
}

int64_t ToNs(double ms) { return static_cast<int64_t>(ms * 1e6); }

// Prints the summary at exit when logging is on. A static object rather than
// atexit so it exists exactly when this file is linked in.
struct ExitSummary {
  ~ExitSummary() {
    if (LogEnabled()) std::fprintf(stderr, "%s\n", FormatStats().c_str());
  }
} exit_summary;

}  // namespace

Stats GetStats() {
  const Counters& c = Global();
  Stats s;
  s.compiles = c.compiles.load(std::memory_order_relaxed);
  s.compile_failures = c.compile_failures.load(std::memory_order_relaxed);
  s.cache_hits = c.cache_hits.load(std::memory_order_relaxed);
  s.disk_hits = c.disk_hits.load(std::memory_order_relaxed);
  s.compile_ms = c.compile_ns.load(std::memory_order_relaxed) / 1e6;
  s.launches = c.launches.load(std::memory_order_relaxed);
  s.exec_ms = c.exec_ns.load(std::memory_order_relaxed) / 1e6;
  s.elements = c.elements.load(std::memory_order_relaxed);
  return s;
}

void ResetStats() {
  Counters& c = Global();
  for (std::atomic<int64_t>* a : {&c.compiles, &c.compile_failures, &c.cache_hits, &c.disk_hits,
                                  &c.compile_ns, &c.launches, &c.exec_ns, &c.elements}) {
    a->store(0, std::memory_order_relaxed);
  }
}

std::string FormatStats() {
  Stats s = GetStats();
  return absl::StrFormat(
      "dualcast: %d compiles (%.1f ms), %d failed, %d cache hits, %d disk hits, %d launches, "
      "%.3g elements in %.1f ms",
      s.compiles, s.compile_ms, s.compile_failures, s.cache_hits, s.disk_hits, s.launches,
      static_cast<double>(s.elements), s.exec_ms);
}

void RecordCompile(double ms, bool from_disk) {
  Counters& c = Global();
  (from_disk ? c.disk_hits : c.compiles).fetch_add(1, std::memory_order_relaxed);
  c.compile_ns.fetch_add(ToNs(ms), std::memory_order_relaxed);
}

void RecordCompileFailure() {
  Global().compile_failures.fetch_add(1, std::memory_order_relaxed);
}

void RecordCacheHit() { Global().cache_hits.fetch_add(1, std::memory_order_relaxed); }

void RecordLaunch(int64_t elements, double ms) {
  Counters& c = Global();
  c.launches.fetch_add(1, std::memory_order_relaxed);
  c.elements.fetch_add(elements, std::memory_order_relaxed);
  c.exec_ns.fetch_add(ToNs(ms), std::memory_order_relaxed);
}

bool LogEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("DUALCAST_LOG");
    return v != nullptr && v[0] != '\0' && std::string(v) != "0";
  }();
  return enabled;
}

void LogLine(std::string_view line) {
  if (!LogEnabled()) return;
  std::fprintf(stderr, "dualcast: %.*s\n", static_cast<int>(line.size()), line.data());
}

}  // namespace dualcast::jit
