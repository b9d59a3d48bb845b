// Forward-mode differentiation as an IR pass: a Function in, the Function of its values and partials out.
//
// This is the heart of the Revels et al. method. Every value of the input
// function gets |wrt| tangent lanes (one per differentiated input); the result
// computes the original outputs followed by every partial ∂y_m/∂x_wrt[j].
// Three properties make it cheap and safe:
//  - a lane that is structurally zero (the value does not depend on that
//    input, or only through a branch condition, floor, a comparison...) is
//    never emitted, so untaken inputs cost nothing and `0 * inf = NaN` cannot
//    appear in a partial;
//  - derivative rules reuse primal results (d tanh = 1 - y², d exp = y) and
//    everything is built through the hash-consing Builder, so primal and
//    tangents share work (CSE for free);
//  - branches stay branches: an `if` yields its primal results plus only the
//    tangent lanes some branch makes non-zero, and only the taken branch runs.
// The derivative conventions (kinks, ties, pow at 0) are the Dual library's;
// the rule table is the single switch `Differentiate` in jvp.cc.
//
// Example:
//   // f(x, y) = x * sin(y)
//   JvpResult r = Jvp(f, std::vector<int>{0, 1});
//   // r.function outputs: y0, ∂y0/∂x0 (= sin y), ∂y0/∂x1 (= x cos y)
//   // at PartialIndex(1, 2, 0, j) for j = 0, 1; none structurally zero.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "jit/ir/ir.h"

namespace dualcast::jit {

struct JvpResult {
  // Inputs as in the original. Outputs: y_0..y_{M-1}, then ∂y_m/∂x_wrt[j] at
  // PartialIndex(M, |wrt|, m, j). A partial that is structurally zero is the
  // constant 0 of the output's type.
  Function function;
  // Per partial output, indexed m * |wrt| + j (i.e. PartialIndex(...) - M):
  // true when the partial is identically zero whatever the inputs, so callers
  // can skip storing it and its reverse-sweep term.
  std::vector<bool> structurally_zero;
};

// Position of ∂y_m/∂x_wrt[j] among the outputs of Jvp(f, wrt).function, for
// M = f.num_outputs() and J = wrt.size().
inline size_t PartialIndex(size_t M, size_t J, size_t m, size_t j) { return M + m * J + j; }

// Differentiates `f` with respect to its inputs wrt[0], wrt[1], ... (each a
// float input position; repeats are allowed and give identical lanes). The
// result passes Verify. Throws dualcast::Error: kInvalidArgument for a
// position out of range, kType for a bool input.
JvpResult Jvp(const Function& f, std::span<const int> wrt);

}  // namespace dualcast::jit
