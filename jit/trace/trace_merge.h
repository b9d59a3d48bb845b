// The tracer's decision tree and the merge that turns it into structured IR (internal to the tracer).
//
// The tracer (trace.cc) records every run of a kernel lambda into one
// hash-consed DAG (a scratch Function whose entry block holds all nodes in
// creation order, which is a topological order) and files each run under its
// sequence of branch decisions. MergePaths turns the tree into nested if/else
// blocks in two steps.
//
// 1. Joins (re-joining paths). Bottom-up, at each decision the two sides'
//    programs are anti-unified: where their remaining work is the same up to
//    the values that differ, the decision becomes one If whose results are
//    those values (a phi per value that differs) and the common continuation
//    is kept once, after the If. So k sequential independent `if`s give IR
//    linear in k although the lambda ran 2^k times. Sides that cannot be
//    matched stay nested (a Branch), as before. A program is a sequence of
//    Joins ending in a Leaf (the outputs) or a Branch.
//      then: if c2 { a*y*y } else { a*y+y }     else: if c2 { (a+y)*y } else { a+y+y }
//      -> if c1 { yield a*y } else { yield a+y } -> p;  if c2 { yield p*y } else { yield p+y }
// 2. Placement by need sets, so that each path evaluates every node it needs
//    exactly once and no node it does not need:
//      need(leaf)  = closure(outputs of the leaf)
//      need(if)    = closure(condition) ∪ (need(then) ∩ need(else))
//      need(block) = ∪ need(item) over the block's Joins and its end
//    A block computes need(block) minus what its ancestors already hold, each
//    node just before the first item that uses it. A node used by both sides
//    of a branch is thus computed above it; one used by one side sinks into it.
//
// dc::cond groups (CondGroup) are If nodes inside the DAG: the closure of a
// group is its condition only, and the values only its sides need are computed
// inside the If they emit, so each side is traced once and runs only when taken.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jit/ir/ir.h"

namespace dualcast::jit::trace_detail {

struct DecisionNode {
  ValueId cond = kNoValue;          // DAG node of the condition; kNoValue until decided
  int child[2] = {-1, -1};          // [1]: the condition was true (then), [0]: false (else)
  bool leaf = false;                // a run ended here
  std::vector<ValueId> outputs;     // leaf only: the DAG nodes returned
};

// One dc::cond: in the DAG an Op::kIf node (operand: pred, `index`: the
// group's position) and one Op::kResult node per value (operand: the If node,
// `index`: which value), like the IR's own structured If.
struct CondGroup {
  ValueId pred = kNoValue;
  std::vector<ValueId> then_values, else_values;  // one per result, pairwise of one type
  std::vector<ValueId> results;                   // the kResult nodes, by index
};

// Builds the function `name` from `dag` (inputs are its first instructions),
// the decision tree `tree` (root at index 0, every inner node with both
// children, every leaf with outputs of one type) and the dc::cond groups the
// DAG refers to. Errors are internal bugs.
absl::StatusOr<Function> MergePaths(const std::string& name, const Function& dag,
                                    const std::vector<DecisionNode>& tree,
                                    const std::vector<CondGroup>& conds);

}  // namespace dualcast::jit::trace_detail
