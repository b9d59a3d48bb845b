// A structural hash of a Function: equal for equal structure, stable across runs and machines.
//
// It ignores the function's name and its internal value numbering (values are
// numbered in execution order, as the printer does), so tracing the same
// lambda twice gives the same hash. It is part of the kernel cache key, in
// memory and on disk, so it must not use a per-process seed (absl::Hash does).
#pragma once

#include <cstdint>

#include "jit/ir.h"

namespace dualcast::jit {

uint64_t StructuralHash(const Function& f);

}  // namespace dualcast::jit
