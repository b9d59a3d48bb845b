// Which IR ops are activations: lowered everywhere through dual/'s activation_steps.hpp.
//
// tanh, sigmoid and their fast variants compute value and slope from one
// exponential, by steps written once over an arithmetic. The jvp pass, the
// CPU and CUDA printers and the interpreter (through dualcast::math) all
// instantiate the same steps, so they agree; this map is the one place that
// says which op takes which steps.
//
// Example:
//   if (auto act = ActivationOf(inst.op)) {
//     auto [value, slope] = ::dualcast::detail::activation_steps(*act, arith, x);
//   }
#pragma once

#include <optional>

#include "dualcast/activation_steps.hpp"
#include "jit/ir/ir.h"

namespace dualcast::jit {

inline std::optional<::dualcast::detail::Activation> ActivationOf(Op op) {
  using ::dualcast::detail::Activation;
  switch (op) {
    case Op::kTanh: return Activation::kTanh;
    case Op::kSigmoid: return Activation::kSigmoid;
    case Op::kFastTanh: return Activation::kFastTanh;
    case Op::kFastSigmoid: return Activation::kFastSigmoid;
    default: return std::nullopt;
  }
}

}  // namespace dualcast::jit
