// Lowering `def` bodies to jit::Function through jit::Builder (see lower.h).
#include "examples/repl/lower.h"

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <utility>

#include "jit/error.h"
#include "jit/ir/verify.h"
#include "jit/passes/compose.h"

namespace dualcast::repl {
namespace {

using jit::Op;
using jit::OpKind;
using jit::Type;
using jit::ValueId;
using Values = std::vector<ValueId>;

bool LookupOp(const std::string& name, Op* op) {
  if (name == "where") {
    *op = Op::kSelect;
    return true;
  }
  // C's names that kernels accept too (jit/trace/var.h).
  if (name == "fabs" || name == "nearbyint") {
    *op = name == "fabs" ? Op::kAbs : Op::kRint;
    return true;
  }
  for (int i = 0; i < jit::kNumOps; ++i) {
    const Op candidate = static_cast<Op>(i);
    const jit::OpInfo& info = jit::Info(candidate);
    if (info.kind == OpKind::Leaf || info.kind == OpKind::Control || info.kind == OpKind::Cast) continue;
    if (name == info.spelling) {
      *op = candidate;
      return true;
    }
  }
  return false;
}

Op BinaryOp(Tok tok) {
  switch (tok) {
    case Tok::kPlus: return Op::kAdd;
    case Tok::kMinus: return Op::kSub;
    case Tok::kStar: return Op::kMul;
    case Tok::kSlash: return Op::kDiv;
    case Tok::kCaret: return Op::kPow;
    case Tok::kEq: return Op::kEq;
    case Tok::kNe: return Op::kNe;
    case Tok::kLt: return Op::kLt;
    case Tok::kLe: return Op::kLe;
    case Tok::kGt: return Op::kGt;
    case Tok::kGe: return Op::kGe;
    case Tok::kAnd: return Op::kAnd;
    case Tok::kOr: return Op::kOr;
    default: return Op::kAdd;
  }
}

std::string OpDisplay(const Expr& e) {
  if (e.kind == Expr::kCall) return "'" + e.name + "'";
  if (e.kind == Expr::kUnary) return e.op == Tok::kNot ? "'not'" : "unary '-'";
  return TokName(e.op);
}

class Lowerer {
 public:
  Lowerer(const FunctionDef& def, Type dtype,
          const std::function<bool(const std::string&)>* is_session_name)
      : def_(def), dtype_(dtype), is_session_name_(is_session_name), fn_(def.name), b_(fn_) {}

  jit::Function Run() {
    for (const std::string& p : def_.params) scopes_.push_back({p, {b_.Input(dtype_)}});
    Values outs = Lower(*def_.body);
    // A comparison result becomes 0/1 as at the top level; a select, since the IR's cast
    // converts between float types only.
    for (ValueId& v : outs) {
      if (fn_.type(v) == Type::kBool) v = b_.Select(v, b_.Const(dtype_, 1), b_.Const(dtype_, 0));
    }
    b_.Return(outs);
    absl::Status verified = jit::Verify(fn_);
    if (!verified.ok()) {
      throw SourceError(ErrorCategory::kRuntime, def_.body->span,
                        "internal error: the IR of '" + def_.name +
                            "' does not verify (please report): " + std::string(verified.message()));
    }
    return std::move(fn_);
  }

 private:
  ValueId Scalar(const Expr& e) {
    Values v = Lower(e);
    if (v.size() != 1) {
      throw SourceError(ErrorCategory::kArity, e.span,
                        "expected one value here, but this gives a tuple of " +
                            std::to_string(v.size()));
    }
    return v[0];
  }

  // A float operand of `user` (an operator or call), or a type error.
  ValueId Number(const Expr& e, const Expr& user) {
    ValueId v = Scalar(e);
    if (fn_.type(v) == Type::kBool) {
      throw SourceError(ErrorCategory::kType, e.span,
                        OpDisplay(user) +
                            " needs a number, but this is a comparison (true/false); use "
                            "'if ... then ... else ...' or where(cond, a, b)");
    }
    return v;
  }

  ValueId Boolean(const Expr& e, const std::string& what) {
    ValueId v = Scalar(e);
    if (fn_.type(v) != Type::kBool) {
      throw SourceError(ErrorCategory::kType, e.span,
                        what + " must be a comparison (true/false), but this is a number; write "
                               "e.g. 'x != 0'");
    }
    return v;
  }

  Values Lower(const Expr& e) {
    switch (e.kind) {
      case Expr::kNumber: return {b_.Const(dtype_, e.number)};
      case Expr::kName: return Name(e);
      case Expr::kCall: return Call(e);
      case Expr::kUnary:
        if (e.op == Tok::kNot) return {b_.Emit(Op::kNot, {Boolean(*e.args[0], "the operand of 'not'")})};
        return {b_.Neg(Number(*e.args[0], e))};
      case Expr::kBinary: {
        const Op op = BinaryOp(e.op);
        if (op == Op::kAnd || op == Op::kOr) {
          const std::string side = std::string("each side of ") + TokName(e.op);
          return {b_.Emit(op, {Boolean(*e.args[0], side), Boolean(*e.args[1], side)})};
        }
        return {b_.Emit(op, {Number(*e.args[0], e), Number(*e.args[1], e)})};
      }
      case Expr::kIf: return If(e);
      case Expr::kLet: return Let(e);
      case Expr::kTuple: {
        Values out;
        for (const auto& a : e.args) out.push_back(Scalar(*a));
        return out;
      }
      case Expr::kIndex: {
        Values parts = Lower(*e.args[0]);
        return {parts[PartIndex(e, parts.size())]};
      }
      case Expr::kArray:
        throw SourceError(ErrorCategory::kType, e.span,
                          "array literals are values of the session, not of a function body "
                          "(a body works on one element at a time)");
    }
    return {};
  }

  Values Name(const Expr& e) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      if (it->first == e.name) return it->second;
    }
    double constant = 0;
    if (BuiltinConstant(e.name, &constant)) return {b_.Const(dtype_, constant)};
    std::string hint;
    if (def_.callees.count(e.name) || IsScalarBuiltin(e.name)) {
      hint = " ('" + e.name + "' is a function: call it as " + e.name + "(...))";
    } else if (is_session_name_ != nullptr && *is_session_name_ && (*is_session_name_)(e.name)) {
      hint = " (a function body sees only its parameters and 'let' names, not session variables; "
             "pass '" + e.name + "' as an argument)";
    }
    throw SourceError(ErrorCategory::kUnknownName, e.span, "unknown name '" + e.name + "'" + hint);
  }

  void CheckArity(const Expr& e, int expected) {
    const int got = static_cast<int>(e.args.size());
    if (got != expected) {
      throw SourceError(ErrorCategory::kArity, e.op_span,
                        "'" + e.name + "' takes " + std::to_string(expected) + " argument" +
                            (expected == 1 ? "" : "s") + ", got " + std::to_string(got));
    }
  }

  Values Call(const Expr& e) {
    auto callee = def_.callees.find(e.name);
    if (callee != def_.callees.end()) {
      const FunctionDef& g = *callee->second;
      CheckArity(e, static_cast<int>(g.params.size()));
      Values args;
      for (const auto& a : e.args) args.push_back(Number(*a, e));
      jit::Function body = LowerFunction(g, dtype_);
      return jit::Inline(b_, body, args);
    }
    Op op;
    if (!LookupOp(e.name, &op)) {
      std::string hint;
      if (is_session_name_ != nullptr && *is_session_name_ && (*is_session_name_)(e.name)) {
        hint = " (it is a session variable, not a function)";
      } else if ((e.name == "sum" || e.name == "mean" || e.name == "matmul" ||
                                      e.name == "grad" || e.name == "partials" || e.name == "rand" ||
                                      e.name == "randn" || e.name == "zeros" || e.name == "ones" ||
                                      e.name == "range" || e.name == "bernoulli")) {
        hint = " ('" + e.name + "' works on arrays at the top level, not inside a function body)";
      } else if (e.name == "cast") {
        hint = kCastHint;
      }
      throw SourceError(ErrorCategory::kUnknownName, e.op_span,
                        "unknown function '" + e.name + "'" + hint);
    }
    const jit::OpInfo& info = jit::Info(op);
    CheckArity(e, info.arity);
    Values args;
    switch (info.kind) {
      case OpKind::Logic:
        for (const auto& a : e.args) args.push_back(Boolean(*a, "an argument of '" + e.name + "'"));
        break;
      case OpKind::Select:
        args.push_back(Boolean(*e.args[0], "the first argument of '" + e.name + "'"));
        args.push_back(Number(*e.args[1], e));
        args.push_back(Number(*e.args[2], e));
        break;
      default:
        for (const auto& a : e.args) args.push_back(Number(*a, e));
        break;
    }
    return {b_.Emit(op, args)};
  }

  Values If(const Expr& e) {
    ValueId cond = Boolean(*e.args[0], "the condition of 'if'");
    b_.BeginIf(cond);
    Values then_values = Lower(*e.args[1]);
    b_.BeginElse(then_values);
    Values else_values = Lower(*e.args[2]);
    if (else_values.size() != then_values.size()) {
      throw SourceError(ErrorCategory::kArity, e.args[2]->span,
                        "the branches of 'if' give different numbers of values (" +
                            std::to_string(then_values.size()) + " and " +
                            std::to_string(else_values.size()) + ")");
    }
    for (size_t k = 0; k < then_values.size(); ++k) {
      if (fn_.type(then_values[k]) != fn_.type(else_values[k])) {
        throw SourceError(ErrorCategory::kType, e.args[2]->span,
                          "the branches of 'if' give different kinds of values: one a number, "
                          "the other a comparison (true/false)");
      }
    }
    return b_.EndIf(else_values);
  }

  Values Let(const Expr& e) {
    Values value = Lower(*e.args[0]);
    const size_t n = e.names.size();
    if (n > 1 && value.size() != n) {
      throw SourceError(ErrorCategory::kArity, e.args[0]->span,
                        "'let' binds " + std::to_string(n) + " names but the value has " +
                            std::to_string(value.size()));
    }
    const size_t mark = scopes_.size();
    if (n == 1) {
      scopes_.push_back({e.names[0], value});
    } else {
      for (size_t k = 0; k < n; ++k) scopes_.push_back({e.names[k], {value[k]}});
    }
    Values out = Lower(*e.args[1]);
    scopes_.resize(mark);
    return out;
  }

  const FunctionDef& def_;
  Type dtype_;
  const std::function<bool(const std::string&)>* is_session_name_;
  jit::Function fn_;
  jit::Builder b_;
  std::vector<std::pair<std::string, Values>> scopes_;
};

void CollectCalls(const Expr& e, std::vector<const Expr*>& calls) {
  if (e.kind == Expr::kCall) calls.push_back(&e);
  for (const auto& a : e.args) CollectCalls(*a, calls);
}

}  // namespace

bool IsScalarBuiltin(const std::string& name, int* arity) {
  Op op;
  if (!LookupOp(name, &op)) return false;
  if (arity != nullptr) *arity = jit::Info(op).arity;
  return true;
}

bool BuiltinConstant(const std::string& name, double* value) {
  if (name == "pi") *value = std::numbers::pi;
  else if (name == "inf") *value = std::numeric_limits<double>::infinity();
  else if (name == "nan") *value = std::numeric_limits<double>::quiet_NaN();
  else return false;
  return true;
}

std::shared_ptr<const FunctionDef> MakeFunctionDef(
    const Stmt& def, const FunctionTable& known, std::string source,
    const std::function<bool(const std::string&)>& is_session_name) {
  auto f = std::make_shared<FunctionDef>();
  f->name = def.name;
  f->params = def.params;
  f->body = def.body;
  f->source = std::move(source);
  if (IsScalarBuiltin(def.name)) {
    throw SourceError(ErrorCategory::kValue, def.name_span,
                      "'" + def.name + "' is a built-in function and cannot be redefined");
  }
  double ignored;
  if (BuiltinConstant(def.name, &ignored)) {
    throw SourceError(ErrorCategory::kValue, def.name_span,
                      "'" + def.name + "' is a built-in constant and cannot be redefined");
  }
  std::vector<const Expr*> calls;
  CollectCalls(*def.body, calls);
  for (const Expr* call : calls) {
    auto it = known.find(call->name);
    if (it != known.end()) f->callees.emplace(it->first, it->second);
  }
  Lowerer lowerer(*f, Type::kF64, &is_session_name);
  jit::Function fn = lowerer.Run();
  f->num_outputs = static_cast<int>(fn.num_outputs());
  return f;
}

jit::Function LowerFunction(const FunctionDef& def, jit::Type dtype) {
  return Lowerer(def, dtype, nullptr).Run();
}

}  // namespace dualcast::repl
