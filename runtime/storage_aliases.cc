// The registry of storages that may share memory (see storage_aliases.h).
#include "runtime/storage_aliases.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <numeric>

#include "absl/container/flat_hash_map.h"

namespace dualcast::detail {
namespace {

struct Range {
  uintptr_t begin, end;
  uint64_t step;  // the grid of addresses its arrays use, from `begin`
  size_t element_bytes;
};

// Whether an element of `a` (at lo_a + i * step_a) and one of `b` may share a
// byte, both being at most `element_bytes` wide: offsets taken modulo the
// gcd of the steps (congruence on the signed difference: an unsigned
// wrap-around is only congruent modulo powers of two, and a 6-column
// interleaved table has a 48-byte row stride).
bool GridsMeet(uintptr_t lo_a, uint64_t step_a, uintptr_t lo_b, uint64_t step_b, uint64_t element_bytes) {
  const uint64_t g = std::gcd(step_a, step_b);
  if (g == 0) return true;  // both single elements, whose ranges meet
  const int64_t diff = static_cast<int64_t>(lo_b - lo_a);
  const int64_t gs = static_cast<int64_t>(g);
  const uint64_t r = static_cast<uint64_t>(((diff % gs) + gs) % gs);
  return r < element_bytes || g - r < element_bytes;
}

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

Extent ExtentOf(const ArrayImpl& a) {
  Extent e;
  if (a.storage == nullptr || a.size() == 0) return e;
  const int64_t es = static_cast<int64_t>(SizeOf(a.dtype));
  int64_t lo = 0, hi = 0;
  uint64_t step = 0;
  for (int d = 0; d < a.rank(); ++d) {
    if (a.shape[d] <= 1) continue;
    const int64_t span = (a.shape[d] - 1) * a.strides[d] * es;
    (span < 0 ? lo : hi) += span;
    step = std::gcd(step, static_cast<uint64_t>(std::llabs(a.strides[d] * es)));
  }
  const auto base = reinterpret_cast<intptr_t>(a.data());
  e.lo = static_cast<uintptr_t>(base + lo);
  e.hi = static_cast<uintptr_t>(base + hi + es);
  e.step = step;
  e.empty = false;
  return e;
}

bool MayOverlap(const ArrayImpl& a, const ArrayImpl& b) {
  const Extent ea = ExtentOf(a), eb = ExtentOf(b);
  if (ea.empty || eb.empty) return false;
  if (ea.hi <= eb.lo || eb.hi <= ea.lo) return false;
  return GridsMeet(ea.lo, ea.step, eb.lo, eb.step, std::max(SizeOf(a.dtype), SizeOf(b.dtype)));
}

void RegisterAliasable(Storage& storage, uint64_t step, size_t element_bytes) {
  if (storage.aliasable.load(std::memory_order_acquire) || !storage.device.is_cpu()) return;
  Registry& r = Aliasable();
  std::lock_guard<std::mutex> lock(r.mu);
  if (storage.aliasable.load(std::memory_order_relaxed)) return;
  const auto begin = reinterpret_cast<uintptr_t>(storage.data);
  r.ranges.insert_or_assign(&storage, Range{begin, begin + storage.bytes, step, element_bytes});
  storage.aliasable.store(true, std::memory_order_release);
}

void ForgetAliasable(const Storage* storage) {
  Registry& r = Aliasable();
  std::lock_guard<std::mutex> lock(r.mu);
  r.ranges.erase(storage);
}

StorageList AliasesOf(const ArrayImpl& written) {
  const Storage* storage = written.storage.get();
  StorageList list = {storage};
  if (storage == nullptr || !storage->aliasable.load(std::memory_order_acquire) || storage->bytes == 0) {
    return list;
  }
  const Extent w = ExtentOf(written);
  if (w.empty) return list;
  const size_t es = SizeOf(written.dtype);
  Registry& r = Aliasable();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& [other, x] : r.ranges) {
    if (other != storage && x.begin < w.hi && w.lo < x.end &&
        GridsMeet(w.lo, w.step, x.begin, x.step, std::max(es, x.element_bytes))) {
      list.push_back(other);
    }
  }
  return list;
}

}  // namespace dualcast::detail
