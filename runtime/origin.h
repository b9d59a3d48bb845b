// NoteOrigin over spans: the runtime's hot paths note an array's Origin without building vectors.
//
// The public NoteOrigin (dualcast/detail/grad_node.hpp) takes vectors, so a
// call written `NoteOrigin(op, {in}, {out})` builds two on the heap. A tape
// step notes three or four origins; these overloads take the arrays where
// they already are (a span) or as an initializer list (on the stack), with
// the same meaning.
//
// Example:
//   detail::NoteOrigin("sum", {in}, {out});  // no allocation for the lists
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>

#include "dualcast/detail/grad_node.hpp"

namespace dualcast::detail {

using ArraySpan = std::span<const std::shared_ptr<ArrayImpl>>;

void NoteOrigin(std::string_view op, ArraySpan inputs, ArraySpan outputs, bool constant = false);

inline void NoteOrigin(std::string_view op, std::initializer_list<std::shared_ptr<ArrayImpl>> inputs,
                       std::initializer_list<std::shared_ptr<ArrayImpl>> outputs,
                       bool constant = false) {
  NoteOrigin(op, ArraySpan(inputs.begin(), inputs.size()), ArraySpan(outputs.begin(), outputs.size()),
             constant);
}

}  // namespace dualcast::detail
