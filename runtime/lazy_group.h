// The lazy graph's group planning (lazy.cc), shared with lazy reductions and the one-pass gradient.
//
// A pending reduction (lazy_reduce.cc) and the one-pass gradient
// (one_pass.cc) run the fused group that produces their operand with extra
// outputs, so they need the same gathering, output selection and
// composition Materialize uses; lazy.cc defines them, these files reuse them.
// Everything here requires GraphMutex() held (GraphLock).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "dualcast/detail/array_impl.hpp"
#include "dualcast/detail/broadcast_grad.hpp"
#include "dualcast/detail/lazy.hpp"
#include "jit/compose.h"

namespace dualcast::detail {

// Holds the lazy graph's lock and marks this thread as holding it (Execute,
// run inside a group, then skips re-locking on its already computed leaves).
class GraphLock {
 public:
  GraphLock();
  ~GraphLock();
  GraphLock(const GraphLock&) = delete;
  GraphLock& operator=(const GraphLock&) = delete;
};

struct Group {
  std::vector<std::shared_ptr<LazyNode>> nodes;  // topological order, root's node last
  absl::flat_hash_map<const LazyNode*, int> index;
};
Group Gather(const std::shared_ptr<LazyNode>& root);

// One output of a group node that is still alive.
struct LiveOutput {
  std::shared_ptr<ArrayImpl> impl;
  int node = 0;
  int output = 0;
  long internal_refs = 0;  // inputs of group nodes that are this array
  bool held_outside = false;
};
std::vector<LiveOutput> LiveOutputs(const Group& g);

// What one run of a group computes: the composed function over the leaves,
// its outputs (the root first, then every other output held from outside)
// and the arrays they fill.
struct GroupPlan {
  std::string name;
  std::shared_ptr<const jit::Function> primal;
  std::vector<std::shared_ptr<ArrayImpl>> leaves;  // each distinct array once
  std::vector<bool> leaf_constant;                  // numbers turned into arrays
  std::vector<jit::FusionNode> nodes;
  std::vector<jit::FusionSource> sources;           // per output
  std::vector<std::shared_ptr<ArrayImpl>> targets;  // per output; targets[0] is the root
  std::vector<bool> consumed_inside;                // per output
  std::vector<int64_t> shape;                       // the iteration shape
  DType dtype = DType::kF32;
};
// Consumes `live` (drops its references before returning, so use counts are
// exact again for the caller).
GroupPlan PlanGroup(const Group& g, const std::shared_ptr<ArrayImpl>& root,
                    std::vector<LiveOutput> live);

// The tape's view of a plan run without cached partials (the reverse sweep
// recomputes from the leaves): wiring, reads and the differentiated leaves.
BroadcastGradInfo RecomputeGradInfo(const GroupPlan& plan);

// Gives every output m with values[m] its storage (a null value leaves that
// output pending) and notes the group's origins.
void FillTargets(const GroupPlan& plan, const std::vector<std::shared_ptr<ArrayImpl>>& values);

// Materialises `root` (a pending broadcast output) and what it needs.
// Records for the tape are appended to `records` and must be passed to
// Record once the lock is released.
struct PendingRecord {
  BroadcastGradInfo info;
  std::vector<std::shared_ptr<ArrayImpl>> outputs;
};
void MaterializeLocked(const std::shared_ptr<ArrayImpl>& root, std::vector<PendingRecord>* records);

// Defined in lazy_reduce.cc: materialises a pending reduction's output.
void MaterializeReduction(const std::shared_ptr<ArrayImpl>& root);

}  // namespace dualcast::detail
