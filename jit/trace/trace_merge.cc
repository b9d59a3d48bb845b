// Merging traced paths into structured IR: joins by anti-unification, then op placement by need sets (see trace_merge.h).
#include "jit/trace/trace_merge.h"

#include <algorithm>
#include <iterator>
#include <unordered_map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "jit/error.h"

namespace dualcast::jit::trace_detail {

namespace {

using ValueSet = std::vector<ValueId>;  // sorted by id

bool Contains(const ValueSet& set, ValueId v) {
  return std::binary_search(set.begin(), set.end(), v);
}

// A step of a program. A program (Region) is zero or more Joins followed by
// one Leaf or Branch.
struct Item {
  enum Kind : uint8_t { kLeaf, kBranch, kJoin };
  Kind kind = kLeaf;
  ValueId cond = kNoValue;       // Branch, Join
  int side[2] = {-1, -1};        // Branch, Join: regions, [1] then, [0] else
  std::vector<ValueId> values;   // Leaf: the values yielded; Join: its result placeholders
};
struct Region {
  std::vector<int> items;
};

class Merger {
 public:
  Merger(const Function& dag, const std::vector<DecisionNode>& tree,
         const std::vector<CondGroup>& conds, Function& out)
      : tree_(tree), insts_(dag.insts), groups_(conds), inputs_(dag.inputs), builder_(out) {}

  absl::Status Run() {
    for (const DecisionNode& node : tree_) {
      if (!node.leaf && (node.cond == kNoValue || node.child[0] < 0 || node.child[1] < 0)) {
        return MakeStatus(ErrorKind::kInternal, "tracer: a decision node is incomplete");
      }
    }
    root_ = Build(0);
    // From here on the DAG no longer grows.
    emitted_.assign(insts_.size(), false);
    map_.assign(insts_.size(), kNoValue);
    for (ValueId in : inputs_) {
      map_[in] = builder_.Input(insts_[in].type);
      emitted_[in] = true;
    }
    region_need_.resize(regions_.size());
    item_need_.resize(items_.size());
    item_full_.resize(items_.size());
    ComputeNeed(root_);
    RankCanonically();
    builder_.Return(EmitRegion(root_));
    return absl::OkStatus();
  }

 private:
  bool IsPlaceholder(ValueId v) const {
    return insts_[v].op == Op::kResult && insts_[v].num_args == 0;
  }
  bool IsGroup(ValueId v) const { return insts_[v].op == Op::kIf; }

  // Everything v is computed from: its operands, and for a dc::cond group
  // also the values of both sides.
  template <class Fn>
  void ForEachDep(ValueId v, Fn&& fn) const {
    const Inst& inst = insts_[v];
    for (int i = 0; i < inst.num_args; ++i) fn(inst.args[i]);
    if (inst.op == Op::kIf) {
      const CondGroup& g = groups_[inst.index];
      for (ValueId t : g.then_values) fn(t);
      for (ValueId e : g.else_values) fn(e);
    }
  }

  // ---- step 1: programs with joins ----

  int NewItem(Item item) {
    items_.push_back(std::move(item));
    return static_cast<int>(items_.size()) - 1;
  }
  int NewRegion(std::vector<int> items) {
    regions_.push_back(Region{std::move(items)});
    return static_cast<int>(regions_.size()) - 1;
  }

  int Build(int n) {
    const DecisionNode& node = tree_[n];
    if (node.leaf) {
      Item leaf;
      leaf.values = node.outputs;
      return NewRegion({NewItem(std::move(leaf))});
    }
    int then_region = Build(node.child[1]);
    int else_region = Build(node.child[0]);
    return Decide(node.cond, then_region, else_region);
  }

  // The program for `if (cond) r1 else r2`: the longest common tail of the
  // two (the last `l` Joins and the end) that anti-unifies becomes the
  // continuation after one If yielding the values that differ.
  int Decide(ValueId cond, int r1, int r2) {
    const std::vector<int> items1 = regions_[r1].items;  // copies: regions_ grows below
    const std::vector<int> items2 = regions_[r2].items;
    const size_t joins1 = items1.size() - 1, joins2 = items2.size() - 1;
    for (size_t l = std::min(joins1, joins2) + 1; l-- > 0;) {
      for (bool eager : {false, true}) {
        int joined = TryJoin(cond, items1, items2, l, eager);
        if (joined >= 0) return joined;
      }
    }
    Item branch;
    branch.kind = Item::kBranch;
    branch.cond = cond;
    branch.side[1] = r1;
    branch.side[0] = r2;
    return NewRegion({NewItem(std::move(branch))});
  }

  // The program for `if (cond)` when the last l Joins and the ends of the
  // two programs match; -1 when they do not.
  int TryJoin(ValueId cond, const std::vector<int>& items1, const std::vector<int>& items2,
              size_t l, bool eager) {
    const size_t joins1 = items1.size() - 1, joins2 = items2.size() - 1;
    StartAttempt();
    eager_ = eager;
    for (size_t s = joins1 - l; s < items1.size(); ++s) Bind(items1[s]);
    for (size_t s = joins2 - l; s < items2.size(); ++s) Bind(items2[s]);
    tail_[0].assign(items1.begin() + static_cast<long>(joins1 - l), items1.end());
    tail_[1].assign(items2.begin() + static_cast<long>(joins2 - l), items2.end());
    std::vector<int> tail;
    for (size_t s = 0; s <= l; ++s) {
      int item = GenItem(items1[joins1 - l + s], items2[joins2 - l + s]);
      if (item < 0) return -1;
      tail.push_back(item);
    }
    std::vector<int> program;
    if (!psi_.empty()) {  // no value differs: the sides' own Joins are dead
      auto side = [&](const std::vector<int>& items, size_t joins,
                      const std::vector<ValueId>& yields) {
        std::vector<int> prefix(items.begin(), items.begin() + static_cast<long>(joins - l));
        Item leaf;
        leaf.values = yields;
        prefix.push_back(NewItem(std::move(leaf)));
        return NewRegion(std::move(prefix));
      };
      Item join;
      join.kind = Item::kJoin;
      join.cond = cond;
      join.side[1] = side(items1, joins1, psi_then_);
      join.side[0] = side(items2, joins2, psi_else_);
      join.values = psi_;
      program.push_back(NewItem(std::move(join)));
    }
    program.insert(program.end(), tail.begin(), tail.end());
    return NewRegion(std::move(program));
  }

  void StartAttempt() {
    memo_.clear();
    bound_.clear();
    depends_.clear();
    psi_.clear();
    psi_then_.clear();
    psi_else_.clear();
    depth_ = 0;
    tail_need_ready_ = false;
  }

  // The placeholders an item of the common tail defines (its own and those
  // nested in its sides): they exist only after the join, so a value using
  // one must be matched structurally, never yielded by the If.
  void Bind(int item) {
    const Item& it = items_[item];
    if (it.kind == Item::kJoin) {
      for (ValueId p : it.values) bound_.emplace(p, true);
    }
    if (it.kind != Item::kLeaf) {
      for (int r : it.side) {
        for (int sub : regions_[r].items) Bind(sub);
      }
    }
  }

  bool DependsOnBound(ValueId v) {
    if (bound_.empty()) return false;
    if (auto it = depends_.find(v); it != depends_.end()) return it->second;
    bool result = bound_.contains(v);
    if (!result) {
      ForEachDep(v, [&](ValueId d) { result = result || DependsOnBound(d); });
    }
    depends_[v] = result;
    return result;
  }

  ValueId NewPlaceholder(Type type) {
    Inst p;
    p.op = Op::kResult;
    p.type = type;
    p.num_args = 0;
    p.index = placeholders_++;
    insts_.push_back(p);
    return static_cast<ValueId>(insts_.size() - 1);
  }

  // A node made by the merge (hash-consed so that equal generalisations are one node).
  ValueId Intern(const Inst& inst) {
    const InstKey key = InstKey::Of(inst);
    if (auto it = interned_.find(key); it != interned_.end()) return it->second;
    insts_.push_back(inst);
    ValueId id = static_cast<ValueId>(insts_.size() - 1);
    interned_.emplace(key, id);
    if (inst.op == Op::kResult && inst.num_args == 1) {  // a result of a generalised dc::cond
      CondGroup& g = groups_[insts_[inst.args[0]].index];
      if (g.results.size() <= inst.index) g.results.resize(inst.index + 1, kNoValue);
      g.results[inst.index] = id;
    }
    return id;
  }

  // Anti-unification: the value that is `a` in the then-program and `b` in
  // the else-program. kNoValue when the two cannot be matched.
  ValueId Gen(ValueId a, ValueId b) {
    if (a == b) return a;
    if (auto it = memo_.find({a, b}); it != memo_.end()) return it->second;
    ValueId r = GenNew(a, b);
    memo_[{a, b}] = r;
    return r;
  }

  ValueId GenNew(ValueId a, ValueId b) {
    // A placeholder of the tail reaches here only when paired with something
    // other than its counterpart (those pairs are in memo_).
    if (bound_.contains(a) || bound_.contains(b)) return kNoValue;
    const Inst x = insts_[a], y = insts_[b];
    const bool dep = DependsOnBound(a) || DependsOnBound(b);
    bool same_shape = x.op == y.op && x.type == y.type && x.num_args == y.num_args &&
                      x.num_args > 0 && x.op != Op::kConst && x.op != Op::kInput;
    if (same_shape && x.op == Op::kIf) {
      same_shape = groups_[x.index].then_values.size() == groups_[y.index].then_values.size();
    } else if (same_shape) {
      same_shape = x.index == y.index;
    }
    int fresh = 0;  // operand pairs that differ and are not matched yet
    for (int i = 0; same_shape && i < x.num_args; ++i) {
      bool repeat = false;  // mul(a, a) vs mul(b, b) needs one phi
      for (int j = 0; j < i; ++j) repeat |= x.args[j] == x.args[i] && y.args[j] == y.args[i];
      fresh += !repeat && x.args[i] != y.args[i] && !memo_.contains({x.args[i], y.args[i]});
    }
    // Matching the structure pays when it costs at most the one phi that
    // matching the whole value would (a*y vs b*y: one product of one phi;
    // tanh(a) vs tanh(b) with a, b already matched: no phi at all), and it
    // is the only option for values of the common tail. The eager attempt
    // matches all it can: more phis, but it can expose a join the cheap one
    // misses (a and b both differ, and a later if mixes them).
    if (same_shape && (dep || eager_ || fresh <= 1 || x.op == Op::kIf)) {
      Inst n = x;
      for (int i = 0; i < x.num_args; ++i) {
        n.args[i] = Gen(x.args[i], y.args[i]);
        if (n.args[i] == kNoValue) return kNoValue;
      }
      if (x.op != Op::kIf) return Intern(n);
      CondGroup g;
      g.pred = n.args[0];
      const CondGroup gx = groups_[x.index], gy = groups_[y.index];
      ++depth_;  // the sides of a dc::cond run conditionally
      for (size_t j = 0; j < gx.then_values.size(); ++j) {
        ValueId t = Gen(gx.then_values[j], gy.then_values[j]);
        ValueId e = t == kNoValue ? kNoValue : Gen(gx.else_values[j], gy.else_values[j]);
        if (e == kNoValue) break;
        g.then_values.push_back(t);
        g.else_values.push_back(e);
      }
      --depth_;
      if (g.then_values.size() != gx.then_values.size()) return kNoValue;
      n.index = static_cast<uint32_t>(groups_.size());
      groups_.push_back(std::move(g));
      insts_.push_back(n);
      return static_cast<ValueId>(insts_.size() - 1);
    }
    if (dep || x.type != y.type || x.type == Type::kBool) return kNoValue;
    // The If computes what it yields on every path through it; inside a side
    // of the tail that is only right for values the tail needs on every path
    // anyway (or that cost nothing to yield).
    if (depth_ > 0 && !(Free(a) && Free(b))) {
      if (!tail_need_ready_) {
        tail_need_[0] = NeedOf(tail_[0]);
        tail_need_[1] = NeedOf(tail_[1]);
        tail_need_ready_ = true;
      }
      if (!(Free(a) || Contains(tail_need_[0], a)) || !(Free(b) || Contains(tail_need_[1], b))) {
        return kNoValue;
      }
    }
    ValueId p = NewPlaceholder(x.type);
    psi_.push_back(p);
    psi_then_.push_back(a);
    psi_else_.push_back(b);
    return p;
  }

  bool Free(ValueId v) const {
    Op op = insts_[v].op;
    return op == Op::kInput || op == Op::kConst || IsPlaceholder(v);
  }

  // What the program `items` needs on every path through it (see ComputeNeed),
  // on the DAG as it grows.
  ValueSet NeedOf(const std::vector<int>& items) {
    ValueSet need;
    for (int i : items) {
      const Item& item = items_[i];
      ValueSet here;
      if (item.kind == Item::kLeaf) {
        here = Closure(item.values);
      } else {
        ValueSet t = NeedOf(regions_[item.side[1]].items);
        ValueSet e = NeedOf(regions_[item.side[0]].items);
        ValueSet both;
        std::set_intersection(t.begin(), t.end(), e.begin(), e.end(), std::back_inserter(both));
        here = Union(Closure({item.cond}), both);
      }
      need = Union(need, here);
    }
    return need;
  }

  int GenRegion(int r1, int r2) {
    const std::vector<int> items1 = regions_[r1].items, items2 = regions_[r2].items;
    if (items1.size() != items2.size()) return -1;
    std::vector<int> items;
    for (size_t i = 0; i < items1.size(); ++i) {
      int item = GenItem(items1[i], items2[i]);
      if (item < 0) return -1;
      items.push_back(item);
    }
    return NewRegion(std::move(items));
  }

  int GenItem(int i1, int i2) {
    const Item a = items_[i1], b = items_[i2];  // copies: items_ grows below
    if (a.kind != b.kind || a.values.size() != b.values.size()) return -1;
    Item n;
    n.kind = a.kind;
    if (a.kind == Item::kLeaf) {
      for (size_t j = 0; j < a.values.size(); ++j) {
        ValueId v = Gen(a.values[j], b.values[j]);
        if (v == kNoValue) return -1;
        n.values.push_back(v);
      }
      return NewItem(std::move(n));
    }
    n.cond = Gen(a.cond, b.cond);
    if (n.cond == kNoValue) return -1;
    ++depth_;
    for (int s = 0; s < 2; ++s) {
      n.side[s] = GenRegion(a.side[s], b.side[s]);
      if (n.side[s] < 0) break;
    }
    --depth_;
    if (n.side[0] < 0 || n.side[1] < 0) return -1;
    for (size_t j = 0; j < a.values.size(); ++j) {  // Join: its results correspond
      if (insts_[a.values[j]].type != insts_[b.values[j]].type) return -1;
      ValueId p = NewPlaceholder(insts_[a.values[j]].type);
      memo_[{a.values[j], b.values[j]}] = p;
      n.values.push_back(p);
    }
    return NewItem(std::move(n));
  }

  // ---- step 2: placement ----

  // All nodes `roots` need, themselves included. A dc::cond group needs its
  // condition and what both of its sides need; the rest of its sides is
  // computed inside the If it emits.
  ValueSet Closure(const std::vector<ValueId>& roots) {
    if (!groups_.empty()) PrepareGroupNeeds(roots);
    return PreparedClosure(roots);
  }

  // Closure once every group it can meet has its GroupNeed memoised: one
  // walk with stamps. (Computing a group's need inside the walk would nest
  // walks, which stamps cannot serve; a hash set per walk instead cost, for
  // conds nested in then-sides, most of the trace.)
  ValueSet PreparedClosure(const std::vector<ValueId>& roots) {
    if (mark_.size() < insts_.size()) mark_.resize(insts_.size() + insts_.size() / 2, 0);
    ++stamp_;
    ValueSet result;
    std::vector<ValueId> stack(roots.begin(), roots.end());
    while (!stack.empty()) {
      ValueId v = stack.back();
      stack.pop_back();
      if (mark_[v] == stamp_) continue;
      mark_[v] = stamp_;
      result.push_back(v);
      for (ValueId a : insts_[v].operands()) stack.push_back(a);
      if (IsGroup(v)) {
        // A group's need is itself a closure (of its condition, and of both
        // sides, intersected), so its nodes need no walk of their own: taken
        // as they are, a chain of k groups, each needing the one before,
        // costs O(k) per closure rather than O(k^2) (sequential dc::conds
        // traced in time ~k^3: 400 took 2.8 s).
        for (ValueId u : group_need_.at(insts_[v].index)) {
          if (mark_[u] == stamp_) continue;
          mark_[u] = stamp_;
          result.push_back(u);
        }
      }
    }
    std::sort(result.begin(), result.end());
    return result;
  }

  // Memoises GroupNeed for the groups a Closure of `roots` can meet that lack
  // it: those reachable through operands and through the sides of such
  // groups. A group's node is made after everything it depends on (the
  // tracer and GenNew append it last), so in ascending node order each
  // group's closures meet only groups already memoised.
  void PrepareGroupNeeds(const std::vector<ValueId>& roots) {
    if (prep_mark_.size() < insts_.size()) prep_mark_.resize(insts_.size() + insts_.size() / 2, 0);
    ++prep_stamp_;
    std::vector<ValueId> pending;
    std::vector<ValueId> stack(roots.begin(), roots.end());
    while (!stack.empty()) {
      ValueId v = stack.back();
      stack.pop_back();
      if (prep_mark_[v] == prep_stamp_) continue;
      prep_mark_[v] = prep_stamp_;
      for (ValueId a : insts_[v].operands()) stack.push_back(a);
      if (IsGroup(v) && !group_need_.contains(insts_[v].index)) {
        pending.push_back(v);
        const CondGroup& g = groups_[insts_[v].index];
        stack.insert(stack.end(), g.then_values.begin(), g.then_values.end());
        stack.insert(stack.end(), g.else_values.begin(), g.else_values.end());
      }
    }
    std::sort(pending.begin(), pending.end());
    for (ValueId v : pending) {
      const CondGroup& g = groups_[insts_[v].index];  // groups_ does not grow here
      ValueSet t = PreparedClosure(g.then_values), e = PreparedClosure(g.else_values), both;
      std::set_intersection(t.begin(), t.end(), e.begin(), e.end(), std::back_inserter(both));
      group_need_.emplace(insts_[v].index, Union(PreparedClosure({g.pred}), both));
    }
  }

  // What a group needs (its condition and what both of its sides need).
  // Memoised per group (groups never change once made), so that a chain of
  // groups, each using the one before on both sides, costs linear time.
  const ValueSet& GroupNeed(ValueId group) {
    if (!group_need_.contains(insts_[group].index)) PrepareGroupNeeds({group});
    return group_need_.at(insts_[group].index);
  }

  static ValueSet Union(const ValueSet& a, const ValueSet& b) {
    ValueSet r;
    std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(r));
    return r;
  }

  void ComputeNeed(int r) {
    ValueSet need;
    for (int i : regions_[r].items) {
      const Item& item = items_[i];
      if (item.kind == Item::kLeaf) {
        item_need_[i] = Closure(item.values);
        item_full_[i] = item_need_[i];
      } else {
        for (int s : item.side) ComputeNeed(s);
        const ValueSet& t = region_need_[item.side[1]];
        const ValueSet& e = region_need_[item.side[0]];
        ValueSet both;
        std::set_intersection(t.begin(), t.end(), e.begin(), e.end(), std::back_inserter(both));
        ValueSet cond = Closure({item.cond});
        item_need_[i] = Union(cond, both);
        item_full_[i] = Union(Union(cond, t), e);
      }
      need = Union(need, item_need_[i]);
    }
    region_need_[r] = std::move(need);
  }

  // The order nodes are emitted in within a block: a post-order walk of the
  // dependencies from the programs' conditions and outputs (in program
  // order, then-side first). It depends only on the kernel's structure, not
  // on the order in which the C++ compiler evaluated operands while the DAG
  // was recorded.
  void RankCanonically() {
    rank_.assign(insts_.size(), kUnranked);
    uint32_t next = 0;
    std::vector<std::pair<ValueId, std::vector<ValueId>>> stack;  // node, deps left to visit
    auto visit = [&](ValueId root) {
      if (rank_[root] != kUnranked) return;
      auto open = [&](ValueId v) {
        std::vector<ValueId> deps;
        ForEachDep(v, [&](ValueId d) { deps.push_back(d); });
        std::reverse(deps.begin(), deps.end());
        stack.push_back({v, std::move(deps)});
      };
      open(root);
      while (!stack.empty()) {
        auto& [v, deps] = stack.back();
        if (!deps.empty()) {
          ValueId d = deps.back();
          deps.pop_back();
          // A DAG has no cycles, so an unranked dependency is never on the stack.
          if (rank_[d] == kUnranked) open(d);
          continue;
        }
        rank_[v] = next++;
        stack.pop_back();
      }
    };
    std::vector<int> pending = {root_};  // regions
    while (!pending.empty()) {
      int r = pending.back();
      pending.pop_back();
      std::vector<int> later;
      for (int i : regions_[r].items) {
        const Item& item = items_[i];
        if (item.kind == Item::kLeaf) {
          for (ValueId v : item.values) visit(v);
        } else {
          visit(item.cond);
          // Sides are ranked after the whole block; then-side first.
          later.push_back(item.side[1]);
          later.push_back(item.side[0]);
        }
      }
      for (auto it = later.rbegin(); it != later.rend(); ++it) pending.push_back(*it);
    }
  }

  void EmitValue(ValueId v) {
    const Inst& inst = insts_[v];
    if (inst.op == Op::kConst) {
      map_[v] = builder_.Const(inst.type, inst.imm);
    } else if (inst.op == Op::kCast) {
      map_[v] = builder_.Cast(inst.type, map_[inst.args[0]]);
    } else if (inst.op == Op::kIf) {
      EmitGroup(v);
    } else if (inst.op == Op::kResult) {
      // Mapped by its group, which is emitted first (it is an operand).
    } else {
      ValueId args[3];
      for (int i = 0; i < inst.num_args; ++i) args[i] = map_[inst.args[i]];
      map_[v] = builder_.Emit(inst.op, std::span<const ValueId>(args, inst.num_args));
    }
  }

  // Emits `nodes` (not yet emitted) in rank order, marking them; appends them to `marked`.
  void EmitNodes(std::vector<ValueId> nodes, std::vector<ValueId>& marked) {
    std::sort(nodes.begin(), nodes.end(),
              [&](ValueId a, ValueId b) { return rank_[a] < rank_[b]; });
    for (ValueId v : nodes) {
      EmitValue(v);
      emitted_[v] = true;
      marked.push_back(v);
    }
  }

  void Unmark(const std::vector<ValueId>& marked) {
    for (ValueId v : marked) emitted_[v] = false;
  }

  // One side of a dc::cond: what its values need that is not yet available.
  // Closure(values) less what is emitted, but the walk stops at emitted
  // nodes: what they need is emitted too (a node is emitted after what it
  // needs, and unmarked before it). A full Closure per side cost, for conds
  // nested in then-sides, the depth times everything above each level.
  std::vector<ValueId> EmitSide(const std::vector<ValueId>& values) {
    if (side_mark_.size() < insts_.size()) side_mark_.resize(insts_.size(), 0);
    ++side_stamp_;
    std::vector<ValueId> fresh;
    std::vector<ValueId> stack(values.begin(), values.end());
    while (!stack.empty()) {
      ValueId v = stack.back();
      stack.pop_back();
      if (emitted_[v] || side_mark_[v] == side_stamp_) continue;
      side_mark_[v] = side_stamp_;
      if (!IsPlaceholder(v)) fresh.push_back(v);
      for (ValueId a : insts_[v].operands()) stack.push_back(a);
      if (IsGroup(v)) {
        for (ValueId u : GroupNeed(v)) stack.push_back(u);
      }
    }
    std::vector<ValueId> marked;
    EmitNodes(std::move(fresh), marked);
    std::vector<ValueId> yields;
    for (ValueId v : values) yields.push_back(map_[v]);
    Unmark(marked);
    return yields;
  }

  void EmitGroup(ValueId v) {
    const CondGroup& g = groups_[insts_[v].index];
    builder_.BeginIf(map_[g.pred]);
    std::vector<ValueId> then_yields = EmitSide(g.then_values);
    builder_.BeginElse(then_yields);
    std::vector<ValueId> else_yields = EmitSide(g.else_values);
    std::vector<ValueId> results = builder_.EndIf(else_yields);
    for (size_t j = 0; j < g.results.size() && j < results.size(); ++j) {
      if (g.results[j] != kNoValue) map_[g.results[j]] = results[j];
    }
  }

  std::vector<ValueId> EmitIf(const Item& item) {
    builder_.BeginIf(map_[item.cond]);
    std::vector<ValueId> then_yields = EmitRegion(item.side[1]);
    builder_.BeginElse(then_yields);
    std::vector<ValueId> else_yields = EmitRegion(item.side[0]);
    return builder_.EndIf(else_yields);
  }

  // Emits region r into the builder's current block; returns what it yields.
  std::vector<ValueId> EmitRegion(int r) {
    const std::vector<int>& items = regions_[r].items;
    // Each node this block computes goes just before the first item using it.
    std::vector<std::vector<ValueId>> before(items.size());
    for (ValueId v : region_need_[r]) {
      if (emitted_[v] || IsPlaceholder(v)) continue;
      for (size_t i = 0; i < items.size(); ++i) {
        if (Contains(item_full_[items[i]], v)) {
          before[i].push_back(v);
          break;
        }
      }
    }
    std::vector<ValueId> marked, yields;
    for (size_t i = 0; i < items.size(); ++i) {
      EmitNodes(std::move(before[i]), marked);
      const Item& item = items_[items[i]];
      if (item.kind == Item::kLeaf) {
        for (ValueId v : item.values) yields.push_back(map_[v]);
      } else if (item.kind == Item::kBranch) {
        yields = EmitIf(item);
      } else {
        std::vector<ValueId> results = EmitIf(item);
        for (size_t j = 0; j < item.values.size(); ++j) {
          map_[item.values[j]] = results[j];
          emitted_[item.values[j]] = true;
          marked.push_back(item.values[j]);
        }
      }
    }
    Unmark(marked);
    return yields;
  }

  const std::vector<DecisionNode>& tree_;
  std::vector<Inst> insts_;         // the DAG, grown by the merge's own nodes
  std::vector<CondGroup> groups_;   // likewise
  std::vector<ValueId> inputs_;
  Builder builder_;
  static constexpr uint32_t kUnranked = ~uint32_t{0};

  std::vector<Item> items_;
  std::vector<Region> regions_;
  int root_ = 0;
  uint32_t placeholders_ = 0;
  absl::flat_hash_map<InstKey, ValueId> interned_;

  // One join attempt.
  absl::flat_hash_map<std::pair<ValueId, ValueId>, ValueId> memo_;
  absl::flat_hash_map<ValueId, bool> bound_;
  absl::flat_hash_map<ValueId, bool> depends_;
  std::vector<ValueId> psi_, psi_then_, psi_else_;
  int depth_ = 0;                  // inside how many sides of the tail
  bool eager_ = false;             // match structure wherever the shapes agree
  std::vector<int> tail_[2];       // the tails being matched (then, else)
  ValueSet tail_need_[2];          // NeedOf(tail_), computed when first asked
  bool tail_need_ready_ = false;

  std::vector<ValueSet> region_need_, item_need_, item_full_;
  std::vector<uint32_t> rank_;
  std::unordered_map<uint32_t, ValueSet> group_need_;  // references stay valid as it grows
  std::vector<uint32_t> mark_;
  uint32_t stamp_ = 0;
  std::vector<uint32_t> prep_mark_;  // PrepareGroupNeeds' walk
  uint32_t prep_stamp_ = 0;
  std::vector<uint32_t> side_mark_;  // EmitSide's walk
  uint32_t side_stamp_ = 0;
  std::vector<bool> emitted_;
  std::vector<ValueId> map_;
};

}  // namespace

absl::StatusOr<Function> MergePaths(const std::string& name, const Function& dag,
                                    const std::vector<DecisionNode>& tree,
                                    const std::vector<CondGroup>& conds) {
  Function out(name);
  if (tree.empty()) return MakeStatus(ErrorKind::kInternal, "tracer: no paths were traced");
  Merger merger(dag, tree, conds, out);
  if (auto s = merger.Run(); !s.ok()) return s;
  return out;
}

}  // namespace dualcast::jit::trace_detail
