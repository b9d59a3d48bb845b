// The type-erased state behind Array<T>: storage, layout, and hooks for laziness and the tape.
//
// Users never touch this; runtime internals (fusion, tape, backends) do. One
// ArrayImpl is shared by every Array handle that copies it, like a NumPy or
// PyTorch tensor object.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "dualcast/device.hpp"

namespace dualcast::detail {

enum class DType : uint8_t { kF32, kF64 };
inline size_t SizeOf(DType t) { return t == DType::kF32 ? 4 : 8; }
inline const char* DTypeName(DType t) { return t == DType::kF32 ? "float32" : "float64"; }
template <class T>
constexpr DType DTypeOf() {
  return sizeof(T) == 4 ? DType::kF32 : DType::kF64;
}

// Owned memory is 64-byte aligned (a cache line, and every vector load width).
inline constexpr size_t kAlignment = 64;

struct Storage {
  void* data = nullptr;
  size_t bytes = 0;
  Device device = Device::cpu();
  bool owning = true;
  // Registered as memory another storage may share (runtime/storage_aliases.h).
  std::atomic<bool> aliasable{false};
  ~Storage();
  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
};

// Allocates `bytes` on `device` (throws Error kMemory with the size on failure).
// Large CPU blocks are recycled through a process-wide cache (array.cc).
std::shared_ptr<Storage> Allocate(size_t bytes, Device device);
// Returns every cached free block to the system.
void ReleaseCachedMemory();

struct LazyNode;  // a pending broadcast (lazy.cc)
struct GradNode;  // the tape node that produced an array (tape.cc)
struct ArrayImpl;

// Which operation computed an array, from which arrays (held weakly: this
// never keeps memory alive), and whether a tape was recording then. Only the
// tape's error messages read it, to say why a gradient cannot be given
// ("the loss reaches x only through 'f', computed before this Tape opened").
struct Origin {
  // Members start from their initialisers only, as LazyNode's: allocate_shared
  // would otherwise zero the whole object first (~200 bytes, most of them
  // inline vectors) on every launch that notes a new Origin.
  Origin() {}
  std::string op;
  // Inline for a few entries: an Origin is built on nearly every launch, and
  // most ops read one to three arrays.
  absl::InlinedVector<std::weak_ptr<ArrayImpl>, 3> inputs;
  // Each input's write count (in_place.h) when it was read: an array written
  // in place since holds another variable, which this one was not computed from.
  absl::InlinedVector<uint32_t, 3> input_versions;
  // An array upstream, and its write count when the values met were read.
  struct Ancestor {
    std::weak_ptr<ArrayImpl> array;
    uint32_t version = 0;
  };
  // Every array upstream that was alive when this one was computed (the
  // inputs, their ancestors, and so on, at the versions read; not through a
  // constant op) is named by `inputs`, by `ancestors` or by a parent's own
  // ancestry, read with runtime/origin.h's ForEachAncestor. A temporary in
  // between (norm(x * 2): x * 2 is dropped) does not cut the path from the
  // loss back to x, which `inputs` alone would: the parents are held. The
  // version tells a variable from the one its array holds after a write in
  // place (u_old = u.copy(); u.assign(...): u_old was computed from the old
  // u, not the new).
  //
  // `parents`: the non-constant Origins of the inputs, and of values
  // partials() wrote into their memory, as they were read. Held at most
  // kMaxDepth links deep (`depth`: the longest chain below this one): one
  // link deeper, the chain is flattened into `ancestors` instead (the arrays
  // still alive then, deduplicated by array and version, capped at
  // kMaxAncestors: `truncated`). So noting an Origin costs O(inputs), not
  // O(arrays upstream): a tape over a long simulation keeps every
  // intermediate alive, and copying their list on every launch was quadratic
  // in the steps; and a long tape-less loop still keeps no chain of dead
  // arrays' Origins, only what the user holds.
  //
  // Under a tape every intermediate stays alive, so a full flattening would
  // copy the whole taped history (up to kMaxAncestors) each time a chain
  // passes kMaxDepth: a taped Origin's flattening stops at Origins flattened
  // before (`flat`) and keeps them as parents, collecting only the arrays of
  // the segment in between; past kMaxDepth / 2 links of such kept Origins it
  // flattens all the way again.
  absl::InlinedVector<std::shared_ptr<const Origin>, 3> parents;
  absl::InlinedVector<Ancestor, 2> ancestors;
  uint32_t depth = 0;
  static constexpr uint32_t kMaxDepth = 1024;
  bool flat = false;
  bool truncated = false;
  static constexpr size_t kMaxAncestors = 4096;
  bool taped = false;
  // Computed early by a write in place into memory its inputs share (see
  // runtime/pending_readers.h), on the writing thread, perhaps not the one
  // whose tape was meant to record it.
  bool before_write = false;
  // The op is piecewise constant in its inputs (argmax, argmin): no gradient
  // flows through it by definition, so a path through it is not a missed one;
  // an input reached only that way is named with it in the unused-input error.
  bool constant = false;
  // For a constant op: each input's tape node and output index (an input
  // array may be gone, e.g. argmax(x * 2) drops x * 2, while its node lives
  // on the tape), so the path can still be followed to name the input.
  std::vector<std::pair<std::weak_ptr<GradNode>, int>> producers;
  // The array was written through mutable_data() since it was computed by
  // `op`: some of its values may still be that op's (runtime/in_place.h).
  bool pointer_written = false;
};

struct ArrayImpl {
  DType dtype = DType::kF32;
  Device device = Device::cpu();
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // elements; 0 allowed (broadcast views)
  int64_t offset = 0;            // elements from storage->data
  std::shared_ptr<Storage> storage;  // null while the array is pending
  bool read_only = false;            // a view of const user memory

  // Laziness: set while this array is the unevaluated output `pending_output`
  // of a broadcast; Materialize() computes it (and its fusion group).
  std::shared_ptr<LazyNode> pending;
  int pending_output = 0;
  // Read by the lazy graph's lean path without its lock (lazy.cc,
  // runtime/graph_lock.h). `computed` is set, with release, once `storage`
  // holds this array's values for good (an array never becomes pending
  // again); false only means "look under the lock". `claimed` is taken by
  // the one thread that computes the array on that path.
  // A copy (a view of a computed array) starts with both unset.
  struct LazyFlag : std::atomic<bool> {
    LazyFlag() : std::atomic<bool>(false) {}
    LazyFlag(const LazyFlag&) : std::atomic<bool>(false) {}
    LazyFlag& operator=(const LazyFlag&) {
      store(false, std::memory_order_relaxed);
      return *this;
    }
  };
  LazyFlag computed;
  LazyFlag claimed;

  // Reverse mode: the tape node that produced this array, if recorded.
  std::shared_ptr<GradNode> grad_fn;
  int grad_output = 0;
  // In-place writes through this array (runtime/in_place.h): how many, and
  // the tape node that had computed each version written over, so that a
  // node recorded before a write still credits the values it read. A copy
  // (a view) is a new array and starts with none.
  struct WriteHistory {
    struct Past {
      uint32_t version;
      std::weak_ptr<GradNode> node;
      int output;
      std::shared_ptr<const Origin> origin;
    };
    WriteHistory() {}
    WriteHistory(const WriteHistory&) {}
    WriteHistory& operator=(const WriteHistory&) {  // a recycled array (array_pool.cc): none
      count.store(0, std::memory_order_relaxed);
      past.clear();
      forgotten_below = 0;
      return *this;
    }
    std::atomic<uint32_t> count{0};
    // Guarded by in_place.cc's history lock: the versions that had a node or
    // an Origin, the latest kMaxPast; those below `forgotten_below` may be gone.
    std::vector<Past> past;
    uint32_t forgotten_below = 0;
    static constexpr size_t kMaxPast = 64;
  };
  WriteHistory writes;
  // Set by every operation that computes this array (see Origin).
  std::shared_ptr<const Origin> origin;

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t size() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
  bool contiguous() const;
  void* data() const {
    return static_cast<char*>(storage->data) + offset * static_cast<int64_t>(SizeOf(dtype));
  }
};

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape);

// Calls fn(linear_index, element_offset) for every element of a strided
// layout, in row-major order (the host-side walk behind copies and reads).
template <class Fn>
void ForEachElement(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                    Fn&& fn) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  if (n == 0) return;
  std::vector<int64_t> index(shape.size(), 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    fn(i, offset);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (shape[d] - 1);
      index[d] = 0;
    }
  }
}

// A new, owning, contiguous, uninitialised array.
std::shared_ptr<ArrayImpl> NewArray(DType dtype, std::vector<int64_t> shape, Device device);

// Computes a pending array (no-op when it is not pending). Defined by the lazy
// graph (lazy.cc); every read of data goes through it.
void Materialize(ArrayImpl& impl);

}  // namespace dualcast::detail
