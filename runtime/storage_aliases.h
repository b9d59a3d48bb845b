// Which live storages share memory: views made separately of one buffer, and views of memory dualcast handed out.
//
// A write in place is seen through the storage it goes through: pending
// results reading that storage are computed first (pending_readers.h), and
// the storage is stamped for the tape (in_place.h). Two Array::view calls on
// one buffer make two storages, though, and a simulation makes a fresh view
// of its state every step: a write through one view went unseen by results
// reading the other (`y = view(buf) * 10; view(buf).assign(...)` changed y).
//
// So every storage that can share memory with another is registered with its
// address range: every view of user memory, and every storage whose pointer
// dualcast handed out (data(), mutable_data()), since the user can make a
// view of that. A storage dualcast allocated and never exposed shares memory
// with nothing. A write through a registered storage also counts as a write
// through every registered storage whose range overlaps it (the whole range:
// views of disjoint parts of one buffer do not alias; views of interleaved
// parts count as aliases, conservatively).
//
// Cost: a lock and a push per view made or pointer first handed out, a lock
// and an erase when such a storage is freed, and a scan of the registered
// storages per write through one of them.
//
// Example:
//   RegisterAliasable(*impl->storage);                 // Array::view, Array::data
//   for (const Storage* s : AliasesOf(storage)) ...    // a write through `storage`
#pragma once

#include "absl/container/inlined_vector.h"
#include "dualcast/detail/array_impl.hpp"

namespace dualcast::detail {

// Registers `storage` (CPU memory) as one that may share memory with others. Idempotent.
void RegisterAliasable(Storage& storage);

// Called by ~Storage for a registered storage.
void ForgetAliasable(const Storage* storage);

// `storage` and every other live registered storage whose memory overlaps
// it. The pointers are for comparison: a storage may be freed once the call
// returns (its address then matches nothing, or a newer storage, which costs
// only extra work).
using StorageList = absl::InlinedVector<const Storage*, 4>;
StorageList AliasesOf(const Storage* storage);

}  // namespace dualcast::detail
