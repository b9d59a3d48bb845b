// Broadcast layouts: NumPy shape rules plus the dim merging that keys kernels on structure, not sizes.
//
// A broadcast over shapes (5,1,7) and (1,3,1) is, for the generated code, a
// loop nest whose structure depends only on which inputs are stretched along
// which dims, and where memory lets two loops become one. MergeBroadcast finds
// the smallest such nest: it pads shapes to a common rank (right-aligned),
// drops dims of output size 1, and merges consecutive dims when every input
// has the same broadcast bit at both and, for the inputs that are read along
// them, the outer stride equals inner stride * inner size (so a strided or
// transposed view merges only where its memory allows). The kernel spec then
// carries the merged rank and per-input bits; sizes and strides stay launch
// arguments, so a new batch size never recompiles.
//
// Outputs are assumed to be fresh contiguous row-major arrays of
// `full_out_shape`; their merged strides are ContiguousStrides(out_shape)
// (merging never changes a contiguous array's addressing). Execute passes
// its outputs as extra operands instead (destinations with any strides); a
// summed output goes in with its stored shape, so its broadcast bits are its
// reduce bits and two dims merge only where every output's pattern agrees.
//
// LoopOrder chooses the order of the dims before merging, from the operands'
// strides (NumPy's nditer order): Execute applies it (PermuteDims) to
// launches with summed outputs, so that a transposed or otherwise permuted
// operand is read in memory order; elementwise launches keep the logical
// order, which their fresh row-major outputs fix.
//
// MergeForReduction is the same idea for sum_to (TVM's broadcast backward):
// an adjoint of the full output shape is reduced to an input's shape, and
// consecutive dims that are both reduced or both kept merge.
//
// Example:
//   std::vector<std::vector<int64_t>> shapes = {{n, 1}, {n, n}};
//   std::vector<std::vector<int64_t>> strides = {{1, 1}, {n, 1}};
//   BroadcastLayout l = MergeBroadcast(shapes, strides, "cell").value();
//   // l.out_shape == {n, n}, l.in_broadcast == {0b10, 0b00}: input 0 is
//   // broadcast along merged dim 1 (the inner one), l.in_strides[0] == {1, 0}.
//   ReductionLayout r = MergeForReduction({2, 2, 2, 2, 2}, {2, 2, 1, 2, 2}).value();
//   // r.shape == {4, 2, 4}, r.reduced == 0b010
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace dualcast::jit {

struct BroadcastLayout {
  std::vector<int64_t> out_shape;                // merged, outer first
  std::vector<std::vector<int64_t>> in_strides;  // per input, merged, in elements; 0 where broadcast
  // Per input: bit d set when the input is broadcast along merged dim d
  // (d = 0 is the OUTERMOST merged dim), as in KernelSpec::input_broadcast.
  std::vector<uint32_t> in_broadcast;
  std::vector<int64_t> full_out_shape;           // the unmerged broadcast result shape
  // Every input read along the innermost merged dim has stride 1 there.
  bool inner_contiguous = true;
  // Per operand: read along the innermost merged dim with a stride other than 1.
  std::vector<bool> strided_inner;
  int64_t num_elements = 1;                      // 0: nothing to do (a size-0 output)

  int rank() const { return static_cast<int>(out_shape.size()); }
};

// The NumPy broadcast of `shapes` (right-aligned; sizes must match or be 1).
// A negative size or a mismatch is a kShape status naming `kernel_name`, the
// arguments (1-based), their sizes, the dimension (0-based, in the result's
// numbering) and the shapes. The one copy of the rule: the runtime's
// validation and MergeBroadcast both use it.
absl::StatusOr<std::vector<int64_t>> BroadcastShape(std::span<const std::vector<int64_t>> shapes,
                                                    std::string_view kernel_name);

// Broadcasts `shapes` (one per input, any rank) with NumPy rules and merges
// dims. `strides` are per input in elements (same length as its shape); an
// empty span means every input is contiguous row-major. A mismatch is a kShape
// status naming the kernel, both arguments (1-based), both sizes, the
// dimension (0-based, in the result's numbering) and both shapes. A merged
// rank above kMaxRank is a kShape status too. A size-0 result gives
// num_elements == 0, out_shape {0} and zero strides.
absl::StatusOr<BroadcastLayout> MergeBroadcast(std::span<const std::vector<int64_t>> shapes,
                                               std::span<const std::vector<int64_t>> strides,
                                               std::string_view kernel_name);

// Row-major strides (in elements) of a contiguous array of `shape`; a size-0
// dim counts as 1 (NumPy's convention). The Into form writes them into
// `strides` (as long as `shape`), for callers reusing a vector's memory.
std::vector<int64_t> ContiguousStrides(std::span<const int64_t> shape);
void ContiguousStridesInto(std::span<const int64_t> shape, std::span<int64_t> strides);

// The order in which a loop nest should visit the dims of the broadcast of
// `shapes` (with `strides`, as MergeBroadcast takes them; shapes right-aligned,
// already checked to broadcast): the dims of the broadcast shape, outer first,
// so that the operands with a say (`votes`, one flag per operand) walk their
// memory in order. NumPy's nditer ordering, weighted: an insertion sort from
// the logical (row-major) order in which dim b moves outside dim a when the
// operands with a say that read along both (stride != 0 at both, size > 1)
// and have a larger stride at b than at a outweigh, counted by their element
// counts, those with a smaller one. A tie keeps the logical order; a pair no
// such operand reads along both does not stop the sort. So a transposed
// operand is walked row by row of its memory, and two operands of the same
// size that disagree keep the logical order. Identity for rank < 2.
//
// MergeBroadcast then merges the dims in this order (Execute uses it for
// launches with summed outputs, whose scratch follows the loop; see
// runtime/execute.cc). Example: X of shape (n, m), contiguous, and X.T:
//   LoopOrder({{m, n}}, {{1, m}}, {true}) == {1, 0}
//   // permuted by PermuteDims: shape (n, m), strides (m, 1); merges to one dim.
std::vector<int> LoopOrder(std::span<const std::vector<int64_t>> shapes,
                           std::span<const std::vector<int64_t>> strides,
                           const std::vector<bool>& votes);

// `shape` and `strides` right-aligned to `order.size()` dims (leading dims of
// size 1 and stride 0 added), then permuted: dim k of the result is dim
// order[k] of the padded input.
void PermuteDims(std::span<const int> order, std::vector<int64_t>& shape,
                 std::vector<int64_t>& strides);

struct ReductionLayout {
  std::vector<int64_t> shape;  // merged dims of the full shape, outer first (size-1 dims dropped)
  uint32_t reduced = 0;        // bit d set: merged dim d is summed away (d = 0 outermost)
  // The input's shape, i.e. the kept dims, merged the same way.
  std::vector<int64_t> kept_shape;
};

// How to sum an array of `full_shape` (contiguous) down to `input_shape`
// (right-aligned; every dim equal or 1). An input dim of 1 under a full dim
// above 1 is reduced. Fails with kShape if the shapes are not compatible.
absl::StatusOr<ReductionLayout> MergeForReduction(std::span<const int64_t> full_shape,
                                                  std::span<const int64_t> input_shape);

// "[2, 4]": how shapes appear in messages.
std::string FormatShape(std::span<const int64_t> shape);

}  // namespace dualcast::jit
