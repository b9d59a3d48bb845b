// PartialsMode::kAuto per broadcast: recompute cheap kernels, cache costly ones, and cache a recomputing node's partials just before an in-place write would change what it reads.
//
// Why: caching writes every partial array at forward time and keeps it until
// the tape goes; for a kernel of a few adds and multiplies (a stencil, an
// axpy) that traffic costs more than running the kernel again in the sweep.
// Measured on a taped explicit-Euler stencil (4 partials per step, 200 steps,
// n = 100 000): cache 1.16 GB peak and 368 ms, recompute 0.54 GB and 273 ms.
// With one tanh in the kernel the other way round: recompute 1.3-1.9x the
// cached run. So kAuto recomputes a kernel made only of cheap operations
// (arithmetic, comparisons, selects, min/max/abs-like math) with at most
// kRecomputeOpsPerPartial of them per partial it would store, and caches
// otherwise (still recomputing past the budget).
//
// What recomputing gave up: an argument written in place after the node was
// recorded (Array::assign, mutable_data(), a partials() or
// accumulate_gradient() destination) made the gradient an Error, where a
// cached node had its partials already. So such a node is registered here,
// per thread, under the storages it reads, and every write through dualcast
// (ComputeReadersBeforeWrite, pending_readers.h) first has the nodes that
// read the written memory compute and keep their partials from the values
// they saw: the node becomes a cached one, and the gradient is the one kCache
// gives. A write on another thread (the registry is the tape's thread's) is
// still caught when the gradient is asked: the Error, as in kRecompute.
// Explicit kRecompute keeps its promise of no partial arrays: no fallback.
//
// Example:
//   Tape tape;                                  // kAuto
//   auto y = broadcast(mul, x, b);              // cheap: recorded to recompute, b registered
//   b.assign({...});                            // y's node caches d y/d x = b (old values) first
//   tape.gradient(sum(y), {x});                 // the old b, as kCache would give
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "dualcast/detail/array_impl.hpp"
#include "dualcast/detail/grad_node.hpp"
#include "jit/ir/ir.h"

namespace dualcast::detail {

// Cheap operations per nonzero partial array up to which recomputing wins.
inline constexpr size_t kRecomputeOpsPerPartial = 8;

// What a taped broadcast does with its partials under the innermost tape's mode.
struct PartialsPlan {
  bool cache = true;                // compute and keep them in the forward kernel
  bool cache_before_write = false;  // recompute, but register for the write fallback
};
// The innermost active tape's mode on this thread (tape.cc); kCache when none.
PartialsMode InnermostTapeMode();

// `nonzero_partials`: how many partial arrays are not structurally zero;
// `partial_bytes`: their total size.
PartialsPlan PlanPartials(const jit::Function& primal, size_t nonzero_partials, size_t partial_bytes);

// Whether running `primal` again costs less than storing `nonzero_partials` arrays.
bool CheaperToRecompute(const jit::Function& primal, size_t nonzero_partials);

// A tape node that recomputes its partials and can switch to cached ones.
class CachesBeforeWrite {
 public:
  // An argument is about to be written in place: compute and keep the
  // partials from the arguments as they are, unless one was written since
  // `recorded_epoch` (then the sweep's Error stands). Never throws: a
  // failure leaves the node recomputing.
  virtual void CachePartialsNow(uint64_t recorded_epoch) noexcept = 0;

 protected:
  ~CachesBeforeWrite() = default;
};

// Registers `node` (recorded just now on this thread) under the storages of `inputs`.
void NoteRecomputingNode(const std::shared_ptr<CachesBeforeWrite>& node,
                         std::span<const std::shared_ptr<ArrayImpl>> inputs);

// `target` is about to be written in place on this thread: every registered
// node reading its memory (any storage sharing it) caches its partials first.
void CachePartialsBeforeWrite(const ArrayImpl& target);

// Drops this thread's registry (its last tape is gone).
void ForgetRecomputingNodes();

// Registered (node, storage) entries on this thread, dead ones included (tests).
size_t RecomputingEntriesForTesting();

}  // namespace dualcast::detail
