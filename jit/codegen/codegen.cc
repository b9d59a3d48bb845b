// Backend-neutral helpers of the code printers: the libm spelling of each math op.
// (tanh is not one: every backend lowers dualcast::math's formula, activation_steps.hpp.)
#include "jit/codegen/codegen.h"

namespace dualcast::jit {

const char* LibmName(Op op, Type type) {
  const bool f32 = type == Type::kF32;
#define DUALCAST_LIBM(op_name, libm) \
  case Op::op_name:                  \
    return f32 ? libm "f" : libm;
  switch (op) {
    DUALCAST_LIBM(kExp, "exp")
    DUALCAST_LIBM(kExpm1, "expm1")
    DUALCAST_LIBM(kLog, "log")
    DUALCAST_LIBM(kLog1p, "log1p")
    DUALCAST_LIBM(kLog2, "log2")
    DUALCAST_LIBM(kLog10, "log10")
    DUALCAST_LIBM(kCbrt, "cbrt")
    DUALCAST_LIBM(kSin, "sin")
    DUALCAST_LIBM(kCos, "cos")
    DUALCAST_LIBM(kTan, "tan")
    DUALCAST_LIBM(kAsin, "asin")
    DUALCAST_LIBM(kAcos, "acos")
    DUALCAST_LIBM(kAtan, "atan")
    DUALCAST_LIBM(kSinh, "sinh")
    DUALCAST_LIBM(kCosh, "cosh")
    DUALCAST_LIBM(kAsinh, "asinh")
    DUALCAST_LIBM(kAcosh, "acosh")
    DUALCAST_LIBM(kAtanh, "atanh")
    DUALCAST_LIBM(kErf, "erf")
    DUALCAST_LIBM(kErfc, "erfc")
    DUALCAST_LIBM(kPow, "pow")
    DUALCAST_LIBM(kAtan2, "atan2")
    DUALCAST_LIBM(kHypot, "hypot")
    DUALCAST_LIBM(kExp2, "exp2")
    default:
      return nullptr;
  }
#undef DUALCAST_LIBM
}

}  // namespace dualcast::jit
