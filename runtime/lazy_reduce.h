// Pending reductions: sum/mean (and max/min) of a pending array, fused into the kernel that produces it (lazy_reduce.cc).
//
// reductions.cc decides (pending operand on the CPU, no Unfused scope) and
// calls LazyReduce; Materialize computes the node later: off the tape, as an
// extra reduced output of the operand's fused group (the operand itself is
// written only if something still holds it); under a tape, the operand is
// computed and recorded as usual and the reduction runs on it (ReduceNow),
// unless Tape::gradient takes the whole loss in one pass (one_pass.cc).
#pragma once

#include <memory>
#include <vector>

#include "dualcast/detail/array_impl.hpp"
#include "dualcast/detail/lazy.hpp"

namespace dualcast::detail {

// A pending array: `what` ("sum"/"mean") of `in` over the dims in `r.summed`.
std::shared_ptr<ArrayImpl> LazyReduce(const char* what, const std::shared_ptr<ArrayImpl>& in,
                                      PendingReduce r);
// `r` shared, from the per-thread blocks (a lazy node and the SumNode that
// records it hold the same one).
std::shared_ptr<const PendingReduce> SharedReduce(PendingReduce r);

// reductions.cc: the reduction of `in` computed now (`in` materialised
// first), with the result's shape; nothing noted or recorded.
std::shared_ptr<ArrayImpl> ComputeReduction(const char* what, const std::shared_ptr<ArrayImpl>& in,
                                            const PendingReduce& r);
// ComputeReduction, then NoteReduction.
std::shared_ptr<ArrayImpl> ReduceNow(const char* what, const std::shared_ptr<ArrayImpl>& in,
                                     PendingReduce r);
// reductions.cc: notes the origin of `out` = what(in) and records its tape
// node (when a tape records), for a reduction computed elsewhere. The node
// shares `r` (a lazy reduction's own description) rather than copying it.
void NoteReduction(const char* what, const std::shared_ptr<ArrayImpl>& in,
                   const std::shared_ptr<ArrayImpl>& out,
                   const std::shared_ptr<const PendingReduce>& r);
// The result's shape: keep_shape, or without the summed dims.
std::vector<int64_t> ReducedShape(const PendingReduce& r);
// Moves `value`'s memory into the pending array `target` (now computed).
void FillFrom(ArrayImpl& target, const ArrayImpl& value);
// Pending reductions computed inside their operand's kernel, and how many of
// those also wrote the operand (something still held it): tests show with
// them that `sum(x * y)` never stores the product.
struct FusedReductionCounts {
  int64_t fused = 0;
  int64_t operands_written = 0;
};
FusedReductionCounts GetFusedReductionCounts();

// generated_reductions.cc: `in` reduced with `kind` to `keep` (a generated
// kernel), and the tape record of a max/min/prod computed elsewhere (a
// pending one materialised under a tape opened after it was made): max/min's
// tie rule, prod's product of the others.
std::shared_ptr<ArrayImpl> ReduceWithKind(const std::shared_ptr<ArrayImpl>& in,
                                          const std::vector<int64_t>& keep, ReduceKind kind);
void RecordElementReduction(const char* what, const std::shared_ptr<ArrayImpl>& in,
                            const std::shared_ptr<ArrayImpl>& out, const PendingReduce& r);
// `shape` with leading 1s up to `rank` dims (a reduced output's shape for
// ExecuteOptions::output_shapes, where an empty shape means "not reduced").
std::vector<int64_t> PaddedShape(const std::vector<int64_t>& shape, size_t rank);
// The same into `padded`, reusing its memory (a per-thread scratch on the tape-step path).
void PadShapeInto(std::vector<int64_t>& padded, const std::vector<int64_t>& shape, size_t rank);

}  // namespace dualcast::detail
