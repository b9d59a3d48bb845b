// The in-memory kernel cache with single-flight compiles (see kernel_cache.h).
#include "jit/kernel_cache.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_format.h"
#include "jit/error.h"
#include "jit/stats.h"

namespace dualcast::jit {

bool SameStructure(const KernelSpec& a, const KernelSpec& b) {
  return a.function_hash == b.function_hash && a.dtype == b.dtype && a.target == b.target &&
         a.rank == b.rank && a.input_broadcast == b.input_broadcast && a.write == b.write &&
         a.inner_contiguous == b.inner_contiguous;
}

KernelCache& KernelCache::Global() {
  static KernelCache* cache = new KernelCache;  // never destroyed: kernels may run during exit
  return *cache;
}

std::shared_ptr<KernelCache::Slot> KernelCache::FindSlot(uint64_t key,
                                                         const KernelSpec& spec) const {
  auto it = slots_.find(key);
  if (it == slots_.end()) return nullptr;
  for (const std::shared_ptr<Slot>& slot : it->second) {
    if (SameStructure(slot->cached.spec, spec)) return slot;
  }
  return nullptr;
}

const CachedKernel* KernelCache::Find(const KernelSpec& spec) const {
  std::unique_lock<std::mutex> lock(mu_);
  std::shared_ptr<Slot> slot = FindSlot(spec.Key(), spec);
  return slot != nullptr && !slot->compiling ? &slot->cached : nullptr;
}

size_t KernelCache::size() const {
  std::unique_lock<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, list] : slots_) {
    for (const auto& slot : list) n += slot->compiling ? 0 : 1;
  }
  return n;
}

absl::StatusOr<const CachedKernel*> KernelCache::GetOrCompileWithKey(uint64_t key,
                                                                     const KernelSpec& spec,
                                                                     CompileFn compile) {
  std::shared_ptr<Slot> mine;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // `found` keeps a failed slot alive after Finish drops it from the map.
    if (std::shared_ptr<Slot> found = FindSlot(key, spec)) {
      while (found->compiling) cv_.wait(lock);
      if (!found->status.ok()) return found->status;
      RecordCacheHit();
      return &found->cached;
    }
    mine = std::make_shared<Slot>();
    mine->cached.spec = spec;
    slots_[key].push_back(mine);
  }

  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<CompiledKernel> compiled = absl::UnknownError("not compiled");
  try {
    compiled = compile();
  } catch (...) {
    // Waiters must not hang on a compile that threw; they see an error.
    Finish(key, mine,
           MakeStatus(ErrorKind::kInternal,
                      "compiling " + spec.Describe() + " threw an exception"));
    throw;
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  if (compiled.ok()) {
    RecordCompile(ms, compiled->from_disk);
    LogLine(absl::StrFormat("%s %s in %.1f ms (%s)", compiled->from_disk ? "loaded" : "compiled",
                            compiled->symbol, ms, spec.Describe()));
  } else {
    RecordCompileFailure();
    LogLine(absl::StrFormat("compile failed for %s: %s", spec.Describe(),
                            compiled.status().ToString()));
  }
  const absl::Status status = compiled.status();
  Finish(key, mine, std::move(compiled));
  if (!status.ok()) return status;
  return &mine->cached;
}

void KernelCache::Finish(uint64_t key, const std::shared_ptr<Slot>& slot,
                         absl::StatusOr<CompiledKernel> result) {
  std::unique_lock<std::mutex> lock(mu_);
  slot->compiling = false;
  cv_.notify_all();
  if (result.ok()) {
    slot->cached.kernel = *std::move(result);
    return;
  }
  slot->status = result.status();
  auto it = slots_.find(key);
  if (it == slots_.end()) return;
  auto& list = it->second;
  list.erase(std::remove(list.begin(), list.end(), slot), list.end());
  if (list.empty()) slots_.erase(it);
}

}  // namespace dualcast::jit
