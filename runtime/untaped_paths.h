// Paths from a loss to an array through arrays no tape recorded, and how the tape's errors name them.
//
// Why: a tape records what is computed while it is open; an array computed
// before it (or on another thread, or written by partials()) is a constant to
// it. A gradient with respect to anything behind such an array would miss
// that path, silently, so Tape::gradient asks BehindUntaped first and refuses
// with an Error that names the array, what computed it, and what to do. The
// walk follows taped nodes (at the version of each input they read) and,
// past the first untaped array, the arrays' Origins (runtime/origin.h):
// their ancestry, each entry at the version it was read, so an
// array computed from values since written in place is not behind the array
// as it is now.
//
// Example (in the sweep):
//   const Behind behind = BehindUntaped(loss, on_tape);
//   if (auto it = behind.untaped.find(x.get()); it != behind.untaped.end())
//     throw Error(..., UntapedText(it->second), UntapedAdvice(*x, it->second, used));
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "dualcast/detail/array_impl.hpp"
#include "dualcast/detail/grad_node.hpp"

namespace dualcast::detail {

// The nodes of one tape, by address, with their place on it.
using NodeIndex = absl::flat_hash_map<const GradNode*, size_t>;

// An array on the way, with the Origin of the values the path met (its own,
// or, for an older version, the one it had then: in_place.h).
struct Via {
  const ArrayImpl* array = nullptr;
  const Origin* origin = nullptr;
  // `origin` computed values written into the array's memory through
  // another array (a view of it, or a view() of the same buffer).
  bool memory = false;
};
using UntapedMap = absl::flat_hash_map<const ArrayImpl*, Via>;
// What BehindUntaped found.
struct Behind {
  UntapedMap untaped;
  UntapedMap through_constant;
  Via unverified;  // an untaped array with a truncated ancestry
  const ArrayImpl* forgotten = nullptr;  // an older version whose record was dropped
  std::vector<std::shared_ptr<const Origin>> origins;  // the older versions' Origins met
};

// Arrays the loss depends on through an array this tape did not record
// (computed before it opened, or outside it), each with the first such array
// on the path: the tape sees that array as a constant, so a gradient with
// respect to anything behind it would miss that path. Found through the
// arrays' Origins: each untaped array's ancestry (the arrays still
// alive upstream of it, so a temporary dropped between it and an input does
// not hide the path; past Origin::kMaxAncestors the check cannot be made and
// says so). Paths through an op without a
// gradient (Origin::constant, taped ones) are not missed paths: the arrays
// behind it land in `through_constant` instead, with that op's result.
Behind BehindUntaped(const std::shared_ptr<ArrayImpl>& loss, const NodeIndex& on_tape);

// The names the sweep's callers report errors under, and the Origin op of what
// they hand out (gradients, and a buffer accumulate_gradient added into).
inline constexpr char kGradientOp[] = "Tape::gradient";
inline constexpr char kAccumulateOp[] = "Tape::accumulate_gradient";
// Array::assign(Array)'s node and Origin (layout_grad.cc): recorded, but
// other views of the memory it wrote are not credited.
inline constexpr char kAssignOp[] = "Array::assign";

// No tape records the sweep, so a later loss built from its results sees them
// as constants, although they depend on the inputs.
bool IsSweepResult(const Origin* origin);

// "an array of shape [..] computed by 'op' before this Tape was opened ...":
// the array on the way and why the tape sees it as a constant.
std::string UntapedText(const Via& v);

// What to do about a path from the loss to `input` through `via` (`used`:
// the input also reaches the loss through the tape).
std::string UntapedAdvice(const ArrayImpl& input, const Via& via, bool used);

}  // namespace dualcast::detail
