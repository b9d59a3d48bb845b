// CostOf: the per-element weight of each IR op (see op_cost.h for the weights and who reads them).
#include "jit/ir/op_cost.h"

namespace dualcast::jit {

OpCost CostOf(Op op) {
  switch (Info(op).kind) {
    case OpKind::Leaf:
    case OpKind::Control:
      return {0, 0};
    case OpKind::Math:
      switch (op) {
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
      return op == Op::kDiv ? OpCost{4, 4} : OpCost{1, 1};
    default:
      return {1, 1};
  }
}

int64_t TotalWork(const Function& f) {
  int64_t work = 0;
  for (const Inst& inst : f.insts) work += CostOf(inst.op).work;
  return work;
}

}  // namespace dualcast::jit
