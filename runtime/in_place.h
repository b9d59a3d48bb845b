// In-place writes: which storage was last written when, so that a gradient never reads overwritten values.
//
// The tape keeps arrays for the reverse sweep (a node's inputs, its cached
// partials, which may be an input or an output itself) and follows each
// array back to the node that computed it. An array written in place after
// that (Array::assign, mutable_data(), a destination of partials() or
// accumulate_gradient()) would make the sweep use values the forward pass
// never saw, or credit the array to a node whose result it no longer holds:
// a wrong gradient with no sign of it. So every such write
//   - takes a new epoch from one process-wide counter and stamps the storage
//     with it (views share the stamp: they share the storage), and
//   - makes the written array a leaf (its tape node is dropped; the caller
//     sets its Origin: none for user values, the kernel's for a destination,
//     the old one marked pointer_written after mutable_data(), which may
//     have left some computed values),
//     a new version of it: the array counts its writes and remembers the node
//     that had computed each version written over. A node recorded before the
//     write keeps the version it read (GradNode::inputs_seen), so its
//     adjoint still flows to what computed those values (it did not, once:
//     `h = tanh(x); loss = sum(h * h) + sum(x); h.assign(...)` gave d/dx = 1),
//     and a gradient with respect to the array is one with respect to its
//     values now: uses of an older version are uses of another variable.
// The memory also remembers the Origin of computed values written into it
// (a partials() destination, accumulate_gradient()'s buffer, mutable_data()
// over computed values), so that a view made before the write, or a view()
// of the same buffer made separately, leads to them as the written array
// does (NoteInPlaceWriter, WrittenValuesAt); a write of user values over
// all of it hides them again.
// The tape remembers the epoch at which it recorded each node; the sweep refuses,
// with an Error naming the node, the argument and the fix, to read a kept
// array whose storage was stamped later.
//
// Cost: a process that never writes in place reads one atomic per node and
// sweep step (the counter stays 0). The stamps live in a sharded map, touched
// by writes, by sweep steps after a write, and by freeing a storage whose
// shard holds a stamp.
//
// Example:
//   Tape tape;
//   auto y = broadcast(mul, x, b);          // d y / d x = b is kept (b itself)
//   auto loss = sum(y);
//   b.assign({...});                        // stamps b's storage
//   tape.gradient(loss, {x});               // Error: argument 2 of 'mul' was written in place ...
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "dualcast/detail/array_impl.hpp"
#include "dualcast/detail/grad_node.hpp"

namespace dualcast::detail {

// The epoch of the latest in-place write in the process (0: none yet).
uint64_t InPlaceWriteEpoch();

// `a` is about to be (or was just) written in place: stamps its storage
// with a new epoch and drops its tape node (it is a leaf from now on).
// `whole`: every element of `a` gets a new value (assign, a partials()
// destination), rather than some unknown ones (mutable_data()) or an
// addition to the old (accumulate_gradient()).
void NoteInPlaceWrite(ArrayImpl& a, bool whole);

// Then, once the caller set a.origin to what computed the values written
// (partials(), a sweep): notes that Origin on the memory, so that every
// array reading it (a view made before, another view() of the buffer) is
// known to hold values computed from other arrays, as `a` is: a tape
// missed that path (`v = slice(dest); partials(k, {a}, {dest}); sum(v)`
// gave d/da = 0, silently).
void NoteInPlaceWriter(const ArrayImpl& a, bool whole);

// A write through the pointer mutable_data() hands out: which elements it
// changes cannot be known, so values computed into `a` before may remain.
// `a` keeps its Origin, marked pointer_written (a tape then refuses a
// gradient through it instead of taking the array for user values).
void NotePointerWrite(ArrayImpl& a);

// A view of memory just made (Array::view): takes on the written-values
// records of the live storages it may share an element with, so that it
// reads what they hold as they do (`partials(k, {a}, {.value_out = {buf}});
// v = view(buf.data())`: v is not a constant either). A record that hid
// older writes (`covers`) keeps doing so only where the view lies within
// that storage; elsewhere the older writers show too (conservative).
void InheritWrittenValues(const ArrayImpl& view);

// The Origins of the computed values that memory of `storage` held at
// `epoch` (an epoch LastInPlaceWrite gave, e.g. when a node read it),
// latest first: those written since the last write of user values over all
// of the storage. `complete` is false when older writes were forgotten.
struct WrittenValues {
  absl::InlinedVector<std::shared_ptr<const Origin>, 2> writers;
  bool complete = true;
};
WrittenValues WrittenValuesAt(const Storage* storage, uint64_t epoch);
// Whether any live storage has such values noted (else none has any).
bool AnyWrittenValues();

// Whether `a` and `b` (different arrays) may read the same memory: one
// storage, or views of one buffer made separately (storage_aliases.h), and
// overlapping element ranges (interleaved ones count).
bool SharesMemory(const ArrayImpl& a, const ArrayImpl& b);

// How many times `a` was written in place through itself (its version).
inline uint32_t WriteCount(const ArrayImpl& a) { return a.writes.count.load(std::memory_order_relaxed); }

// Whether a walk through `o`'s inputs sees all of its ancestry: every input is
// still alive and was never written in place, so each input's own Origin tells
// the rest. What a capped ancestry (Origin::truncated) is replaced by: a
// dataset stacked from 5000 live samples hides nothing.
bool InputsTellAncestry(const Origin& o);

// What computed version `version` of `a`: its tape node and output (null:
// none, or that node is gone) and its Origin (null: user values). `known`
// is false for an old version whose record was dropped (WriteHistory::kMaxPast).
struct VersionInfo {
  std::shared_ptr<GradNode> node;
  int output = 0;
  std::shared_ptr<const Origin> origin;
  bool known = true;
};
VersionInfo VersionOf(const ArrayImpl& a, uint32_t version);

// Input j of `reader` as `reader` read it.
VersionInfo InputSeenBy(const GradNode& reader, size_t j);

// The error for an array that no longer holds what the node `node_name`
// relied on: `what` names it (e.g. "argument 2 of 'mul'").
[[noreturn]] void ThrowWrittenInPlace(const ArrayImpl& a, const std::string& what,
                                      const std::string& node_name);

// The epoch of the last in-place write to `storage` (0: never written in place).
uint64_t LastInPlaceWrite(const Storage* storage);

// Called by ~Storage: a freed storage's stamp must not pass to a new one at its address.
void ForgetInPlaceWrites(const Storage* storage);

// dualcast::forget_written_values: [begin, end) holds user values now. The
// kept records of user memory (those of views that are gone) drop what they
// say about it (a record reaching past it keeps the part outside), and a live
// storage within it is noted as written over all of it with user values.
void ForgetWrittenValues(uintptr_t begin, uintptr_t end);

// The epoch at which the tape recorded the node whose reverse rule runs now
// (0 outside a sweep, or when no write had happened by then). The sweep sets
// it for each step, a part cut out of a node getting the node's; the tape
// keeps it per node (tape.cc), so nodes need not.
uint64_t SweptNodeEpoch();
class SweptNodeEpochScope {
 public:
  explicit SweptNodeEpochScope(uint64_t epoch);
  ~SweptNodeEpochScope();
  SweptNodeEpochScope(const SweptNodeEpochScope&) = delete;
  SweptNodeEpochScope& operator=(const SweptNodeEpochScope&) = delete;

 private:
  uint64_t saved_;
};

// Throws when `a` was written in place after `epoch`, the epoch at which the
// tape recorded the node `node_name` that relies on it; `what` names `a` for
// the error (e.g. "argument 2 of 'mul'").
void CheckNotWrittenSince(uint64_t epoch, const ArrayImpl& a, const std::string& what,
                          const std::string& node_name);

}  // namespace dualcast::detail
