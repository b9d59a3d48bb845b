// The IR verifier (see verify.h for what it checks).
#include "jit/ir/verify.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "jit/error.h"
#include "jit/ir/print.h"

namespace dualcast::jit {

namespace {

class Verifier {
 public:
  explicit Verifier(const Function& f)
      : f_(f), visible_(f.insts.size(), false), placed_(f.insts.size(), false),
        block_seen_(f.blocks.size(), false) {}

  absl::Status Run() {
    if (f_.blocks.empty()) return Fail("function has no entry block");
    if (f_.blocks[0].parent != kNoBlock) return Fail("entry block has a parent");
    for (size_t i = 0; i < f_.inputs.size(); ++i) {
      ValueId v = f_.inputs[i];
      if (v >= f_.insts.size() || f_.inst(v).op != Op::kInput || f_.inst(v).index != i) {
        return Fail(absl::StrCat("input ", i, " is not a matching input instruction"));
      }
    }
    if (auto s = CheckBlock(0, kNoBlock); !s.ok()) return s;
    for (ValueId v = 0; v < f_.insts.size(); ++v) {
      if (!placed_[v]) return Fail(absl::StrCat("instruction ", v, " is in no block"));
    }
    for (BlockId b = 0; b < f_.blocks.size(); ++b) {
      if (!block_seen_[b]) return Fail(absl::StrCat("block ", b, " is owned by no if"));
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Fail(const std::string& what) {
    return MakeStatus(ErrorKind::kInternal,
                      absl::StrCat("IR verification failed: ", what, "\n", Print(f_)));
  }

  absl::Status CheckBlock(BlockId b, BlockId parent) {
    if (b >= f_.blocks.size()) return Fail(absl::StrCat("no block ", b));
    if (block_seen_[b]) return Fail(absl::StrCat("block ", b, " is owned twice"));
    block_seen_[b] = true;
    const Block& block = f_.blocks[b];
    if (block.parent != parent) return Fail(absl::StrCat("block ", b, " has the wrong parent"));
    std::vector<ValueId> defined_here;
    ValueId open_if = kNoValue;
    uint32_t next_result = 0;
    for (ValueId v : block.body) {
      if (v >= f_.insts.size()) return Fail(absl::StrCat("block ", b, " holds unknown %", v));
      if (placed_[v]) return Fail(absl::StrCat("%", v, " is placed twice"));
      placed_[v] = true;
      const Inst& inst = f_.inst(v);
      if (inst.op == Op::kResult) {
        if (open_if == kNoValue || inst.args[0] != open_if || inst.index != next_result) {
          return Fail(absl::StrCat("result %", v, " does not follow its if in order"));
        }
        const auto& then_yields = f_.blocks[f_.inst(open_if).then_block].yields;
        if (inst.type != f_.type(then_yields[next_result])) {
          return Fail(absl::StrCat("result %", v, " has the wrong type"));
        }
        ++next_result;
      } else {
        if (open_if != kNoValue && next_result != f_.num_results(open_if)) {
          return Fail(absl::StrCat("if %", open_if, " is missing results"));
        }
        open_if = kNoValue;
      }
      if (auto s = CheckInst(v, b); !s.ok()) return s;
      if (inst.op == Op::kIf) {
        if (auto s = CheckBlock(inst.then_block, b); !s.ok()) return s;
        if (auto s = CheckBlock(inst.else_block, b); !s.ok()) return s;
        const auto& ty = f_.blocks[inst.then_block].yields;
        const auto& ey = f_.blocks[inst.else_block].yields;
        if (ty.size() != ey.size()) return Fail(absl::StrCat("if %", v, ": yield counts differ"));
        for (size_t k = 0; k < ty.size(); ++k) {
          if (f_.type(ty[k]) != f_.type(ey[k])) {
            return Fail(absl::StrCat("if %", v, ": yield ", k, " types differ"));
          }
        }
        open_if = v;
        next_result = 0;
      }
      visible_[v] = true;
      defined_here.push_back(v);
    }
    if (open_if != kNoValue && next_result != f_.num_results(open_if)) {
      return Fail(absl::StrCat("if %", open_if, " is missing results"));
    }
    for (ValueId y : block.yields) {
      if (y >= f_.insts.size() || !visible_[y]) {
        return Fail(absl::StrCat("block ", b, " yields %", y, " which is not visible there"));
      }
    }
    for (ValueId v : defined_here) visible_[v] = false;  // out of scope for siblings
    return absl::OkStatus();
  }

  absl::Status CheckInst(ValueId v, BlockId b) {
    const Inst& inst = f_.inst(v);
    const OpInfo& info = Info(inst.op);
    if (inst.num_args != info.arity) {
      return Fail(absl::StrCat("%", v, " (", info.spelling, ") has ", inst.num_args, " operands"));
    }
    for (ValueId a : inst.operands()) {
      if (a >= f_.insts.size() || (!visible_[a] && inst.op != Op::kResult)) {
        return Fail(absl::StrCat("%", v, " (", info.spelling, ") uses %", a,
                                 " which is not defined before it in scope"));
      }
    }
    auto ty = [&](int i) { return f_.type(inst.args[i]); };
    switch (info.kind) {
      case OpKind::Leaf:
        if (inst.op == Op::kInput && b != 0) return Fail("an input outside the entry block");
        break;
      case OpKind::Arith:
      case OpKind::Math:
        for (int i = 0; i < inst.num_args; ++i) {
          if (ty(i) != inst.type || !IsFloat(inst.type)) {
            return Fail(absl::StrCat("%", v, " (", info.spelling, ") mixes types"));
          }
        }
        break;
      case OpKind::Compare:
        if (inst.type != Type::kBool || (inst.num_args > 1 && ty(0) != ty(1)) || !IsFloat(ty(0))) {
          return Fail(absl::StrCat("%", v, " (", info.spelling, ") is not float x float -> bool"));
        }
        break;
      case OpKind::Logic:
        for (int i = 0; i < inst.num_args; ++i) {
          if (ty(i) != Type::kBool) return Fail(absl::StrCat("%", v, " logic on non-bool"));
        }
        if (inst.type != Type::kBool) return Fail(absl::StrCat("%", v, " logic yields non-bool"));
        break;
      case OpKind::Select:
        if (ty(0) != Type::kBool || ty(1) != inst.type || ty(2) != inst.type) {
          return Fail(absl::StrCat("%", v, " select needs (bool, T, T) -> T"));
        }
        break;
      case OpKind::Cast:
        if (!IsFloat(ty(0)) || !IsFloat(inst.type)) return Fail("cast between non-floats");
        break;
      case OpKind::Control:
        if (inst.op == Op::kIf) {
          if (ty(0) != Type::kBool) return Fail(absl::StrCat("if %", v, " on a non-bool"));
          if (inst.then_block == kNoBlock || inst.else_block == kNoBlock) {
            return Fail(absl::StrCat("if %", v, " lacks a branch"));
          }
        }
        break;
    }
    return absl::OkStatus();
  }

  const Function& f_;
  std::vector<bool> visible_, placed_, block_seen_;
};

}  // namespace

absl::Status Verify(const Function& f) { return Verifier(f).Run(); }

}  // namespace dualcast::jit
