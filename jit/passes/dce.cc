// Dead-code elimination by marking from the outputs and rebuilding (see dce.h).
#include "jit/passes/dce.h"

#include <vector>

#include "jit/passes/rewrite.h"

namespace dualcast::jit {

namespace {

// What the outputs need: values, and for each If which of its results.
struct Liveness {
  std::vector<bool> value;
  std::vector<std::vector<bool>> result;  // indexed by the If's ValueId; empty for non-Ifs
};

Liveness Mark(const Function& f) {
  Liveness live{std::vector<bool>(f.insts.size(), false),
                std::vector<std::vector<bool>>(f.insts.size())};
  std::vector<ValueId> work(f.outputs().begin(), f.outputs().end());
  auto need = [&](ValueId v) {
    if (!live.value[v]) work.push_back(v);
  };
  while (!work.empty()) {
    ValueId v = work.back();
    work.pop_back();
    if (live.value[v]) continue;
    live.value[v] = true;
    const Inst& inst = f.inst(v);
    if (inst.op != Op::kResult) {
      for (ValueId a : inst.operands()) need(a);  // an If's operand is its condition
      continue;
    }
    const ValueId if_id = inst.args[0];
    const Inst& if_inst = f.inst(if_id);
    std::vector<bool>& results = live.result[if_id];
    if (results.empty()) results.assign(f.num_results(if_id), false);
    results[inst.index] = true;
    need(if_id);
    need(f.blocks[if_inst.then_block].yields[inst.index]);
    need(f.blocks[if_inst.else_block].yields[inst.index]);
  }
  return live;
}

class DeadCodeRewriter : public Rewriter {
 public:
  explicit DeadCodeRewriter(Liveness live) : live_(std::move(live)) {}

 protected:
  // A dead value maps to kNoValue; nothing live refers to it.
  ValueId RewriteInst(const Inst& inst, std::span<const ValueId> args, Builder& b) override {
    if (!live_.value[ValueIdOf(inst)]) return kNoValue;
    return CloneInst(inst, args, b);
  }

  std::vector<ValueId> RewriteIf(const Inst& inst, ValueId cond, Builder& b) override {
    const ValueId if_id = ValueIdOf(inst);
    const std::vector<bool>& needed = live_.result[if_id];
    std::vector<ValueId> results(source().num_results(if_id), kNoValue);
    if (!live_.value[if_id]) return results;
    auto keep = [&](const std::vector<ValueId>& yields) {
      std::vector<ValueId> kept;
      for (size_t k = 0; k < yields.size(); ++k) {
        if (needed[k]) kept.push_back(yields[k]);
      }
      return kept;
    };
    b.BeginIf(cond);
    b.BeginElse(keep(WalkBlock(inst.then_block, b)));
    std::vector<ValueId> kept_results = b.EndIf(keep(WalkBlock(inst.else_block, b)));
    for (size_t k = 0, next = 0; k < results.size(); ++k) {
      if (needed[k]) results[k] = kept_results[next++];
    }
    return results;
  }

 private:
  // Rewriter hands out references into the source's instruction array.
  ValueId ValueIdOf(const Inst& inst) const {
    return static_cast<ValueId>(&inst - source().insts.data());
  }

  Liveness live_;
};

}  // namespace

Function EliminateDeadCode(const Function& f) { return DeadCodeRewriter(Mark(f)).Run(f); }

}  // namespace dualcast::jit
