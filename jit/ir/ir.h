// The scalar IR: typed SSA values in structured if/else blocks, and the builder that hash-conses them.
//
// A `Function` is what the tracer produces from a C++ lambda, what the passes
// (jvp, simplify, compose, ...) transform, and what every backend lowers. It is
// deliberately small: one flat array of instructions (`insts`, indexed by
// `ValueId`) and a tree of blocks. Block 0 is the entry; its `yields` are the
// function's outputs. An `If` instruction owns a then-block and an else-block,
// each ending in `yields` of the same arity and types; the values it produces
// are the `Result` instructions that follow it (like MLIR's `scf.if`).
//
// Scoping: a value is visible in the block that defines it (after its
// definition) and in every block nested below that point. The builder
// hash-conses pure instructions against everything visible, so the same
// expression computed twice in one scope is one value.
//
// Example:
//   Function f("axpy");
//   Builder b(f);
//   ValueId a = b.Input(Type::kF32), x = b.Input(Type::kF32);
//   ValueId y = b.Input(Type::kF32);
//   b.Return({b.Add(b.Mul(a, x), y)});
//   // Print(f):
//   // func axpy(%0: f32, %1: f32, %2: f32) -> (f32) {
//   //   %3 = mul %0, %1 : f32
//   //   %4 = add %3, %2 : f32
//   //   return %4
//   // }
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace dualcast::jit {

enum class Type : uint8_t { kF32, kF64, kBool };

const char* TypeName(Type type);
inline bool IsFloat(Type type) { return type == Type::kF32 || type == Type::kF64; }

enum class Op : uint8_t {
#define DUALCAST_OP(name, spelling, arity, kind) k##name,
#include "jit/ir/ops.def"
#undef DUALCAST_OP
};

enum class OpKind : uint8_t { Leaf, Arith, Math, Compare, Logic, Select, Cast, Control };

struct OpInfo {
  const char* spelling;
  int arity;
  OpKind kind;
};
const OpInfo& Info(Op op);
inline const char* Spelling(Op op) { return Info(op).spelling; }
inline constexpr int kNumOps = 0
#define DUALCAST_OP(name, spelling, arity, kind) +1
#include "jit/ir/ops.def"
#undef DUALCAST_OP
    ;

using ValueId = uint32_t;
using BlockId = uint32_t;
inline constexpr ValueId kNoValue = ~ValueId{0};
inline constexpr BlockId kNoBlock = ~BlockId{0};

struct Inst {
  Op op = Op::kConst;
  Type type = Type::kF64;
  uint8_t num_args = 0;
  std::array<ValueId, 3> args{kNoValue, kNoValue, kNoValue};
  double imm = 0;           // kConst: the value (exactly representable in `type`)
  uint32_t index = 0;       // kInput: position; kResult: which result of its If
  BlockId then_block = kNoBlock;  // kIf only
  BlockId else_block = kNoBlock;  // kIf only

  std::span<const ValueId> operands() const { return {args.data(), num_args}; }
};

struct Block {
  BlockId parent = kNoBlock;    // kNoBlock for the entry block
  std::vector<ValueId> body;    // instructions in execution order
  std::vector<ValueId> yields;  // values handed to the enclosing If (or returned)
};

// The backend hints of dc::kernel's TraceOptions, recorded by the tracer and kept by every pass
// (Rewriter, jvp): they change the generated code, so KernelSpec puts them in the cache key.
struct BackendHints {
  bool fast_math = false;
  int vector_width = 0;  // lanes; 0: the backend's choice
};

class Function {
 public:
  Function() = default;
  explicit Function(std::string name) : name(std::move(name)) {}

  std::string name;
  BackendHints hints;
  std::vector<Inst> insts;
  std::vector<Block> blocks;    // blocks[0] is the entry block
  std::vector<ValueId> inputs;  // kInput instructions, by position

  const Inst& inst(ValueId v) const { return insts[v]; }
  Type type(ValueId v) const { return insts[v].type; }
  const Block& entry() const { return blocks[0]; }
  const std::vector<ValueId>& outputs() const { return blocks[0].yields; }
  size_t num_inputs() const { return inputs.size(); }
  size_t num_outputs() const { return blocks.empty() ? 0 : blocks[0].yields.size(); }
  Type input_type(size_t i) const { return insts[inputs[i]].type; }
  Type output_type(size_t m) const { return insts[outputs()[m]].type; }
  // The If's results, i.e. the kResult instructions following it in its block.
  size_t num_results(ValueId if_inst) const {
    return blocks[insts[if_inst].then_block].yields.size();
  }
};

// What makes two pure instructions the same value, for hash-consing. The
// constant is compared by bit pattern so that -0.0 and 0.0 stay distinct.
struct InstKey {
  Op op;
  Type type;
  uint32_t index;
  uint64_t imm_bits;
  std::array<ValueId, 3> args;

  static InstKey Of(const Inst& inst) {
    return {inst.op, inst.type, inst.index, std::bit_cast<uint64_t>(inst.imm), inst.args};
  }
  bool operator==(const InstKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const InstKey& k) {
    return H::combine(std::move(h), k.op, k.type, k.index, k.imm_bits, k.args);
  }
};

// Builds a Function in program order: straight-line code into the current
// block, `BeginIf`/`BeginElse`/`EndIf` for structured branches. Pure
// instructions are hash-consed against every enclosing scope; constants are
// canonicalised by bit pattern (so -0.0 and 0.0 stay distinct).
class Builder {
 public:
  // Starts a new entry block when `f` has none; otherwise appends to block 0.
  explicit Builder(Function& f);

  Function& function() { return f_; }
  BlockId current_block() const { return scopes_.back().block; }

  ValueId Input(Type type);
  ValueId Const(Type type, double value);
  ValueId True() { return Const(Type::kBool, 1); }
  ValueId False() { return Const(Type::kBool, 0); }

  // Any pure instruction; the result type follows from the op and operands.
  ValueId Emit(Op op, std::span<const ValueId> args);
  ValueId Emit(Op op, std::initializer_list<ValueId> args) {
    return Emit(op, std::span<const ValueId>(args.begin(), args.size()));
  }
  ValueId Cast(Type to, ValueId v);

  ValueId Neg(ValueId a) { return Emit(Op::kNeg, {a}); }
  ValueId Add(ValueId a, ValueId b) { return Emit(Op::kAdd, {a, b}); }
  ValueId Sub(ValueId a, ValueId b) { return Emit(Op::kSub, {a, b}); }
  ValueId Mul(ValueId a, ValueId b) { return Emit(Op::kMul, {a, b}); }
  ValueId Div(ValueId a, ValueId b) { return Emit(Op::kDiv, {a, b}); }
  ValueId Select(ValueId c, ValueId a, ValueId b) { return Emit(Op::kSelect, {c, a, b}); }

  // Structured if: BeginIf(c); ...then...; BeginElse(then_yields); ...else...;
  // EndIf(else_yields) returns the If's results (one per yielded value).
  void BeginIf(ValueId cond);
  void BeginElse(const std::vector<ValueId>& then_yields);
  std::vector<ValueId> EndIf(const std::vector<ValueId>& else_yields);

  // Sets the function's outputs (the entry block's yields).
  void Return(const std::vector<ValueId>& outputs);

 private:
  struct Scope {
    BlockId block;
    ValueId if_inst = kNoValue;  // the If whose branch this scope is
    std::vector<InstKey> keys;   // what this scope added to visible_
  };

  ValueId Append(const Inst& inst);
  ValueId Intern(const Inst& inst);
  void PopScope();

  Function& f_;
  std::vector<Scope> scopes_;
  // Every instruction of the open scopes, by key. One map, not one per
  // scope: a lookup per scope cost the nesting depth per instruction. A key
  // is in at most one open scope (Intern adds only what none holds), so a
  // scope's keys are erased when it closes.
  absl::flat_hash_map<InstKey, ValueId> visible_;
};

}  // namespace dualcast::jit
