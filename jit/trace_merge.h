// The tracer's decision tree and the merge that turns it into structured IR (internal to the tracer).
//
// The tracer (trace.cc) records every run of a kernel lambda into one
// hash-consed DAG (a scratch Function whose entry block holds all nodes in
// creation order, which is a topological order) and files each run under its
// sequence of branch decisions. MergePaths places the DAG nodes into nested
// if/else blocks so that each path evaluates every node it needs exactly once
// and no node it does not need:
//   need(leaf) = closure(outputs of the leaf)
//   need(B)    = closure(condition of B) ∪ (need(then) ∩ need(else))
// and block B holds need(B) minus what its ancestors already hold. A node used
// by both sides of a branch is thus computed above it; one used by one side
// sinks into that side (and may appear in several sibling blocks).
//
// Example (decision tree of `if (y > 0) return exp(x) * y; return y;`):
//   root {cond: gt(y, 0), then: leaf {mul(exp(x), y)}, else: leaf {y}}
//   -> entry: gt; if { exp; mul; yield mul } else { yield y }
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jit/ir.h"

namespace dualcast::jit::trace_detail {

struct DecisionNode {
  ValueId cond = kNoValue;          // DAG node of the condition; kNoValue until decided
  int child[2] = {-1, -1};          // [1]: the condition was true (then), [0]: false (else)
  bool leaf = false;                // a run ended here
  std::vector<ValueId> outputs;     // leaf only: the DAG nodes returned
};

// Builds the function `name` from `dag` (inputs are its first instructions)
// and the decision tree `tree` (root at index 0, every inner node with both
// children, every leaf with outputs of one type). Errors are internal bugs.
absl::StatusOr<Function> MergePaths(const std::string& name, const Function& dag,
                                    const std::vector<DecisionNode>& tree);

}  // namespace dualcast::jit::trace_detail
