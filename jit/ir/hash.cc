// The structural hash (see hash.h): a 64-bit mix over the execution-order walk.
#include "jit/ir/hash.h"

#include <bit>
#include <vector>

namespace dualcast::jit {

namespace {

class Hasher {
 public:
  explicit Hasher(const Function& f) : f_(f), number_(f.insts.size(), 0) {}

  uint64_t Run() {
    Mix(f_.inputs.size());
    for (ValueId in : f_.inputs) {
      Number(in);
      Mix(static_cast<uint64_t>(f_.type(in)));
    }
    if (!f_.blocks.empty()) Block(0);
    return Finish();
  }

 private:
  void Mix(uint64_t x) { mixer_.Mix(x); }
  uint64_t Finish() const { return mixer_.Finish(); }
  void Number(ValueId v) {
    if (number_[v] == 0) number_[v] = ++next_;
  }

  void Block(BlockId b) {
    Mix(0xB10C);
    for (ValueId v : f_.blocks[b].body) {
      const Inst& inst = f_.inst(v);
      if (inst.op == Op::kInput) continue;
      Number(v);
      Mix(static_cast<uint64_t>(inst.op) << 8 | static_cast<uint64_t>(inst.type));
      Mix(inst.index);
      if (inst.op == Op::kConst) Mix(std::bit_cast<uint64_t>(inst.imm));
      for (ValueId a : inst.operands()) Mix(number_[a]);
      if (inst.op == Op::kIf) {
        Block(inst.then_block);
        Block(inst.else_block);
      }
    }
    Mix(0xE1D);
    for (ValueId y : f_.blocks[b].yields) Mix(number_[y]);
  }

  const Function& f_;
  std::vector<uint64_t> number_;
  uint64_t next_ = 0;
  StableMixer mixer_;
};

}  // namespace

uint64_t StructuralHash(const Function& f) { return Hasher(f).Run(); }

}  // namespace dualcast::jit
