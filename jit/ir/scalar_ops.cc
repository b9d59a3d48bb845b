// The scalar semantics of every IR op (see scalar_ops.h): one switch, evaluated in the op's precision.
#include "jit/ir/scalar_ops.h"

#include <cmath>
#include <dualcast/math.hpp>

#include "absl/strings/str_cat.h"
#include "jit/error.h"
#include "jit/ir/staple_math.h"

namespace dualcast::jit {

namespace {

// Arithmetic and math in precision T (float or double). The functions are
// dualcast::math's, so these values are the Dual library's primal values.
template <typename T>
T EvalFloat(Op op, const double* in) {
  namespace m = dualcast::math;
  const T a = static_cast<T>(in[0]);
  const T b = Info(op).arity > 1 ? static_cast<T>(in[1]) : T(0);
  const T c = Info(op).arity > 2 ? static_cast<T>(in[2]) : T(0);
  switch (op) {
    case Op::kNeg: return -a;
    case Op::kAdd: return a + b;
    case Op::kSub: return a - b;
    case Op::kMul: return a * b;
    case Op::kDiv: return a / b;
    case Op::kFma: return m::fma(a, b, c);
    case Op::kExp: return m::exp(a);
    case Op::kExpm1: return m::expm1(a);
    case Op::kLog: return m::log(a);
    case Op::kLog1p: return m::log1p(a);
    case Op::kLog2: return m::log2(a);
    case Op::kLog10: return m::log10(a);
    case Op::kSqrt: return m::sqrt(a);
    case Op::kCbrt: return m::cbrt(a);
    case Op::kSin: return m::sin(a);
    case Op::kCos: return m::cos(a);
    case Op::kTan: return m::tan(a);
    case Op::kAsin: return m::asin(a);
    case Op::kAcos: return m::acos(a);
    case Op::kAtan: return m::atan(a);
    case Op::kSinh: return m::sinh(a);
    case Op::kCosh: return m::cosh(a);
    case Op::kTanh: return m::tanh(a);
    case Op::kAsinh: return m::asinh(a);
    case Op::kAcosh: return m::acosh(a);
    case Op::kAtanh: return m::atanh(a);
    case Op::kErf: return m::erf(a);
    case Op::kErfc: return m::erfc(a);
    case Op::kAbs: return m::abs(a);
    case Op::kFloor: return m::floor(a);
    case Op::kCeil: return m::ceil(a);
    case Op::kRound: return m::round(a);
    case Op::kTrunc: return m::trunc(a);
    case Op::kRint: return m::rint(a);
    case Op::kSigmoid: return m::sigmoid(a);
    case Op::kFastTanh: return m::fast_tanh(a);
    case Op::kFastSigmoid: return m::fast_sigmoid(a);
    case Op::kSoftplus: return m::softplus(a);
    case Op::kRelu: return m::relu(a);
    case Op::kPow: return m::pow(a, b);
    case Op::kAtan2: return m::atan2(a, b);
    case Op::kMin: return m::min(a, b);
    case Op::kMax: return m::max(a, b);
    case Op::kFmin: return m::fmin(a, b);
    case Op::kFmax: return m::fmax(a, b);
    case Op::kHypot: return m::hypot(a, b);
    case Op::kCopysign: return m::copysign(a, b);
    case Op::kExp2: return m::exp2(a);
    case Op::kLgamma: return m::lgamma(a);
    case Op::kTgamma: return m::tgamma(a);
    case Op::kFmod: return m::fmod(a, b);
    case Op::kRemainder: return m::remainder(a, b);
    case Op::kFdim: return m::fdim(a, b);
    case Op::kSign: return m::sign(a);
    case Op::kSquare: return m::square(a);
    case Op::kRsqrt: return m::rsqrt(a);
    case Op::kLogaddexp: return m::logaddexp(a, b);
    case Op::kClamp: return m::clamp(a, b, c);
    // Not dualcast::math's: erfinv is computed in the op's own precision so that the CPU
    // printer can lower the same steps (staple_math.h; dualcast::math::erfinv rounds a
    // double result instead), and ldexp takes its count as a float operand.
    case Op::kErfinv: return staple::Erfinv(a);
    case Op::kLdexp: return staple::Ldexp(a, b);
    default: break;
  }
  throw Error(ErrorKind::kInternal,
              absl::StrCat("EvalScalarOp: ", Spelling(op), " is not an arithmetic or math op"));
}

double Truth(bool b) { return b ? 1.0 : 0.0; }

}  // namespace

double EvalScalarOp(Op op, Type type, const double* args) {
  const double a = args[0];
  switch (Info(op).kind) {
    case OpKind::Arith:
    case OpKind::Math:
      if (type == Type::kF32) return static_cast<double>(EvalFloat<float>(op, args));
      if (type == Type::kF64) return EvalFloat<double>(op, args);
      break;
    case OpKind::Compare: {
      // Exact in double: both operands are values of one float type.
      const double b = Info(op).arity > 1 ? args[1] : 0.0;
      switch (op) {
        case Op::kLt: return Truth(a < b);
        case Op::kLe: return Truth(a <= b);
        case Op::kGt: return Truth(a > b);
        case Op::kGe: return Truth(a >= b);
        case Op::kEq: return Truth(a == b);
        case Op::kNe: return Truth(a != b);
        case Op::kIsnan: return Truth(a != a);
        case Op::kIsfinite: return Truth(std::isfinite(a));
        case Op::kIsinf: return Truth(std::isinf(a));
        // float -> double keeps the sign bit, of a NaN too.
        case Op::kSignbit: return Truth(std::signbit(a));
        default: break;
      }
      break;
    }
    case OpKind::Logic:
      switch (op) {
        case Op::kAnd: return Truth(a != 0 && args[1] != 0);
        case Op::kOr: return Truth(a != 0 || args[1] != 0);
        case Op::kNot: return Truth(a == 0);
        default: break;
      }
      break;
    case OpKind::Select: return a != 0 ? args[1] : args[2];
    case OpKind::Cast:
      switch (type) {
        case Type::kF32: return static_cast<double>(static_cast<float>(a));
        case Type::kF64: return a;
        case Type::kBool: return Truth(a != 0);
      }
      break;
    case OpKind::Leaf:
    case OpKind::Control: break;
  }
  throw Error(ErrorKind::kInternal, absl::StrCat("EvalScalarOp: no scalar meaning for ",
                                                 Spelling(op), " of type ", TypeName(type)));
}

}  // namespace dualcast::jit
