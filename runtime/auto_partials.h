// PartialsMode::kAuto per broadcast: recompute cheap kernels, cache costly ones, and copy what a recomputing node reads just before an in-place write would change it.
//
// Why: caching writes every partial array at forward time and keeps it until
// the tape goes; for a kernel of a few adds and multiplies (a stencil, an
// axpy) that traffic costs more than running the kernel again in the sweep.
// Measured on a taped explicit-Euler stencil (4 partials per step, 200 steps,
// n = 100 000): cache 1.16 GB peak and 368 ms, recompute 0.54 GB and 273 ms.
// The same stencil with a tanh in it still recomputes faster (47 vs 60 ms,
// n = 100 000, 50 steps), but a chain of four tanh over two arguments is
// the other way round (recompute 1.5-1.9x the cached run). So kAuto weighs
// the kernel's operations (an add 1, a division 4, a transcendental 8)
// against the partial arrays it would store, recomputes up to 10 per array
// (auto_partials.cc), and caches otherwise (still
// recomputing past the budget). HM-LSTM's cell (five sigmoid/tanh, four
// partials) is cached, as before.
//
// What recomputing gave up: an argument written in place after the node was
// recorded (Array::assign, mutable_data(), a partials() or
// accumulate_gradient() destination) made the gradient an Error, where a
// cached node had its partials already. So such a node is registered here,
// per thread, under the storages it reads, and every write through dualcast
// (ComputeReadersBeforeWrite, pending_readers.h) first gives each node that
// reads the written memory a copy of that argument as it is: the sweep
// recomputes from the copy, and the gradient is the one kCache gives. One
// copy per written array and write, shared by every node reading it (an
// optimiser step writing W under a live tape copies W once, not a kernel per
// node); the copy is the whole cost, paid only when a write comes. A write
// on another thread (the registry is the tape's thread's) is still caught
// when the gradient is asked: the Error, as in kRecompute. Explicit
// kRecompute keeps no copies either: it stays an Error there.
//
// Example:
//   Tape tape;                                  // kAuto
//   auto y = broadcast(mul, x, b);              // cheap: recorded to recompute, b registered
//   b.assign({...});                            // y's node keeps a copy of the old b first
//   tape.gradient(sum(y), {x});                 // the old b, as kCache would give
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "dualcast/detail/array_impl.hpp"
#include "dualcast/detail/grad_node.hpp"
#include "absl/container/flat_hash_map.h"
#include "jit/ir/ir.h"
#include "runtime/storage_aliases.h"

namespace dualcast::detail {

// What a taped broadcast does with its partials under the innermost tape's mode.
struct PartialsPlan {
  bool cache = true;                    // compute and keep them in the forward kernel
  bool keep_arguments_on_write = false;  // recompute, registered for the write fallback
};
// The innermost active tape's mode on this thread (tape.cc); kCache when none.
PartialsMode InnermostTapeMode();

// `nonzero_partials`: how many partial arrays are not structurally zero;
// `partial_bytes`: their total size.
PartialsPlan PlanPartials(const jit::Function& primal, size_t nonzero_partials, size_t partial_bytes);

// The copies one write makes, by the argument array they copy.
using ArgumentCopies = absl::flat_hash_map<const ArrayImpl*, std::shared_ptr<ArrayImpl>>;

// A tape node that recomputes its partials from its arguments.
class KeepsArgumentsOnWrite {
 public:
  // Memory of `storages` is about to be written in place: keep, for the
  // sweep, a copy of each argument over those storages, unless that argument
  // was written since `recorded_epoch` already (the sweep's Error stands
  // then). Copies come from `copies` or are added to it. Never throws: an
  // argument not copied (out of memory) is the sweep's Error.
  virtual void KeepArgumentsBeforeWrite(const StorageList& storages, uint64_t recorded_epoch,
                                        ArgumentCopies& copies) noexcept = 0;

 protected:
  ~KeepsArgumentsOnWrite() = default;
};

// Registers `node` (recorded just now on this thread) under the storages of `inputs`.
void NoteRecomputingNode(const std::shared_ptr<KeepsArgumentsOnWrite>& node,
                         std::span<const std::shared_ptr<ArrayImpl>> inputs);

// Memory of `storages` (a write target's AliasesOf) is about to be written
// in place on this thread: every registered node reading it keeps a copy
// first, and is then forgotten under those storages (its copies stand).
void KeepArgumentsBeforeWrite(const StorageList& storages);

// Drops this thread's registry (its last tape is gone).
void ForgetRecomputingNodes();

// Registered (node, storage) entries on this thread, dead ones included (tests).
size_t RecomputingEntriesForTesting();

}  // namespace dualcast::detail
