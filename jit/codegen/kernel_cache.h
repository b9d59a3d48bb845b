// The process-wide in-memory cache of compiled kernels, keyed by KernelSpec, with single-flight compiles.
//
// Tracing, the jvp pass and LLVM take milliseconds; a training loop launches
// the same few kernels thousands of times. The cache maps a spec (structure,
// not sizes) to the compiled kernel. When several threads want the same
// missing kernel at once, exactly one runs the compile callback and the
// others wait for its result; a failed compile is reported to everyone who
// waited and is not cached, so a later request tries again.
//
// The cache is backend-neutral: a kernel is an opaque `entry` (a KernelEntry
// for the CPU, a CudaKernel for CUDA) plus whatever object keeps it alive.
//
// Bounded: beyond `capacity()` compiled kernels (default 4096, the global
// cache reads DUALCAST_KERNEL_CACHE_MAX, 0 there meaning no cap) the least recently used one is
// dropped, so a program that builds kernels on the fly does not grow without
// bound. Lookups hand out shared_ptrs, so a kernel evicted while a launch
// still holds it stays alive until that launch lets go; then its `owner`
// goes, and with it the code (the CPU backend unlinks it from the JIT, the
// CUDA backend unloads its module). Hits, misses (compiles and disk loads)
// and evictions are counted in stats.h.
//
// Example:
//   absl::StatusOr<std::shared_ptr<const CachedKernel>> k = KernelCache::Global().GetOrCompile(
//       spec, [&]() -> absl::StatusOr<CompiledKernel> {
//         absl::StatusOr<CompiledCpuKernel> c = CompileCpuKernel(spec, &DiskCache::Default());
//         if (!c.ok()) return c.status();
//         return CompiledKernel{reinterpret_cast<void*>(c->entry), c->symbol, c->compile_ms,
//                               c->from_object_store};
//       });
//   LaunchCpu((*k)->entry_as<KernelEntry>(), args, spec.rank);
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include <condition_variable>
#include <mutex>
#include "jit/codegen/kernel_spec.h"

namespace dualcast::jit {

// What a backend's compile step hands the cache.
struct CompiledKernel {
  void* entry = nullptr;        // backend-specific entry point
  std::string symbol;           // for logs and debuggers
  double compile_ms = 0;        // as measured by the backend
  bool from_disk = false;       // loaded from the object store, not compiled
  std::shared_ptr<void> owner;  // keeps the code alive (JIT dylib, CUDA module), may be null
  bool already_built = false;   // the backend still had it (evicted, still held): not a compile
};

struct CachedKernel {
  KernelSpec spec;  // the full spec, checked on every hit
  CompiledKernel kernel;
  // Set when the cache drops this kernel: a caller that kept the Ref as a
  // shortcut past the cache (the runtime's per-thread launch plans) goes
  // back through the cache, so the bound and the counts stay truthful.
  std::atomic<bool> evicted{false};

  template <typename Fn>
  Fn entry_as() const {
    return reinterpret_cast<Fn>(kernel.entry);
  }
};

inline constexpr size_t kDefaultKernelCacheCapacity = 4096;

class KernelCache {
 public:
  using CompileFn = absl::FunctionRef<absl::StatusOr<CompiledKernel>()>;
  using Ref = std::shared_ptr<const CachedKernel>;

  explicit KernelCache(size_t capacity = kDefaultKernelCacheCapacity)
      : capacity_(capacity < 1 ? 1 : capacity) {}
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // The one cache the runtime uses (capacity DUALCAST_KERNEL_CACHE_MAX when set).
  static KernelCache& Global();

  // The kernel for `spec`, compiling it with `compile` (called at most once
  // per missing spec, on the calling thread, without the cache's lock held)
  // when absent. Thread-safe. `compile` must not request the same spec.
  absl::StatusOr<Ref> GetOrCompile(const KernelSpec& spec, CompileFn compile) {
    return GetOrCompileWithKey(spec.Key(), spec, compile);
  }
  // The same under a given key (normally spec.Key(), which callers on a hot
  // path compute once and keep); tests use it to force 64-bit collisions,
  // which must still give each spec its own kernel.
  absl::StatusOr<Ref> GetOrCompileWithKey(uint64_t key, const KernelSpec& spec, CompileFn compile);

  // The kernel when already compiled, without touching its recency; never
  // compiles or waits.
  Ref Find(const KernelSpec& spec) const;

  // Number of compiled kernels held.
  size_t size() const;
  size_t capacity() const;
  // Evicts down to the new capacity at once (tests, and programs that know better).
  void set_capacity(size_t capacity);

 private:
  struct Slot;
  using Lru = std::list<Slot*>;  // compiled slots, most recently used first
  // One spec's slot: compiling (others wait on `cv_`), or done.
  struct Slot {
    CachedKernel cached;
    uint64_t key = 0;
    bool compiling = true;
    absl::Status status;  // the failure, when compiling ended with one
    bool in_lru = false;
    Lru::iterator lru;    // valid while in_lru
  };

  // The slot for exactly `spec` among those with its key, or null.
  std::shared_ptr<Slot> FindSlot(uint64_t key, const KernelSpec& spec) const;  // mu_ held
  // Ends `slot`'s compile, wakes the waiters, and forgets the slot on failure
  // (else files it as the most recently used and trims to the capacity).
  void Finish(const std::shared_ptr<Slot>& slot, absl::StatusOr<CompiledKernel> result);
  void Forget(Slot* slot);  // mu_ held: out of the map and the LRU list
  void Trim();                                     // mu_ held

  mutable std::mutex mu_;
  std::condition_variable cv_;  // signalled whenever a compile ends
  size_t capacity_;             // guarded by mu_
  // Key -> slots; more than one only on a 64-bit key collision.
  absl::flat_hash_map<uint64_t, std::vector<std::shared_ptr<Slot>>> slots_;  // guarded by mu_
  Lru lru_;                                                                   // guarded by mu_
};

// True when the two specs would compile to the same code (the function by
// its structural hash; everything else field by field).
bool SameStructure(const KernelSpec& a, const KernelSpec& b);

}  // namespace dualcast::jit
