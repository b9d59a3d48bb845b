// The structural hash (see hash.h): a 64-bit mix over the execution-order walk.
#include "jit/hash.h"

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
  // splitmix64-style mixing: stable, well distributed, no seed.
  void Mix(uint64_t x) {
    h_ ^= x + 0x9e3779b97f4a7c15ULL + (h_ << 6) + (h_ >> 2);
    h_ *= 0xbf58476d1ce4e5b9ULL;
    h_ ^= h_ >> 31;
  }
  uint64_t Finish() {
    uint64_t z = h_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
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
  uint64_t h_ = 0x6475616c63617374ULL;  // "dualcast"
};

}  // namespace

uint64_t StructuralHash(const Function& f) { return Hasher(f).Run(); }

}  // namespace dualcast::jit
