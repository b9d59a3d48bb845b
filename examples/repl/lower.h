// Lowering a `def` body to a jit::Function: the REPL's functions become the same scalar IR the C++ tracer produces.
//
// This is the REPL's only "compiler", and it is not one: it walks the
// syntax tree once and emits instructions through jit::Builder, so
// hash-consing, structured if/else, the jvp pass, the optimiser and the
// backends are exactly those every C++ kernel uses. `if c then a else b`
// becomes Builder::BeginIf/BeginElse/EndIf (only the taken branch runs, in
// the value and in every derivative lane); `where(c, a, b)` becomes `select`
// (both sides computed); a call of an earlier `def` is inlined with
// jit::Inline; a math function is the ops.def op of the same spelling
// (`sigmoid`, `tanh`, `pow`, `atan2`, ...; also `add`, `lt`, `select`...).
//
// Types: every parameter and every literal has the element type asked for
// (the session uses f64); comparisons and and/or/not are booleans. A boolean
// output is converted to 0/1 of the element type.
//
// Example:
//   auto def = MakeFunctionDef(ParseStatement("def relu2(x) = if x > 0 then x*x else 0"), {});
//   jit::Function f = LowerFunction(*def, jit::Type::kF64);
//   // func relu2(%0: f64) -> (f64) { %1 = const 0 ... %3 = if %2 { ... } }
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "examples/repl/ast.h"
#include "jit/ir/ir.h"

namespace dualcast::repl {

struct FunctionDef;
using FunctionTable = std::map<std::string, std::shared_ptr<const FunctionDef>>;

// A user function. The functions it calls are captured when it is defined
// (early binding): redefining a callee later does not change it.
struct FunctionDef {
  std::string name;
  std::vector<std::string> params;
  std::shared_ptr<const Expr> body;
  std::string source;      // the statement text, for error messages about it
  FunctionTable callees;   // the user functions its body calls
  int num_outputs = 1;     // known after the first lowering
};

// Checks and captures a `def` statement: lowers it once for f64, so every
// mistake in it (unknown names, wrong arity, booleans used as numbers) is
// reported now, with its span, as a SourceError. `known` holds the functions
// defined so far. `is_session_name` (optional) tells whether a name is a
// session variable, to explain why a body cannot see it.
std::shared_ptr<const FunctionDef> MakeFunctionDef(
    const Stmt& def, const FunctionTable& known, std::string source = "",
    const std::function<bool(const std::string&)>& is_session_name = nullptr);

// The function's IR for inputs of `dtype` (f32 or f64). Throws SourceError.
jit::Function LowerFunction(const FunctionDef& def, jit::Type dtype);

// Whether `name` is an ops.def op callable in a body (math, arithmetic,
// comparison, logic, select) or one of the aliases (`where`), and its arity.
bool IsScalarBuiltin(const std::string& name, int* arity = nullptr);
// Built-in constants usable everywhere: pi, inf, nan.
bool BuiltinConstant(const std::string& name, double* value);

// Why ops.def's `cast` is no builtin: the REPL's arrays are all float64.
inline constexpr char kCastHint[] =
    " (the REPL computes in float64 only, so there is no other element type to cast to)";

}  // namespace dualcast::repl
