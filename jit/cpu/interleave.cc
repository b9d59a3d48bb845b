// InterleaveFactor: the IR's work and critical path decide how many host vectors a CPU kernel step covers.
#include "jit/cpu/interleave.h"

#include <algorithm>
#include <vector>

#include "jit/cpu/vector_math.h"

namespace dualcast::jit::cpu {
namespace {

// What an instruction adds to the work and to the chain through it.
struct Cost {
  int64_t work, latency;
};

Cost CostOf(const Inst& inst) {
  switch (Info(inst.op).kind) {
    case OpKind::Leaf:
    case OpKind::Control:
      return {0, 0};
    case OpKind::Math:
      switch (inst.op) {
        case Op::kAbs: case Op::kMin: case Op::kMax: case Op::kFmin: case Op::kFmax:
        case Op::kCopysign: case Op::kSign: case Op::kSquare: case Op::kRelu: case Op::kClamp:
        case Op::kFloor: case Op::kCeil: case Op::kRound: case Op::kTrunc: case Op::kRint:
        case Op::kFdim:
          return {1, 1};
        case Op::kSqrt: case Op::kRsqrt:
          return {4, 4};
        default:  // a polynomial after a range reduction: serial, with side work
          return {20, 12};
      }
    case OpKind::Arith:
      return inst.op == Op::kDiv ? Cost{4, 4} : Cost{1, 1};
    default:
      return {1, 1};
  }
}

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
      const Cost cost = CostOf(inst);
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
