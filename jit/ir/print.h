// Readable, stable text for a Function: used by tests, error messages and the REPL's `:ir`.
//
// Values are renumbered in execution order, so the text depends only on the
// function's structure, never on how it was built.
//
// Example:
//   func cell(%0: f32, %1: f32) -> (f32) {
//     %2 = const 1 : f32
//     %3 = eq %0, %2 : bool
//     %4 = if %3 {
//       %5 = tanh %1 : f32
//       yield %5
//     } else {
//       yield %1
//     }
//     return %4
//   }
#pragma once

#include <string>

#include "jit/ir/ir.h"

namespace dualcast::jit {

std::string Print(const Function& f);

// The text of one constant as the printer writes it ("1", "-0", "nan", "-nan", "true").
std::string FormatConst(Type type, double value);

}  // namespace dualcast::jit
