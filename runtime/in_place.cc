// The in-place write stamps (see in_place.h).
#include "runtime/in_place.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dualcast/array.hpp"
#include "dualcast/error.hpp"
#include "runtime/storage_aliases.h"

namespace dualcast::detail {
namespace {

std::atomic<uint64_t> g_epoch{0};

// Stamps by storage, in shards: every storage freed once some write happened
// looks into its shard, and the shard's count lets it skip the lock when
// nothing stamped lives there (a simulation that writes its state in place
// each step keeps a few stamped storages alive, not one per shard).
// A storage's stamp, and the computed values written into it (WrittenValues).
struct Stamp {
  uint64_t epoch = 0;
  // The writes that left values computed from other arrays (those with a
  // writer), and the writes of user values over all of the storage after
  // one (they hide the earlier ones), oldest first, the latest kMaxWriters.
  struct Write {
    uint64_t epoch;
    std::shared_ptr<const Origin> writer;  // null: user values
    bool covers;                           // every byte of the storage was written
  };
  std::vector<Write> writes;
  bool forgot = false;  // older writes were dropped
  static constexpr size_t kMaxWriters = 64;
};
struct Shard {
  std::mutex mu;
  std::atomic<size_t> size{0};  // entries in `last`
  absl::flat_hash_map<const Storage*, Stamp> last;  // guarded by mu
};
// Storages with a write in Stamp::writes: none, and NoteOrigin skips the look.
std::atomic<size_t> g_written_with_values{0};

// The records of user memory (views, Array::view) whose last view is gone:
// the memory is the user's and outlives its views, so a view made of it
// later takes them on (InheritWrittenValues). The latest kMaxKept, oldest
// first; a stale one (memory freed and reused) can only refuse a gradient
// through values whose writer's inputs are still alive, never give one.
struct KeptRecord {
  uintptr_t begin, end;
  uint64_t epoch;
  std::vector<Stamp::Write> writes;
  bool forgot;  // older writes were dropped, and none of `writes` hides them
};
struct KeptRecords {
  static constexpr size_t kMaxKept = 256;
  std::mutex mu;
  std::vector<KeptRecord> records;  // guarded by mu
  std::atomic<size_t> size{0};
};
KeptRecords& Kept() {
  static auto* kept = new KeptRecords();  // never destroyed: storages die at exit
  return *kept;
}

// What of `writes` (oldest first) a read can still see: from the last write
// over all of the storage on (older ones are hidden, WrittenValuesAt), each
// write once (a view takes on the records of every view it meets, so the
// same write arrives several ways). Empty when no computed values remain and
// none were forgotten; `forgot` (older writes dropped) is cleared when a
// write over all of it hides them.
void Compact(std::vector<Stamp::Write>& writes, bool& forgot) {
  std::stable_sort(writes.begin(), writes.end(),
                   [](const Stamp::Write& a, const Stamp::Write& b) { return a.epoch < b.epoch; });
  for (size_t k = writes.size(); k-- > 0;) {
    if (writes[k].covers) {
      writes.erase(writes.begin(), writes.begin() + static_cast<std::ptrdiff_t>(k));
      forgot = false;
      break;
    }
  }
  writes.erase(std::unique(writes.begin(), writes.end(),
                           [](const Stamp::Write& a, const Stamp::Write& b) {
                             return a.epoch == b.epoch && a.writer == b.writer;
                           }),
               writes.end());
  if (!forgot &&
      std::none_of(writes.begin(), writes.end(), [](const Stamp::Write& w) { return w.writer != nullptr; })) {
    writes.clear();
  }
}
constexpr size_t kShards = 16;
Shard& ShardOf(size_t index) {
  static auto* shards = new Shard[kShards];  // never destroyed: storage may be freed at exit
  return shards[index];
}
Shard& ShardOf(const Storage* storage) {
  const auto p = reinterpret_cast<uintptr_t>(storage);
  return ShardOf(((p >> 4) ^ (p >> 12)) % kShards);
}

}  // namespace

uint64_t InPlaceWriteEpoch() { return g_epoch.load(std::memory_order_acquire); }

namespace {
thread_local uint64_t t_swept_epoch = 0;
}  // namespace

uint64_t SweptNodeEpoch() { return t_swept_epoch; }
SweptNodeEpochScope::SweptNodeEpochScope(uint64_t epoch) : saved_(t_swept_epoch) { t_swept_epoch = epoch; }
SweptNodeEpochScope::~SweptNodeEpochScope() { t_swept_epoch = saved_; }

namespace {
// Guards every WriteHistory::past: written only by writes over a computed
// array, read only by sweeps that meet an older version.
std::mutex& HistoryLock() {
  static auto* mu = new std::mutex();
  return *mu;
}
}  // namespace

namespace {
// Whether writing all of `a` writes every byte of `storage` (a view of the
// same memory, or `a`'s own storage).
bool Covers(const ArrayImpl& a, const Storage& storage) {
  if (!a.contiguous() || storage.data == nullptr) return false;
  const auto begin = reinterpret_cast<uintptr_t>(a.data());
  const auto end = begin + static_cast<uintptr_t>(a.size()) * SizeOf(a.dtype);
  const auto s_begin = reinterpret_cast<uintptr_t>(storage.data);
  return begin <= s_begin && s_begin + storage.bytes <= end;
}

void Remember(Stamp& stamp, Stamp::Write write) {
  if (stamp.writes.empty()) g_written_with_values.fetch_add(1, std::memory_order_relaxed);
  if (stamp.writes.size() >= Stamp::kMaxWriters) {
    stamp.writes.erase(stamp.writes.begin());
    stamp.forgot = true;
  }
  stamp.writes.push_back(std::move(write));
}

// User values written over all of the stamped storage at `epoch`: they hide
// the computed values written before (one such write stands for a run of them).
void RememberUserValuesOverAll(Stamp& stamp, uint64_t epoch) {
  if (!stamp.writes.empty() && (stamp.writes.back().writer != nullptr || !stamp.writes.back().covers)) {
    Remember(stamp, {epoch, nullptr, true});
  }
}
}  // namespace

void NoteInPlaceWrite(ArrayImpl& a, bool whole) {
  if (a.grad_fn != nullptr || a.origin != nullptr) {
    std::lock_guard<std::mutex> lock(HistoryLock());
    ArrayImpl::WriteHistory& h = a.writes;
    if (h.past.size() >= ArrayImpl::WriteHistory::kMaxPast) {
      h.forgotten_below = h.past.front().version + 1;
      h.past.erase(h.past.begin());
    }
    h.past.push_back({WriteCount(a), a.grad_fn, a.grad_output, a.origin});
  }
  a.writes.count.fetch_add(1, std::memory_order_relaxed);
  a.grad_fn.reset();
  a.grad_output = 0;
  if (a.storage == nullptr) return;
  // Every storage sharing the written memory is stamped (storage_aliases.h).
  for (const Storage* storage : AliasesOf(a)) {
    Shard& shard = ShardOf(storage);
    std::lock_guard<std::mutex> lock(shard.mu);
    // Taken under the lock, so that a stamp never exceeds the epoch a reader
    // of the counter then sees in the map.
    const uint64_t epoch = g_epoch.fetch_add(1, std::memory_order_acq_rel) + 1;
    auto [it, inserted] = shard.last.try_emplace(storage);
    if (inserted) shard.size.fetch_add(1, std::memory_order_relaxed);
    Stamp& stamp = it->second;
    stamp.epoch = epoch;
    if (whole && Covers(a, *storage)) RememberUserValuesOverAll(stamp, epoch);
  }
}

void NoteInPlaceWriter(const ArrayImpl& a, bool whole) {
  if (a.storage == nullptr || a.origin == nullptr) return;
  for (const Storage* storage : AliasesOf(a)) {
    Shard& shard = ShardOf(storage);
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.last.find(storage);
    if (it == shard.last.end()) continue;  // not written through dualcast
    Stamp& stamp = it->second;
    const bool covers = whole && Covers(a, *storage);
    if (!stamp.writes.empty() && stamp.writes.back().epoch == stamp.epoch) {
      stamp.writes.back() = {stamp.epoch, a.origin, covers};
    } else {
      Remember(stamp, {stamp.epoch, a.origin, covers});
    }
  }
}

WrittenValues WrittenValuesAt(const Storage* storage, uint64_t epoch) {
  WrittenValues out;
  if (storage == nullptr || epoch == 0 || g_written_with_values.load(std::memory_order_relaxed) == 0) {
    return out;
  }
  Shard& shard = ShardOf(storage);
  if (shard.size.load(std::memory_order_relaxed) == 0) return out;
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.last.find(storage);
  if (it == shard.last.end()) return out;
  const Stamp& stamp = it->second;
  for (size_t k = stamp.writes.size(); k-- > 0;) {
    const Stamp::Write& w = stamp.writes[k];
    if (w.epoch > epoch) continue;  // written after that read
    if (w.writer != nullptr) out.writers.push_back(w.writer);
    if (w.covers) return out;
  }
  out.complete = !stamp.forgot;
  return out;
}


bool SharesMemory(const ArrayImpl& a, const ArrayImpl& b) {
  if (&a == &b || a.storage == nullptr || b.storage == nullptr || a.size() == 0 || b.size() == 0) {
    return false;
  }
  if (a.storage != b.storage && !(a.storage->aliasable.load(std::memory_order_acquire) &&
                                  b.storage->aliasable.load(std::memory_order_acquire))) {
    return false;
  }
  if (a.device != b.device) return false;
  const Extent ea = ExtentOf(a), eb = ExtentOf(b);  // the bytes each array's elements span
  return ea.lo < eb.hi && eb.lo < ea.hi;
}

bool AnyWrittenValues() { return g_written_with_values.load(std::memory_order_relaxed) != 0; }

void NotePointerWrite(ArrayImpl& a) {
  std::shared_ptr<const Origin> before = a.origin;
  NoteInPlaceWrite(a, /*whole=*/false);
  // A view (slice, transpose, reshape) shows its base's memory: what that
  // memory holds was computed only if the base was.
  std::shared_ptr<const Origin> memory = before;
  for (int k = 0; memory != nullptr && memory->inputs.size() == 1 && k < 64; ++k) {
    const std::shared_ptr<ArrayImpl> base = memory->inputs[0].lock();
    if (base == nullptr || base->storage != a.storage) break;
    memory = base->origin;
  }
  if (memory == nullptr) {  // user values; computed ones written before stay noted (WrittenValuesAt)
    a.origin.reset();
    return;
  }
  if (!before->pointer_written) {
    auto written = std::make_shared<Origin>(*before);
    written->pointer_written = true;
    before = std::move(written);
  }
  a.origin = std::move(before);
  NoteInPlaceWriter(a, /*whole=*/false);
}

bool InputsTellAncestry(const Origin& o) {
  for (const auto& weak : o.inputs) {
    const std::shared_ptr<ArrayImpl> in = weak.lock();
    if (in == nullptr || WriteCount(*in) > 0) return false;
  }
  return true;
}

VersionInfo VersionOf(const ArrayImpl& a, uint32_t version) {
  if (version == WriteCount(a)) return {a.grad_fn, a.grad_output, a.origin};
  std::lock_guard<std::mutex> lock(HistoryLock());
  for (const ArrayImpl::WriteHistory::Past& p : a.writes.past) {
    if (p.version == version) return {p.node.lock(), p.output, p.origin};
  }
  VersionInfo none;
  none.known = version >= a.writes.forgotten_below;
  return none;
}

VersionInfo InputSeenBy(const GradNode& reader, size_t j) {
  return VersionOf(*reader.inputs[j], reader.seen(j).version);
}

void InheritWrittenValues(const ArrayImpl& view) {
  if (view.storage == nullptr || (g_written_with_values.load(std::memory_order_relaxed) == 0 &&
                                  Kept().size.load(std::memory_order_relaxed) == 0)) {
    return;
  }
  const Storage* own = view.storage.get();
  const auto own_begin = reinterpret_cast<uintptr_t>(own->data);
  const uintptr_t own_end = own_begin + own->bytes;
  uint64_t epoch = 0;
  std::vector<Stamp::Write> inherited;
  bool forgot = false;
  // A source's writes as this view sees them: a write over all of the source
  // hides older ones here only if the view lies within the source.
  auto take = [&](const std::vector<Stamp::Write>& writes, bool source_forgot, bool within) {
    bool hidden = false;
    for (Stamp::Write w : writes) {
      w.covers = w.covers && within;
      hidden = hidden || w.covers;
      inherited.push_back(std::move(w));
    }
    forgot = forgot || (source_forgot && !hidden);
  };
  if (Kept().size.load(std::memory_order_relaxed) != 0) {
    KeptRecords& kept = Kept();
    std::lock_guard<std::mutex> lock(kept.mu);
    for (const KeptRecord& r : kept.records) {
      if (r.end <= own_begin || own_end <= r.begin) continue;
      take(r.writes, r.forgot, r.begin <= own_begin && own_end <= r.end);
      epoch = std::max(epoch, r.epoch);
    }
  }
  for (const Storage* storage : AliasesOf(view)) {
    if (storage == own) continue;
    Shard& shard = ShardOf(storage);
    if (shard.size.load(std::memory_order_relaxed) == 0) continue;
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.last.find(storage);
    if (it == shard.last.end() || it->second.writes.empty()) continue;
    const auto begin = reinterpret_cast<uintptr_t>(storage->data);
    take(it->second.writes, it->second.forgot, begin <= own_begin && own_end <= begin + storage->bytes);
    epoch = std::max(epoch, it->second.epoch);
  }
  Compact(inherited, forgot);
  if (inherited.empty() && !forgot) return;
  Shard& shard = ShardOf(own);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto [it, inserted] = shard.last.try_emplace(own);
  if (inserted) shard.size.fetch_add(1, std::memory_order_relaxed);
  Stamp& stamp = it->second;
  stamp.epoch = std::max(stamp.epoch, epoch);
  if (forgot && inherited.empty()) inherited.push_back({epoch, nullptr, false});  // holds the flag's place
  for (Stamp::Write& w : inherited) Remember(stamp, std::move(w));
  stamp.forgot = stamp.forgot || forgot;
}

uint64_t LastInPlaceWrite(const Storage* storage) {
  if (storage == nullptr || InPlaceWriteEpoch() == 0) return 0;
  Shard& shard = ShardOf(storage);
  if (shard.size.load(std::memory_order_relaxed) == 0) return 0;
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.last.find(storage);
  return it == shard.last.end() ? 0 : it->second.epoch;
}

void ForgetInPlaceWrites(const Storage* storage) {
  // The last reference's release orders a stamp of this storage before this.
  if (InPlaceWriteEpoch() == 0) return;
  Shard& shard = ShardOf(storage);
  if (shard.size.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.last.find(storage);
  if (it == shard.last.end()) return;
  if (!it->second.writes.empty()) {
    g_written_with_values.fetch_sub(1, std::memory_order_relaxed);
    std::vector<Stamp::Write>& writes = it->second.writes;
    bool forgot = it->second.forgot;
    Compact(writes, forgot);
    if (!storage->owning && storage->data != nullptr && (!writes.empty() || forgot)) {  // the user's memory: its records stay
      const auto begin = reinterpret_cast<uintptr_t>(storage->data);
      KeptRecords& kept = Kept();
      std::lock_guard<std::mutex> kept_lock(kept.mu);
      if (kept.records.size() >= KeptRecords::kMaxKept) kept.records.erase(kept.records.begin());
      kept.records.push_back({begin, begin + storage->bytes, it->second.epoch, std::move(writes), forgot});
      kept.size.store(kept.records.size(), std::memory_order_relaxed);
    }
  }
  shard.last.erase(it);
  shard.size.fetch_sub(1, std::memory_order_relaxed);
}

void ForgetWrittenValues(uintptr_t begin, uintptr_t end) {
  if (begin >= end) return;
  // Live views of user memory within the range: as a write of user values
  // over all of each (NoteInPlaceWrite), so that a read recorded before it sees it.
  if (g_written_with_values.load(std::memory_order_relaxed) != 0) {
    for (size_t k = 0; k < kShards; ++k) {
      Shard& shard = ShardOf(k);
      if (shard.size.load(std::memory_order_relaxed) == 0) continue;
      std::lock_guard<std::mutex> lock(shard.mu);
      for (auto& [storage, stamp] : shard.last) {
        const auto s_begin = reinterpret_cast<uintptr_t>(storage->data);
        if (stamp.writes.empty() || storage->owning || s_begin < begin || end - s_begin < storage->bytes) {
          continue;  // dualcast's own memory, or not all of it in the range
        }
        const uint64_t epoch = g_epoch.fetch_add(1, std::memory_order_acq_rel) + 1;
        stamp.epoch = epoch;
        RememberUserValuesOverAll(stamp, epoch);
      }
    }
  }
  if (Kept().size.load(std::memory_order_relaxed) == 0) return;
  KeptRecords& kept = Kept();
  std::lock_guard<std::mutex> lock(kept.mu);
  std::vector<KeptRecord> left;
  for (KeptRecord& r : kept.records) {
    if (r.end <= begin || end <= r.begin) {
      left.push_back(std::move(r));
      continue;
    }
    if (r.begin < begin) left.push_back({r.begin, begin, r.epoch, r.writes, r.forgot});
    if (end < r.end) left.push_back({end, r.end, r.epoch, r.writes, r.forgot});
  }
  if (left.size() > KeptRecords::kMaxKept) left.erase(left.begin(), left.end() - KeptRecords::kMaxKept);
  kept.records = std::move(left);
  kept.size.store(kept.records.size(), std::memory_order_relaxed);
}

void CheckNotWrittenSince(uint64_t epoch, const ArrayImpl& a, const std::string& what,
                          const std::string& node_name) {
  if (InPlaceWriteEpoch() <= epoch || LastInPlaceWrite(a.storage.get()) <= epoch) return;
  ThrowWrittenInPlace(a, what, node_name);
}

void ThrowWrittenInPlace(const ArrayImpl& a, const std::string& what, const std::string& node_name) {
  throw Error(ErrorKind::kInvalidArgument,
              absl::StrCat("Tape::gradient: ", what, " (an array of shape [", absl::StrJoin(a.shape, ", "),
                           "]) was written in place (Array::assign, mutable_data() (which counts as "
                           "a write: read through data()), or as a destination of partials() or "
                           "accumulate_gradient(), perhaps through a view of the same memory) after "
                           "the tape recorded '", node_name,
                           "', so the gradient would use values the forward pass never saw. Write "
                           "into a copy() instead, or run the forward pass again (under the tape) "
                           "after writing"));
}

}  // namespace dualcast::detail

namespace dualcast {
void forget_written_values(const void* data, std::size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t end = bytes > UINTPTR_MAX - begin ? UINTPTR_MAX : begin + bytes;
  detail::ForgetWrittenValues(begin, end);
}
}  // namespace dualcast
