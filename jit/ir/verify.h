// The IR verifier: every pass's output is checked with it in tests (and in debug builds).
//
// It checks scoping (each operand defined before use in the same or an
// enclosing block), operand counts and types per op kind, If/Result structure
// (results follow their If, branches yield matching types), that every
// instruction lives in exactly one block, and that inputs sit in the entry.
#pragma once

#include "absl/status/status.h"
#include "jit/ir/ir.h"

namespace dualcast::jit {

absl::Status Verify(const Function& f);

}  // namespace dualcast::jit
