// The one walk over a Function that every backend's code printer shares (LLVM IRBuilder, CUDA C text).
//
// Backends differ in how they spell an operation, not in how the IR is
// traversed. So the traversal lives here, once: `CodegenWalk` visits the entry
// block in program order, recurses into if-blocks, maps every ValueId to the
// printer's handle for it, and hands the printer one hook call per
// instruction. A printer only answers "how do I spell this op" (a switch or a
// table per Op) and "how do I open/close a branch"; it never looks at blocks,
// scoping or Result instructions.
//
// The branch hooks are shaped so that both SSA and text targets fit:
//   BeginIf(cond, result_types)   LLVM: condbr to fresh then/else blocks.
//                                 C:    `float r0; float r1; if (c) {`
//   BeginElse(then_yields)        LLVM: remember the yields and the block the
//                                       then-branch ended in, br to merge.
//                                 C:    `r0 = v; r1 = w; } else {`
//   EndIf(else_yields) -> results LLVM: br to merge, one phi per result.
//                                 C:    `r0 = ...; }` and returns {"r0","r1"}.
// Branches nest, so printers keep a stack of open ifs.
//
// A printer may also declare
//   void BeginIf(cond, result_types, SideCosts costs)
// to hear how much work each side holds (BlockCost below) before choosing
// how to spell the if; the CPU printer blends tiny sides instead of
// branching around them. The walk calls whichever overload exists.
//
// Example:
//   struct Text {                       // a toy printer: spells values as text
//     using Value = std::string;
//     Value Constant(Type t, double v);
//     Value Input(uint32_t index, Type t);
//     Value Emit(Op op, Type t, std::span<const Type> arg_types, std::span<const Value> args);
//     void BeginIf(const Value& cond, std::span<const Type> result_types);
//     void BeginElse(std::span<const Value> then_yields);
//     std::vector<Value> EndIf(std::span<const Value> else_yields);
//   };
//   Text printer;
//   std::vector<std::string> outs = CodegenWalk<Text>(f, printer).Run();
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <span>
#include <vector>

#include "jit/ir/ir.h"

namespace dualcast::jit {

// What CodegenWalk needs from a backend printer.
//   Constant: a kConst (value exactly representable in `type`; kBool is 0/1).
//   Input:    the function's input `index` (the printer decides where it comes
//             from: a load, a parameter, a variable).
//   Emit:     every pure op (Arith, Math, Compare, Logic, Select, Cast); `type`
//             is the result type, `arg_types` the operands' types (a Cast
//             needs its source type).
template <class P>
concept CodegenPrinter = requires(P p, const typename P::Value& v, Type t, Op op,
                                  std::span<const Type> types,
                                  std::span<const typename P::Value> values) {
  { p.Constant(t, 1.0) } -> std::same_as<typename P::Value>;
  { p.Input(uint32_t{0}, t) } -> std::same_as<typename P::Value>;
  { p.Emit(op, t, types, values) } -> std::same_as<typename P::Value>;
  { p.BeginIf(v, types) };
  { p.BeginElse(values) };
  { p.EndIf(values) } -> std::same_as<std::vector<typename P::Value>>;
};

const char* LibmName(Op op, Type type);  // below

// What a test of a side's lane mask (and the branch around the side) costs a
// vector backend, in units of one arithmetic op: a side no dearer runs inline.
inline constexpr int kTestCost = 6;

// The work in both sides of an if, in units of one arithmetic op (a math
// function counts kMathCost; a nested if its condition plus its inline sides).
// A backend that runs both sides of a mixed if under lane masks tests a side
// only when the side costs more than the test: otherwise it runs inline for
// every lane and is blended. A tested nested side is not counted in its
// enclosing side: its own test skips it, and would only be repeated by one
// around the enclosing side (HM-LSTM's FLUSH / COPY / UPDATE then needs one
// test, UPDATE's, not four).
struct SideCosts {
  int then_cost = 0;
  int else_cost = 0;
  bool ThenTested() const { return then_cost > kTestCost; }
  bool ElseTested() const { return else_cost > kTestCost; }
  int InlineCost() const { return (ThenTested() ? 0 : then_cost) + (ElseTested() ? 0 : else_cost); }
};
inline constexpr int kMathCost = 8;

template <CodegenPrinter Printer>
class CodegenWalk {
 public:
  using Value = typename Printer::Value;

  // `f` must have passed Verify(); the walk does not re-check scoping.
  CodegenWalk(const Function& f, Printer& printer)
      : f_(f), printer_(printer), values_(f.insts.size()) {}

  // Emits the whole function into the printer's current position and returns
  // the handles of its outputs, in order.
  std::vector<Value> Run() { return WalkBlock(0); }

 private:
  std::vector<Value> WalkBlock(BlockId block_id) {
    const Block& block = f_.blocks[block_id];
    for (ValueId id : block.body) Visit(id);
    return Lookup(block.yields);
  }

  void Visit(ValueId id) {
    const Inst& inst = f_.inst(id);
    switch (inst.op) {
      case Op::kConst:
        values_[id] = printer_.Constant(inst.type, inst.imm);
        return;
      case Op::kInput:
        values_[id] = printer_.Input(inst.index, inst.type);
        return;
      case Op::kIf: {
        const Block& then_block = f_.blocks[inst.then_block];
        std::vector<Type> result_types;
        for (ValueId y : then_block.yields) result_types.push_back(f_.type(y));
        if constexpr (requires { printer_.BeginIf(values_[0], result_types, SideCosts{}); }) {
          printer_.BeginIf(values_[inst.args[0]], result_types,
                           SideCosts{BlockCost(inst.then_block), BlockCost(inst.else_block)});
        } else {
          printer_.BeginIf(values_[inst.args[0]], result_types);
        }
        std::vector<Value> then_yields = WalkBlock(inst.then_block);
        printer_.BeginElse(then_yields);
        std::vector<Value> else_yields = WalkBlock(inst.else_block);
        if_results_[id] = printer_.EndIf(else_yields);
        return;
      }
      case Op::kResult:
        values_[id] = if_results_.at(inst.args[0]).at(inst.index);
        return;
      default: {
        std::array<Type, 3> arg_types{};
        std::array<Value, 3> args{};
        for (int i = 0; i < inst.num_args; ++i) {
          arg_types[i] = f_.type(inst.args[i]);
          args[i] = values_[inst.args[i]];
        }
        values_[id] = printer_.Emit(inst.op, inst.type,
                                    std::span<const Type>(arg_types.data(), inst.num_args),
                                    std::span<const Value>(args.data(), inst.num_args));
        return;
      }
    }
  }

  // The work that runs whenever a block runs: its own and its nested ifs' inline
  // sides (memoised: each block once).
  int BlockCost(BlockId block_id) {
    if (block_costs_.empty()) block_costs_.assign(f_.blocks.size(), -1);
    if (block_costs_[block_id] >= 0) return block_costs_[block_id];
    int cost = 0;
    for (ValueId id : f_.blocks[block_id].body) {
      const Inst& inst = f_.inst(id);
      switch (Info(inst.op).kind) {
        case OpKind::Leaf: break;
        case OpKind::Math:  // a libm call, or a formula around one, vs an instruction
          switch (inst.op) {
            case Op::kErfinv: cost += 4 * kMathCost; break;  // ~15 libm calls, both branches
            case Op::kTanh:
            case Op::kSigmoid:
            case Op::kFastTanh:
            case Op::kFastSigmoid:
            case Op::kSoftplus:
            case Op::kLogaddexp:
            case Op::kTgamma:
            case Op::kLgamma:
            case Op::kRemainder:
            case Op::kFmod:
            case Op::kLdexp: cost += kMathCost; break;
            default: cost += LibmName(inst.op, inst.type) != nullptr ? kMathCost : 1; break;
          }
          break;
        case OpKind::Control:
          if (inst.op == Op::kIf) {
            cost += 1 + SideCosts{BlockCost(inst.then_block), BlockCost(inst.else_block)}.InlineCost();
          }
          break;
        default: cost += 1; break;
      }
    }
    return block_costs_[block_id] = cost;
  }

  std::vector<Value> Lookup(const std::vector<ValueId>& ids) const {
    std::vector<Value> out;
    out.reserve(ids.size());
    for (ValueId id : ids) out.push_back(values_[id]);
    return out;
  }

  const Function& f_;
  Printer& printer_;
  std::vector<Value> values_;                                   // by ValueId
  absl::flat_hash_map<ValueId, std::vector<Value>> if_results_;  // by If ValueId
  std::vector<int> block_costs_;                                 // by BlockId, -1 = not yet
};

// The C math library name of a math op for `type` ("tanhf" for f32, "tanh"
// for f64), shared by every backend whose target has a libm (glibc, CUDA's
// device library). Null for ops a backend lowers itself: those with an
// instruction or intrinsic (abs, sqrt, floor, ceil, round, trunc, copysign,
// min/max, fmin/fmax) and those defined by a formula (sigmoid, softplus, relu).
const char* LibmName(Op op, Type type);

}  // namespace dualcast::jit
