// The REPL's syntax tree: one node type for expressions, one for statements, each with its source span.
//
// One tree serves both worlds of the language: a `def` body is lowered to a
// jit::Function by lower.h (scalar IR, the same IR the C++ tracer produces),
// and a top-level expression is evaluated on arrays by the runtime
// (evaluator.h). Keeping the tree lets `:time` re-run a statement and lets a
// function be lowered again for another element type, without re-parsing.
//
// Example (text -> tree):
//   def f(x) = if x > 0 then x else 0
//   // Stmt{kDef, name "f", params {"x"},
//   //      body Expr{kIf, [Expr{kBinary ">", [x, 0]}, Expr{kName x}, Expr{kNumber 0}]}}
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "examples/repl/lexer.h"
#include "examples/repl/source_error.h"

namespace dualcast::repl {

struct Expr {
  enum Kind {
    kNumber,   // number
    kName,     // name
    kCall,     // name(args...) or name.(args...) (dot)
    kUnary,    // op: kMinus or kNot; args[0]
    kBinary,   // op; args[0] op args[1]
    kIf,       // if args[0] then args[1] else args[2]
    kLet,      // let names = args[0] in args[1]
    kTuple,    // (args[0], args[1], ...)
    kArray,    // [args...] (nested for higher ranks)
    kIndex,    // args[0][number]: one part of a several-output value, numbered from 1
  };
  Kind kind = kNumber;
  Span span;     // the whole expression
  Span op_span;  // the operator or callee token: where the caret points
  Tok op = Tok::kEnd;
  double number = 0;
  std::string name;
  std::vector<std::string> names;  // kLet: bound names (several destructure a tuple)
  std::vector<Span> name_spans;    // kLet: where each bound name is
  bool dot = false;                // kCall: written name.(...)
  int height = 1;                  // kBinary: length of the longest operator chain below
  std::vector<std::unique_ptr<Expr>> args;
};

// The 0-based part an Expr::kIndex picks from a value with `parts` outputs; a
// SourceError when the (1-based) index is out of range, and for any index on a
// value with one output: a NumPy reader's a[1] means row 1, and handing back
// the whole array would be a silent surprise.
inline size_t PartIndex(const Expr& e, size_t parts) {
  const double k = e.number;
  if (parts == 1) {
    throw SourceError(ErrorCategory::kValue, e.op_span,
                      "[" + std::to_string(static_cast<long long>(k)) +
                          "] picks an output of a function with several outputs, and this value has "
                          "one; the REPL has no element indexing or slicing of arrays (the C++ API "
                          "does: dualcast::slice)");
  }
  if (k < 1 || k > static_cast<double>(parts)) {
    throw SourceError(ErrorCategory::kValue, e.op_span,
                      "index " + std::to_string(static_cast<long long>(k)) + " is out of range: this value has " +
                          std::to_string(parts) + " outputs, numbered 1 to " + std::to_string(parts));
  }
  return static_cast<size_t>(k) - 1;
}

struct Stmt {
  enum Kind {
    kDef,     // def name(params) = body
    kAssign,  // name = value, or a, b = value
    kExpr,    // value (printed)
  };
  Kind kind = kExpr;
  Span span;
  std::string name;                 // kDef
  Span name_span;
  std::vector<std::string> params;  // kDef
  std::vector<Span> param_spans;
  std::vector<std::string> targets;  // kAssign
  std::vector<Span> target_spans;
  std::shared_ptr<const Expr> body;  // kDef: body; kAssign/kExpr: the value
  bool quiet = false;                // ended with ';': do not print the result
};

}  // namespace dualcast::repl
