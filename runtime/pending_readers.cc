// The registry of pending nodes and the computation of a write's pending readers (see pending_readers.h).
#include "runtime/pending_readers.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/lazy_group.h"

namespace dualcast::detail {
namespace {

// Taken on every broadcast by its own thread, and by another only while it
// scans for a write: a flag costs 12 ns a broadcast where std::mutex cost 20
// (the 1-element broadcast is 320 ns). A waiter yields after a while, in case
// the holder was descheduled.
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

// One thread's pending nodes, held weakly (a registry never keeps a node, or
// the arrays it reads, alive). Pruned of dead ones when it doubles.
struct Registry {
  RegistryLock mu;
  std::vector<std::weak_ptr<LazyNode>> nodes;  // guarded by mu
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

void NotePendingNode(const std::shared_ptr<LazyNode>& node) {
  Registry& r = ThisThreadRegistry();
  std::lock_guard<RegistryLock> lock(r.mu);
  if (r.nodes.size() >= r.prune_at) {
    std::erase_if(r.nodes, [](const std::weak_ptr<LazyNode>& w) { return w.expired(); });
    r.prune_at = std::max(Registry::kMinPrune, 2 * r.nodes.size());
  }
  r.nodes.emplace_back(node);
}

void ComputeReadersBeforeWrite(ArrayImpl& target) {
  Materialize(target);
  const Storage* storage = target.storage.get();
  if (storage == nullptr) return;
  // Declared before the lock: dropping the last reference to a node frees
  // memory, which needs no lock (as in lazy.cc).
  std::vector<std::shared_ptr<LazyNode>> live;
  {
    Registries& registries = AllRegistries();
    std::lock_guard<std::mutex> lock(registries.mu);
    for (Registry* r : registries.all) {
      std::lock_guard<RegistryLock> nodes_lock(r->mu);
      for (const std::weak_ptr<LazyNode>& w : r->nodes) {
        if (std::shared_ptr<LazyNode> node = w.lock()) live.push_back(std::move(node));
      }
    }
  }
  if (live.empty()) return;
  // An array's `pending` and `storage` change when a thread computes it: read
  // them under the graph lock.
  std::vector<std::shared_ptr<ArrayImpl>> readers;  // one output per reading node
  {
    GraphLock lock;
    for (const std::shared_ptr<LazyNode>& node : live) {
      const bool reads = std::any_of(node->inputs.begin(), node->inputs.end(), [&](const auto& in) {
        return in != nullptr && in->pending == nullptr && in->storage.get() == storage;
      });
      if (!reads) continue;
      for (const std::weak_ptr<ArrayImpl>& w : node->outputs) {
        std::shared_ptr<ArrayImpl> out = w.lock();
        if (out != nullptr && out->pending == node) {
          readers.push_back(std::move(out));
        }
      }
    }
  }
  for (const std::shared_ptr<ArrayImpl>& out : readers) Materialize(*out);
}

size_t RegisteredNodesForTesting() {
  Registry& r = ThisThreadRegistry();
  std::lock_guard<RegistryLock> lock(r.mu);
  return r.nodes.size();
}

}  // namespace dualcast::detail
