// InterleaveFactor: the IR's work and critical path decide how many host vectors a CPU kernel step covers.
#include "jit/cpu/interleave.h"

#include <algorithm>
#include <vector>

#include "jit/cpu/vector_math.h"
#include "jit/ir/op_cost.h"

namespace dualcast::jit::cpu {
namespace {

class ChainWalk {
 public:
  explicit ChainWalk(const Function& f) : f_(f), depth_(f.insts.size(), 0) {}

  ChainShape Run() {
    if (f_.blocks.empty()) return {};
    Walk(0);
    ChainShape shape;
    shape.work = work_;
    for (ValueId out : f_.outputs()) shape.depth = std::max(shape.depth, depth_[out]);
    return shape;
  }

 private:
  void Walk(BlockId block) {
    for (ValueId v : f_.blocks[block].body) {
      const Inst& inst = f_.insts[v];
      int64_t ready = 0;
      for (ValueId a : inst.operands()) ready = std::max(ready, depth_[a]);
      if (inst.op == Op::kIf) {
        Walk(inst.then_block);
        Walk(inst.else_block);
        depth_[v] = ready;  // the condition: the sides' yields carry their own chains
        continue;
      }
      if (inst.op == Op::kResult) {
        const Inst& branch = f_.insts[inst.args[0]];
        const ValueId from_then = f_.blocks[branch.then_block].yields[inst.index];
        const ValueId from_else = f_.blocks[branch.else_block].yields[inst.index];
        depth_[v] = std::max({depth_[inst.args[0]], depth_[from_then], depth_[from_else]});
        continue;
      }
      const OpCost cost = CostOf(inst.op);
      work_ += cost.work;
      depth_[v] = ready + cost.latency;
    }
  }

  const Function& f_;
  std::vector<int64_t> depth_;
  int64_t work_ = 0;
};

}  // namespace

ChainShape MeasureChains(const Function& f) { return ChainWalk(f).Run(); }

int InterleaveFactor(const Function& f) {
  const ChainShape s = MeasureChains(f);
  if (s.depth < kMinInterleaveDepth) return 1;
  int factor = s.work < 2 * s.depth ? 4 : s.work < 4 * s.depth ? 2 : 1;
  while (factor > 1 && factor * s.work > kInterleaveBudget) factor /= 2;
  return factor;
}

int HostLanes(Type dtype) { return HostVectorBits() / (dtype == Type::kF32 ? 32 : 64); }

int KernelStepLanes(const KernelSpec& spec) {
  if (spec.hints.vector_width != 0) return std::max(2, spec.hints.vector_width);
  return InterleaveFactor(*spec.function) * HostLanes(spec.dtype);
}

}  // namespace dualcast::jit::cpu
