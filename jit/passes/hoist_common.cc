// HoistCommonWork: structurally equal work on both sides of an if emitted once above it (see hoist_common.h).
#include "jit/passes/hoist_common.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "jit/passes/rewrite.h"

namespace dualcast::jit {
namespace {

bool Movable(Op op) { return op != Op::kIf && op != Op::kResult && op != Op::kInput; }

// The pass asks, at every if, which movable expressions occur on both sides.
// Walking both sides at every if costs the square of the nesting depth (an
// if nested in the then-side of an if nested in ... walks the innermost
// sides once per enclosing if), so the function is summarised once, up
// front, and each if then looks only at its smaller side:
//
//  - Instructions are numbered in a pre-order walk (an If, then its
//    then-block, then its else-block, then the rest of its block), so every
//    block's instructions, nested ones included, are one range of numbers.
//  - Each instruction gets a structural value number: op, type, index,
//    constant bits and the operands' numbers. Inputs and ifs' results are
//    numbered by identity. Two values visible at an if have the same number
//    exactly when the rebuilt function holds one value for both (the
//    Builder hash-conses against every enclosing scope), so the numbers
//    stand for the structural keys "the same" means (hoist_common.h).
//  - An instruction can move above an if iff no result of an If nested in
//    that if is among its operands, theirs, and so on: `need_` is the depth
//    of the deepest block holding such a result (0: none), and the
//    instruction can move above any if whose sides are deeper than that.
//    Instructions with one number have one `need_`.
//
// Per if, the smaller side is scanned and each movable number looked up
// among the occurrences of that number in the other side's range (sorted,
// binary search): the sum over all ifs of their smaller sides is
// O(n log n).
class Hoister : public Rewriter {
 public:
  explicit Hoister(const Function& f) {
    if (f.blocks.size() > 1) Summarise(f);  // one block: no if, nothing to summarise
  }

 protected:
  std::vector<ValueId> RewriteIf(const Inst& inst, ValueId cond, Builder& b) override {
    EmitCommonWork(inst, b);
    // The sides re-emit the same ops on the same operands: the builder's
    // hash-consing resolves them to the values just emitted above.
    return Rewriter::RewriteIf(inst, cond, b);
  }

 private:
  struct Range {
    uint32_t begin = 0, end = 0;  // walk positions
    bool Holds(uint32_t p) const { return p >= begin && p < end; }
  };

  std::vector<ValueId> order_;     // walk position -> value
  std::vector<uint32_t> pos_;      // value -> walk position
  std::vector<uint32_t> vn_;       // value -> value number
  std::vector<uint32_t> need_;     // value -> depth it can move above (see the class comment)
  std::vector<Range> block_range_;
  std::vector<uint32_t> block_depth_;
  // The walk positions of the movable instructions, grouped by value number
  // (occ_[occ_begin_[n] .. occ_begin_[n + 1]), ascending).
  std::vector<uint32_t> occ_begin_, occ_;

  // Per if (the pass finishes one if's work before the nested ifs').
  uint32_t epoch_ = 0;
  std::vector<uint32_t> seen_epoch_, hoisted_epoch_;  // by value number
  std::vector<ValueId> hoisted_;

  void Summarise(const Function& f) {
    pos_.assign(f.insts.size(), 0);
    vn_.assign(f.insts.size(), 0);
    need_.assign(f.insts.size(), 0);
    block_range_.assign(f.blocks.size(), Range{});
    block_depth_.assign(f.blocks.size(), 0);
    order_.reserve(f.insts.size());
    absl::flat_hash_map<InstKey, uint32_t> numbers;
    numbers.reserve(f.insts.size());
    uint32_t next_vn = 0;
    if (!f.blocks.empty()) Walk(f, 0, 0, numbers, next_vn);
    std::vector<uint32_t> count(next_vn + 1, 0);
    for (ValueId v : order_) {
      if (Movable(f.inst(v).op)) ++count[vn_[v]];
    }
    occ_begin_.assign(next_vn + 1, 0);
    for (uint32_t n = 0; n < next_vn; ++n) occ_begin_[n + 1] = occ_begin_[n] + count[n];
    occ_.resize(occ_begin_[next_vn]);
    std::vector<uint32_t> fill(occ_begin_.begin(), occ_begin_.end() - 1);
    for (uint32_t p = 0; p < order_.size(); ++p) {
      if (Movable(f.inst(order_[p]).op)) occ_[fill[vn_[order_[p]]]++] = p;
    }
    seen_epoch_.assign(next_vn, 0);
    hoisted_epoch_.assign(next_vn, 0);
    hoisted_.assign(next_vn, kNoValue);
  }

  void Walk(const Function& f, BlockId block, uint32_t depth,
            absl::flat_hash_map<InstKey, uint32_t>& numbers, uint32_t& next_vn) {
    block_depth_[block] = depth;
    block_range_[block].begin = static_cast<uint32_t>(order_.size());
    for (ValueId v : f.blocks[block].body) {
      const Inst& inst = f.inst(v);
      pos_[v] = static_cast<uint32_t>(order_.size());
      order_.push_back(v);
      if (!Movable(inst.op)) {
        vn_[v] = next_vn++;
        need_[v] = inst.op == Op::kResult ? depth : 0;
      } else {
        InstKey key = InstKey::Of(inst);
        uint32_t need = 0;
        for (int k = 0; k < inst.num_args; ++k) {
          key.args[k] = vn_[inst.args[k]];
          need = std::max(need, need_[inst.args[k]]);
        }
        auto [it, added] = numbers.try_emplace(key, next_vn);
        if (added) ++next_vn;
        vn_[v] = it->second;
        need_[v] = need;
      }
      if (inst.op == Op::kIf) {
        Walk(f, inst.then_block, depth + 1, numbers, next_vn);
        Walk(f, inst.else_block, depth + 1, numbers, next_vn);
      }
    }
    block_range_[block].end = static_cast<uint32_t>(order_.size());
  }

  // The first walk position in `r` of an instruction numbered `n`; r.end if none.
  uint32_t FirstIn(uint32_t n, Range r) const {
    auto first = occ_.begin() + occ_begin_[n], last = occ_.begin() + occ_begin_[n + 1];
    auto it = std::lower_bound(first, last, r.begin);
    return it != last && *it < r.end ? *it : r.end;
  }

  void EmitCommonWork(const Inst& if_inst, Builder& b) {
    const Function& in = source();
    const Range then_r = block_range_[if_inst.then_block];
    const Range else_r = block_range_[if_inst.else_block];
    const Range whole{then_r.begin, else_r.end};
    const uint32_t depth = block_depth_[if_inst.then_block] - 1;  // the if's own block
    const bool then_smaller = then_r.end - then_r.begin <= else_r.end - else_r.begin;
    const Range small = then_smaller ? then_r : else_r, other = then_smaller ? else_r : then_r;
    ++epoch_;
    // Where each common expression first occurs in the then-side: emitting
    // in that order puts operands before users and matches the then-side.
    std::vector<uint32_t> common;
    for (uint32_t p = small.begin; p < small.end; ++p) {
      const ValueId v = order_[p];
      if (!Movable(in.inst(v).op) || need_[v] > depth) continue;
      const uint32_t n = vn_[v];
      if (seen_epoch_[n] == epoch_) continue;
      seen_epoch_[n] = epoch_;
      const uint32_t at = FirstIn(n, other);
      if (at == other.end) continue;
      common.push_back(then_smaller ? p : at);
    }
    if (common.empty()) return;
    std::sort(common.begin(), common.end());
    for (uint32_t p : common) Hoist(order_[p], whole, b);
  }

  // Emits `v` (movable above the if spanning `whole`) above it, once per number.
  ValueId Hoist(ValueId v, Range whole, Builder& b) {
    const uint32_t n = vn_[v];
    if (hoisted_epoch_[n] == epoch_) return hoisted_[n];
    const Inst& inst = source().inst(v);
    ValueId args[3];
    for (int k = 0; k < inst.num_args; ++k) {
      const ValueId a = inst.args[k];
      // An operand inside the if is common work too (emitted just before,
      // in then-side order), unless the source repeats a value that is
      // visible at the if; then the rebuilt one resolves to that value.
      args[k] = whole.Holds(pos_[a]) ? Hoist(a, whole, b) : Mapped(a);
    }
    hoisted_epoch_[n] = epoch_;
    hoisted_[n] = CloneInst(inst, std::span<const ValueId>(args, inst.num_args), b);
    return hoisted_[n];
  }
};

}  // namespace

Function HoistCommonWork(const Function& f) { return Hoister(f).Run(f); }

}  // namespace dualcast::jit
