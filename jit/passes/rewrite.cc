// The shared rebuild walk (see rewrite.h).
#include "jit/passes/rewrite.h"

#include "jit/error.h"

namespace dualcast::jit {

ValueId CloneInst(const Inst& inst, std::span<const ValueId> args, Builder& b) {
  switch (inst.op) {
    case Op::kConst: return b.Const(inst.type, inst.imm);
    case Op::kCast: return b.Cast(inst.type, args[0]);
    case Op::kInput:
    case Op::kIf:
    case Op::kResult:
      throw Error(ErrorKind::kInternal, "CloneInst: inputs and ifs are rebuilt by the walk");
    default: return b.Emit(inst.op, args);
  }
}

ValueId Rewriter::RewriteInst(const Inst& inst, std::span<const ValueId> args, Builder& b) {
  return CloneInst(inst, args, b);
}

std::vector<ValueId> Rewriter::RewriteIf(const Inst& inst, ValueId cond, Builder& b) {
  b.BeginIf(cond);
  std::vector<ValueId> then_yields = WalkBlock(inst.then_block, b);
  b.BeginElse(then_yields);
  std::vector<ValueId> else_yields = WalkBlock(inst.else_block, b);
  return b.EndIf(else_yields);
}

std::vector<ValueId> Rewriter::WalkBlock(BlockId block, Builder& b) {
  const Function& in = *in_;
  const std::vector<ValueId>& body = in.blocks[block].body;
  for (size_t i = 0; i < body.size(); ++i) {
    ValueId v = body[i];
    const Inst& inst = in.inst(v);
    switch (inst.op) {
      case Op::kInput: break;  // mapped up front
      case Op::kResult: break;  // mapped by its If
      case Op::kIf: {
        std::vector<ValueId> results = RewriteIf(inst, map_[inst.args[0]], b);
        // The old results directly follow the If in this block, in order.
        for (size_t j = i + 1; j < body.size() && in.inst(body[j]).op == Op::kResult &&
                               in.inst(body[j]).args[0] == v;
             ++j) {
          map_[body[j]] = results[in.inst(body[j]).index];
        }
        break;
      }
      default: {
        ValueId args[3];
        for (int i = 0; i < inst.num_args; ++i) args[i] = map_[inst.args[i]];
        map_[v] = RewriteInst(inst, std::span<const ValueId>(args, inst.num_args), b);
      }
    }
  }
  std::vector<ValueId> yields;
  for (ValueId y : in.blocks[block].yields) yields.push_back(map_[y]);
  return yields;
}

std::vector<ValueId> Rewriter::RunInto(Builder& b, const Function& in,
                                       std::span<const ValueId> args) {
  in_ = &in;
  map_.assign(in.insts.size(), kNoValue);
  for (size_t i = 0; i < in.inputs.size(); ++i) map_[in.inputs[i]] = args[i];
  std::vector<ValueId> outputs = in.blocks.empty() ? std::vector<ValueId>{} : WalkBlock(0, b);
  in_ = nullptr;
  return outputs;
}

Function Rewriter::Run(const Function& in) {
  Function out(in.name);
  out.hints = in.hints;
  Builder b(out);
  std::vector<ValueId> inputs;
  for (ValueId v : in.inputs) inputs.push_back(b.Input(in.type(v)));
  b.Return(RunInto(b, in, inputs));
  return out;
}

}  // namespace dualcast::jit
