// The registry of storages that may share memory (see storage_aliases.h).
#include "runtime/storage_aliases.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

namespace dualcast::detail {
namespace {

struct Range {
  const Storage* storage;
  uintptr_t begin, end;
};

struct Registry {
  std::mutex mu;
  std::vector<Range> ranges;  // guarded by mu
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
  r.ranges.push_back({&storage, begin, begin + storage.bytes});
  storage.aliasable.store(true, std::memory_order_release);
}

void ForgetAliasable(const Storage* storage) {
  Registry& r = Aliasable();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = std::find_if(r.ranges.begin(), r.ranges.end(), [&](const Range& x) { return x.storage == storage; });
  if (it == r.ranges.end()) return;
  *it = r.ranges.back();
  r.ranges.pop_back();
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
  for (const Range& x : r.ranges) {
    if (x.storage != storage && x.begin < end && begin < x.end) list.push_back(x.storage);
  }
  return list;
}

}  // namespace dualcast::detail
