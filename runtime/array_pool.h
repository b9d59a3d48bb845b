// Per-thread recycling of ArrayImpl objects, so that making a small array costs no heap block.
//
// Why: a training step makes and drops a handful of arrays (a broadcast's
// output, a loss, the gradients), and each new ArrayImpl cost three heap
// blocks (the object with its reference counts, the shape, the strides).
// The 8-byte shape and stride blocks of a step are more than glibc's
// per-thread cache keeps per size (7), so many of them went to its slower
// bins: with jemalloc preloaded the tape step of dualcast-cpu-kernel-bench
// took 22% less time. Here a dropped array's object goes back to its
// thread's list with every field reset to its default (what it held is
// released then), its shape and strides emptied but keeping their memory,
// and the reference counts live in blocks from a per-thread list as well.
// Weak references are unaffected: they keep their own count block, which is
// not recycled while one exists, so an old weak reference never locks a
// recycled array. Builds with AddressSanitizer make plain objects instead,
// so a use after free is still caught.
//
// The same per-thread lists of raw blocks, one per size, serve
// std::allocate_shared for the other objects a step makes and drops.
//
// Example:
//   std::shared_ptr<ArrayImpl> a = PooledArrayImpl();  // default state
//   SetContiguousShape(*a, {2, 3});                     // shape [2, 3], strides [3, 1]
//   auto node = std::allocate_shared<LazyNode>(BlockAllocator<LazyNode>{});
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <vector>

#include "dualcast/detail/array_impl.hpp"

namespace dualcast::detail {

// Per thread and size, at most this many free blocks are kept.
inline constexpr size_t kBlocksKept = 64;

// Off under AddressSanitizer, which must see every free to catch a use after it.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kPoolBlocks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kPoolBlocks = false;
#else
inline constexpr bool kPoolBlocks = true;
#endif
#else
inline constexpr bool kPoolBlocks = true;
#endif

// A per-thread list of free items, at most kBlocksKept long; `Free` releases
// an item for good (beyond the cap, and at thread exit). An item freed on
// another thread joins that thread's list. After this thread's list is gone
// (thread exit), Take finds nothing and Give refuses.
template <class Tag, class T, void (*Free)(T)>
class ThreadFreeList {
 public:
  static T Take() {
    if (!t_alive) return nullptr;
    std::vector<T>& list = Mine().free_;
    if (list.empty()) return nullptr;
    T item = list.back();
    list.pop_back();
    return item;
  }
  static bool Give(T item) {
    if (!t_alive) return false;
    std::vector<T>& list = Mine().free_;
    if (list.size() >= kBlocksKept) return false;
    list.push_back(item);  // capacity reserved: no allocation, no throw
    return true;
  }
  ThreadFreeList() { free_.reserve(kBlocksKept); }
  ~ThreadFreeList() {
    t_alive = false;
    for (T item : free_) Free(item);
  }

 private:
  static ThreadFreeList& Mine() {
    thread_local ThreadFreeList list;
    return list;
  }
  static thread_local bool t_alive;
  std::vector<T> free_;
};
template <class Tag, class T, void (*Free)(T)>
thread_local bool ThreadFreeList<Tag, T, Free>::t_alive = true;

inline void FreeBlock(void* p) { ::operator delete(p); }
// Raw blocks of one size.
template <size_t kSize>
using Blocks = ThreadFreeList<std::integral_constant<size_t, kSize>, void*, &FreeBlock>;

// An allocator over Blocks: for std::allocate_shared of the runtime's small
// per-step objects (storage records, graph nodes, origins), and for the
// count blocks of recycled arrays (std::shared_ptr rebinds it to the type it
// allocates).
template <class T>
struct BlockAllocator {
  using value_type = T;
  BlockAllocator() = default;
  template <class U>
  BlockAllocator(const BlockAllocator<U>&) {}  // NOLINT: rebinding
  T* allocate(size_t n) {
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
    if (kPoolBlocks && n == 1) {
      if (void* p = Blocks<sizeof(T)>::Take()) return static_cast<T*>(p);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (kPoolBlocks && n == 1 && Blocks<sizeof(T)>::Give(p)) return;
    ::operator delete(p);
  }
  template <class U>
  bool operator==(const BlockAllocator<U>&) const { return true; }
};

// A default-constructed ArrayImpl, recycled when this thread has one.
std::shared_ptr<ArrayImpl> PooledArrayImpl();

// Sets `a`'s shape and contiguous row-major strides (as ContiguousStrides),
// reusing the vectors' memory.
void SetContiguousShape(ArrayImpl& a, std::span<const int64_t> shape);

// NewArray for a shape the caller keeps (no copy of it on the way).
std::shared_ptr<ArrayImpl> NewContiguousArray(DType dtype, std::span<const int64_t> shape, Device device);

}  // namespace dualcast::detail
