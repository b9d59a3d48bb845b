// Execute: runs one jit::Function elementwise over arrays broadcast together (spec, cache, backend, launch).
//
// The single path from IR to results used by every runtime feature: lazy
// broadcast groups, partials(), the tape's recompute sweep, built-in
// operators. It merges the operands' layout (jit::MergeBroadcast), builds the
// KernelSpec, fetches or compiles the kernel through the process-wide cache
// and launches it on the operands' device. Broadcast-shape errors name the
// kernel, both argument positions, both sizes and the dimension; on any error
// nothing is written to `destinations`.
//
// Example:
//   auto outs = Execute("axpy", fn, {a, x, y});  // fn: 3 inputs, 1 output
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dualcast/detail/array_impl.hpp"
#include "jit/ir.h"

namespace dualcast::detail {

struct ExecuteOptions {
  // Which outputs of the function to compute; empty means all. Unwanted
  // outputs come back as null.
  std::vector<bool> write;
  // Optional destination per output (null = allocate a new contiguous array
  // of the broadcast shape). A destination must have the broadcast shape and
  // must not alias any input.
  std::vector<std::shared_ptr<ArrayImpl>> destinations;
  // jit::StructuralHash(*fn) when the caller keeps it with the function (the
  // lazy graph and the tape do), so a cache-hit launch does not rehash the
  // IR; 0: computed here.
  uint64_t function_hash = 0;
};

std::vector<std::shared_ptr<ArrayImpl>> Execute(const std::string& kernel_name,
                                                const std::shared_ptr<const jit::Function>& fn,
                                                const std::vector<std::shared_ptr<ArrayImpl>>& inputs,
                                                const ExecuteOptions& options = {});

// The broadcast shape of `shapes` (NumPy rules), or Error(kShape) naming the
// kernel, the two argument positions (1-based), both sizes and the dimension.
std::vector<int64_t> BroadcastShape(const std::string& kernel_name,
                                    const std::vector<std::vector<int64_t>>& shapes);

}  // namespace dualcast::detail
