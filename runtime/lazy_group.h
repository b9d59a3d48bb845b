// The lazy graph's group planning (lazy.cc), shared with lazy reductions and the one-pass gradient.
//
// A pending reduction (lazy_reduce.cc) and the one-pass gradient
// (one_pass.cc) run the fused group that produces their operand with extra
// outputs, so they need the same gathering, output selection and
// composition Materialize uses; lazy.cc defines them, these files reuse them.
// Everything here requires the graph lock held (GraphLock). Unlike
// Materialize, those two callers compose, compile and launch while holding
// the lock (they are rare: once per loss); they must not touch a group that
// another thread is running without the lock (AnyRunning / Wait).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "dualcast/detail/array_impl.hpp"
#include "dualcast/detail/broadcast_grad.hpp"
#include "dualcast/detail/lazy.hpp"
#include "jit/passes/compose.h"
#include "runtime/graph_lock.h"

namespace dualcast::detail {

// Marks this thread as launching a group while it lives: Execute then does
// not materialise the group's leaves (computed already; an array never
// becomes pending again) and does not lock.
class LaunchingGroup {
 public:
  LaunchingGroup();
  ~LaunchingGroup();
  LaunchingGroup(const LaunchingGroup&) = delete;
  LaunchingGroup& operator=(const LaunchingGroup&) = delete;

 private:
  bool was_;
};

// Holds the lazy graph's lock and marks this thread as holding it (Execute,
// run inside a group, then skips re-locking on its already computed leaves).
class GraphLock {
 public:
  GraphLock();
  GraphLock(const GraphLock&) = delete;
  GraphLock& operator=(const GraphLock&) = delete;
  // Waits (lock released meanwhile) until some group run without the lock ends.
  void Wait();
  std::unique_lock<GraphMutex>& lock() { return lock_; }

 private:
  std::unique_lock<GraphMutex> lock_;
  LaunchingGroup launching_;  // after lock_: marked while the lock is held
};

// Gives pending array `t` its values, drops its node and flags it computed
// (ArrayImpl::computed, with release: the lean path then reads it without
// the lock): the one way a pending array becomes computed. Under the graph
// lock, or in a read section by the thread that claimed `t`.
void Publish(ArrayImpl& t, std::shared_ptr<Storage> storage, std::vector<int64_t> strides,
             int64_t offset);

// Nodes, topological order, root's node last; inline storage: most groups
// are small, and a group of one is built under the graph lock.
using NodeList = absl::InlinedVector<std::shared_ptr<LazyNode>, 4>;
struct Group {
  NodeList nodes;
};
// Each node's group_index is its position in `nodes` until the next Gather.
Group Gather(const std::shared_ptr<LazyNode>& root);
// Whether another thread is running part of `g` without the lock.
bool AnyRunning(const Group& g);

// One output of a group node that is still alive.
struct LiveOutput {
  std::shared_ptr<ArrayImpl> impl;
  int node = 0;
  int output = 0;
  long internal_refs = 0;  // inputs of group nodes that are this array
  bool held_outside = false;
};
using LiveList = absl::InlinedVector<LiveOutput, 2>;
// Right after Gather(g).
LiveList LiveOutputs(const Group& g);

// What one run of a group computes: the composed function over the leaves,
// its outputs (the root first, then every other output held from outside)
// and the arrays they fill.
struct GroupPlan {
  std::string name;
  std::shared_ptr<const jit::Function> primal;
  std::vector<std::shared_ptr<ArrayImpl>> leaves;  // each distinct array once
  absl::InlinedVector<bool, 8> leaf_constant;       // numbers turned into arrays
  std::vector<jit::FusionNode> nodes;
  std::vector<jit::FusionSource> sources;           // per output
  absl::InlinedVector<std::shared_ptr<ArrayImpl>, 2> targets;  // per output; [0] is the root
  std::vector<bool> consumed_inside;                // per output
  std::vector<int64_t> shape;                       // the iteration shape
  DType dtype = DType::kF32;
};
// Consumes `live` (drops its references before returning, so use counts are
// exact again for the caller).
GroupPlan PlanGroup(const Group& g, const std::shared_ptr<ArrayImpl>& root, LiveList live);

// The tape's view of a plan run without cached partials (the reverse sweep
// recomputes from the leaves): wiring, reads and the differentiated leaves.
// Takes what it keeps from `plan` (which is left moved-from).
BroadcastGradInfo RecomputeGradInfo(GroupPlan&& plan);

// Gives every output m with values[m] its storage (a null value leaves that
// output pending) and notes the group's origins.
void FillTargets(const GroupPlan& plan, const std::vector<std::shared_ptr<ArrayImpl>>& values);

// Materialises `root` (a pending broadcast output) and what it needs; may
// release the lock meanwhile. Records for the tape are appended to `records`
// and must be passed to Record once the lock is released.
struct PendingRecord {
  BroadcastGradInfo info;
  std::vector<std::shared_ptr<ArrayImpl>> outputs;
};
void MaterializeLocked(const std::shared_ptr<ArrayImpl>& root, GraphLock& lock,
                       std::vector<PendingRecord>* records);

// Defined in lazy_reduce.cc: materialises a pending reduction's output.
void MaterializeReduction(const std::shared_ptr<ArrayImpl>& root);

}  // namespace dualcast::detail
