// The lazy graph's lean path: a ready broadcast evaluated with no plan, no composition and, off the lock, only a read section.
#include "runtime/lazy_ready.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>

#include "dualcast/detail/execute.hpp"
#include "runtime/graph_lock.h"
#include "runtime/launch_plan.h"

namespace dualcast::detail {

bool LeanEligible(const LazyNode& node) {
  constexpr size_t kScanned = 16;  // pairwise distinctness by a scan
  const auto& inputs = node.inputs;
  if (node.outputs.size() != 1 || node.reduce != nullptr || !node.device.is_cpu() ||
      inputs.size() > kScanned) {
    return false;
  }
  for (size_t a = 0; a < inputs.size(); ++a) {
    for (size_t b = a + 1; b < inputs.size(); ++b) {
      if (inputs[a] == inputs[b]) return false;
    }
  }
  return true;
}

LeanResult LaunchLean(const LazyNode& node, const std::shared_ptr<ArrayImpl>& root) {
  LaunchingGroup launching;
  LeanResult r;
  r.storage = RunPlanIntoStorage(node.function.get(), node.inputs);
  if (r.storage == nullptr) r.computed = Execute(node.name, node.function, node.inputs)[0];
  // `root` is still pending and ours: nobody else reads it yet.
  NoteOrigin(node.name, node.inputs, ArraySpan(&root, 1));
  return r;
}

void FillLean(LeanResult&& r, const std::shared_ptr<ArrayImpl>& root, NodeList* freed) {
  freed->push_back(std::move(root->pending));
  if (r.computed != nullptr) {
    Publish(*root, std::move(r.computed->storage), std::move(r.computed->strides), r.computed->offset);
  } else {
    // Contiguous, as Broadcast gave `root` its strides.
    Publish(*root, std::move(r.storage), std::move(root->strides), root->offset);
  }
}

PendingState ReadPendingState(ArrayImpl& a) {
  if (a.computed.load(std::memory_order_acquire)) return {nullptr, a.storage.get()};
  {
    GraphReadSection read;
    if (read.ok()) {
      // The claim keeps a lean launch from filling `a` while it is read; the
      // section keeps the exclusive path out.
      if (!a.claimed.exchange(true, std::memory_order_acquire)) {
        PendingState state{a.pending, a.storage.get()};
        if (state.node == nullptr) {  // computed: flagged for good, as MaterializeReady does (the claim stays)
          a.computed.store(true, std::memory_order_release);
        } else {
          a.claimed.store(false, std::memory_order_release);
        }
        return state;
      }
      if (a.computed.load(std::memory_order_acquire)) return {nullptr, a.storage.get()};
    }
  }
  // Claimed by a thread computing it now: its fill is in a read section or
  // under the lock, both of which the lock waits out.
  std::lock_guard<GraphMutex> lock(LazyGraphMutex());
  return {a.pending, a.storage.get()};
}

bool MaterializeReady(ArrayImpl& impl, bool launch, NodeList* freed) {
  LazyNode* node = nullptr;
  std::shared_ptr<ArrayImpl> root;
  {
    GraphReadSection read;
    if (!read.ok()) return false;
    // Readers exclude each other on `impl` by the claim; a writer is
    // excluded by the section, and finds the node marked running after it.
    if (impl.claimed.exchange(true, std::memory_order_acquire)) return false;
    node = impl.pending.get();
    if (node == nullptr) {  // computed under the lock earlier (the claim stays: it is done)
      impl.computed.store(true, std::memory_order_release);
      return true;
    }
    if (!launch || !LeanEligible(*node) || node->running ||
        !std::all_of(node->inputs.begin(), node->inputs.end(), [](const auto& in) {
          return in->computed.load(std::memory_order_acquire);
        })) {
      impl.claimed.store(false, std::memory_order_release);
      return false;
    }
    root = node->outputs[0].lock();  // `impl` itself, alive; else the lock's path reports it
    if (root.get() != &impl) {
      impl.claimed.store(false, std::memory_order_release);
      return false;
    }
    node->running = true;
  }
  LeanResult r;
  try {
    r = LaunchLean(*node, root);
  } catch (...) {
    WithGraph([&] {
      node->running = false;
      impl.claimed.store(false, std::memory_order_release);
    });
    NotifyGraphWaiters();
    throw;
  }
  WithGraph([&] {
    node->running = false;
    FillLean(std::move(r), root, freed);
  });
  NotifyGraphWaiters();
  return true;
}

}  // namespace dualcast::detail
