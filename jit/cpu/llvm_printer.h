// The LLVM spelling of every IR op: the CPU backend's printer for CodegenWalk.
//
// CodegenWalk (codegen.h) does the traversal; this class only turns one op
// into LLVM instructions at the builder's insertion point. Ifs become real
// basic blocks (then / else / merge, one phi per result), so only the taken
// branch runs; the loop vectoriser later if-converts small branches into
// selects, which is correct because every math call is pure.
//
// Semantics (must match the interpreter and dual/ exactly; no fast-math
// flags anywhere, so no contraction or reassociation):
//   compare ops are ordered (false on NaN) except `ne` (true on NaN, as C's !=);
//   min(a,b) = b < a ? b : a, max(a,b) = a < b ? b : a;
//   fmin/fmax are IEEE (a NaN operand loses) with ties to the first operand;
//   sigmoid(x) = 1/(1+exp(-x));
//   softplus(x) = x > 0 ? x + log1p(exp(-x)) : log1p(exp(x))  (as a select);
//   relu(x) = x > 0 || isnan(x) ? x : +0;
//   cast float -> bool is x != 0 (NaN -> true), bool -> float is 0/1.
//
// Example:
//   llvm::IRBuilder<> b(block);
//   LlvmPrinter printer(b, module, [&](uint32_t i, Type t) { return loaded[i]; });
//   std::vector<llvm::Value*> outs = CodegenWalk<LlvmPrinter>(f, printer).Run();
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "jit/codegen.h"
#include "jit/ir.h"
#include "llvm/IR/IRBuilder.h"

namespace dualcast::jit::cpu {

// The LLVM type of an IR type (kBool -> i1).
llvm::Type* LlvmType(llvm::LLVMContext& ctx, Type type);

class LlvmPrinter {
 public:
  using Value = llvm::Value*;
  // Produces the value of the function's input `index` (a load, usually).
  using InputLoader = std::function<llvm::Value*(uint32_t index, Type type)>;

  LlvmPrinter(llvm::IRBuilder<>& builder, llvm::Module& module, InputLoader load_input)
      : b_(builder), module_(module), load_input_(std::move(load_input)) {}

  Value Constant(Type type, double value);
  Value Input(uint32_t index, Type type) { return load_input_(index, type); }
  Value Emit(Op op, Type type, std::span<const Type> arg_types, std::span<const Value> args);
  void BeginIf(Value cond, std::span<const Type> result_types);
  void BeginElse(std::span<const Value> then_yields);
  std::vector<Value> EndIf(std::span<const Value> else_yields);

 private:
  Value EmitMath(Op op, Type type, std::span<const Value> args);
  Value EmitCast(Type to, Type from, Value v);
  Value CallLibm(const char* name, Type type, std::span<const Value> args);
  Value Intrinsic(unsigned id, Type type, std::span<const Value> args);

  struct OpenIf {
    llvm::BasicBlock* else_block;
    llvm::BasicBlock* merge_block;
    llvm::BasicBlock* then_end = nullptr;  // where the then-branch ended (nested ifs move it)
    std::vector<Value> then_yields;
  };

  llvm::IRBuilder<>& b_;
  llvm::Module& module_;
  InputLoader load_input_;
  std::vector<OpenIf> open_ifs_;
};

static_assert(CodegenPrinter<LlvmPrinter>);

}  // namespace dualcast::jit::cpu
