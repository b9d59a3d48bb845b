// Tests of KernelSpec keys and the in-memory kernel cache: hits, misses, single-flight, failures.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "jit/codegen/broadcast_layout.h"
#include "jit/codegen/kernel_cache.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/error.h"
#include "jit/ir/ir.h"
#include "jit/stats.h"

namespace dualcast::jit {
namespace {

using Shapes = std::vector<std::vector<int64_t>>;

// f(x, y) = x * y + exp(x)
std::shared_ptr<const Function> MulAddExp(Type t = Type::kF32) {
  auto f = std::make_shared<Function>("mul_add_exp");
  Builder b(*f);
  ValueId x = b.Input(t), y = b.Input(t);
  ValueId p = b.Emit(Op::kMul, {x, y});
  b.Return({b.Emit(Op::kAdd, {p, b.Emit(Op::kExp, {x})})});
  return f;
}

KernelSpec SpecFor(const Shapes& shapes, Type t = Type::kF32) {
  BroadcastLayout l = MergeBroadcast(shapes, {}, "mul_add_exp").value();
  return KernelSpec::For(MulAddExp(t), t, Target::kCpu, l);
}

// A fake backend: counts calls and hands out distinct fake entry points.
struct FakeCompiler {
  std::atomic<int> calls{0};
  std::chrono::milliseconds delay{0};
  bool fail = false;

  absl::StatusOr<CompiledKernel> operator()() {
    int n = ++calls;
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    if (fail) return MakeStatus(ErrorKind::kCompile, "fake compiler failed");
    CompiledKernel k;
    k.entry = reinterpret_cast<void*>(static_cast<uintptr_t>(0x1000 + n));
    k.symbol = "kernel_" + std::to_string(n);
    return k;
  }
};

TEST_CASE("KernelSpec::For and Describe") {
  KernelSpec s = SpecFor({{5, 1}, {5, 5}});
  CHECK(s.rank == 2);
  CHECK(s.input_broadcast == std::vector<uint32_t>{0b10, 0b00});
  CHECK(s.write == std::vector<bool>{true});
  CHECK(s.inner_contiguous);
  const std::string d = s.Describe();
  CHECK(d.find("cpu f32 rank 2 bcast [01,00]") != std::string::npos);
  CHECK(d.find("mul_add_exp") != std::string::npos);
}

TEST_CASE("keys: equal for equal structure, different when any field changes") {
  KernelSpec a = SpecFor({{4, 1}, {4, 4}});
  KernelSpec b = SpecFor({{1000, 1}, {1000, 1000}});  // traced again, other sizes
  CHECK(a.Key() == b.Key());
  CHECK(SameStructure(a, b));

  std::vector<KernelSpec> variants(7, a);
  variants[0].function_hash ^= 1;
  variants[1].dtype = Type::kF64;
  variants[2].target = Target::kCuda;
  variants[3].rank = 3;
  variants[4].input_broadcast = {0b00, 0b10};
  variants[5].write = {false};
  variants[6].inner_contiguous = false;
  for (size_t i = 0; i < variants.size(); ++i) {
    CAPTURE(i);
    CHECK(variants[i].Key() != a.Key());
    CHECK_FALSE(SameStructure(variants[i], a));
    for (size_t j = 0; j < i; ++j) CHECK(variants[i].Key() != variants[j].Key());
  }
}

TEST_CASE("same spec twice compiles once; other sizes hit; other bits compile") {
  KernelCache cache;
  FakeCompiler compiler;
  ResetStats();
  KernelSpec s = SpecFor({{4, 1}, {4, 4}});
  auto k1 = cache.GetOrCompile(s, std::ref(compiler));
  REQUIRE(k1.ok());
  auto k2 = cache.GetOrCompile(s, std::ref(compiler));
  REQUIRE(k2.ok());
  CHECK(*k1 == *k2);
  CHECK(compiler.calls == 1);

  auto k3 = cache.GetOrCompile(SpecFor({{64, 1}, {64, 64}}), std::ref(compiler));
  REQUIRE(k3.ok());
  CHECK(*k3 == *k1);
  CHECK(compiler.calls == 1);

  auto k4 = cache.GetOrCompile(SpecFor({{1, 4}, {4, 4}}), std::ref(compiler));
  REQUIRE(k4.ok());
  CHECK(*k4 != *k1);
  CHECK(compiler.calls == 2);
  CHECK((*k4)->kernel.symbol == "kernel_2");
  CHECK(cache.size() == 2);
  CHECK(cache.Find(s) == *k1);

  Stats st = GetStats();
  CHECK(st.compiles == 2);
  CHECK(st.cache_hits == 2);
}

TEST_CASE("an evicted kernel the backend still has is a miss, not a compile") {
  // DUALCAST_KERNEL_CACHE_MAX=2 with three kernels in turn counted 3000
  // "compiles" in 20 ms: each re-request found the CPU kernel still linked.
  KernelCache cache(1);
  int calls = 0;
  auto backend = [&]() -> absl::StatusOr<CompiledKernel> {
    CompiledKernel k;
    k.entry = reinterpret_cast<void*>(uintptr_t{0x2000});
    k.symbol = "kept";
    k.already_built = ++calls > 1;  // built once, then found
    return k;
  };
  ResetStats();
  const KernelSpec a = SpecFor({{4, 1}, {4, 4}}), b = SpecFor({{1, 4}, {4, 4}});
  for (int round = 0; round < 3; ++round) {
    REQUIRE(cache.GetOrCompile(a, backend).ok());
    REQUIRE(cache.GetOrCompile(b, backend).ok());  // evicts a (capacity 1)
  }
  const Stats st = GetStats();
  CHECK(calls == 6);
  CHECK(st.caches[static_cast<int>(Cache::kKernel)].misses == 6);
  CHECK(st.compiles == 1);
}

TEST_CASE("a 64-bit key collision still gives each spec its own kernel") {
  KernelCache cache;
  FakeCompiler compiler;
  KernelSpec a = SpecFor({{4, 1}, {4, 4}});
  KernelSpec b = a;
  b.input_broadcast = {0b01, 0b00};
  const uint64_t same_key = 42;
  auto ka = cache.GetOrCompileWithKey(same_key, a, std::ref(compiler));
  auto kb = cache.GetOrCompileWithKey(same_key, b, std::ref(compiler));
  REQUIRE(ka.ok());
  REQUIRE(kb.ok());
  CHECK(*ka != *kb);
  CHECK(compiler.calls == 2);
  CHECK((*kb)->spec.input_broadcast == b.input_broadcast);
  auto again = cache.GetOrCompileWithKey(same_key, a, std::ref(compiler));
  REQUIRE(again.ok());
  CHECK(*again == *ka);
  CHECK(compiler.calls == 2);
}

TEST_CASE("8 threads asking for one new kernel: one compile, one entry for all") {
  KernelCache cache;
  FakeCompiler compiler;
  compiler.delay = std::chrono::milliseconds(50);
  KernelSpec s = SpecFor({{8, 1}, {8, 8}});
  std::vector<KernelCache::Ref> got(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto k = cache.GetOrCompile(s, std::ref(compiler));
      if (k.ok()) got[t] = *k;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(compiler.calls == 1);
  for (const KernelCache::Ref& k : got) {
    REQUIRE(k != nullptr);
    CHECK(k == got[0]);
    CHECK(k->entry_as<void*>() == reinterpret_cast<void*>(uintptr_t{0x1001}));
  }
}

TEST_CASE("a failed compile reaches every waiter and is retried later") {
  KernelCache cache;
  FakeCompiler compiler;
  compiler.delay = std::chrono::milliseconds(50);
  compiler.fail = true;
  KernelSpec s = SpecFor({{3}, {3}});
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      auto k = cache.GetOrCompile(s, std::ref(compiler));
      if (!k.ok() && k.status().message() == "fake compiler failed") ++failures;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 4);
  // Threads that arrived after the failure retried, so 1..4 compiles ran.
  const int after_failure = compiler.calls;
  CHECK(after_failure >= 1);
  CHECK(cache.size() == 0);
  CHECK(cache.Find(s) == nullptr);

  compiler.fail = false;
  compiler.delay = std::chrono::milliseconds(0);
  auto k = cache.GetOrCompile(s, std::ref(compiler));
  REQUIRE(k.ok());
  CHECK(compiler.calls == after_failure + 1);
  CHECK(cache.size() == 1);
}

TEST_CASE("all waiters share a single failing compile when they arrive during it") {
  KernelCache cache;
  FakeCompiler compiler;
  compiler.delay = std::chrono::milliseconds(200);
  compiler.fail = true;
  KernelSpec s = SpecFor({{2}, {2}});
  std::atomic<bool> started{false};
  std::thread first([&] {
    started = true;
    CHECK_FALSE(cache.GetOrCompile(s, std::ref(compiler)).ok());
  });
  while (!started) std::this_thread::yield();
  // Wait until the first thread is inside the compile (calls becomes 1).
  while (compiler.calls == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::vector<std::thread> waiters;
  std::atomic<int> failures{0};
  for (int t = 0; t < 3; ++t) {
    waiters.emplace_back([&] {
      if (!cache.GetOrCompile(s, std::ref(compiler)).ok()) ++failures;
    });
  }
  first.join();
  for (auto& t : waiters) t.join();
  CHECK(failures == 3);
  // Waiters that got in before the 200 ms compile ended did not compile;
  // any that arrived after it retried. Either way nothing was cached.
  CHECK(cache.size() == 0);
}

TEST_CASE("a compile that throws releases waiters with an error and rethrows") {
  KernelCache cache;
  KernelSpec s = SpecFor({{6}, {6}});
  auto throwing = []() -> absl::StatusOr<CompiledKernel> { throw std::runtime_error("boom"); };
  CHECK_THROWS_AS(cache.GetOrCompile(s, throwing), std::runtime_error);
  FakeCompiler compiler;
  CHECK(cache.GetOrCompile(s, std::ref(compiler)).ok());
  CHECK(compiler.calls == 1);
}

TEST_CASE("FormatStats is one line") {
  const std::string line = FormatStats();
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find("compiles") != std::string::npos);
}

}  // namespace
}  // namespace dualcast::jit
