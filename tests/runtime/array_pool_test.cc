// runtime/array_pool.h: a recycled array comes back blank, and no old reference can reach it.
//
// The pool reuses ArrayImpl objects and small blocks within a thread; a field
// left over from an array's earlier life (a pending node, a tape node, an
// origin, storage) would be a stale answer of the worst kind. The expected
// states are the default-constructed ArrayImpl's and the strides written out
// by hand.
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "dualcast/dualcast.hpp"
#include "runtime/array_pool.h"

namespace dualcast::detail {
namespace {

void CheckBlank(const ArrayImpl& a) {
  CHECK(a.shape.empty());
  CHECK(a.strides.empty());
  CHECK(a.offset == 0);
  CHECK(a.storage == nullptr);
  CHECK_FALSE(a.read_only);
  CHECK(a.pending == nullptr);
  CHECK(a.pending_output == 0);
  CHECK(a.grad_fn == nullptr);
  CHECK(a.grad_output == 0);
  CHECK(a.origin == nullptr);
  CHECK(a.dtype == DType::kF32);
  CHECK(a.device.is_cpu());
}

TEST_CASE("a recycled array comes back blank, its old weak references expired") {
  std::weak_ptr<ArrayImpl> old;
  const ArrayImpl* address = nullptr;
  {
    // An array in every state a step leaves it in: computed, on a tape, with an origin.
    Tape tape;
    const Kernel k = kernel("pool_mul", [](auto x, auto y) { return x * y; });
    auto x = Array<double>::full({3}, 2.0), y = Array<double>::full({3}, 5.0);
    Array<double> z = broadcast(k, x, y);
    Array<double> loss = sum(z);
    (void)tape.gradient(loss, {x, y});
    old = z.impl();
    address = z.impl().get();
    REQUIRE(z.impl()->storage != nullptr);
  }
  CHECK(old.expired());
  CHECK(old.lock() == nullptr);
  // Take arrays until the old object comes back (this thread's list, most recent first).
  std::vector<std::shared_ptr<ArrayImpl>> taken;
  bool found = false;
  for (int i = 0; i < 2 * static_cast<int>(kBlocksKept) && !found; ++i) {
    taken.push_back(PooledArrayImpl());
    if (taken.back().get() == address) found = true;
    CheckBlank(*taken.back());
  }
  CHECK(old.expired());  // a weak reference from its earlier life never locks the new one
  CHECK(old.lock() == nullptr);
  if (kPoolBlocks) CHECK(found);
}

TEST_CASE("SetContiguousShape: row-major strides, a size-0 dim counting as 1") {
  auto a = PooledArrayImpl();
  SetContiguousShape(*a, std::vector<int64_t>{2, 3, 4});
  CHECK(a->shape == std::vector<int64_t>{2, 3, 4});
  CHECK(a->strides == std::vector<int64_t>{12, 4, 1});
  SetContiguousShape(*a, std::vector<int64_t>{5, 0, 2});
  CHECK(a->strides == std::vector<int64_t>{2, 2, 1});
  SetContiguousShape(*a, std::vector<int64_t>{});
  CHECK(a->shape.empty());
  CHECK(a->strides.empty());
  CHECK(a->strides == ContiguousStrides(a->shape));
}

TEST_CASE("arrays made on one thread and dropped on another, both threads going on") {
  // Each thread keeps its own spares; an array dropped on the other thread joins
  // that thread's. Values must survive the hand-over and the reuse.
  const Kernel k = kernel("pool_add", [](auto x, auto y) { return x + y; });
  std::vector<Array<float>> made;
  for (int i = 0; i < 100; ++i) {
    made.push_back(broadcast(k, Array<float>::full({4}, float(i)), Array<float>::full({4}, 1.0f)));
    made.back().eval();
  }
  std::thread other([&] {
    for (int i = 0; i < 100; ++i) CHECK(made[static_cast<size_t>(i)].to_vector()[3] == float(i) + 1);
    made.clear();  // dropped here
    for (int i = 0; i < 100; ++i) {
      Array<float> r = broadcast(k, Array<float>::full({2}, float(i)), Array<float>::full({2}, 2.0f));
      CHECK(r.to_vector() == std::vector<float>{float(i) + 2, float(i) + 2});
    }
  });
  other.join();
  for (int i = 0; i < 100; ++i) {
    Array<float> r = broadcast(k, Array<float>::full({3}, float(i)), Array<float>::full({3}, 3.0f));
    CHECK(r.to_vector() == std::vector<float>(3, float(i) + 3));
  }
}

// runtime/array.cc's block cache: a step that drops and re-makes arrays of the
// same size gets its blocks back instead of fresh pages (each a page fault on
// first touch). 256 KiB is the size that glibc served from fresh pages on most
// steps before the cache went below 1 MiB.
TEST_CASE("a dropped 256 KiB array's block serves the next array of its size, not a larger one") {
  const float* first = nullptr;
  {
    auto a = Array<float>::full({256, 256}, 1.0f);
    first = a.data();
  }
  {
    // 4 bytes more rounds to a larger size class: the cached block is too small for it.
    auto larger = Array<float>::full({256 * 256 + 1}, 2.0f);
    CHECK(larger.data() != first);
    CHECK(larger.to_vector().back() == 2.0f);
  }
  auto b = Array<float>::full({256, 256}, 3.0f);
  if (kPoolBlocks) CHECK(b.data() == first);
  CHECK(b.to_vector()[256 * 256 - 1] == 3.0f);
}

}  // namespace
}  // namespace dualcast::detail
