// The lazy graph's lean path: a ready broadcast evaluated with no plan, no composition and, off the lock, only a read section.
//
// Nearly every eval is the common case: the requested array is the only
// output of a broadcast whose inputs are computed, read by the thread that
// made it, with no tape recording. The group is then the node's own
// function over its inputs as they are, so no plan, composition or gradient
// record is needed, and a cache-hit launch writes into new storage handed to
// the array itself (no temporary array): a 1-element broadcast is a few
// hundred nanoseconds in all. Materialize (lazy.cc) tries MaterializeReady
// first, before any lock; under the exclusive lock it reuses the launch and
// fill for a tape-less ready node (RunReadyNode).
//
// Example (Materialize):
//   NodeList freed;  // released after every lock
//   if (MaterializeReady(impl, !TapeActive(), &freed)) return;
//   ... the exclusive path
#pragma once

#include <memory>

#include "dualcast/detail/array_impl.hpp"
#include "dualcast/detail/lazy.hpp"
#include "runtime/lazy_group.h"

namespace dualcast::detail {

// Whether `node` can take the lean launch: one output, a CPU broadcast (not a
// pending reduction), at most 16 inputs, pairwise distinct (a repeated input
// needs the planner's leaf deduplication).
bool LeanEligible(const LazyNode& node);

// What a lean launch computed: new storage from a launch plan, or else
// Execute's result array.
struct LeanResult {
  std::shared_ptr<Storage> storage;
  std::shared_ptr<ArrayImpl> computed;
};

// Runs a LeanEligible `node` for its output `root` with no lock held (the
// node marked running by the caller).
LeanResult LaunchLean(const LazyNode& node, const std::shared_ptr<ArrayImpl>& root);

// Gives `root` what LaunchLean computed, flags it computed and moves its node
// into `freed` (to be released after the lock). Under the graph lock or in a
// read section.
void FillLean(LeanResult&& r, const std::shared_ptr<ArrayImpl>& root, NodeList* freed);

// Materialize without the exclusive lock, in a read section (graph_lock.h):
// true when `impl` is computed on return (Materialize has already returned
// for an array flagged computed). Computes a pending one itself when it is
// the one output of a ready, LeanEligible node (`launch`: no tape records)
// whose inputs are flagged computed and which this thread claims first.
// False, with nothing changed, otherwise: the caller takes the lock, where
// what was not known here is decided (and the flags set for next time).
bool MaterializeReady(ArrayImpl& impl, bool launch, NodeList* freed);

// An array's laziness as another thread may be changing it: its node while
// pending (null once computed), and its storage once computed. Another
// thread computes an array this thread made when they share it, or when it
// writes memory the array reads (pending_readers.h), so `pending` and
// `storage` are read only under the flags' protocol: without a lock when
// flagged computed (the common case: one acquire load), else in a read
// section holding the array's claim for the read, else under the exclusive
// lock. Not under the exclusive lock or in a read section already.
struct PendingState {
  std::shared_ptr<LazyNode> node;
  const Storage* storage = nullptr;
};
PendingState ReadPendingState(ArrayImpl& a);

}  // namespace dualcast::detail
