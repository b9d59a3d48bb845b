// The registry of pending nodes and the computation of a write's pending readers (see pending_readers.h).
#include "runtime/pending_readers.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "runtime/auto_partials.h"
#include "runtime/lazy_group.h"
#include "runtime/lazy_ready.h"
#include "runtime/storage_aliases.h"

namespace dualcast::detail {
namespace {

// Taken on every broadcast by its own thread, and by another only while it
// scans for a write: a std::mutex cost 8 ns more a broadcast than this flag
// (a one-element broadcast is about 330 ns). A waiter yields after a while,
// in case the holder was descheduled.
class RegistryLock {
 public:
  void lock() {
    for (int spins = 0; held_.exchange(true, std::memory_order_acquire); ++spins) {
      if (spins >= 64) std::this_thread::yield();
    }
  }
  void unlock() { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

// One bit of 64 per storage address: a node's inputs as a filter.
uint64_t StorageBit(const Storage* storage) {
  const auto p = reinterpret_cast<uintptr_t>(storage);
  return uint64_t{1} << ((p >> 6 ^ p >> 12 ^ p >> 18) & 63);
}

// A pending node, held weakly (a registry never keeps a node, or the arrays
// it reads, alive), and what it read when it was made: a bit per storage of
// the inputs computed then, and whether an input was still pending (its
// storage comes later, so such a node is always looked at). A write then
// skips most nodes without touching them: with 10,000 pending results alive,
// a write cost 284 us when each was looked at, 8 us with the filter. A
// false match (another storage's bit, or a freed storage's address reused)
// costs only the closer look.
struct Entry {
  std::weak_ptr<LazyNode> node;
  uint64_t storage_bits = 0;
  bool had_pending_input = false;
  bool MayRead(uint64_t bits) const { return had_pending_input || (storage_bits & bits) != 0; }
};

// One thread's pending nodes. Pruned of dead ones when it doubles.
struct Registry {
  RegistryLock mu;
  std::vector<Entry> nodes;                    // guarded by mu
  size_t prune_at = kMinPrune;                 // guarded by mu
  bool in_use = true;                          // guarded by the global list's mutex
  static constexpr size_t kMinPrune = 64;
};

// Every registry ever made. A thread that ends leaves its registry (and the
// nodes in it, which may outlive it) to the next thread that starts.
struct Registries {
  std::mutex mu;
  std::vector<Registry*> all;  // never freed: bounded by the threads alive at once
};
Registries& AllRegistries() {
  static auto* registries = new Registries();
  return *registries;
}

thread_local Registry* t_registry = nullptr;  // trivially destructible: usable at any time
thread_local int t_computing_readers = 0;

// Hands the thread's registry on when the thread ends.
struct ThreadExit {
  ~ThreadExit() {
    if (t_registry == nullptr) return;
    std::lock_guard<std::mutex> lock(AllRegistries().mu);
    t_registry->in_use = false;
    t_registry = nullptr;
  }
};
thread_local ThreadExit t_exit;

Registry& ThisThreadRegistry() {
  if (t_registry != nullptr) return *t_registry;
  (void)&t_exit;  // constructs it, so that its destructor runs at thread exit
  Registries& registries = AllRegistries();
  std::lock_guard<std::mutex> lock(registries.mu);
  for (Registry* r : registries.all) {
    if (!r->in_use) {
      r->in_use = true;
      t_registry = r;
      return *r;
    }
  }
  t_registry = registries.all.emplace_back(new Registry());
  return *t_registry;
}

}  // namespace

void NotePendingNode(const std::shared_ptr<LazyNode>& node, std::span<const PendingState> inputs) {
  Entry entry;
  entry.node = node;
  for (const PendingState& in : inputs) {
    if (in.node != nullptr) {
      entry.had_pending_input = true;
    } else if (in.storage != nullptr) {
      entry.storage_bits |= StorageBit(in.storage);
    }
  }
  Registry& r = ThisThreadRegistry();
  std::lock_guard<RegistryLock> lock(r.mu);
  if (r.nodes.size() >= r.prune_at) {
    std::erase_if(r.nodes, [](const Entry& e) { return e.node.expired(); });
    r.prune_at = std::max(Registry::kMinPrune, 2 * r.nodes.size());
  }
  r.nodes.push_back(std::move(entry));
}

void NotePendingNode(const std::shared_ptr<LazyNode>& node) {
  absl::InlinedVector<PendingState, 4> inputs;
  for (const std::shared_ptr<ArrayImpl>& in : node->inputs) {
    if (in != nullptr) inputs.push_back(ReadPendingState(*in));
  }
  NotePendingNode(node, inputs);
}

namespace {

// `storages`: the written memory, through every storage that shares it (storage_aliases.h).
void ComputePendingReaders(const ArrayImpl& target, const StorageList& storages) {
  uint64_t bits = 0;  // one filter for them all: a scan costs the same with many aliases
  for (const Storage* s : storages) bits |= StorageBit(s);
  // Many aliases (fresh views of one buffer kept alive by a tape): a set.
  absl::flat_hash_set<const Storage*> many;
  if (storages.size() > 8) many.insert(storages.begin(), storages.end());
  auto written = [&](const Storage* s) {
    return many.empty() ? std::find(storages.begin(), storages.end(), s) != storages.end() : many.contains(s);
  };
  // Declared before the lock: dropping the last reference to a node frees
  // memory, which needs no lock (as in lazy.cc).
  std::vector<std::shared_ptr<LazyNode>> live;
  {
    Registries& registries = AllRegistries();
    std::lock_guard<std::mutex> lock(registries.mu);
    for (Registry* r : registries.all) {
      std::lock_guard<RegistryLock> nodes_lock(r->mu);
      for (const Entry& e : r->nodes) {
        if (!e.MayRead(bits)) continue;
        if (std::shared_ptr<LazyNode> node = e.node.lock()) live.push_back(std::move(node));
      }
    }
  }
  if (live.empty()) return;
  // An array's `pending` and `storage` change when a thread computes it: read
  // them under the graph lock.
  std::vector<std::shared_ptr<ArrayImpl>> readers;  // one output per reading node
  {
    GraphLock lock;
    std::vector<std::shared_ptr<ArrayImpl>> pending;
    for (const std::shared_ptr<LazyNode>& node : live) {
      // A node computed already (kept alive by a tape, say) reads nothing any more.
      pending.clear();
      for (const std::weak_ptr<ArrayImpl>& w : node->outputs) {
        std::shared_ptr<ArrayImpl> out = w.lock();
        if (out != nullptr && out->pending == node) pending.push_back(std::move(out));
      }
      if (pending.empty()) continue;
      // Reading other elements of the memory is not reading the write: a
      // result of one column of a table is not computed (perhaps on another
      // thread, away from its tape) when another column is written.
      const bool reads = std::any_of(node->inputs.begin(), node->inputs.end(), [&](const auto& in) {
        return in != nullptr && in->pending == nullptr && written(in->storage.get()) &&
               MayOverlap(*in, target);
      });
      if (reads) readers.insert(readers.end(), pending.begin(), pending.end());
    }
  }
  ++t_computing_readers;
  struct Done {
    ~Done() { --t_computing_readers; }
  } done;
  for (const std::shared_ptr<ArrayImpl>& out : readers) Materialize(*out);
}

}  // namespace

void ComputeReadersBeforeWrite(ArrayImpl& target) {
  Materialize(target);
  if (target.storage == nullptr) return;
  const StorageList storages = AliasesOf(target);
  ComputePendingReaders(target, storages);
  // Then the tape's recomputing nodes that read it (those just recorded
  // included) keep a copy of what they read.
  KeepArgumentsBeforeWrite(storages);
}

bool ComputingReadersBeforeWrite() { return t_computing_readers > 0; }

size_t RegisteredNodesForTesting() {
  Registry& r = ThisThreadRegistry();
  std::lock_guard<RegistryLock> lock(r.mu);
  return r.nodes.size();
}

}  // namespace dualcast::detail
