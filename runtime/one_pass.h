// The one-pass gradient: a pending sum/mean of a pending fused group, differentiated in ONE kernel.
//
// Tape::gradient (default kAuto mode) tries this before the reverse sweep.
// For loss = sum(y) (or mean) with y the root of a pending fused group over
// leaves x_1..x_L, one generated kernel over (x_1..x_L, ā) writes the loss
// (y reduced to one element), every output of the group still held (c in
// `c = cell.(...); loss = sum(c .* cbar)`), and for each requested leaf x_j
// its gradient ā · ∂y/∂x_j summed down to shape(x_j) (the jvp lane of a
// leaf used several times already sums its uses). No partial array or
// full-size product is stored. A mean's ā = 1/count is an input (a sum's ā = 1
// is left out), so another size reuses the compiled kernel.
//
// The group is then recorded on the tape without cached partials (as in
// kRecompute), so later gradient() calls, or gradients with respect to held
// outputs, still work through the ordinary sweep.
//
// Not taken (the caller runs the ordinary sweep, which is correct, or says
// why it cannot be): a loss that is not a pending sum/mean of a pending
// broadcast group; a requested input that is not a differentiated leaf of
// that group the loss reads (inside the group, unused, a number); a leaf
// computed from a requested input (a path the kernel would not see); held
// outputs of another shape; non-CPU arrays.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dualcast/detail/array_impl.hpp"

namespace dualcast::detail {

// True when it computed everything: `loss` is then computed, and (*grads)[i]
// is ∂loss/∂inputs[i] (a new array of inputs[i]'s shape; null means zeros).
// False (nothing computed, nothing recorded) when the one-pass plan does not
// apply. Must be called while a tape records on this thread.
// `loss_wanted` false (nobody can read the loss, Tape::gradient(Array&&)):
// the kernel leaves the loss out, and `loss` stays pending until it is dropped.
bool OnePassGradient(const std::shared_ptr<ArrayImpl>& loss,
                     const std::vector<std::shared_ptr<ArrayImpl>>& inputs, bool loss_wanted,
                     std::vector<std::shared_ptr<ArrayImpl>>* grads);

// How many gradients this process computed in one pass (tests, benchmarks).
int64_t OnePassGradients();

}  // namespace dualcast::detail
