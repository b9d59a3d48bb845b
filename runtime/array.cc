// Array<T>: storage, creation, views, layout changes, element access and printing.
#include "dualcast/array.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <utility>
#include <vector>
#include <numeric>
#include <optional>
#include <ostream>

#include <malloc.h>
#include <sys/mman.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jit/cpu/thread_pool.h"
#include "runtime/array_pool.h"
#include "runtime/backend.h"
#include "runtime/in_place.h"
#include "dualcast/detail/execute.hpp"
#include "dualcast/detail/grad_node.hpp"
#include "jit/codegen/broadcast_layout.h"
#include "jit/codegen/disk_cache.h"
#include "jit/codegen/element_count.h"
#include "jit/env.h"
#include "jit/error.h"
#include "runtime/grad_kernels.h"
#include "runtime/layout_grad.h"
#include "runtime/lazy_ready.h"
#include "runtime/pending_readers.h"
#include "runtime/storage_aliases.h"

namespace dualcast {
namespace detail {

namespace {

// Blocks of 256 KiB and up come straight from the kernel (mmap) and go
// straight back (munmap), so that memory dualcast frees, or the cache below
// drops, leaves the process. From glibc they did not: each free of a large
// block raises its mmap threshold (up to 32 MiB), later blocks then came from
// its heap, and the heap kept them, pinned by small blocks in between: 800
// 1-MiB arrays freed and release_cached_memory() left the process at 893 MB
// (72 MB the first time), and a mesh growing each step with the cache off
// climbed to 500 MB with 73 MB live. Under AddressSanitizer, malloc: it must
// see every block.
constexpr size_t kMappedBlock = size_t{256} << 10;
bool Mapped(size_t rounded) { return kPoolBlocks && rounded >= kMappedBlock; }
void* SystemAlloc(size_t rounded) {
  if (!Mapped(rounded)) return std::aligned_alloc(kAlignment, rounded);
  void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}
void SystemFree(void* p, size_t rounded) {
  if (Mapped(rounded)) {
    munmap(p, rounded);
  } else {
    std::free(p);
  }
}

// A caching allocator for large CPU blocks. Fresh pages from the OS cost a
// page fault each on first touch (~21 K faults, several ms, for the 80 MB an
// HM-LSTM n=2048 gradient step allocates), and such steps repeat with the
// same sizes. Freed blocks >= kMinCached are kept, keyed by their rounded
// size, up to MaxCachedBytes() in all (DUALCAST_ARRAY_CACHE_MAX, default 1G),
// and handed out again. Thread-safe.
//
// Why 32 KiB and not 1 MiB (as until 2026-11-27): glibc hands out blocks above
// its mmap threshold (128 KiB at first, raised by each free of such a block)
// as fresh pages, and gives the top of its heap back to the OS past twice that
// threshold, so arrays between them faulted their pages in again on most
// steps: HM-LSTM's full gradient at n = 256 (256 KiB arrays) took 0.049 ms or
// 0.161 ms from call to call, median 2.3x the first. Sizes round up to a
// sixteenth of their power of two (at most 6.25% unused), so steps whose sizes
// differ slightly still share blocks. Off under AddressSanitizer, like the
// small blocks: it must see every free.
//
// When full, the block cached longest ago goes back to the system to make
// room: a simulation whose mesh grows each step frees sizes it never asks for
// again, and those (not the newest) are what to drop. Until then a full cache
// refused every new block and kept the stale ones for good.
class BlockCache {
 public:
  static constexpr size_t kMinCached = size_t{32} << 10;
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{1} << 30;

  static BlockCache& Global() {
    static BlockCache* cache = new BlockCache;  // leaked: outlives every Storage
    return *cache;
  }
  static size_t Round(size_t bytes) {
    const size_t granule = bytes >= kMinCached ? std::bit_floor(bytes) / 16 : kAlignment;
    return (bytes + granule - 1) / granule * granule;
  }
  void* Take(size_t rounded) {
    if (!kPoolBlocks || rounded < kMinCached) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    // The block of this size cached last: the likeliest still in the CPU's caches.
    const auto [first, last] = by_size_.equal_range(rounded);
    if (first == last) return nullptr;
    const auto it = std::prev(last);
    auto age = by_age_.find(it->second);
    void* p = age->second.second;
    by_age_.erase(age);
    by_size_.erase(it);
    cached_bytes_ -= rounded;
    return p;
  }
  // Returns false when the block should go back to the system instead.
  bool Give(void* p, size_t rounded) {
    if (!kPoolBlocks || rounded < kMinCached || rounded > max_bytes_) return false;
    std::lock_guard<std::mutex> lock(mu_);
    while (cached_bytes_ + rounded > max_bytes_ && !by_age_.empty()) {
      auto oldest = by_age_.begin();
      const auto [size, block] = oldest->second;
      SystemFree(block, size);
      cached_bytes_ -= size;
      auto range = by_size_.equal_range(size);
      for (auto it = range.first; it != range.second; ++it) {
        if (it->second == oldest->first) {
          by_size_.erase(it);
          break;
        }
      }
      by_age_.erase(oldest);
    }
    const uint64_t seq = next_seq_++;
    by_size_.emplace(rounded, seq);
    by_age_.emplace(seq, std::pair<size_t, void*>(rounded, p));
    cached_bytes_ += rounded;
    return true;
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [seq, block] : by_age_) SystemFree(block.second, block.first);
    by_age_.clear();
    by_size_.clear();
    cached_bytes_ = 0;
  }

 private:
  // DUALCAST_ARRAY_CACHE_MAX: bytes with an optional K, M or G suffix; 0 caches nothing.
  static uint64_t MaxCachedBytes() {
    const char* text = std::getenv("DUALCAST_ARRAY_CACHE_MAX");
    if (text == nullptr || text[0] == '\0') return kDefaultMaxBytes;
    if (std::optional<uint64_t> bytes = jit::DiskCache::ParseSize(text)) return *bytes;
    jit::WarnEnvOnce(jit::EnvWarningText(
        "DUALCAST_ARRAY_CACHE_MAX", text,
        "is not a size (bytes with an optional K, M or G suffix; 0 to cache nothing)",
        "the default of 1G"));
    return kDefaultMaxBytes;
  }

  std::mutex mu_;
  const uint64_t max_bytes_ = MaxCachedBytes();
  std::multimap<size_t, uint64_t> by_size_;                 // rounded size -> when cached
  std::map<uint64_t, std::pair<size_t, void*>> by_age_;     // when cached -> (size, block)
  uint64_t next_seq_ = 0;
  size_t cached_bytes_ = 0;
};

// Per-thread free lists of tiny blocks (up to kMaxSmall bytes, by 64-byte
// class): small broadcasts and tape steps allocate a few such arrays each,
// and aligned_alloc costs several times malloc (it splits chunks, and the
// fragments it frees trigger consolidation). One ThreadFreeList per class
// (array_pool.h: bounded, a block freed on another thread joins that
// thread's list, released at thread exit).
template <size_t kClass>
struct SmallTag {};
void FreeSmall(void* p) { std::free(p); }  // they come from aligned_alloc
template <size_t kClass>
using SmallList = ThreadFreeList<SmallTag<kClass>, void*, &FreeSmall>;

class SmallBlocks {
 public:
  static constexpr size_t kMaxSmall = 256;
  static void* Take(size_t rounded) {
    return rounded <= kMaxSmall ? kTake[rounded / kAlignment - 1]() : nullptr;
  }
  static bool Give(void* p, size_t rounded) {
    return rounded <= kMaxSmall && kGive[rounded / kAlignment - 1](p);
  }

 private:
  static constexpr size_t kClasses = kMaxSmall / kAlignment;
  static constexpr auto kTake = []<size_t... k>(std::index_sequence<k...>) {
    return std::array<void* (*)(), kClasses>{&SmallList<k>::Take...};
  }(std::make_index_sequence<kClasses>());
  static constexpr auto kGive = []<size_t... k>(std::index_sequence<k...>) {
    return std::array<bool (*)(void*), kClasses>{&SmallList<k>::Give...};
  }(std::make_index_sequence<kClasses>());
};

}  // namespace

Storage::~Storage() {
  ForgetInPlaceWrites(this);
  if (aliasable.load(std::memory_order_acquire)) ForgetAliasable(this);
  if (owning && data != nullptr) BackendFor(device).Release(*this);
}

void CpuRelease(Storage& storage) noexcept {
  const size_t rounded = BlockCache::Round(storage.bytes);
  if (!SmallBlocks::Give(storage.data, rounded) && !BlockCache::Global().Give(storage.data, rounded)) {
    SystemFree(storage.data, rounded);
  }
}

void ReleaseCachedMemory() {
  BlockCache::Global().Clear();
#if defined(__GLIBC__)
  malloc_trim(0);  // and the free pages of the blocks below kMappedBlock, wherever in the heap
#endif
}

std::shared_ptr<Storage> Allocate(size_t bytes, Device device) {
  if (!device.is_cpu() && !device.available()) {  // the host always is: no string on the hot path
    throw Error(ErrorKind::kDevice, absl::StrCat("cannot allocate ", bytes, " bytes on ",
                                                 device.name(), ": ", device.unavailable_reason()));
  }
  return BackendFor(device).Allocate(bytes, device);
}

std::shared_ptr<Storage> CpuAllocate(size_t bytes) {
  auto storage = std::allocate_shared<Storage>(BlockAllocator<Storage>{});
  storage->bytes = bytes;
  storage->device = Device::cpu();
  if (bytes > 0) {
    const size_t rounded = BlockCache::Round(bytes);
    storage->data = SmallBlocks::Take(rounded);
    if (storage->data == nullptr) storage->data = BlockCache::Global().Take(rounded);
    if (storage->data == nullptr) storage->data = SystemAlloc(rounded);
    if (storage->data == nullptr) {
      BlockCache::Global().Clear();  // give cached blocks back and try once more
      storage->data = SystemAlloc(rounded);
    }
    if (storage->data == nullptr) {
      throw Error(ErrorKind::kMemory,
                  absl::StrFormat("out of memory: could not allocate %d bytes (%.1f MiB) on the "
                                  "CPU; free arrays you no longer need or use smaller sizes",
                                  bytes, bytes / 1048576.0));
    }
  }
  return storage;
}

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape) {
  return jit::ContiguousStrides(shape);
}

bool ArrayImpl::contiguous() const {
  // No elements, no memory read: contiguous under any strides. (Counting on
  // would not do: ContiguousStrides takes a size-0 dim as 1, so `expect`
  // turning 0 would call a fresh size-0 array strided, and reshape would copy
  // it forever.)
  for (int64_t s : shape) {
    if (s == 0) return true;
  }
  int64_t expect = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && strides[d] != expect) return false;
    expect *= shape[d];
  }
  return true;
}

namespace {
void CheckShape(std::span<const int64_t> shape, const char* what) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) {
      throw Error(ErrorKind::kShape,
                  absl::StrFormat("%s: size %d at dimension %d is negative (shape [%s])", what,
                                  shape[d], d, absl::StrJoin(shape, ", ")));
    }
  }
}
}  // namespace

std::shared_ptr<ArrayImpl> NewArray(DType dtype, std::vector<int64_t> shape, Device device) {
  return NewContiguousArray(dtype, shape, device);
}

std::shared_ptr<ArrayImpl> NewContiguousArray(DType dtype, std::span<const int64_t> shape, Device device) {
  CheckShape(shape, "new array");
  // The element count and byte size must not wrap: {2^40, 2^40} would
  // otherwise become a 0-byte "array" of 2^80 elements.
  const std::optional<int64_t> elements = jit::ElementCount(shape);
  if (!elements) {
    // Not a memory question: a size-0 shape lands here too (its strides would not fit).
    throw Error(ErrorKind::kShape,
                absl::StrFormat("new array: shape [%s] is too big: the product of its nonzero sizes "
                                "exceeds 2^63 - 1 (NumPy: 'array is too big'); use smaller sizes",
                                absl::StrJoin(shape, ", ")));
  }
  int64_t bytes = 0;
  if (!jit::CheckedMul(*elements, static_cast<int64_t>(SizeOf(dtype)), &bytes)) {
    throw Error(ErrorKind::kMemory,
                absl::StrFormat("out of memory: an array of shape [%s] would need more than "
                                "2^63 bytes; use smaller sizes",
                                absl::StrJoin(shape, ", ")));
  }
  auto impl = PooledArrayImpl();
  impl->dtype = dtype;
  impl->device = device;
  SetContiguousShape(*impl, shape);
  impl->storage = Allocate(static_cast<size_t>(impl->size()) * SizeOf(dtype), device);
  return impl;
}

}  // namespace detail

namespace {

using detail::ArrayImpl;

// xoshiro256** seeded by splitmix64: fixed here so a seed means the same
// numbers on every platform and standard library.
class Xoshiro {
 public:
  explicit Xoshiro(uint64_t seed) {
    for (uint64_t& s : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      s = z ^ (z >> 31);
    }
  }
  uint64_t Next() {
    uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return result;
  }
  // Uniform on [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t s_[4];
};

std::string ShapeText(const Shape& shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

// Creation on a device that cannot be used: kDevice naming the call the user
// made (the host-made array would otherwise fail in Array::to, a call they
// never wrote).
void RequireUsable(const Device& device, const char* what) {
  if (device.is_cpu()) return;
  const std::string why = device.unavailable_reason();
  if (!why.empty()) {
    throw Error(ErrorKind::kDevice,
                absl::StrCat(what, ": cannot create an array on ", device.name(), ": ", why));
  }
}

}  // namespace

template <ElementType T>
Array<T>::Array(std::shared_ptr<detail::ArrayImpl> impl) : impl_(std::move(impl)) {}

template <ElementType T>
const detail::ArrayImpl& Array<T>::checked() const {
  if (!impl_) {
    throw Error(ErrorKind::kInvalidArgument,
                "use of an empty Array handle: create it with Array::from/zeros/view first");
  }
  return *impl_;
}

template <ElementType T>
Array<T> Array<T>::from(const std::vector<T>& values, Shape shape, Device device) {
  RequireUsable(device, "Array::from");
  if (!device.is_cpu()) return from(values, std::move(shape), Device::cpu()).to(device);  // made on the host, one copy
  auto impl = detail::NewArray(detail::DTypeOf<T>(), shape, device);
  if (static_cast<int64_t>(values.size()) != impl->size()) {
    throw Error(ErrorKind::kShape,
                absl::StrFormat("Array::from: %d values given for shape %s, which holds %d",
                                values.size(), ShapeText(shape), impl->size()));
  }
  if (!values.empty()) std::memcpy(impl->data(), values.data(), values.size() * sizeof(T));
  return Array(std::move(impl));
}

template <ElementType T>
Array<T> Array<T>::scalar(T value, Device device) {
  RequireUsable(device, "Array::scalar");
  return from(std::vector<T>{value}, {}, device);
}

template <ElementType T>
Array<T> Array<T>::full(Shape shape, T value, Device device) {
  RequireUsable(device, "Array::full");
  // On a GPU a generated kernel fills it: no host buffer, no copy, no wait for
  // the device (zeros for unused inputs' gradients come here in every step).
  if (!device.is_cpu()) {
    return Array(detail::Filled(detail::DTypeOf<T>(), shape, static_cast<double>(value), device));
  }
  auto impl = detail::NewArray(detail::DTypeOf<T>(), std::move(shape), device);
  // Split over the CPU pool like a kernel launch: one thread writes about
  // 7 GB/s on the 2-core VM, short of the memory's bandwidth; zeros for an
  // unused input's gradient are filled here too. Small arrays stay inline.
  T* data = static_cast<T*>(impl->data());
  jit::ParallelFor(impl->size(), /*grain=*/int64_t{1} << 18, [&](int64_t begin, int64_t end) {
    std::fill(data + begin, data + end, value);
  });
  return Array(std::move(impl));
}

template <ElementType T>
Array<T> Array<T>::zeros(Shape shape, Device device) {
  RequireUsable(device, "Array::zeros");
  return full(std::move(shape), T(0), device);
}

template <ElementType T>
Array<T> Array<T>::ones(Shape shape, Device device) {
  RequireUsable(device, "Array::ones");
  return full(std::move(shape), T(1), device);
}

template <ElementType T>
Array<T> Array<T>::uniform(Shape shape, uint64_t seed, T lo, T hi, Device device) {
  // Every sample was lo when lo >= hi or a bound was not finite (the clamp below).
  if (!(std::isfinite(lo) && std::isfinite(hi) && lo < hi)) {
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrFormat("Array::uniform: the bounds lo = %g, hi = %g must be finite with "
                                "lo < hi (samples lie in [lo, hi))",
                                static_cast<double>(lo), static_cast<double>(hi)));
  }
  RequireUsable(device, "Array::uniform");
  if (!device.is_cpu()) return uniform(std::move(shape), seed, lo, hi, Device::cpu()).to(device);
  auto impl = detail::NewArray(detail::DTypeOf<T>(), std::move(shape), device);
  Xoshiro rng(seed);
  T* out = static_cast<T*>(impl->data());
  for (int64_t i = 0; i < impl->size(); ++i) {
    T u = static_cast<T>(lo + (hi - lo) * rng.Uniform());
    out[i] = u < hi ? u : lo;  // rounding to float can reach hi; keep [lo, hi)
  }
  return Array(std::move(impl));
}

template <ElementType T>
Array<T> Array<T>::normal(Shape shape, uint64_t seed, T mean, T stddev, Device device) {
  // As NumPy ("scale < 0"): a negative stddev would give mirrored samples, a NaN one NaNs.
  if (!(stddev >= 0)) {
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrFormat("Array::normal: stddev %g must be >= 0 (and not NaN)",
                                static_cast<double>(stddev)));
  }
  RequireUsable(device, "Array::normal");
  if (!device.is_cpu()) return normal(std::move(shape), seed, mean, stddev, Device::cpu()).to(device);
  auto impl = detail::NewArray(detail::DTypeOf<T>(), std::move(shape), device);
  Xoshiro rng(seed);
  T* out = static_cast<T*>(impl->data());
  for (int64_t i = 0; i < impl->size(); i += 2) {  // Box-Muller, two values per draw
    double u1 = 1.0 - rng.Uniform(), u2 = rng.Uniform();
    double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<T>(mean + stddev * r * std::cos(2 * M_PI * u2));
    if (i + 1 < impl->size()) out[i + 1] = static_cast<T>(mean + stddev * r * std::sin(2 * M_PI * u2));
  }
  return Array(std::move(impl));
}

template <ElementType T>
Array<T> Array<T>::arange(int64_t n, Device device) {
  RequireUsable(device, "Array::arange");
  if (!device.is_cpu()) return arange(n, Device::cpu()).to(device);
  auto impl = detail::NewArray(detail::DTypeOf<T>(), {n}, device);
  T* out = static_cast<T*>(impl->data());
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(i);
  return Array(std::move(impl));
}

namespace {
template <class T>
std::shared_ptr<ArrayImpl> MakeView(const T* data, Shape shape, Shape strides, bool read_only) {
  const char* what = read_only ? "Array::view(const T*)" : "Array::view(T*)";
  if (strides.empty()) strides = detail::ContiguousStrides(shape);
  if (strides.size() != shape.size()) {
    throw Error(ErrorKind::kShape, absl::StrFormat("%s: %d strides given for shape %s of rank %d",
                                                   what, strides.size(), ShapeText(shape),
                                                   shape.size()));
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0 || strides[d] < 0) {
      throw Error(ErrorKind::kShape,
                  absl::StrFormat("%s: shape %s with strides %s: sizes and strides must be >= 0",
                                  what, ShapeText(shape), ShapeText(strides)));
    }
  }
  // The element count, the offset of the last element (`extent`) and the
  // bytes from `data` to the end of that element must all fit: a (2,) view
  // with stride 2^61 reaches 2^64 + 8 bytes, past the end of any address space.
  const std::optional<int64_t> count = jit::ElementCount(shape);
  const int64_t n = count.value_or(0);
  int64_t extent = 0, bytes = 0;
  bool fits = count.has_value();
  for (size_t d = 0; fits && n > 0 && d < shape.size(); ++d) {
    int64_t reach = 0;
    fits = jit::CheckedMul(shape[d] - 1, strides[d], &reach) && jit::CheckedAdd(extent, reach, &extent);
  }
  if (!fits) {
    throw Error(ErrorKind::kShape,
                absl::StrFormat("%s: shape %s with strides %s addresses more than 2^63 "
                                "elements", what, ShapeText(shape), ShapeText(strides)));
  }
  if (n > 0 && (!jit::CheckedAdd(extent, 1, &bytes) ||
                !jit::CheckedMul(bytes, static_cast<int64_t>(sizeof(T)), &bytes) ||
                reinterpret_cast<uintptr_t>(data) > UINTPTR_MAX - static_cast<uintptr_t>(bytes))) {
    throw Error(ErrorKind::kShape,
                absl::StrFormat("%s: shape %s with strides %s reaches element %d from the pointer, "
                                "beyond the end of the address space (%d-byte elements)",
                                what, ShapeText(shape), ShapeText(strides), extent, sizeof(T)));
  }
  if (n > 0 && data == nullptr) {
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrFormat("%s: null pointer for a view of shape %s", what, ShapeText(shape)));
  }
  if (reinterpret_cast<uintptr_t>(data) % alignof(T) != 0) {
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrFormat("%s: pointer %p is not aligned to %d bytes as %s requires", what,
                                static_cast<const void*>(data), alignof(T),
                                sizeof(T) == 4 ? "float" : "double"));
  }
  auto impl = std::make_shared<ArrayImpl>();
  impl->dtype = detail::DTypeOf<T>();
  impl->device = Device::cpu();
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->storage = std::make_shared<detail::Storage>();
  impl->storage->data = const_cast<T*>(data);
  impl->storage->bytes = static_cast<size_t>(bytes);
  impl->storage->owning = false;
  // Another view of this memory may be made. Its arrays use only this view's
  // elements' grid: columns of one table do not alias (storage_aliases.h).
  detail::RegisterAliasable(*impl->storage, detail::ExtentOf(*impl).step, sizeof(T));
  detail::InheritWrittenValues(*impl);  // values partials() or a sweep wrote there stay untaped
  impl->read_only = read_only;
  return impl;
}
}  // namespace

template <ElementType T>
Array<T> Array<T>::view(T* data, Shape shape, Shape strides) {
  return Array(MakeView<T>(data, std::move(shape), std::move(strides), false));
}

template <ElementType T>
Array<T> Array<T>::view(const T* data, Shape shape, Shape strides) {
  return Array(MakeView<T>(data, std::move(shape), std::move(strides), true));
}

template <ElementType T>
const Shape& Array<T>::shape() const { return checked().shape; }
template <ElementType T>
const Shape& Array<T>::strides() const { return checked().strides; }
template <ElementType T>
int Array<T>::rank() const { return checked().rank(); }
template <ElementType T>
int64_t Array<T>::size() const { return checked().size(); }
template <ElementType T>
Device Array<T>::device() const { return checked().device; }
template <ElementType T>
bool Array<T>::is_view() const {
  checked();
  const detail::Storage* storage = detail::ReadPendingState(*impl_).storage;  // null while pending
  return storage != nullptr && !storage->owning;
}
template <ElementType T>
bool Array<T>::is_read_only() const { return checked().read_only; }
template <ElementType T>
bool Array<T>::is_pending() const {
  checked();
  return detail::ReadPendingState(*impl_).node != nullptr;  // another thread may be computing it
}

template <ElementType T>
const Array<T>& Array<T>::eval() const {
  checked();
  detail::Materialize(*impl_);
  return *this;
}

namespace {
// The values of a computed CPU array, for reads that keep the pointer to
// themselves (to_vector, item, at): unlike data(), nothing is registered.
template <class T>
const T* HostValues(const Array<T>& a, const char* what) {
  a.eval();
  const ArrayImpl& impl = *a.impl();
  if (!impl.device.is_cpu()) {
    throw Error(ErrorKind::kDevice,
                absl::StrCat(what, ": the array lives on ", impl.device.name(),
                             ", whose memory the host cannot address; copy it with "
                             ".to(Device::cpu()) first (to_vector, item, at and assign copy for you)"));
  }
  return static_cast<const T*>(impl.data());
}

// Element `off` (from the array's offset) of a computed device array, copied
// to the host alone.
template <class T>
T DeviceElement(const ArrayImpl& a, int64_t off) {
  std::shared_ptr<ArrayImpl> one = detail::ViewOf(a, {}, {});
  one->offset += off;
  std::shared_ptr<ArrayImpl> host = detail::BackendFor(a.device).Transfer(*one, Device::cpu());
  return *static_cast<const T*>(host->data());
}
}  // namespace

template <ElementType T>
const T* Array<T>::data() const { return DataFor("Array::data"); }

template <ElementType T>
const T* Array<T>::DataFor(const char* what) const {
  const T* p = HostValues(*this, what);
  // The caller may make a view of this memory: writes through either must
  // see the other (storage_aliases.h).
  detail::RegisterAliasable(*impl_->storage, sizeof(T), sizeof(T));
  return p;
}

template <ElementType T>
T* Array<T>::mutable_data() {
  const T* p = DataFor("Array::mutable_data");
  if (impl_->read_only) {
    throw Error(ErrorKind::kInvalidArgument,
                "Array::mutable_data: this is a read-only view of const memory");
  }
  // Pending results that read this memory keep the values it has now
  // (pending_readers.h): they are computed before the caller writes.
  detail::ComputeReadersBeforeWrite(*impl_);
  // Counted as a write: from now on the array is a leaf to a tape, and a
  // tape that kept this memory refuses to use it. Which elements the caller
  // writes is unknown, so an array computed from others stays marked as such
  // (a tape refuses a gradient through it rather than miss the elements left).
  detail::NotePointerWrite(*impl_);
  return const_cast<T*>(p);
}

namespace {
// A host vector of `n` elements, or Error(kMemory) with the size (not
// std::bad_alloc or std::length_error: every public function throws Error).
template <class T>
std::vector<T> HostVector(int64_t n, const char* what) {
  std::vector<T> out;
  int64_t bytes = 0;
  const bool counted = jit::CheckedMul(n, static_cast<int64_t>(sizeof(T)), &bytes);
  bool fits = counted && static_cast<uint64_t>(n) <= out.max_size();
  // A large block is asked for without throwing first: AddressSanitizer's
  // throwing operator new ends the process when it fails (asan_new_delete:
  // "TODO: throw std::bad_alloc instead of dying on OOM"), even under
  // allocator_may_return_null. Cheap next to filling the block (an mmap and
  // a munmap, no page touched).
  if (fits && bytes >= (int64_t{1} << 26)) {
    void* probe = ::operator new(static_cast<size_t>(bytes), std::nothrow);
    fits = probe != nullptr;
    ::operator delete(probe);
  }
  try {
    if (fits) out.resize(static_cast<size_t>(n));
  } catch (const std::bad_alloc&) {
    out = {};
  }
  if (out.size() != static_cast<size_t>(n)) {
    throw Error(ErrorKind::kMemory,
                absl::StrFormat("out of memory: %s could not allocate a std::vector of %d elements "
                                "(%s bytes) on the host; read a smaller part of the array (slice) "
                                "or free arrays you no longer need",
                                what, n, counted ? absl::StrCat(bytes) : "more than 2^63"));
  }
  return out;
}
}  // namespace

template <ElementType T>
std::vector<T> Array<T>::to_vector() const {
  if (!checked().device.is_cpu()) return to(Device::cpu()).to_vector();
  const T* base = HostValues(*this, "Array::to_vector");
  std::vector<T> out = HostVector<T>(impl_->size(), "Array::to_vector");
  if (impl_->contiguous()) {
    if (!out.empty()) std::memcpy(out.data(), base, out.size() * sizeof(T));
  } else {
    detail::ForEachElement(impl_->shape, impl_->strides,
                           [&](int64_t i, int64_t off) { out[static_cast<size_t>(i)] = base[off]; });
  }
  return out;
}

template <ElementType T>
T Array<T>::item() const {
  if (size() != 1) {
    throw Error(ErrorKind::kShape,
                absl::StrFormat("Array::item: the array has shape %s (%d elements), not one element",
                                ShapeText(shape()), size()));
  }
  return at(Shape(impl_->shape.size(), 0));  // the one element, on any device
}

template <ElementType T>
T Array<T>::at(const Shape& index) const {
  eval();
  if (index.size() != impl_->shape.size()) {
    throw Error(ErrorKind::kShape, absl::StrFormat("Array::at: index %s has rank %d, array is %s",
                                                   ShapeText(index), index.size(),
                                                   ShapeText(impl_->shape)));
  }
  int64_t off = 0;
  for (size_t d = 0; d < index.size(); ++d) {
    if (index[d] < 0 || index[d] >= impl_->shape[d]) {
      throw Error(ErrorKind::kShape,
                  absl::StrFormat("Array::at: index %d out of range at dimension %d of shape %s",
                                  index[d], d, ShapeText(impl_->shape)));
    }
    off += index[d] * impl_->strides[d];
  }
  if (!impl_->device.is_cpu()) return DeviceElement<T>(*impl_, off);
  return HostValues(*this, "Array::at")[off];
}

template <ElementType T>
Array<T> Array<T>::copy() const {
  eval();
  const ArrayImpl& self = *impl_;
  // Straight into the new array, on the array's device: no host vector in
  // between (which doubled the peak memory and could throw std::bad_alloc).
  std::shared_ptr<ArrayImpl> out;
  if (self.device.is_cpu() && self.contiguous()) {
    out = detail::NewArray(self.dtype, self.shape, self.device);
    // Split over the CPU pool as full() is: one thread copies well short of
    // the memory's bandwidth. (A size-0 array has no memory: nothing to copy.)
    if (self.size() > 0) {
      const char* from = static_cast<const char*>(self.data());
      char* to = static_cast<char*>(out->data());
      jit::ParallelFor(self.size(), /*grain=*/int64_t{1} << 18, [&](int64_t begin, int64_t end) {
        std::memcpy(to + begin * sizeof(T), from + begin * sizeof(T), (end - begin) * sizeof(T));
      });
    }
  } else {
    out = detail::CopyArray(self);  // a generated strided copy kernel
  }
  detail::RecordCopy(impl_, out);
  return Array(std::move(out));
}

template <ElementType T>
Array<T> Array<T>::to(Device device) const {
  if (checked().device == device) return *this;
  if (!device.available()) {
    throw Error(ErrorKind::kDevice, absl::StrCat("Array::to(", device.name(), "): ",
                                                 device.unavailable_reason()));
  }
  Array out;
  eval();
  // One copy, by the backend of the device that is not the host.
  out = Array(detail::BackendFor(device.is_cpu() ? impl_->device : device).Transfer(*impl_, device));
  detail::NoteOrigin("Array::to (a copy across devices, not recorded by the tape)", {impl_},
                     {out.impl_});
  return out;
}

template <ElementType T>
Array<T> Array<T>::reshape(Shape shape) const {
  const ArrayImpl& self = checked();
  int infer = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1 && infer < 0) {
      infer = static_cast<int>(d);
    } else if (shape[d] < 0) {
      throw Error(ErrorKind::kShape, absl::StrFormat("reshape: invalid target shape %s",
                                                     ShapeText(shape)));
    }
  }
  auto mismatch = [&](const std::string& why) {
    return Error(ErrorKind::kShape,
                 absl::StrFormat("reshape: cannot reshape an array of shape %s (%d elements) into "
                                 "shape %s%s", ShapeText(self.shape), self.size(), ShapeText(shape),
                                 why));
  };
  // Counted with overflow checks: {3, 6148914691236517206} has 2^64 + 2
  // elements, which a plain product wraps to 2.
  if (infer >= 0) {
    Shape others = shape;
    others.erase(others.begin() + infer);
    const std::optional<int64_t> known = jit::ElementCount(others);
    if (!known) throw mismatch(", whose other sizes multiply to more than 2^63 - 1");
    // As NumPy: with a 0 among the other sizes, every size fits the -1.
    if (*known == 0) throw mismatch("; the -1 cannot be inferred when another size is 0");
    if (self.size() % *known != 0) throw mismatch("");
    shape[infer] = self.size() / *known;
  }
  const std::optional<int64_t> n = jit::ElementCount(shape);
  if (!n) throw mismatch(", which has more than 2^63 - 1 elements");
  if (*n != self.size()) throw mismatch("");
  detail::Materialize(*impl_);
  if (!self.contiguous()) {
    Array contiguous;
    try {
      contiguous = copy();
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kMemory) throw;
      throw Error(ErrorKind::kMemory,
                  absl::StrFormat("reshape: an array of shape %s with strides %s is not contiguous, "
                                  "so reshape into %s copies it, and the copy failed: %s",
                                  ShapeText(self.shape), ShapeText(self.strides), ShapeText(shape),
                                  e.what()));
    }
    Array out = contiguous.reshape(std::move(shape));
    // The copy in between is held by nobody: link the result's Origin to
    // this array directly (on a tape the nodes hold the chain themselves).
    if (!detail::TapeActive()) detail::NoteOrigin("reshape", {impl_}, {out.impl_});
    return out;
  }
  auto impl = std::make_shared<ArrayImpl>(self);
  impl->grad_fn = nullptr;
  impl->strides = detail::ContiguousStrides(shape);
  impl->shape = std::move(shape);
  detail::RecordReshape(impl_, impl);
  return Array(std::move(impl));
}

template <ElementType T>
Array<T> Array<T>::transpose(std::vector<int> perm) const {
  const ArrayImpl& self = checked();
  const int r = self.rank();
  if (perm.empty()) {
    for (int d = r - 1; d >= 0; --d) perm.push_back(d);
  }
  // Negative axes count from the end, as in NumPy (and in sum, concat, argmax...).
  const std::vector<int> given = perm;
  for (int& p : perm) {
    if (p < -r || p >= r) {
      throw Error(ErrorKind::kShape,
                  absl::StrFormat("transpose: axis %d in [%s] is out of range for an array of "
                                  "shape %s (valid axes are %d..%d)",
                                  p, absl::StrJoin(given, ", "), ShapeText(self.shape), -r, r - 1));
    }
    if (p < 0) p += r;
  }
  std::vector<bool> seen(static_cast<size_t>(r), false);
  bool ok = static_cast<int>(perm.size()) == r;
  for (int p : perm) {
    if (!ok || seen[static_cast<size_t>(p)]) {
      ok = false;
      break;
    }
    seen[static_cast<size_t>(p)] = true;
  }
  if (!ok) {
    throw Error(ErrorKind::kShape, absl::StrFormat("transpose: [%s] is not a permutation of the %d "
                                                   "axes of an array of shape %s",
                                                   absl::StrJoin(given, ", "), r,
                                                   ShapeText(self.shape)));
  }
  detail::Materialize(*impl_);
  auto impl = std::make_shared<ArrayImpl>(self);
  impl->grad_fn = nullptr;
  for (int d = 0; d < r; ++d) {
    impl->shape[d] = self.shape[perm[d]];
    impl->strides[d] = self.strides[perm[d]];
  }
  detail::RecordTranspose(impl_, impl, perm);
  return Array(std::move(impl));
}

namespace {
// Both assign()s write every element of `a`: refused, before any write, for
// a view of const memory and for strides under which elements share memory.
void CheckAssignable(const ArrayImpl& a) {
  if (a.read_only) {
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrFormat("Array::assign: the array (shape %s) is a read-only view of const "
                                "memory; assign into a writable array or a view of non-const memory",
                                ShapeText(a.shape)));
  }
  if (detail::SelfOverlapping(a)) {
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrFormat("Array::assign: the array has shape %s and strides %s, under which "
                                "several elements share memory (only the last value would stay); "
                                "assign into a view with one element per address (nonzero strides "
                                "that do not interleave)",
                                ShapeText(a.shape), ShapeText(a.strides)));
  }
}
}  // namespace

template <ElementType T>
void Array<T>::assign(const std::vector<T>& values) {
  if (static_cast<int64_t>(values.size()) != size()) {
    throw Error(ErrorKind::kShape, absl::StrFormat("Array::assign: %d values for shape %s",
                                                   values.size(), ShapeText(shape())));
  }
  // Checked before mutable_data(), which already counts as the write.
  CheckAssignable(checked());
  // As mutable_data(), but every element gets a new value: the array holds
  // user values from now on (a leaf to a tape, computed from nothing). On a
  // device the values are moved there first, then copied in by a kernel.
  const bool host = impl_->device.is_cpu();
  const T* p = host ? DataFor("Array::assign") : (eval(), nullptr);
  const Array<T> values_there = host ? Array<T>() : Array<T>::from(values, impl_->shape, impl_->device);
  detail::ComputeReadersBeforeWrite(*impl_);
  detail::NoteInPlaceWrite(*impl_, /*whole=*/true);
  impl_->origin.reset();
  if (!host) {
    detail::CopyInto(*impl_, *values_there.impl());
    return;
  }
  T* base = const_cast<T*>(p);
  detail::ForEachElement(impl_->shape, impl_->strides,
                 [&](int64_t i, int64_t off) { base[off] = values[static_cast<size_t>(i)]; });
}

template <ElementType T>
void Array<T>::assign(const Array<T>& source) {
  checked();
  if (!source.valid()) {
    throw Error(ErrorKind::kInvalidArgument, "Array::assign: the source is an empty Array handle");
  }
  ArrayImpl& self = *impl_;
  const std::vector<int64_t>& from_shape = source.impl()->shape;
  if (!detail::BroadcastsTo(from_shape, self.shape)) {
    throw Error(ErrorKind::kShape,
                absl::StrFormat("Array::assign: a source of shape %s does not broadcast to this array's "
                                "shape %s (NumPy rules: aligned at the last dimension, each size equal "
                                "or 1); reshape or slice one of them",
                                ShapeText(from_shape), ShapeText(self.shape)));
  }
  if (source.impl()->device != self.device) {
    throw Error(ErrorKind::kDevice,
                absl::StrCat("Array::assign: the source is on ", source.impl()->device.name(),
                             " but this array is on ", self.device.name(),
                             "; move the source with .to(device) first"));
  }
  CheckAssignable(self);
  // Both computed first, as reads (a tape records them as usual); then the
  // pending arrays that read this memory keep the values of before.
  source.eval();
  eval();
  // A source over this memory (itself, a shifted view) is copied first, as
  // a recorded copy: the write then reads, and the tape credits, that
  // copy, whose variable the write leaves alone; the source itself would be
  // seen at its version after the write (the values it holds now).
  const Array<T> from = detail::MayOverlap(self, *source.impl()) ? source.copy() : source;
  detail::ComputeReadersBeforeWrite(self);
  detail::CopyInto(self, *detail::BroadcastView(*from.impl(), self.shape));
  // A new variable, computed from the source: recorded (on a tape) like a
  // copy, and noted on the memory so that other views of it are known to
  // hold computed values (in_place.h).
  detail::NoteInPlaceWrite(self, /*whole=*/true);
  detail::RecordAssign(from.impl(), impl_);
  detail::NoteInPlaceWriter(self, /*whole=*/true);
}

template <ElementType T>
std::string element_str(T value) {
  const double x = static_cast<double>(value);
  if (std::isnan(x)) return "nan";  // NumPy prints no sign on nan
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  const double magnitude = std::fabs(x);
  const bool whole = std::trunc(x) == x;
  if (whole && magnitude < 1e16) return absl::StrFormat("%.0f", x);
  // A non-integer keeps its integer digits and one decimal, so it never reads as a whole number.
  int digits = 8;
  if (!whole && magnitude >= 1) {
    digits = std::max(digits, static_cast<int>(std::floor(std::log10(magnitude))) + 2);
  }
  for (int p = 1; p <= digits; ++p) {
    const std::string text = absl::StrFormat("%.*g", p, x);
    T back{};
    std::from_chars(text.data(), text.data() + text.size(), back);  // in T: one rounding
    if (back == value) return text;
  }
  return absl::StrFormat("%#.*g", digits, x);  // the trailing zeros say it was rounded
}

namespace {
// Reads only the elements it prints, through the array's strides: an elided
// print of a huge array (or stride-0 view) copies nothing.
template <class T>
void PrintLevel(std::string& out, const T* base, const Shape& shape, const Shape& strides,
                size_t dim, int64_t offset, bool elide, int indent) {
  if (dim == shape.size()) {
    out += element_str(base[offset]);
    return;
  }
  out += "[";
  const int64_t n = shape[dim];
  for (int64_t i = 0; i < n; ++i) {
    if (elide && n > 6 && i == 3) {
      out += dim + 1 == shape.size() ? "..., " : "...,\n" + std::string(indent + 1, ' ');
      i = n - 3;
    }
    PrintLevel(out, base, shape, strides, dim + 1, offset + i * strides[dim], elide, indent + 1);
    if (i + 1 < n) out += dim + 1 == shape.size() ? ", " : ",\n" + std::string(indent + 1, ' ');
  }
  out += "]";
}
}  // namespace

template <ElementType T>
std::string Array<T>::str() const {
  const std::string suffix = absl::StrCat(
      ", dtype=", detail::DTypeName(checked().dtype),
      impl_->device.is_cpu() ? "" : absl::StrCat(", device=", impl_->device.name()), ")");
  if (impl_->size() == 0 && impl_->rank() > 1) {
    // As NumPy: "array([])" alone reads as shape (0,), and rows of "[]" for
    // shape (1e12, 0) never ended.
    return absl::StrCat("array([], shape=(", absl::StrJoin(impl_->shape, ", "), ")", suffix);
  }
  // A device array is printed from one host copy of it.
  const Array host = checked().device.is_cpu() ? *this : to(Device::cpu());
  const T* base = HostValues(host, "Array::str");
  std::string out = "array(";
  PrintLevel(out, base, host.impl_->shape, host.impl_->strides, 0, 0, impl_->size() > 1000, 6);
  return out + suffix;
}

template <ElementType T>
std::ostream& operator<<(std::ostream& os, const Array<T>& a) {
  return os << a.str();
}

template class Array<float>;
template class Array<double>;
template std::ostream& operator<<(std::ostream&, const Array<float>&);
template std::ostream& operator<<(std::ostream&, const Array<double>&);
template std::string element_str(float);
template std::string element_str(double);

}  // namespace dualcast
