// Merging traced paths into structured IR: op placement by need sets (see trace_merge.h).
#include "jit/trace_merge.h"

#include <algorithm>
#include <iterator>

#include "jit/error.h"

namespace dualcast::jit::trace_detail {

namespace {

using ValueSet = std::vector<ValueId>;  // sorted by id (a topological order of the DAG)

class Merger {
 public:
  Merger(const Function& dag, const std::vector<DecisionNode>& tree, Function& out)
      : dag_(dag), tree_(tree), builder_(out), need_(tree.size()),
        mark_(dag.insts.size(), 0), emitted_(dag.insts.size(), false),
        map_(dag.insts.size(), kNoValue) {}

  absl::Status Run() {
    for (ValueId in : dag_.inputs) {
      map_[in] = builder_.Input(dag_.type(in));
      emitted_[in] = true;
    }
    for (const DecisionNode& node : tree_) {
      if (!node.leaf && (node.cond == kNoValue || node.child[0] < 0 || node.child[1] < 0)) {
        return MakeStatus(ErrorKind::kInternal, "tracer: a decision node is incomplete");
      }
    }
    root_ = Collapse(0);
    ComputeNeed(root_);
    RankCanonically();
    builder_.Return(Emit(root_));
    return absl::OkStatus();
  }

 private:
  // All nodes `roots` depend on, themselves included.
  ValueSet Closure(const std::vector<ValueId>& roots) {
    ++stamp_;
    ValueSet result;
    std::vector<ValueId> stack(roots.begin(), roots.end());
    while (!stack.empty()) {
      ValueId v = stack.back();
      stack.pop_back();
      if (mark_[v] == stamp_) continue;
      mark_[v] = stamp_;
      result.push_back(v);
      for (ValueId a : dag_.inst(v).operands()) stack.push_back(a);
    }
    std::sort(result.begin(), result.end());
    return result;
  }

  // A decision whose two sides do the same thing (e.g. `c ? y : y`) is
  // dropped, so that its condition is not computed for nothing. Returns the
  // node that stands for n; children are rewritten in place.
  int Collapse(int n) {
    DecisionNode& node = tree_[n];
    if (node.leaf) return n;
    for (int& c : node.child) c = Collapse(c);
    return SameSubtree(node.child[0], node.child[1]) ? node.child[1] : n;
  }

  bool SameSubtree(int a, int b) const {
    if (a == b) return true;
    const DecisionNode& x = tree_[a];
    const DecisionNode& y = tree_[b];
    if (x.leaf || y.leaf) return x.leaf && y.leaf && x.outputs == y.outputs;
    return x.cond == y.cond && SameSubtree(x.child[0], y.child[0]) &&
           SameSubtree(x.child[1], y.child[1]);
  }

  void ComputeNeed(int n) {
    const DecisionNode& node = tree_[n];
    if (node.leaf) {
      need_[n] = Closure(node.outputs);
      return;
    }
    for (int c : node.child) ComputeNeed(c);
    ValueSet both;
    std::set_intersection(need_[node.child[0]].begin(), need_[node.child[0]].end(),
                          need_[node.child[1]].begin(), need_[node.child[1]].end(),
                          std::back_inserter(both));
    ValueSet cond = Closure({node.cond});
    std::set_union(cond.begin(), cond.end(), both.begin(), both.end(),
                   std::back_inserter(need_[n]));
  }

  // The order nodes are emitted in within a block: a post-order walk of the
  // operands from the tree's conditions and outputs (the tree in
  // pre-order, then-side first). It depends only on the kernel's structure, not on the order
  // in which the C++ compiler evaluated operands while the DAG was recorded.
  void RankCanonically() {
    rank_.assign(dag_.insts.size(), kUnranked);
    uint32_t next = 0;
    std::vector<std::pair<ValueId, int>> stack;  // node, next operand to visit
    auto visit = [&](ValueId root) {
      if (rank_[root] != kUnranked) return;
      stack.push_back({root, 0});
      while (!stack.empty()) {
        auto& [v, k] = stack.back();
        const Inst& inst = dag_.inst(v);
        if (k < inst.num_args) {
          ValueId a = inst.args[k++];
          // A DAG has no cycles, so an unranked operand is never already on the stack.
          if (rank_[a] == kUnranked) stack.push_back({a, 0});
          continue;
        }
        rank_[v] = next++;
        stack.pop_back();
      }
    };
    std::vector<int> pending = {root_};
    while (!pending.empty()) {
      const DecisionNode& node = tree_[pending.back()];
      pending.pop_back();
      if (node.leaf) {
        for (ValueId out : node.outputs) visit(out);
      } else {
        visit(node.cond);
        pending.push_back(node.child[0]);
        pending.push_back(node.child[1]);  // then-side first
      }
    }
  }

  void EmitValue(ValueId v) {
    const Inst& inst = dag_.inst(v);
    if (inst.op == Op::kConst) {
      map_[v] = builder_.Const(inst.type, inst.imm);
    } else if (inst.op == Op::kCast) {
      map_[v] = builder_.Cast(inst.type, map_[inst.args[0]]);
    } else {
      ValueId args[3];
      for (int i = 0; i < inst.num_args; ++i) args[i] = map_[inst.args[i]];
      map_[v] = builder_.Emit(inst.op, std::span<const ValueId>(args, inst.num_args));
    }
  }

  // Emits node n's block content into the builder's current block and
  // returns the values it yields (the leaf outputs, or the If's results).
  std::vector<ValueId> Emit(int n) {
    std::vector<ValueId> fresh;
    for (ValueId v : need_[n]) {
      if (!emitted_[v]) fresh.push_back(v);
    }
    std::sort(fresh.begin(), fresh.end(),
              [&](ValueId a, ValueId b) { return rank_[a] < rank_[b]; });
    for (ValueId v : fresh) {
      EmitValue(v);
      emitted_[v] = true;
    }
    const DecisionNode& node = tree_[n];
    std::vector<ValueId> yields;
    if (node.leaf) {
      for (ValueId v : node.outputs) yields.push_back(map_[v]);
    } else {
      builder_.BeginIf(map_[node.cond]);
      std::vector<ValueId> then_yields = Emit(node.child[1]);
      builder_.BeginElse(then_yields);
      std::vector<ValueId> else_yields = Emit(node.child[0]);
      yields = builder_.EndIf(else_yields);
    }
    // Out of scope for the siblings of this block.
    for (ValueId v : fresh) emitted_[v] = false;
    return yields;
  }

  const Function& dag_;
  std::vector<DecisionNode> tree_;  // a copy: Collapse rewrites children
  int root_ = 0;
  Builder builder_;
  static constexpr uint32_t kUnranked = ~uint32_t{0};

  std::vector<ValueSet> need_;
  std::vector<uint32_t> rank_;
  std::vector<uint32_t> mark_;
  uint32_t stamp_ = 0;
  std::vector<bool> emitted_;
  std::vector<ValueId> map_;
};

}  // namespace

absl::StatusOr<Function> MergePaths(const std::string& name, const Function& dag,
                                    const std::vector<DecisionNode>& tree) {
  Function out(name);
  if (tree.empty()) return MakeStatus(ErrorKind::kInternal, "tracer: no paths were traced");
  Merger merger(dag, tree, out);
  if (auto s = merger.Run(); !s.ok()) return s;
  return out;
}

}  // namespace dualcast::jit::trace_detail
