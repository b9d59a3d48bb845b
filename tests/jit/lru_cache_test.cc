// Bounded caches: LruMap and the kernel cache evict the least recently used entry, count it, and keep in-use kernels alive.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "jit/codegen/broadcast_layout.h"
#include "jit/codegen/kernel_cache.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/codegen/lru_map.h"
#include "jit/error.h"
#include "jit/ir/ir.h"
#include "jit/stats.h"

namespace dualcast::jit {
namespace {

CacheCounts Counts(Cache c) { return GetStats().caches[static_cast<int>(c)]; }

TEST_CASE("LruMap: filled past capacity, the least recently used entries go, in order") {
  ResetStats();
  LruMap<int, std::string> map(Cache::kCompose, 3);
  map.Insert(1, "one");
  map.Insert(2, "two");
  map.Insert(3, "three");
  REQUIRE(map.Find(1) != nullptr);  // 1 is now the most recent: order 1, 3, 2
  map.Insert(4, "four");            // evicts 2
  CHECK(map.size() == 3);
  CHECK_FALSE(map.contains(2));
  CHECK(map.contains(1));
  CHECK(map.contains(3));
  map.Insert(5, "five");  // evicts 3 (1 was used after it)
  CHECK_FALSE(map.contains(3));
  CHECK(*map.Find(1) == "one");
  CHECK(*map.Find(5) == "five");
  CHECK(map.Find(2) == nullptr);
  const CacheCounts c = Counts(Cache::kCompose);
  CHECK(c.hits == 3);
  CHECK(c.misses == 1);
  CHECK(c.evictions == 2);

  map.set_capacity(1);  // keeps only the most recent (5)
  CHECK(map.size() == 1);
  CHECK(map.contains(5));
  CHECK(Counts(Cache::kCompose).evictions == 4);
}

std::shared_ptr<const Function> Scaled(int k) {
  auto f = std::make_shared<Function>("scaled_" + std::to_string(k));
  Builder b(*f);
  ValueId x = b.Input(Type::kF32);
  b.Return({b.Emit(Op::kMul, {x, b.Const(Type::kF32, static_cast<double>(k))})});
  return f;
}

KernelSpec SpecOf(int k) {
  const std::vector<std::vector<int64_t>> shapes = {{8}};
  BroadcastLayout l = MergeBroadcast(shapes, {}, "scaled").value();
  return KernelSpec::For(Scaled(k), Type::kF32, Target::kCpu, l);
}

// Fake compiles whose `owner` records when the "code" is freed.
struct OwnedCompiler {
  int calls = 0;
  std::shared_ptr<std::vector<int>> freed = std::make_shared<std::vector<int>>();
  absl::StatusOr<CompiledKernel> Compile(int k) {
    ++calls;
    CompiledKernel c;
    c.entry = reinterpret_cast<void*>(static_cast<uintptr_t>(0x100 + k));
    c.symbol = "scaled_" + std::to_string(k);
    auto freed_list = freed;
    c.owner = std::shared_ptr<void>(new int(k), [freed_list](void* p) {
      freed_list->push_back(*static_cast<int*>(p));
      delete static_cast<int*>(p);
    });
    return c;
  }
};

TEST_CASE("kernel cache: bounded, LRU eviction, an evicted kernel recompiles, a held one stays alive") {
  ResetStats();
  KernelCache cache(2);
  OwnedCompiler compiler;
  auto get = [&](int k) {
    auto r = cache.GetOrCompile(SpecOf(k), [&] { return compiler.Compile(k); });
    REQUIRE(r.ok());
    return *r;
  };
  KernelCache::Ref held = get(1);
  get(2);
  get(1);  // a hit: 1 is now more recent than 2
  CHECK(compiler.calls == 2);
  get(3);  // evicts 2, the least recently used
  CHECK(cache.size() == 2);
  CHECK(cache.Find(SpecOf(2)) == nullptr);
  CHECK(cache.Find(SpecOf(1)) != nullptr);
  CHECK(*compiler.freed == std::vector<int>{2});  // nobody held 2: freed at once

  get(4);  // evicts 1, but `held` still uses it
  CHECK(cache.Find(SpecOf(1)) == nullptr);
  CHECK(*compiler.freed == std::vector<int>{2});
  CHECK(held->entry_as<void*>() == reinterpret_cast<void*>(uintptr_t{0x101}));
  held.reset();
  CHECK(*compiler.freed == std::vector<int>{2, 1});

  KernelCache::Ref again = get(2);  // compiled again
  CHECK(compiler.calls == 5);
  CHECK(again->entry_as<void*>() == reinterpret_cast<void*>(uintptr_t{0x102}));
  CHECK(again->spec.function_hash == SpecOf(2).function_hash);

  const CacheCounts c = Counts(Cache::kKernel);
  CHECK(c.misses == 5);
  CHECK(c.hits == 1);
  CHECK(c.evictions == 3);
  CHECK(GetStats().cache_hits == 1);
  const std::string line = FormatStats();
  CHECK(line.find("kernel 1/5/3") != std::string::npos);

  cache.set_capacity(1);
  CHECK(cache.size() == 1);
  CHECK(cache.Find(SpecOf(2)) != nullptr);  // the most recent stays
}

TEST_CASE("kernel cache: a failed compile is not cached and never evicts a good kernel") {
  KernelCache cache(1);
  OwnedCompiler compiler;
  REQUIRE(cache.GetOrCompile(SpecOf(1), [&] { return compiler.Compile(1); }).ok());
  auto failed = cache.GetOrCompile(SpecOf(2), []() -> absl::StatusOr<CompiledKernel> {
    return MakeStatus(ErrorKind::kCompile, "no");
  });
  CHECK_FALSE(failed.ok());
  CHECK(cache.size() == 1);
  CHECK(cache.Find(SpecOf(1)) != nullptr);
}

}  // namespace
}  // namespace dualcast::jit
