// Inlining one Function into another, and composing a fused broadcast chain into one Function.
//
// Fusion is what makes a chain of broadcasts one kernel: `y = f.(x, a);
// z = g.(y, b); w = h.(z, y)` must read x, a, b once and write w (and y, if
// someone outside the chain still needs it) once, with no intermediate arrays.
// In the IR that is plain inlining: each node's body is emitted into a single
// function over the leaf inputs, its inputs bound to the values of the nodes
// (or leaves) that feed it. Because the emission goes through the Builder,
// hash-consing shares work between nodes for free (two kernels that both
// compute exp(x) compute it once), and the jvp pass, run on the composed
// function, differentiates the whole chain with respect to the leaves: the
// chain rule happens in the dual lanes, in registers.
//
// Branches are inlined as they are (nested Ifs stay nested where the node's
// code sits); nothing is hoisted out of them. Compose does not optimise
// beyond hash-consing; run Optimize on the result.
//
// Wiring errors (a node reading a later node — a cycle or a non-topological
// order —, out-of-range indices, wrong arity, type mismatches, a null
// function) throw dualcast::Error(kInternal): the runtime builds the graph,
// so a bad one is a dualcast bug, and the message says which node and input.
//
// Example:
//   // y = f(x, a); z = g(y, b); w = h(z, y); outputs {w, y}
//   std::vector<FusionNode> nodes = {
//     {f, {{FusionSource::kLeaf, 0, 0}, {FusionSource::kLeaf, 1, 0}}},   // node 0: y
//     {g, {{FusionSource::kNode, 0, 0}, {FusionSource::kLeaf, 2, 0}}},   // node 1: z
//     {h, {{FusionSource::kNode, 1, 0}, {FusionSource::kNode, 0, 0}}}};  // node 2: w
//   std::vector<FusionSource> outs = {{FusionSource::kNode, 2, 0}, {FusionSource::kNode, 0, 0}};
//   Function fused = Compose("fused", leaf_types /*x, a, b*/, nodes, outs);
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "jit/ir/ir.h"

namespace dualcast::jit {

// Emits `callee`'s body into the builder's current block with its inputs
// bound to `args`; returns the values of its outputs. Throws
// Error(kInternal) when the count or types of `args` do not match.
std::vector<ValueId> Inline(Builder& b, const Function& callee, std::span<const ValueId> args);

// An empty function named `name` to build from `primal` (its vjp, its one-pass
// gradient, its fused sum), carrying primal's backend hints: the kernel's
// TraceOptions (vector width) hold for what is derived from it.
Function DerivedFunction(const Function& primal, std::string name);

// Where a fused node's input (or a fused output) comes from: leaf input
// `index` (`output` unused, keep 0), or output `output` of node `index`.
struct FusionSource {
  enum Kind { kLeaf, kNode } kind = kLeaf;
  int index = 0;
  int output = 0;
};

struct FusionNode {
  std::shared_ptr<const Function> function;
  std::vector<FusionSource> inputs;  // one per function input
};

// One function whose inputs are the leaves (`leaf_types`, in order) and whose
// outputs are `outputs`, in order. `nodes` must be in topological order: a
// node may read leaves and earlier nodes only.
Function Compose(std::string name, std::span<const Type> leaf_types,
                 std::span<const FusionNode> nodes, std::span<const FusionSource> outputs);

}  // namespace dualcast::jit
