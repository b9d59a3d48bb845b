// The LLVM spelling of every IR op on W-lane vectors: the CPU backend's printer for CodegenWalk.
//
// CodegenWalk (codegen.h) does the traversal; this class only turns one op
// into LLVM instructions at the builder's insertion point. Every value is a
// vector of `lanes` elements (a scalar when lanes == 1): one lane per array
// element, as in Dr.Jit's LLVM backend. Math calls go to libmvec at that
// width (vector_math.h).
//
// Branches keep their structure. Each open if has a lane mask (the lanes
// that reach it; at the top level, every lane). A row's tail vector has
// padding lanes (inputs read as 0, results never stored) that may enter a
// side no element takes, which costs that one vector per row the side's
// work; masking with the active lanes instead cost an AND per test on every
// full vector: 1-2% of the HM-LSTM columns-layout kernels (Zen 1, A/B with
// DUALCAST_CACHE_DIR=off, 2026-11-29).
// For `if (c)` under mask m the printer emits
//     then_m = m & c;  else_m = m & ~c
//     br reduce.or(then_m), then, then.skip     ; no lane takes it: one jump
//   then:  ...                                  ; runs for all W lanes
//   then.skip: phi(then yields, 0)
//     br reduce.or(else_m), else, endif
//   else:  ...
//   endif: phi(else yields, 0); result = select(c, then, else)
// so a side no lane takes costs a compare and a jump, uniform lanes run one
// side, and mixed lanes run both and blend. A side that costs no more than a
// few arithmetic ops (kTestCost; CodegenWalk's SideCosts) is not worth its
// test: it runs inline for every lane and is blended (both that cheap: no
// branch at all). A condition known to be the same
// in every lane (computed only from inputs broadcast along the inner dim and
// constants: the rows layout's flags) is a plain branch on lane 0 with phis
// and no blend, and its test is loop-invariant. That is only correct because
// every op is pure and the kernel loads its inputs before the walk and stores
// after it: running a side for lanes that do not take it has no effect beyond
// the lanes' discarded values. Skipped sides yield 0, never poison, so a
// blended-away lane can never make a later mask poison.
//
// Semantics (must match the interpreter and dual/ exactly; no fast-math
// flags anywhere, so no contraction or reassociation):
//   compare ops are ordered (false on NaN) except `ne` (true on NaN, as C's !=);
//   min(a,b) = b < a ? b : a, max(a,b) = a < b ? b : a;
//   fmin/fmax are IEEE (a NaN operand loses) with ties to the first operand;
//   tanh and sigmoid: dualcast/activation_steps.hpp's formulas around one exp;
//   softplus(x) = x > 0 ? x + log1p(exp(-x)) : log1p(exp(x))  (as a select);
//   relu(x) = x > 0 || isnan(x) ? x : +0;
//   sin, cos, erf are clamped to [-1, 1], and cos(x) = 1 for tiny x
//   (vector_math.h says why);
//   cast float -> bool is x != 0 (NaN -> true), bool -> float is 0/1;
//   the staples (sign, square, rsqrt, clamp, logaddexp, erfinv, ldexp) as
//   jit/ir/staple_math.h spells them, on whole vectors (erfinv evaluates both
//   of its branches and selects per lane); tgamma, remainder, fmod (frem),
//   lgamma (lgamma_r: no shared signgam) and ldexp have no libmvec form and
//   are one scalar libm call per lane, and so are logaddexp's exp and log1p
//   (its cancellation near 0 would magnify libmvec's ulps).
//
// Example:
//   llvm::IRBuilder<> b(block);
//   LlvmPrinter printer(b, module, 16, [&](uint32_t i, Type t) { return loaded[i]; });
//   std::vector<llvm::Value*> outs = CodegenWalk<LlvmPrinter>(f, printer).Run();
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "jit/codegen/codegen.h"
#include "jit/ir/ir.h"
#include "llvm/IR/IRBuilder.h"

namespace dualcast::jit::cpu {

// The LLVM type of an IR type (kBool -> i1); a vector of `lanes` of it when lanes > 1.
llvm::Type* LlvmType(llvm::LLVMContext& ctx, Type type, int lanes = 1);

class LlvmPrinter {
 public:
  using Value = llvm::Value*;
  // Produces the value of the function's input `index` (a load, usually).
  using InputLoader = std::function<llvm::Value*(uint32_t index, Type type)>;

  LlvmPrinter(llvm::IRBuilder<>& builder, llvm::Module& module, int lanes,
              InputLoader load_input)
      : b_(builder), module_(module), lanes_(lanes), load_input_(std::move(load_input)) {}

  // `v` has the same value in every lane (an input broadcast along the inner dim).
  void MarkUniform(Value v) { uniform_.insert(v); }
  bool IsUniform(Value v) const;
  // The branches of uniform ifs, outer before inner (for SinkIntoUniformBranches).
  const std::vector<llvm::BranchInst*>& uniform_branches() const { return uniform_branches_; }
  int lanes() const { return lanes_; }

  Value Constant(Type type, double value);
  Value Input(uint32_t index, Type type) { return load_input_(index, type); }
  Value Emit(Op op, Type type, std::span<const Type> arg_types, std::span<const Value> args);
  void BeginIf(Value cond, std::span<const Type> result_types) {
    BeginIf(cond, result_types, SideCosts{kTestCost + 1, kTestCost + 1});
  }
  void BeginIf(Value cond, std::span<const Type> result_types, SideCosts costs);
  void BeginElse(std::span<const Value> then_yields);
  std::vector<Value> EndIf(std::span<const Value> else_yields);

 private:
  Value EmitOp(Op op, Type type, std::span<const Type> arg_types, std::span<const Value> args);
  Value EmitMath(Op op, Type type, std::span<const Value> args);
  Value EmitCast(Type to, Type from, Value v);
  Value CallLibm(const char* name, Type type, std::span<const Value> args);
  Value Intrinsic(unsigned id, Type type, std::span<const Value> args);
  llvm::Type* VType(Type type) const { return LlvmType(b_.getContext(), type, lanes_); }
  Value Mask() const;
  Value AnyLane(Value mask);

  Value Unlowered(Op op, Type type);  // the fallback: a call to dualcast_unlowered_<op>
  Value EmitLgamma(Type type, Value x);
  Value EmitLdexp(Type type, Value x, Value n);
  struct LlvmArith;  // staple::ErfinvSteps on LLVM values

  struct OpenIf {
    bool uniform;  // a plain branch on lane 0: no masks, no blend
    bool then_tested = false;  // mixed: a side behind a test of its lane mask; an
    bool else_tested = false;  // untested side runs inline for every lane
    Value cond;
    Value else_mask = nullptr;
    llvm::BasicBlock* begin_block = nullptr;  // where the if was entered (the then-side skip edge)
    llvm::BasicBlock* else_block = nullptr;
    llvm::BasicBlock* merge_block = nullptr;
    llvm::BasicBlock* skip_block = nullptr;   // joins the then-side and its skip edge
    std::vector<Value> then_results = {};     // phis in skip_block (uniform: the yields)
    llvm::BasicBlock* then_end = nullptr;     // uniform: where the then-side ended
    llvm::BasicBlock* else_begin = nullptr;   // where the else-side's test was emitted
  };

  llvm::IRBuilder<>& b_;
  llvm::Module& module_;
  int lanes_;
  InputLoader load_input_;
  std::vector<Value> masks_;  // the enclosing branches' lane masks, innermost last
  std::vector<OpenIf> open_ifs_;
  absl::flat_hash_set<Value> uniform_;  // lane-invariant values besides constants
  std::vector<llvm::BranchInst*> uniform_branches_;
};

static_assert(CodegenPrinter<LlvmPrinter>);

}  // namespace dualcast::jit::cpu
