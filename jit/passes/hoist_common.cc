// HoistCommonWork: structurally equal work on both sides of an if emitted once above it (see hoist_common.h).
#include "jit/passes/hoist_common.h"

#include <algorithm>
#include <bit>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "jit/passes/rewrite.h"

namespace dualcast::jit {
namespace {

// An instruction inside an if, named by structure: its operands are either
// values of the new function defined before the if (>= 0) or other such
// expressions (-1 - their id).
struct ExprKey {
  Op op;
  Type type;
  uint32_t index;
  uint64_t imm_bits;
  std::array<int64_t, 3> args;
  bool operator==(const ExprKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const ExprKey& k) {
    return H::combine(std::move(h), k.op, k.type, k.index, k.imm_bits, k.args);
  }
};

bool Movable(Op op) { return op != Op::kIf && op != Op::kResult && op != Op::kInput; }

class Hoister : public Rewriter {
 protected:
  std::vector<ValueId> RewriteIf(const Inst& inst, ValueId cond, Builder& b) override {
    EmitCommonWork(inst, b);
    // The sides re-emit the same ops on the same operands: the builder's
    // hash-consing resolves them to the values just emitted above.
    return Rewriter::RewriteIf(inst, cond, b);
  }

 private:
  // Interned expressions, operands before users (so id order is emit order).
  std::vector<ExprKey> keys_;
  std::vector<const Inst*> examples_;
  absl::flat_hash_map<ExprKey, int64_t> ids_;

  void EmitCommonWork(const Inst& if_inst, Builder& b) {
    keys_.clear();
    examples_.clear();
    ids_.clear();
    absl::flat_hash_set<int64_t> then_ids, else_ids;
    absl::flat_hash_map<ValueId, int64_t> inside;  // old value -> expression id (movable ones)
    absl::flat_hash_set<ValueId> defined_inside;
    Collect(if_inst.then_block, inside, defined_inside, then_ids);
    Collect(if_inst.else_block, inside, defined_inside, else_ids);
    std::vector<int64_t> common;
    for (int64_t id : then_ids) {
      if (else_ids.contains(id)) common.push_back(id);
    }
    if (common.empty()) return;
    std::sort(common.begin(), common.end());
    std::vector<ValueId> emitted(keys_.size(), kNoValue);
    for (int64_t id : common) {
      const ExprKey& key = keys_[id];
      const Inst& example = *examples_[id];
      ValueId args[3];
      for (int k = 0; k < example.num_args; ++k) {
        args[k] = key.args[k] >= 0 ? static_cast<ValueId>(key.args[k]) : emitted[-1 - key.args[k]];
      }
      emitted[id] = CloneInst(example, std::span<const ValueId>(args, example.num_args), b);
    }
  }

  // Walks `block` (and the ifs nested in it), interning every movable
  // instruction whose operands are outside the if or movable themselves.
  void Collect(BlockId block, absl::flat_hash_map<ValueId, int64_t>& inside,
               absl::flat_hash_set<ValueId>& defined_inside, absl::flat_hash_set<int64_t>& seen) {
    const Function& in = source();
    for (ValueId v : in.blocks[block].body) {
      const Inst& inst = in.inst(v);
      defined_inside.insert(v);
      if (inst.op == Op::kIf) {
        Collect(inst.then_block, inside, defined_inside, seen);
        Collect(inst.else_block, inside, defined_inside, seen);
        continue;
      }
      if (!Movable(inst.op)) continue;
      ExprKey key{inst.op, inst.type, inst.index, std::bit_cast<uint64_t>(inst.imm), {0, 0, 0}};
      bool movable = true;
      for (int k = 0; k < inst.num_args && movable; ++k) {
        const ValueId a = inst.args[k];
        if (auto it = inside.find(a); it != inside.end()) {
          key.args[k] = -1 - it->second;
        } else if (defined_inside.contains(a)) {
          movable = false;  // depends on an if's result or on work that cannot move
        } else {
          key.args[k] = Mapped(a);
        }
      }
      if (!movable) continue;
      auto [it, added] = ids_.try_emplace(key, static_cast<int64_t>(keys_.size()));
      if (added) {
        keys_.push_back(key);
        examples_.push_back(&inst);
      }
      inside[v] = it->second;
      seen.insert(it->second);
    }
  }
};

}  // namespace

Function HoistCommonWork(const Function& f) { return Hoister().Run(f); }

}  // namespace dualcast::jit
