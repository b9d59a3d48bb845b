// Writes in place keep lazy results eager in meaning: pending results that read the written memory are computed first.
//
// broadcast() and sum() are lazy: a result is computed when it is first read,
// from its inputs as they are then. Without this, a write in between changed
// a result made before it, which eager code (NumPy, a hand loop) never does:
//
//   y = x * 2;           // pending
//   x.assign({10, 20});  // y would have read 20, 40 later: a silently wrong value
//
// So every write that goes through dualcast (Array::mutable_data, and with it
// assign; partials() destinations; accumulate_gradient's buffers) first
// computes each pending result that reads the written memory (any view of the
// same storage, or of one sharing its memory: storage_aliases.h), unless the
// array it reads and the written one cannot share an element (MayOverlap:
// another column of one table is not read, so a column per thread does not
// compute the other threads' results, away from their tapes).
// A result computed that way keeps the inputs' values of before the write, as
// if it had been computed eagerly; a tape records it then, with those values.
//
// Found through a registry of the pending nodes, one list per thread (a
// broadcast adds its node to its own thread's list: an uncontended lock, no
// shared cache line), pruned of dead nodes as it grows. A write scans every
// list, then inspects the live nodes under the graph lock; the inputs are
// compared at the write, not when the node was made, so an input computed
// since (y = x * 2 evaluated after z = y + 1 was made) is found too. Each
// entry keeps a 64-bit filter of the storages its node read when made, so a
// write looks closely only at nodes that may read it (or had a pending input
// then): 8 us per write with 10,000 pending results alive. A broadcast costs
// about 10 ns more than without the registry (330 ns for one element).
//
// Not seen: writes through the user's own pointers into a view's memory
// (Array::view) or into a pointer kept from an earlier mutable_data(); call
// eval() on the results first (docs/embedding.md says so).
//
// Example:
//   NotePendingNode(node);                         // broadcast.cc, lazy_reduce.cc
//   ComputeReadersBeforeWrite(*impl);              // Array::mutable_data, before writing
#pragma once

#include <memory>
#include <span>

#include "dualcast/detail/array_impl.hpp"
#include "dualcast/detail/lazy.hpp"
#include "runtime/lazy_ready.h"

namespace dualcast::detail {

// Registers a pending node just made on this thread, given its inputs' state
// (ReadPendingState, lazy_ready.h) as the node was made; the second form reads it.
void NotePendingNode(const std::shared_ptr<LazyNode>& node, std::span<const PendingState> inputs);
void NotePendingNode(const std::shared_ptr<LazyNode>& node);

// Computes `target` if it is pending, then every pending result whose node
// reads `target`'s storage, before `target` is written in place; then has the
// tape nodes that would recompute from that memory keep a copy of it
// (auto_partials.h). May compile and launch kernels; throws what they throw
// (nothing has been written then).
void ComputeReadersBeforeWrite(ArrayImpl& target);

// Whether this thread is computing a write's pending readers now: what it
// computes then was made by someone else's code, perhaps on another thread
// under a tape that cannot record it here (the tape's messages say so).
bool ComputingReadersBeforeWrite();

// Entries in this thread's registry, dead ones included (tests).
size_t RegisteredNodesForTesting();

}  // namespace dualcast::detail
