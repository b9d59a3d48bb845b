// CudaPrinter: one CUDA C expression per IR op, and if/else as C blocks assigning result variables.
#include "jit/cuda/cuda_printer.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dualcast/activation_steps.hpp"
#include "jit/ir/activation.h"

namespace dualcast::jit::cuda {

const char* CudaType(Type type) {
  switch (type) {
    case Type::kF32: return "float";
    case Type::kF64: return "double";
    case Type::kBool: return "bool";
  }
  return "void";
}

std::string CudaLiteral(Type type, double value) {
  if (type == Type::kBool) return value != 0 ? "true" : "false";
  if (type == Type::kF32) {
    const float f = static_cast<float>(value);
    if (!std::isfinite(f)) {
      return absl::StrFormat("__int_as_float(0x%08x)", std::bit_cast<uint32_t>(f));
    }
    // %a of the widened float is exact; the f suffix keeps it single precision.
    return absl::StrFormat("(%af)", static_cast<double>(f));
  }
  if (!std::isfinite(value)) {
    return absl::StrFormat("__longlong_as_double(0x%016xLL)", std::bit_cast<uint64_t>(value));
  }
  return absl::StrFormat("(%a)", value);
}

CudaPrinter::Value CudaPrinter::Declare(Type type, const std::string& expr) {
  std::string name = absl::StrCat("t", next_temp_++);
  Line(absl::StrCat("const ", CudaType(type), " ", name, " = ", expr, ";"));
  return name;
}

void CudaPrinter::Line(const std::string& line) {
  text_.append(static_cast<size_t>(indent_) * 2, ' ');
  text_ += line;
  text_ += '\n';
}

namespace {

// The arithmetic of dualcast/activation_steps.hpp as CUDA statements, one temporary per step.
struct CudaSteps {
  using V = std::string;
  CudaPrinter& p;
  Type type;
  bool f32() const { return type == Type::kF32; }
  V Const(double c) { return CudaLiteral(type, c); }
  V Add(const V& a, const V& b) { return p.Declare(type, absl::StrCat(a, " + ", b)); }
  V Sub(const V& a, const V& b) { return p.Declare(type, absl::StrCat(a, " - ", b)); }
  V Mul(const V& a, const V& b) { return p.Declare(type, absl::StrCat(a, " * ", b)); }
  V Div(const V& a, const V& b) { return p.Declare(type, absl::StrCat(a, " / ", b)); }
  V Neg(const V& a) { return p.Declare(type, absl::StrCat("-", a)); }
  V Abs(const V& a) { return p.Declare(type, absl::StrCat(f32() ? "fabsf(" : "fabs(", a, ")")); }
  V Exp(const V& a) { return p.Declare(type, absl::StrCat(f32() ? "expf(" : "exp(", a, ")")); }
  V Expm1(const V& a) {
    return p.Declare(type, absl::StrCat(f32() ? "expm1f(" : "expm1(", a, ")"));
  }
  V Copysign(const V& a, const V& b) {
    return p.Declare(type, absl::StrCat(f32() ? "copysignf(" : "copysign(", a, ", ", b, ")"));
  }
  V Lt(const V& a, const V& b) { return p.Declare(Type::kBool, absl::StrCat(a, " < ", b)); }
  V Select(const V& c, const V& a, const V& b) {
    return p.Declare(type, absl::StrCat(c, " ? ", a, " : ", b));
  }
};

}  // namespace

CudaPrinter::Value CudaPrinter::Emit(Op op, Type type, std::span<const Type> arg_types,
                                     std::span<const Value> args) {
  // dualcast::math's tanh and sigmoid (fast or not), step for step (the slope's temporaries are
  // dead code).
  if (const auto activation = ActivationOf(op)) {
    CudaSteps m{*this, type};
    return ::dualcast::detail::activation_steps(*activation, m, args[0]).value;
  }
  return Declare(type, Expression(op, type, arg_types, args));
}

std::string CudaPrinter::Expression(Op op, Type type, std::span<const Type> arg_types,
                                    std::span<const Value> args) const {
  auto binary = [&](const char* spelling) {
    return absl::StrCat(args[0], " ", spelling, " ", args[1]);
  };
  switch (op) {
    case Op::kNeg: return absl::StrCat("-", args[0]);
    case Op::kAdd: return binary("+");
    case Op::kSub: return binary("-");
    case Op::kMul: return binary("*");
    case Op::kDiv: return binary("/");
    case Op::kFma:
      return absl::StrCat(type == Type::kF32 ? "fmaf(" : "fma(", args[0], ", ", args[1], ", ",
                          args[2], ")");
    // C comparisons are the IR's: ordered (false on NaN) except != (true on NaN).
    case Op::kLt: return binary("<");
    case Op::kLe: return binary("<=");
    case Op::kGt: return binary(">");
    case Op::kGe: return binary(">=");
    case Op::kEq: return binary("==");
    case Op::kNe: return binary("!=");
    case Op::kIsnan: return absl::StrCat(args[0], " != ", args[0]);
    case Op::kIsfinite:  // |x| < inf, false for NaN
      return absl::StrCat(arg_types[0] == Type::kF32 ? "fabsf(" : "fabs(", args[0], ") < ",
                          CudaLiteral(arg_types[0], HUGE_VAL));
    case Op::kIsinf:
      return absl::StrCat(arg_types[0] == Type::kF32 ? "fabsf(" : "fabs(", args[0], ") == ",
                          CudaLiteral(arg_types[0], HUGE_VAL));
    case Op::kSignbit:  // the sign bit itself: -0 and negative NaNs too
      return absl::StrCat(arg_types[0] == Type::kF32 ? "copysignf(1.0f, " : "copysign(1.0, ", args[0],
                          ") < ", CudaLiteral(arg_types[0], 0));
    // Both operands are already computed values, so && and || cannot skip work.
    case Op::kAnd: return binary("&&");
    case Op::kOr: return binary("||");
    case Op::kNot: return absl::StrCat("!", args[0]);
    case Op::kSelect: return absl::StrCat(args[0], " ? ", args[1], " : ", args[2]);
    case Op::kCast: {
      const Type from = arg_types[0];
      if (from == type) return args[0];
      if (type == Type::kBool) return absl::StrCat(args[0], " != ", CudaLiteral(from, 0));
      // bool -> 0/1, and f64 <-> f32 rounding to nearest (C's conversions).
      return absl::StrCat("(", CudaType(type), ")", args[0]);
    }
    default: break;
  }
  if (Info(op).kind == OpKind::Math) return MathExpression(op, type, args);
  // Leaf and control ops never reach a printer (CodegenWalk handles them).
  return absl::StrCat("/* unsupported op ", Spelling(op), " */ ", CudaLiteral(type, NAN));
}

std::string CudaPrinter::MathExpression(Op op, Type type, std::span<const Value> args) const {
  const bool f32 = type == Type::kF32;
  auto call = [&](const char* name) {
    std::string s = absl::StrCat(name, "(", args[0]);
    for (size_t k = 1; k < args.size(); ++k) absl::StrAppend(&s, ", ", args[k]);
    return s + ")";
  };
  // The accurate CUDA math library under its libm names (expf, tanh, ...).
  if (const char* libm = LibmName(op, type)) return call(libm);
  const std::string zero = CudaLiteral(type, 0), one = CudaLiteral(type, 1);
  const std::string& x = args[0];
  const char* exp = f32 ? "expf" : "exp";
  const char* log1p = f32 ? "log1pf" : "log1p";
  switch (op) {
    case Op::kSqrt: return call(f32 ? "sqrtf" : "sqrt");
    case Op::kAbs: return call(f32 ? "fabsf" : "fabs");
    case Op::kFloor: return call(f32 ? "floorf" : "floor");
    case Op::kCeil: return call(f32 ? "ceilf" : "ceil");
    case Op::kRound: return call(f32 ? "roundf" : "round");  // halves away from zero
    case Op::kTrunc: return call(f32 ? "truncf" : "trunc");
    case Op::kRint: return call(f32 ? "rintf" : "rint");  // ties to even
    // a - b above the kink, +0 at or below it, NaN when either is NaN.
    case Op::kFdim:
      return absl::StrCat("(", x, " > ", args[1], ") ? ", x, " - ", args[1], " : ((", x, " != ", x,
                          " || ", args[1], " != ", args[1], ") ? ", x, " + ", args[1], " : ", zero, ")");
    case Op::kCopysign: return call(f32 ? "copysignf" : "copysign");
    // Ties (and NaN comparisons) keep the first argument, as in dual/.
    case Op::kMin: return absl::StrCat("(", args[1], " < ", x, ") ? ", args[1], " : ", x);
    case Op::kMax: return absl::StrCat("(", x, " < ", args[1], ") ? ", args[1], " : ", x);
    // IEEE: a NaN operand loses; spelled out because fminf's tie on +-0 is unspecified.
    case Op::kFmin:
      return absl::StrCat("(", args[1], " < ", x, " || ", x, " != ", x, ") ? ", args[1], " : ", x);
    case Op::kFmax:
      return absl::StrCat("(", x, " < ", args[1], " || ", x, " != ", x, ") ? ", args[1], " : ", x);
    case Op::kSoftplus:
      return absl::StrCat("(", x, " > ", zero, ") ? ", x, " + ", log1p, "(", exp, "(-", x,
                          ")) : ", log1p, "(", exp, "(", x, "))");
    // NaN passes through, -0 and negatives become +0.
    case Op::kRelu:
      return absl::StrCat("(", x, " > ", zero, " || ", x, " != ", x, ") ? ", x, " : ", zero);
    // The staples, as jit/ir/staple_math.h spells them; erfinv is CUDA's own.
    case Op::kSign:
      return absl::StrCat("(", x, " > ", zero, ") ? ", one, " : ((", x, " < ", zero, ") ? ",
                          CudaLiteral(type, -1), " : ", x, ")");
    case Op::kSquare: return absl::StrCat(x, " * ", x);
    case Op::kRsqrt: return absl::StrCat(one, " / ", call(f32 ? "sqrtf" : "sqrt"));
    case Op::kClamp:
      return absl::StrCat("(", x, " < ", args[1], ") ? ", args[1], " : ((", args[2], " < ", x,
                          ") ? ", args[2], " : ", x, ")");
    case Op::kLogaddexp: {
      const std::string& b = args[1];
      return absl::StrCat("(", x, " == ", b, ") ? ", x, " + ", CudaLiteral(type, std::numbers::ln2),
                          " : ((", x, " < ", b, ") ? ", b, " : ", x, ") + ", log1p, "(", exp,
                          "(-", f32 ? "fabsf(" : "fabs(", x, " - ", b, ")))");
    }
    case Op::kLgamma: return call(f32 ? "lgammaf" : "lgamma");
    case Op::kTgamma: return call(f32 ? "tgammaf" : "tgamma");
    case Op::kFmod: return call(f32 ? "fmodf" : "fmod");
    case Op::kRemainder: return call(f32 ? "remainderf" : "remainder");
    case Op::kErfinv: return call(f32 ? "erfinvf" : "erfinv");
    case Op::kLdexp: {
      const std::string& n = args[1];
      const char* fmin = f32 ? "fminf" : "fmin";
      const char* fmax = f32 ? "fmaxf" : "fmax";
      return absl::StrCat("(", n, " != ", n, ") ? ", n, " : ", f32 ? "ldexpf(" : "ldexp(", x,
                          ", (int)", fmin, "(", fmax, "(", f32 ? "truncf(" : "trunc(", n, "), ",
                          CudaLiteral(type, -100000), "), ", CudaLiteral(type, 100000), "))");
    }
    default: break;
  }
  return absl::StrCat("/* unsupported math op ", Spelling(op), " */ ", CudaLiteral(type, NAN));
}

void CudaPrinter::BeginIf(const Value& cond, std::span<const Type> result_types) {
  OpenIf open;
  for (Type t : result_types) {
    std::string name = absl::StrCat("r", next_temp_++);
    Line(absl::StrCat(CudaType(t), " ", name, ";"));
    open.results.push_back(std::move(name));
  }
  Line(absl::StrCat("if (", cond, ") {"));
  ++indent_;
  open_ifs_.push_back(std::move(open));
}

void CudaPrinter::BeginElse(std::span<const Value> then_yields) {
  const OpenIf& open = open_ifs_.back();
  for (size_t k = 0; k < then_yields.size(); ++k) {
    Line(absl::StrCat(open.results[k], " = ", then_yields[k], ";"));
  }
  --indent_;
  Line("} else {");
  ++indent_;
}

std::vector<CudaPrinter::Value> CudaPrinter::EndIf(std::span<const Value> else_yields) {
  OpenIf open = std::move(open_ifs_.back());
  open_ifs_.pop_back();
  for (size_t k = 0; k < else_yields.size(); ++k) {
    Line(absl::StrCat(open.results[k], " = ", else_yields[k], ";"));
  }
  --indent_;
  Line("}");
  return open.results;
}

}  // namespace dualcast::jit::cuda
