// The tape node of a fused broadcast group: its reverse rule, x̄_j += sum_to(Σ_m ȳ_m ⊙ P[m][j], shape(x_j)).
//
// The lazy graph (lazy.cc) builds one BroadcastGradInfo per fused group it
// evaluates while a tape is recording and hands it to MakeBroadcastGradNode.
// In cache mode the forward kernel already wrote the partials; in recompute
// mode `partials` is empty and the backward re-runs the dual kernel with the
// output adjoints as extra inputs, writing adjoint contributions directly.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dualcast/detail/array_impl.hpp"
#include "dualcast/detail/grad_node.hpp"
#include "jit/ir/ir.h"
#include "jit/passes/compose.h"

namespace dualcast::detail {

struct BroadcastGradInfo {
  std::string name;
  // The fused function over the leaves; its outputs are the group's outputs.
  std::shared_ptr<const jit::Function> primal;
  std::vector<std::shared_ptr<ArrayImpl>> leaves;
  std::vector<int64_t> out_shape;  // the broadcast shape (every output has it)
  std::vector<int> wrt;            // leaf positions differentiated (usually all)
  // Per output: consumed by other nodes fused into the same kernel (see
  // GradNode::consumed_inside).
  std::vector<bool> consumed_inside;
  // Cache mode: partials[m * wrt.size() + j] = dy_m/dx_{wrt[j]} with shape
  // out_shape; null where structurally zero. Empty in recompute mode.
  std::vector<std::shared_ptr<ArrayImpl>> partials;
  // Cache mode, per output: whether its partials were stored. The group's
  // requested result always is; extra outputs (intermediates a user still
  // holds, which seldom receive an adjoint) are not, and an adjoint reaching
  // one makes this node recompute instead (reading the leaves again).
  // Empty means every output is cached.
  std::vector<bool> cached_outputs;
  // The group's wiring (Compose's nodes over the leaves, and the source of
  // each output), kept when some output is consumed_inside, so that a
  // gradient with respect to such an output can cut the group there
  // (GradNode::Cut). Empty otherwise.
  std::vector<jit::FusionNode> fusion;
  std::vector<jit::FusionSource> fusion_outputs;
  // Per output, per leaf: whether it reads that leaf (GradNode::reads).
  std::vector<std::vector<bool>> reads;
  // Recompute mode chosen by kAuto: the node keeps a copy of an argument
  // before it is written in place (runtime/auto_partials.h).
  bool keep_arguments_on_write = false;
  // Recorded by a forward pass (not a part of a Cut, made in the sweep): a
  // node that may read its arguments again in the sweep (recompute mode, or
  // an uncached output or a cut) copies those that are views of the user's
  // writable memory now, since the user may write that memory before the
  // sweep (grad_kernels.h, CopyIfUserMemory).
  bool copy_user_memory = false;
};

// Per output `sources[m]`, per leaf: whether it reads that leaf, through
// the fused nodes (jit::Compose's wiring).
std::vector<std::vector<bool>> FusedReads(const std::vector<jit::FusionNode>& nodes,
                                          const std::vector<jit::FusionSource>& sources,
                                          size_t num_leaves);

std::shared_ptr<GradNode> MakeBroadcastGradNode(BroadcastGradInfo info);

// Reduces `full` (the broadcast shape) to `shape` by summing over the axes
// along which an input of that shape was broadcast (NumPy rules).
std::shared_ptr<ArrayImpl> SumTo(const ArrayImpl& full, const std::vector<int64_t>& shape);

}  // namespace dualcast::detail
