// The reference interpreter (see interpret.h): a plain recursive walk over structured blocks.
#include "jit/ir/interpret.h"

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "jit/error.h"
#include "jit/ir/scalar_ops.h"

namespace dualcast::jit {

namespace {

class Interpreter {
 public:
  Interpreter(const Function& f, std::vector<BlockId>* taken_blocks)
      : f_(f), values_(f.insts.size(), 0.0), taken_blocks_(taken_blocks) {}

  std::vector<double> Run(std::span<const double> inputs) {
    for (size_t i = 0; i < f_.inputs.size(); ++i) {
      ValueId v = f_.inputs[i];
      // f32 inputs are rounded on entry so that every f32 value is a float.
      double args[] = {inputs[i]};
      values_[v] = EvalScalarOp(Op::kCast, f_.type(v), args);
    }
    return RunBlock(0);
  }

 private:
  // Executes one block's body and returns the values it yields.
  std::vector<double> RunBlock(BlockId block) {
    for (ValueId v : f_.blocks[block].body) {
      const Inst& inst = f_.inst(v);
      switch (inst.op) {
        case Op::kInput: break;  // set by Run
        case Op::kConst: values_[v] = inst.imm; break;
        case Op::kIf: {
          bool taken = values_[inst.args[0]] != 0;
          // The If's Result instructions follow it and read these by index.
          BlockId branch = taken ? inst.then_block : inst.else_block;
          if (taken_blocks_ != nullptr) taken_blocks_->push_back(branch);
          branch_yields_[v] = RunBlock(branch);
          break;
        }
        case Op::kResult: values_[v] = branch_yields_[inst.args[0]][inst.index]; break;
        default: {
          double args[3];
          for (int i = 0; i < inst.num_args; ++i) args[i] = values_[inst.args[i]];
          values_[v] = EvalScalarOp(inst.op, inst.type, args);
        }
      }
    }
    std::vector<double> yields;
    yields.reserve(f_.blocks[block].yields.size());
    for (ValueId y : f_.blocks[block].yields) yields.push_back(values_[y]);
    return yields;
  }

  const Function& f_;
  std::vector<double> values_;
  absl::flat_hash_map<ValueId, std::vector<double>> branch_yields_;
  std::vector<BlockId>* taken_blocks_;
};

}  // namespace

std::vector<double> Interpret(const Function& f, std::span<const double> inputs,
                              std::vector<BlockId>* taken_blocks) {
  if (inputs.size() != f.num_inputs()) {
    throw Error(ErrorKind::kArity,
                absl::StrFormat("Interpret: kernel '%s' takes %d inputs but was given %d; pass "
                                "one value per input",
                                f.name, f.num_inputs(), inputs.size()));
  }
  if (taken_blocks != nullptr) taken_blocks->clear();
  return Interpreter(f, taken_blocks).Run(inputs);
}

std::vector<float> Interpret(const Function& f, std::span<const float> inputs) {
  std::vector<double> wide(inputs.begin(), inputs.end());
  std::vector<double> out = Interpret(f, std::span<const double>(wide));
  return std::vector<float>(out.begin(), out.end());
}

}  // namespace dualcast::jit
