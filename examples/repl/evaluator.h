// Evaluating top-level expressions on arrays: every operation is a call into the dualcast runtime.
//
// The evaluator is the glue between the syntax tree and the runtime, and it
// holds no numerics of its own: operators are the runtime's fused array
// operators, `f.(...)` is dualcast::broadcast_n on the function's Kernel,
// `sum/mean/matmul/transpose/reshape` the tape-aware reductions, `grad` a
// dualcast::Tape around the loss, `partials` dualcast::partials. Errors the
// runtime throws (dualcast::Error) are re-thrown as SourceError carrying the
// span of the expression that caused them, so the caret points at it.
//
// `if` is not an array operation (use where(c, a, b) or a def); `let`
// binds names locally; plain calls `f(x)` and dot calls `f.(x)` both apply a
// scalar function elementwise (the dot is the Julia spelling).
//
// Example:
//   Evaluator ev(session);
//   Value v = ev.Eval(*ParseExpression("sum(x * 2)"));
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "examples/repl/ast.h"
#include "examples/repl/session.h"

namespace dualcast::repl {

class Evaluator {
 public:
  explicit Evaluator(Session& session) : s_(session) {}

  Value Eval(const Expr& e);
  // The one array an expression gives (a tuple is an error at e's span).
  A Array(const Expr& e);

 private:
  Value Name(const Expr& e);
  Value Call(const Expr& e);
  Value UserCall(const Expr& e, const UserFunction& f);
  Value Builtin(const Expr& e, bool* found);
  Value Grad(const Expr& e);
  Value PartialsCall(const Expr& e);
  A Literal(const Expr& e);
  A Unary(const Expr& e);
  A Binary(const Expr& e);
  std::vector<int64_t> Dims(const Expr& call, size_t first, size_t count,
                            const std::string& what = "a size");
  int64_t Integer(const Expr& e, const std::string& what, bool allow_negative = false);
  // An axis of x (negative ones count from the end), range-checked.
  int Axis(const Expr& e, const A& x);

  Session& s_;
  std::vector<std::pair<std::string, Value>> locals_;  // 'let' bindings, innermost last
};

}  // namespace dualcast::repl
