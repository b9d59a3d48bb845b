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
// for the CPU, a CUfunction for CUDA) plus whatever object keeps it alive.
// Entries are never evicted, so a returned pointer stays valid for the life
// of the cache (the global one lives until exit).
//
// Example:
//   absl::StatusOr<const CachedKernel*> k = KernelCache::Global().GetOrCompile(
//       spec, [&]() -> absl::StatusOr<CompiledKernel> {
//         absl::StatusOr<CompiledCpuKernel> c = CompileCpuKernel(spec, &DiskCache::Default());
//         if (!c.ok()) return c.status();
//         return CompiledKernel{reinterpret_cast<void*>(c->entry), c->symbol, c->compile_ms,
//                               c->from_object_store};
//       });
//   LaunchCpu((*k)->entry_as<KernelEntry>(), args, spec.rank);
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include <condition_variable>
#include <mutex>
#include "jit/kernel_spec.h"

namespace dualcast::jit {

// What a backend's compile step hands the cache.
struct CompiledKernel {
  void* entry = nullptr;        // backend-specific entry point
  std::string symbol;           // for logs and debuggers
  double compile_ms = 0;        // as measured by the backend
  bool from_disk = false;       // loaded from the object store, not compiled
  std::shared_ptr<void> owner;  // keeps the code alive (JIT dylib, CUDA module), may be null
};

struct CachedKernel {
  KernelSpec spec;  // the full spec, checked on every hit
  CompiledKernel kernel;

  template <typename Fn>
  Fn entry_as() const {
    return reinterpret_cast<Fn>(kernel.entry);
  }
};

class KernelCache {
 public:
  using CompileFn = absl::FunctionRef<absl::StatusOr<CompiledKernel>()>;

  KernelCache() = default;
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // The one cache the runtime uses.
  static KernelCache& Global();

  // The kernel for `spec`, compiling it with `compile` (called at most once
  // per missing spec, on the calling thread, without the cache's lock held)
  // when absent. Thread-safe. `compile` must not request the same spec.
  absl::StatusOr<const CachedKernel*> GetOrCompile(const KernelSpec& spec, CompileFn compile) {
    return GetOrCompileWithKey(spec.Key(), spec, compile);
  }
  // The same under a given key (normally spec.Key()): tests use it to force
  // 64-bit collisions, which must still give each spec its own kernel.
  absl::StatusOr<const CachedKernel*> GetOrCompileWithKey(uint64_t key, const KernelSpec& spec,
                                                          CompileFn compile);

  // The kernel when already compiled; never compiles or waits.
  const CachedKernel* Find(const KernelSpec& spec) const;

  // Number of compiled kernels held.
  size_t size() const;

 private:
  // One spec's slot: compiling (others wait on `cv_`), or done.
  struct Slot {
    CachedKernel cached;
    bool compiling = true;
    absl::Status status;  // the failure, when compiling ended with one
  };

  // The slot for exactly `spec` among those with its key, or null.
  std::shared_ptr<Slot> FindSlot(uint64_t key, const KernelSpec& spec) const;  // mu_ held
  // Ends `slot`'s compile, wakes the waiters, and forgets the slot on failure.
  void Finish(uint64_t key, const std::shared_ptr<Slot>& slot,
              absl::StatusOr<CompiledKernel> result);

  mutable std::mutex mu_;
  std::condition_variable cv_;  // signalled whenever a compile ends
  // Key -> slots; more than one only on a 64-bit key collision.
  absl::flat_hash_map<uint64_t, std::vector<std::shared_ptr<Slot>>> slots_;  // guarded by mu_
};

// True when the two specs would compile to the same code (the function by
// its structural hash; everything else field by field).
bool SameStructure(const KernelSpec& a, const KernelSpec& b);

}  // namespace dualcast::jit
