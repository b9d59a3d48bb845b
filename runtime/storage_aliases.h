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
// through every registered storage that may hold one of the written elements:
// one whose range meets the written array's, and whose element grid (the
// addresses base + k * step its arrays can use, step the gcd of the byte
// strides of the view that made it) comes within an element of the written
// array's. Views of disjoint parts of one buffer do not alias, nor do the
// columns of an interleaved table (a column per thread: a write into one
// column must not count as a write into another, or a tape on the thread
// that owns that one refused its gradient, or worse). Views whose grids
// interleave without sharing an element (2x2 blocks of a 4-column table)
// still count as aliases, conservatively.
//
// Cost: a lock and a push per view made or pointer first handed out, a lock
// and an erase when such a storage is freed, and a scan of the registered
// storages per write through one of them.
//
// Example:
//   RegisterAliasable(*impl->storage, ExtentOf(*impl).step, 8);  // Array::view
//   for (const Storage* s : AliasesOf(written)) ...             // a write through `written`
#pragma once

#include "absl/container/inlined_vector.h"
#include "dualcast/detail/array_impl.hpp"

namespace dualcast::detail {

// The byte addresses an array's elements use: within [lo, hi), on the grid
// lo + k * step. Empty arrays use none.
struct Extent {
  uintptr_t lo = 0, hi = 0;
  uint64_t step = 0;  // gcd of the byte strides of dims with size > 1 (0: one element)
  bool empty = true;
};
Extent ExtentOf(const ArrayImpl& a);

// Whether two arrays may share an element: their address ranges meet and
// their element grids come within one element of each other. Never false
// when they do share one.
bool MayOverlap(const ArrayImpl& a, const ArrayImpl& b);

// Registers `storage` (CPU memory) as one that may share memory with others.
// Its arrays use only addresses storage.data + k * `step` (a view's stride
// gcd; the element size for memory dualcast allocated), of `element_bytes`
// each. Idempotent: the first registration's grid stays.
void RegisterAliasable(Storage& storage, uint64_t step, size_t element_bytes);

// Called by ~Storage for a registered storage.
void ForgetAliasable(const Storage* storage);

// `written`'s storage and every other live registered storage that may hold
// one of `written`'s elements (see above). The pointers are for comparison:
// a storage may be freed once the call returns (its address then matches
// nothing, or a newer storage, which costs only extra work).
using StorageList = absl::InlinedVector<const Storage*, 4>;
StorageList AliasesOf(const ArrayImpl& written);

}  // namespace dualcast::detail
