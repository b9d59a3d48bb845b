// The in-place write stamps (see in_place.h).
#include "runtime/in_place.h"

#include <atomic>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dualcast/error.hpp"
#include "runtime/storage_aliases.h"

namespace dualcast::detail {
namespace {

std::atomic<uint64_t> g_epoch{0};

// Stamps by storage, in shards: every storage freed once some write happened
// looks into its shard, and the shard's count lets it skip the lock when
// nothing stamped lives there (a simulation that writes its state in place
// each step keeps a few stamped storages alive, not one per shard).
struct Shard {
  std::mutex mu;
  std::atomic<size_t> size{0};  // entries in `last`
  absl::flat_hash_map<const Storage*, uint64_t> last;  // guarded by mu
};
constexpr size_t kShards = 16;
Shard& ShardOf(const Storage* storage) {
  static auto* shards = new Shard[kShards];  // never destroyed: storage may be freed at exit
  const auto p = reinterpret_cast<uintptr_t>(storage);
  return shards[((p >> 4) ^ (p >> 12)) % kShards];
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

void NoteInPlaceWrite(ArrayImpl& a) {
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
    auto [it, inserted] = shard.last.insert_or_assign(storage, epoch);
    (void)it;
    if (inserted) shard.size.fetch_add(1, std::memory_order_relaxed);
  }
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

uint64_t LastInPlaceWrite(const Storage* storage) {
  if (storage == nullptr || InPlaceWriteEpoch() == 0) return 0;
  Shard& shard = ShardOf(storage);
  if (shard.size.load(std::memory_order_relaxed) == 0) return 0;
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.last.find(storage);
  return it == shard.last.end() ? 0 : it->second;
}

void ForgetInPlaceWrites(const Storage* storage) {
  // The last reference's release orders a stamp of this storage before this.
  if (InPlaceWriteEpoch() == 0) return;
  Shard& shard = ShardOf(storage);
  if (shard.size.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> lock(shard.mu);
  if (shard.last.erase(storage) > 0) shard.size.fetch_sub(1, std::memory_order_relaxed);
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
