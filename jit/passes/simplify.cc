// Constant folding and IEEE-exact algebraic rules (see simplify.h for the list and the why).
#include "jit/passes/simplify.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>

#include "jit/ir/scalar_ops.h"
#include "jit/passes/rewrite.h"

namespace dualcast::jit {

namespace {

bool IsRounding(Op op) {
  return op == Op::kFloor || op == Op::kCeil || op == Op::kRound || op == Op::kTrunc ||
         op == Op::kRint;
}

class Simplifier : public Rewriter {
 protected:
  ValueId RewriteInst(const Inst& inst, std::span<const ValueId> args, Builder& b) override {
    if (std::optional<ValueId> folded = Fold(inst, args, b)) return *folded;
    if (std::optional<ValueId> simpler = Algebra(inst, args, b)) return *simpler;
    return CloneInst(inst, args, b);
  }

  std::vector<ValueId> RewriteIf(const Inst& inst, ValueId cond, Builder& b) override {
    const Inst& c = b.function().inst(cond);
    if (c.op == Op::kConst) return WalkBlock(c.imm != 0 ? inst.then_block : inst.else_block, b);
    b.BeginIf(cond);
    std::vector<ValueId> then_yields = WalkBlock(inst.then_block, b);
    b.BeginElse(then_yields);
    std::vector<ValueId> else_yields = WalkBlock(inst.else_block, b);
    std::vector<ValueId> results = b.EndIf(else_yields);
    // A value both branches yield was visible in both, hence defined before
    // the If (sibling branches cannot share values): it can stand for the
    // result. Equal constants are interned per branch, so compare their bits.
    for (size_t k = 0; k < results.size(); ++k) {
      const Inst& t = b.function().inst(then_yields[k]);
      const Inst& e = b.function().inst(else_yields[k]);
      if (then_yields[k] == else_yields[k]) {
        results[k] = then_yields[k];
      } else if (t.op == Op::kConst && e.op == Op::kConst &&
                 std::bit_cast<uint64_t>(t.imm) == std::bit_cast<uint64_t>(e.imm)) {
        results[k] = b.Const(t.type, t.imm);
      }
    }
    return results;
  }

 private:
  // Bitwise: IsConstValue(v, 0.0) is false for a -0 constant.
  static bool IsConstValue(Builder& b, ValueId v, double value) {
    const Inst& inst = b.function().inst(v);
    return inst.op == Op::kConst &&
           std::bit_cast<uint64_t>(inst.imm) == std::bit_cast<uint64_t>(value);
  }
  static std::optional<bool> ConstBool(Builder& b, ValueId v) {
    const Inst& inst = b.function().inst(v);
    if (inst.op != Op::kConst) return std::nullopt;
    return inst.imm != 0;
  }

  std::optional<ValueId> Fold(const Inst& inst, std::span<const ValueId> args, Builder& b) {
    const OpKind kind = Info(inst.op).kind;
    if (args.empty() || kind == OpKind::Leaf || kind == OpKind::Control) return std::nullopt;
    double values[3];
    for (size_t i = 0; i < args.size(); ++i) {
      const Inst& a = b.function().inst(args[i]);
      if (a.op != Op::kConst) return std::nullopt;
      values[i] = a.imm;
    }
    // The interpreter's own evaluation, in the instruction's precision. A NaN
    // result stays an instruction: the sign of a computed NaN is the
    // hardware's (copysign and signbit can see it), not the interpreter's.
    const double value = EvalScalarOp(inst.op, inst.type, values);
    if (std::isnan(value)) return std::nullopt;
    return b.Const(inst.type, value);
  }

  std::optional<ValueId> Algebra(const Inst& inst, std::span<const ValueId> args, Builder& b) {
    const Function& f = b.function();
    auto op_of = [&](ValueId v) { return f.inst(v).op; };
    auto arg0_of = [&](ValueId v) { return f.inst(v).args[0]; };
    switch (inst.op) {
      case Op::kMul:
        if (IsConstValue(b, args[1], 1.0)) return args[0];
        if (IsConstValue(b, args[0], 1.0)) return args[1];
        break;
      case Op::kDiv:
        if (IsConstValue(b, args[1], 1.0)) return args[0];
        break;
      case Op::kAdd:
        if (IsConstValue(b, args[1], -0.0)) return args[0];
        if (IsConstValue(b, args[0], -0.0)) return args[1];
        break;
      case Op::kSub:
        if (IsConstValue(b, args[1], 0.0)) return args[0];
        if (IsConstValue(b, args[0], -0.0)) return b.Neg(args[1]);
        break;
      case Op::kNeg:
        if (op_of(args[0]) == Op::kNeg) return arg0_of(args[0]);
        break;
      case Op::kAbs:
        if (op_of(args[0]) == Op::kAbs) return args[0];
        if (op_of(args[0]) == Op::kNeg) return b.Emit(Op::kAbs, {arg0_of(args[0])});
        break;
      case Op::kFloor:
      case Op::kCeil:
      case Op::kRound:
      case Op::kTrunc:
      case Op::kRint:
        if (IsRounding(op_of(args[0]))) return args[0];
        break;
      case Op::kMin:
      case Op::kMax:
      case Op::kFmin:
      case Op::kFmax:
        if (args[0] == args[1]) return args[0];
        break;
      case Op::kFma:
        if (IsConstValue(b, args[0], 1.0)) return b.Add(args[1], args[2]);
        if (IsConstValue(b, args[1], 1.0)) return b.Add(args[0], args[2]);
        if (IsConstValue(b, args[2], -0.0)) return b.Mul(args[0], args[1]);
        break;
      case Op::kSelect: {
        if (std::optional<bool> c = ConstBool(b, args[0])) return *c ? args[1] : args[2];
        if (args[1] == args[2]) return args[1];
        if (inst.type != Type::kBool) break;
        std::optional<bool> t = ConstBool(b, args[1]), e = ConstBool(b, args[2]);
        if (t && e && *t && !*e) return args[0];
        if (t && e && !*t && *e) return b.Emit(Op::kNot, {args[0]});
        break;
      }
      case Op::kNot:
        if (op_of(args[0]) == Op::kNot) return arg0_of(args[0]);
        break;
      case Op::kAnd:
      case Op::kOr: {
        if (args[0] == args[1]) return args[0];
        const bool absorbing = inst.op == Op::kOr;  // or(true, x) = true, and(false, x) = false
        for (int i = 0; i < 2; ++i) {
          if (std::optional<bool> c = ConstBool(b, args[i])) {
            return *c == absorbing ? args[i] : args[1 - i];
          }
        }
        break;
      }
      case Op::kCast:
        if (inst.type == f.type(args[0])) return args[0];
        // f32 -> f64 is exact, so casting back recovers the original bits.
        if (op_of(args[0]) == Op::kCast && f.type(arg0_of(args[0])) == inst.type &&
            inst.type == Type::kF32) {
          return arg0_of(args[0]);
        }
        break;
      default: break;
    }
    return std::nullopt;
  }
};

}  // namespace

Function Simplify(const Function& f) { return Simplifier().Run(f); }

}  // namespace dualcast::jit
