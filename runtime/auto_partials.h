// PartialsMode::kAuto per broadcast: recompute cheap kernels, cache costly ones, and copy what a recomputing node reads just before an in-place write would change it.
//
// Why: caching writes every partial array at forward time, keeps it until
// the tape goes and reads it in the sweep; recomputing runs the kernel's
// arithmetic again instead. For a kernel of a few adds and multiplies (a
// stencil, an axpy) the traffic costs more: a taped explicit-Euler stencil (4
// partials per step, 200 steps, n = 100 000) took 1.16 GB peak and 368 ms
// cached, 0.54 GB and 273 ms recomputed. With a transcendental in it the
// answer depends on the machine: per element, recomputing costs the kernel's
// work (jit/ir/op_cost.h: an add 1, a division 4, a transcendental 20) over
// the lanes of one vector instruction, caching 2 x sizeof(T) bytes per
// partial, so a wider vector unit favours recomputing. Measured (taped
// stencils, 50 steps, n = 100 000, both dtypes; recompute / cache):
//   v + 0.1 tanh(k (l - 2v + r))  work 26, 4 partials: AVX2 (Zen 1) 1.13x
//                                 f32 / 1.35x f64; AVX-512 0.78x f64
//   the same with an exp          work 27: AVX2 1.28x / 1.29x
//   the cheap stencil (no math)   work 15: AVX2 0.71x / 0.65x
//   four tanh over two arguments  AVX-512 1.5-1.9x
// So kAuto recomputes when the work is at most vector_bits / 64 per nonzero
// partial (AVX2 4, AVX-512 8: both machines' measurements fall on the right
// side), and caches otherwise (still recomputing past the budget).
// HM-LSTM's cell (five sigmoid/tanh, four partials) is cached, as before.
// Tapes whose partials outgrow the array cache (array.cc, 1 GiB) pay fresh
// pages for every cached step, and there recomputing wins whatever the math
// (n = 1 000 000: 0.55-0.93x); kAuto does not model that.
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
// `partial_bytes`: their total size; `device`: where the kernel runs.
PartialsPlan PlanPartials(const jit::Function& primal, size_t nonzero_partials, size_t partial_bytes,
                          Device device);

// kAuto's rule (see the header comment): running `primal` again costs less
// than storing and reading back `nonzero_partials` arrays on a machine whose
// vector instructions are `vector_bits` wide.
inline constexpr int kVectorBitsPerRecomputedOp = 64;
bool CheaperToRecompute(const jit::Function& primal, size_t nonzero_partials, int vector_bits);

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
