// runtime/array.cc's BlockCache: freed blocks are reused newest first, and a full cache drops its oldest blocks.
//
// Blocks are told apart by address: a block the cache holds is not freed, so
// no other allocation can return its address. The cap comes from
// DUALCAST_ARRAY_CACHE_MAX; ctest runs this file once more with 256K
// (runtime_block_cache_cap), where the eviction order is checked.
#include <cstdlib>
#include <string>

#include "doctest/doctest.h"
#include "dualcast/dualcast.hpp"
#include "runtime/array_pool.h"

namespace dualcast {
namespace {

const void* Block(const Array<float>& a) { return a.data(); }

TEST_CASE("block cache: freed blocks come back newest first; a full cache drops its oldest") {
  if (!detail::kPoolBlocks) return;  // off under AddressSanitizer
  const char* cap = std::getenv("DUALCAST_ARRAY_CACHE_MAX");
  const bool small_cap = cap != nullptr && std::string(cap) == "256K";
  release_cached_memory();
  constexpr int64_t k64K = 16384;  // floats: 64 KiB, a size class of its own
  auto a = Array<float>::zeros({k64K}), b = Array<float>::zeros({k64K});
  auto c = Array<float>::zeros({k64K}), d = Array<float>::zeros({k64K});
  const void* pa = Block(a);
  const void* pb = Block(b);
  const void* pc = Block(c);
  const void* pd = Block(d);
  a = Array<float>(), b = Array<float>(), c = Array<float>(), d = Array<float>();  // cached: a, b, c, d
  {
    auto e = Array<float>::zeros({2 * k64K});  // another size class: not from the cache
    (void)Block(e);
  }  // freed: with a 256 KiB cap, a and b (the oldest) make room for it
  // The newest first (the likeliest still in the CPU's caches); with the
  // small cap, d and c are still there because the oldest went instead.
  auto x = Array<float>::zeros({k64K}), y = Array<float>::zeros({k64K});
  CHECK(Block(x) == pd);
  CHECK(Block(y) == pc);
  if (!small_cap) {  // with the small cap, a and b went back to the system: any address now
    auto v = Array<float>::zeros({k64K}), w = Array<float>::zeros({k64K});
    CHECK(Block(v) == pb);
    CHECK(Block(w) == pa);
  }
  x = Array<float>(), y = Array<float>();
  release_cached_memory();  // later allocations are fresh; arrays in use are untouched
  auto z = Array<float>::from({1, 2, 3}, {3});
  CHECK(z.to_vector() == std::vector<float>{1, 2, 3});
}

}  // namespace
}  // namespace dualcast
