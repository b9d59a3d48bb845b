// The in-memory kernel cache with single-flight compiles (see kernel_cache.h).
#include "jit/codegen/kernel_cache.h"

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
         a.inner_contiguous == b.inner_contiguous && a.strided_inner == b.strided_inner;
}

KernelCache& KernelCache::Global() {
  // Never destroyed: kernels may run during exit.
  static KernelCache* cache =
      new KernelCache(EnvCapacity("DUALCAST_KERNEL_CACHE_MAX", kDefaultKernelCacheCapacity));
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

KernelCache::Ref KernelCache::Find(const KernelSpec& spec) const {
  std::unique_lock<std::mutex> lock(mu_);
  std::shared_ptr<Slot> slot = FindSlot(spec.Key(), spec);
  if (slot == nullptr || slot->compiling) return nullptr;
  return Ref(slot, &slot->cached);
}

size_t KernelCache::size() const {
  std::unique_lock<std::mutex> lock(mu_);
  return lru_.size();
}

size_t KernelCache::capacity() const {
  std::unique_lock<std::mutex> lock(mu_);
  return capacity_;
}

void KernelCache::set_capacity(size_t capacity) {
  std::unique_lock<std::mutex> lock(mu_);
  capacity_ = capacity < 1 ? 1 : capacity;
  Trim();
}

absl::StatusOr<KernelCache::Ref> KernelCache::GetOrCompileWithKey(uint64_t key,
                                                                 const KernelSpec& spec,
                                                                 CompileFn compile) {
  std::shared_ptr<Slot> mine;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // `found` keeps a failed slot alive after Finish drops it from the map.
    if (std::shared_ptr<Slot> found = FindSlot(key, spec)) {
      while (found->compiling) cv_.wait(lock);
      if (!found->status.ok()) return found->status;
      if (found->in_lru) lru_.splice(lru_.begin(), lru_, found->lru);
      RecordCacheHit();
      return Ref(found, &found->cached);
    }
    mine = std::make_shared<Slot>();
    mine->cached.spec = spec;
    mine->key = key;
    slots_[key].push_back(mine);
  }
  RecordCacheLookup(Cache::kKernel, false);

  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<CompiledKernel> compiled = absl::UnknownError("not compiled");
  try {
    compiled = compile();
  } catch (...) {
    // Waiters must not hang on a compile that threw; they see an error.
    Finish(mine,
           MakeStatus(ErrorKind::kInternal,
                      "compiling " + spec.Describe() + " threw an exception"));
    throw;
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  if (compiled.ok() && compiled->already_built) {
    // A miss (counted above), but neither a compile nor a disk load.
    LogLine(absl::StrFormat("found %s still linked (%s)", compiled->symbol, spec.Describe()));
  } else if (compiled.ok()) {
    RecordCompile(ms, compiled->from_disk);
    LogLine(absl::StrFormat("%s %s in %.1f ms (%s)", compiled->from_disk ? "loaded" : "compiled",
                            compiled->symbol, ms, spec.Describe()));
  } else {
    RecordCompileFailure();
    LogLine(absl::StrFormat("compile failed for %s: %s", spec.Describe(),
                            compiled.status().ToString()));
  }
  const absl::Status status = compiled.status();
  Finish(mine, std::move(compiled));
  if (!status.ok()) return status;
  return Ref(mine, &mine->cached);
}

void KernelCache::Finish(const std::shared_ptr<Slot>& slot,
                         absl::StatusOr<CompiledKernel> result) {
  std::unique_lock<std::mutex> lock(mu_);
  slot->compiling = false;
  cv_.notify_all();
  if (result.ok()) {
    slot->cached.kernel = *std::move(result);
    lru_.push_front(slot.get());
    slot->lru = lru_.begin();
    slot->in_lru = true;
    Trim();
    return;
  }
  slot->status = result.status();
  Forget(slot.get());
}

void KernelCache::Forget(Slot* slot) {
  if (slot->in_lru) {
    lru_.erase(slot->lru);
    slot->in_lru = false;
    slot->cached.evicted.store(true, std::memory_order_relaxed);
  }
  auto it = slots_.find(slot->key);
  if (it == slots_.end()) return;
  auto& list = it->second;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](const std::shared_ptr<Slot>& s) { return s.get() == slot; }),
             list.end());
  if (list.empty()) slots_.erase(it);
}

void KernelCache::Trim() {
  int64_t evicted = 0;
  while (lru_.size() > capacity_) {
    // Drops the map's reference; a launch holding a Ref keeps the kernel alive.
    Forget(lru_.back());
    ++evicted;
  }
  if (evicted > 0) RecordCacheEvictions(Cache::kKernel, evicted);
}

}  // namespace dualcast::jit
