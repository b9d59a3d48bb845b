// Reading an Origin's ancestry: every array upstream of a computed one, through the chain of parent Origins.
//
// Why a function: an Origin names its ancestry in three places (its inputs,
// the ancestors flattened into it, and its parents' own ancestries, see
// Origin in array_impl.hpp), and every reader (the tape's untaped walk, the
// one-pass plan's check, the view checks) must see all three alike.
//
// Example (is x upstream of y, at the version x holds now?):
//   bool found = false;
//   detail::ForEachAncestor(*y.origin, [&](const std::weak_ptr<ArrayImpl>& a, uint32_t version) {
//     found = a.lock() == x && version == WriteCount(*x);
//     return found;  // true stops the walk
//   });
#pragma once

#include <cstdint>
#include <memory>

#include "absl/functional/function_ref.h"
#include "dualcast/detail/array_impl.hpp"

namespace dualcast::detail {

// Calls `visit(array, version)` for each array upstream of `o` (dead ones
// and repeats included: callers lock and deduplicate), not through constant
// ops (a constant `o` has none), until it returns true; returns whether one did.
bool ForEachAncestor(const Origin& o,
                     absl::FunctionRef<bool(const std::weak_ptr<ArrayImpl>&, uint32_t)> visit);

}  // namespace dualcast::detail
