// The registry of storages that may share memory (see storage_aliases.h).
#include "runtime/storage_aliases.h"

#include <cstdint>
#include <mutex>

#include "absl/container/flat_hash_map.h"

namespace dualcast::detail {
namespace {

struct Range {
  uintptr_t begin, end;
};

// By storage: a simulation may keep many views alive, and each is erased when freed.
struct Registry {
  std::mutex mu;
  absl::flat_hash_map<const Storage*, Range> ranges;  // guarded by mu
};
Registry& Aliasable() {
  static auto* registry = new Registry();  // never destroyed: storages may be freed at exit
  return *registry;
}

}  // namespace

void RegisterAliasable(Storage& storage) {
  if (storage.aliasable.load(std::memory_order_acquire) || !storage.device.is_cpu()) return;
  Registry& r = Aliasable();
  std::lock_guard<std::mutex> lock(r.mu);
  if (storage.aliasable.load(std::memory_order_relaxed)) return;
  const auto begin = reinterpret_cast<uintptr_t>(storage.data);
  r.ranges.insert_or_assign(&storage, Range{begin, begin + storage.bytes});
  storage.aliasable.store(true, std::memory_order_release);
}

void ForgetAliasable(const Storage* storage) {
  Registry& r = Aliasable();
  std::lock_guard<std::mutex> lock(r.mu);
  r.ranges.erase(storage);
}

StorageList AliasesOf(const Storage* storage) {
  StorageList list = {storage};
  if (storage == nullptr || !storage->aliasable.load(std::memory_order_acquire) || storage->bytes == 0) {
    return list;
  }
  const auto begin = reinterpret_cast<uintptr_t>(storage->data);
  const uintptr_t end = begin + storage->bytes;
  Registry& r = Aliasable();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& [other, x] : r.ranges) {
    if (other != storage && x.begin < end && begin < x.end) list.push_back(other);
  }
  return list;
}

}  // namespace dualcast::detail
