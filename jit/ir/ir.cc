// The op table, type names, and the hash-consing Builder.
#include "jit/ir/ir.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jit/error.h"

namespace dualcast::jit {

namespace {
constexpr OpInfo kOpInfo[] = {
#define DUALCAST_OP(name, spelling, arity, kind) {#spelling, arity, OpKind::kind},
#include "jit/ir/ops.def"
#undef DUALCAST_OP
};

[[noreturn]] void BuilderBug(const std::string& what) {
  throw Error(ErrorKind::kInternal, "jit::Builder: " + what);
}
}  // namespace

const OpInfo& Info(Op op) { return kOpInfo[static_cast<int>(op)]; }

const char* TypeName(Type type) {
  switch (type) {
    case Type::kF32: return "f32";
    case Type::kF64: return "f64";
    case Type::kBool: return "bool";
  }
  return "?";
}

Builder::Builder(Function& f) : f_(f) {
  if (f_.blocks.empty()) f_.blocks.push_back(Block{});
  scopes_.push_back(Scope{0, kNoValue, {}});
}

ValueId Builder::Append(const Inst& inst) {
  ValueId id = static_cast<ValueId>(f_.insts.size());
  f_.insts.push_back(inst);
  f_.blocks[current_block()].body.push_back(id);
  return id;
}

ValueId Builder::Intern(const Inst& inst) {
  const InstKey key = InstKey::Of(inst);
  auto [it, added] = visible_.try_emplace(key, kNoValue);
  if (!added) return it->second;
  ValueId id = Append(inst);
  it->second = id;
  if (scopes_.size() > 1) scopes_.back().keys.push_back(key);  // the entry scope never closes
  return id;
}

void Builder::PopScope() {
  for (const InstKey& key : scopes_.back().keys) visible_.erase(key);
  scopes_.pop_back();
}

ValueId Builder::Input(Type type) {
  if (scopes_.size() != 1) BuilderBug("inputs belong to the entry block");
  Inst inst;
  inst.op = Op::kInput;
  inst.type = type;
  inst.index = static_cast<uint32_t>(f_.inputs.size());
  ValueId id = Append(inst);
  f_.inputs.push_back(id);
  return id;
}

ValueId Builder::Const(Type type, double value) {
  Inst inst;
  inst.op = Op::kConst;
  inst.type = type;
  if (type == Type::kF32) value = static_cast<double>(static_cast<float>(value));
  if (type == Type::kBool) value = value != 0 ? 1 : 0;
  // One NaN per sign: hash-consing and the structural hash must not depend on
  // payloads, but signbit and copysign see the sign (a -NaN literal keeps it).
  inst.imm = std::isnan(value) ? std::copysign(std::numeric_limits<double>::quiet_NaN(), value)
                               : value;
  return Intern(inst);
}

ValueId Builder::Emit(Op op, std::span<const ValueId> args) {
  const OpInfo& info = Info(op);
  if (static_cast<int>(args.size()) != info.arity) {
    BuilderBug(absl::StrFormat("%s takes %d operands, got %d", info.spelling, info.arity,
                               args.size()));
  }
  for (ValueId a : args) {
    if (a >= f_.insts.size()) BuilderBug(absl::StrCat(info.spelling, ": unknown operand %", a));
  }
  Inst inst;
  inst.op = op;
  inst.num_args = static_cast<uint8_t>(args.size());
  for (size_t i = 0; i < args.size(); ++i) inst.args[i] = args[i];
  auto type_of = [&](size_t i) { return f_.insts[args[i]].type; };
  switch (info.kind) {
    case OpKind::Arith:
    case OpKind::Math:
      inst.type = type_of(0);
      for (size_t i = 0; i < args.size(); ++i) {
        if (type_of(i) != inst.type || !IsFloat(type_of(i))) {
          BuilderBug(absl::StrCat(info.spelling, ": operands must be one float type"));
        }
      }
      break;
    case OpKind::Compare:
      if ((args.size() > 1 && type_of(0) != type_of(1)) || !IsFloat(type_of(0))) {
        BuilderBug(absl::StrCat(info.spelling, ": compares two values of one float type"));
      }
      inst.type = Type::kBool;
      break;
    case OpKind::Logic:
      for (size_t i = 0; i < args.size(); ++i) {
        if (type_of(i) != Type::kBool) BuilderBug(absl::StrCat(info.spelling, ": needs bools"));
      }
      inst.type = Type::kBool;
      break;
    case OpKind::Select:
      if (type_of(0) != Type::kBool || type_of(1) != type_of(2)) {
        BuilderBug("select: needs (bool, T, T)");
      }
      inst.type = type_of(1);
      break;
    case OpKind::Leaf:
    case OpKind::Cast:
    case OpKind::Control:
      BuilderBug(absl::StrCat(info.spelling, " is not built through Emit"));
  }
  return Intern(inst);
}

ValueId Builder::Cast(Type to, ValueId v) {
  if (f_.insts[v].type == to) return v;
  Inst inst;
  inst.op = Op::kCast;
  inst.type = to;
  inst.num_args = 1;
  inst.args[0] = v;
  return Intern(inst);
}

void Builder::BeginIf(ValueId cond) {
  if (f_.insts[cond].type != Type::kBool) BuilderBug("if: condition must be bool");
  Inst inst;
  inst.op = Op::kIf;
  inst.type = Type::kBool;  // an If has no value of its own; its Results do
  inst.num_args = 1;
  inst.args[0] = cond;
  ValueId if_id = Append(inst);
  BlockId then_block = static_cast<BlockId>(f_.blocks.size());
  f_.blocks.push_back(Block{current_block(), {}, {}});
  f_.insts[if_id].then_block = then_block;
  scopes_.push_back(Scope{then_block, if_id, {}});
}

void Builder::BeginElse(const std::vector<ValueId>& then_yields) {
  if (scopes_.size() < 2 || f_.insts[scopes_.back().if_inst].else_block != kNoBlock) {
    BuilderBug("BeginElse without an open then-branch");
  }
  ValueId if_id = scopes_.back().if_inst;
  f_.blocks[scopes_.back().block].yields.assign(then_yields.begin(), then_yields.end());
  PopScope();
  BlockId else_block = static_cast<BlockId>(f_.blocks.size());
  f_.blocks.push_back(Block{current_block(), {}, {}});
  f_.insts[if_id].else_block = else_block;
  scopes_.push_back(Scope{else_block, if_id, {}});
}

std::vector<ValueId> Builder::EndIf(const std::vector<ValueId>& else_yields) {
  if (scopes_.size() < 2 || f_.insts[scopes_.back().if_inst].else_block == kNoBlock) {
    BuilderBug("EndIf without an open else-branch");
  }
  ValueId if_id = scopes_.back().if_inst;
  const BlockId then_block = f_.insts[if_id].then_block;  // by value: Append reallocates
  const std::vector<ValueId>& then_yields = f_.blocks[then_block].yields;
  if (then_yields.size() != else_yields.size()) {
    BuilderBug(absl::StrFormat("if: then yields %d values, else %d", then_yields.size(),
                               else_yields.size()));
  }
  f_.blocks[scopes_.back().block].yields.assign(else_yields.begin(), else_yields.end());
  PopScope();
  std::vector<ValueId> results;
  for (size_t k = 0; k < else_yields.size(); ++k) {
    Type t = f_.insts[f_.blocks[then_block].yields[k]].type;
    if (f_.insts[else_yields[k]].type != t) BuilderBug("if: branches yield different types");
    Inst r;
    r.op = Op::kResult;
    r.type = t;
    r.num_args = 1;
    r.args[0] = if_id;
    r.index = static_cast<uint32_t>(k);
    results.push_back(Append(r));
  }
  return results;
}

void Builder::Return(const std::vector<ValueId>& outputs) {
  if (scopes_.size() != 1) BuilderBug("Return inside an open if");
  f_.blocks[0].yields.assign(outputs.begin(), outputs.end());
}

}  // namespace dualcast::jit
