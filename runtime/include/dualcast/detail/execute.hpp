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
// Reduced outputs (ExecuteOptions::output_shapes) are summed over the axes
// where their shape broadcasts to the iteration shape inside the generated
// kernel; `accumulate` adds a result into its destination. CPU only for now:
// on a CUDA device such outputs are an Error(kDevice) (an iteration shape
// alone is fine there).
//
// Example:
//   auto outs = Execute("axpy", fn, {a, x, y});  // fn: 3 inputs, 1 output
//   ExecuteOptions o;
//   o.output_shapes = {{n, 1}};                   // row sums of a * x + y
//   o.destinations = {xbar};  o.accumulate = {true};   // xbar += rowsum(...)
//   Execute("axpy_rows", fn, {a, x, y}, o);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dualcast/detail/array_impl.hpp"
#include "jit/ir/ir.h"

namespace dualcast::detail {

// How an output reduced over axes (ExecuteOptions::output_shapes) combines
// its elements; the values of jit::ReduceOp.
enum class ReduceKind : uint8_t { kSum, kProd, kMax, kMin };

struct ExecuteOptions {
  // Which outputs of the function to compute; empty means all. Unwanted
  // outputs come back as null.
  std::vector<bool> write;
  // Optional destination per output (null = allocate a new contiguous array
  // of the output's shape). A destination must have the output's shape (the
  // broadcast shape, or its `output_shapes` entry), must not alias any input
  // or another destination, and is written only if no error is raised.
  std::vector<std::shared_ptr<ArrayImpl>> destinations;
  // Optional: what each destination is called in errors, as the caller's
  // user passed it (e.g. "partial_out[3] (d output 2 / d argument 1)");
  // empty: "destination for output m".
  std::vector<std::string> destination_names;
  // Optional per output: the shape it is stored in. Empty = the broadcast (iteration) shape.
  // Otherwise a shape that broadcasts to the iteration shape (NumPy rules, same rank or fewer dims);
  // the output is the SUM of the function's value over the axes where it broadcasts (sum_to).
  // A destination for such an output must have this shape. (Empty means "not reduced", so a
  // sum of everything is stored as (1,) or (1, ..., 1) and viewed as () by the caller.) Sums
  // are formed in double (f32 too) in an order fixed by the sizes and the inputs' strides
  // (on the CPU the loop follows the operands' memory order, jit::LoopOrder; docs/DESIGN.md
  // spells the order out): bitwise the same for any thread count.
  std::vector<std::vector<int64_t>> output_shapes;
  // Optional per output: add the result into the destination (which must be given) instead of
  // overwriting it. The sum is formed first, then added once in the element type
  // (dest = dest + T(sum)), so the result is deterministic.
  std::vector<bool> accumulate;
  // The shape the function is evaluated over; empty = the broadcast of the inputs. Needed when
  // every input is smaller than the space to sum over (e.g. n * sum of a broadcast scalar): the
  // inputs must broadcast to it (NumPy rules).
  std::vector<int64_t> iteration_shape;
  // Optional per output: how a reduced output combines (empty: sums). Max and
  // min propagate NaN; products form in double. Only sums may accumulate, and
  // a reduction over no elements must be handled by the caller unless it sums.
  std::vector<ReduceKind> reduce_ops;
  // Optional per output: a summed output is divided by this (a mean's element
  // count) in double before its one rounding to the element type (on a
  // backend that sums in the destination itself, after, in the element type).
  // 1 (or empty): not divided. Not with `accumulate`.
  std::vector<double> divisors;
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

// Whether `target` broadcasts to `full` (NumPy rules: right-aligned, each
// dim equal or 1): an output stored reduced, a source assigned into an array.
bool BroadcastsTo(const std::vector<int64_t>& target, const std::vector<int64_t>& full);

// Whether two distinct indices of `a` can address the same element (a
// stride 0, or strides that interleave): a write of one value per element
// there would keep only the last, so destinations (Execute's, assign's)
// refuse it.
bool SelfOverlapping(const ArrayImpl& a);

}  // namespace dualcast::detail
