// kAuto's choice per broadcast, and the registry that has recomputing nodes keep a copy of an argument before it is written.
#include "runtime/auto_partials.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "jit/cpu/interleave.h"
#include "jit/ir/op_cost.h"
#include "runtime/in_place.h"
#include "runtime/storage_aliases.h"

namespace dualcast::detail {
namespace {

// What one vector instruction covers on `device`: the host's registers on
// the CPU; a GPU is weighed as a 512-bit host (not measured: no GPU lent yet).
int VectorBitsFor(Device device) {
  return device.is_cpu() ? jit::cpu::HostLanes(jit::Type::kF64) * 64 : 512;
}

struct Entry {
  std::weak_ptr<KeepsArgumentsOnWrite> node;
  uint64_t epoch = 0;  // InPlaceWriteEpoch() when it was recorded
};

// This thread's recomputing nodes, by the storages they read. Never keeps a
// node alive; dead entries are pruned as it grows and dropped with the last tape.
struct Registry {
  absl::flat_hash_map<const Storage*, std::vector<Entry>> by_storage;
  size_t entries = 0;
  size_t prune_at = 1024;
};
thread_local bool t_registry_gone = false;  // trivially destructible: readable at thread exit
struct RegistryGuard {
  Registry registry;
  ~RegistryGuard() { t_registry_gone = true; }
};
thread_local RegistryGuard t_registry;

void Prune(Registry& r) {
  r.entries = 0;
  for (auto it = r.by_storage.begin(); it != r.by_storage.end();) {
    std::vector<Entry>& list = it->second;
    std::erase_if(list, [](const Entry& e) { return e.node.expired(); });
    r.entries += list.size();
    if (list.empty()) {
      r.by_storage.erase(it++);
    } else {
      ++it;
    }
  }
  r.prune_at = std::max<size_t>(1024, 2 * r.entries);
}

}  // namespace

bool CheaperToRecompute(const jit::Function& primal, size_t nonzero_partials, int vector_bits) {
  if (nonzero_partials == 0) return false;  // nothing would be stored
  const int64_t per_partial = std::max(1, vector_bits / kVectorBitsPerRecomputedOp);
  return jit::TotalWork(primal) <= per_partial * static_cast<int64_t>(nonzero_partials);
}

PartialsPlan PlanPartials(const jit::Function& primal, size_t nonzero_partials, size_t partial_bytes,
                          Device device) {
  switch (InnermostTapeMode()) {
    case PartialsMode::kCache: return {.cache = true};
    case PartialsMode::kRecompute: return {.cache = false};
    case PartialsMode::kAuto: break;
  }
  const bool cache = ActivePartialsMode(partial_bytes) == PartialsMode::kCache &&
                     !CheaperToRecompute(primal, nonzero_partials, VectorBitsFor(device));
  return {.cache = cache, .keep_arguments_on_write = !cache};
}

void NoteRecomputingNode(const std::shared_ptr<KeepsArgumentsOnWrite>& node,
                         std::span<const std::shared_ptr<ArrayImpl>> inputs) {
  if (t_registry_gone || node == nullptr) return;
  Registry& r = t_registry.registry;
  const uint64_t epoch = InPlaceWriteEpoch();
  for (const std::shared_ptr<ArrayImpl>& in : inputs) {
    if (in == nullptr || in->storage == nullptr) continue;
    r.by_storage[in->storage.get()].push_back(Entry{node, epoch});
    ++r.entries;
  }
  if (r.entries > r.prune_at) Prune(r);
}

void KeepArgumentsBeforeWrite(const StorageList& storages) {
  if (t_registry_gone) return;
  Registry& r = t_registry.registry;
  if (r.by_storage.empty()) return;
  // Taken out first: copying runs kernels. A node reading these storages
  // keeps copies of every argument over them, so it needs no second call.
  std::vector<Entry> readers;
  for (const Storage* s : storages) {
    auto it = r.by_storage.find(s);
    if (it == r.by_storage.end()) continue;
    r.entries -= it->second.size();
    for (Entry& e : it->second) readers.push_back(std::move(e));
    r.by_storage.erase(it);
  }
  ArgumentCopies copies;
  for (const Entry& e : readers) {
    if (auto node = e.node.lock()) node->KeepArgumentsBeforeWrite(storages, e.epoch, copies);
  }
}

void ForgetRecomputingNodes() {
  if (t_registry_gone) return;
  Registry& r = t_registry.registry;
  r.by_storage.clear();
  r.entries = 0;
  r.prune_at = 1024;
}

size_t RecomputingEntriesForTesting() { return t_registry_gone ? 0 : t_registry.registry.entries; }

}  // namespace dualcast::detail
