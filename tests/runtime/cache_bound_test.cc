// The runtime over a bounded kernel cache: an evicted kernel is compiled again and gives the same results; IR caches count hits.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dualcast/array.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/kernel.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "jit/codegen/kernel_cache.h"
#include "jit/stats.h"

namespace dualcast {
namespace {

jit::CacheCounts Counts(jit::Cache c) { return jit::GetStats().caches[static_cast<int>(c)]; }

// Restores the global kernel cache's capacity however the test ends.
struct CapacityScope {
  size_t saved = jit::KernelCache::Global().capacity();
  explicit CapacityScope(size_t capacity) { jit::KernelCache::Global().set_capacity(capacity); }
  ~CapacityScope() { jit::KernelCache::Global().set_capacity(saved); }
};

TEST_CASE("a kernel evicted from a full kernel cache is compiled again and gives the same results") {
  const Kernel a = kernel("bound_a", [](auto x, auto y) { return x * y + 3; });
  const Kernel b = kernel("bound_b", [](auto x, auto y) { return x - y * y; });
  const auto x = Array<double>::from({1.5, -2, 0.25}, {3});
  const auto y = Array<double>::from({2, 0.5, -4}, {3});
  const std::vector<double> a_ref = {1.5 * 2 + 3, -2 * 0.5 + 3, 0.25 * -4 + 3};
  const std::vector<double> b_ref = {1.5 - 4, -2 - 0.25, 0.25 - 16};

  CapacityScope scope(1);
  const int64_t held_before = static_cast<int64_t>(jit::KernelCache::Global().size());  // 0 or 1
  jit::ResetStats();
  CHECK(broadcast(a, x, y).to_vector() == a_ref);
  CHECK(broadcast(b, x, y).to_vector() == b_ref);  // evicts a's kernel
  CHECK(jit::KernelCache::Global().size() == 1);
  CHECK(broadcast(a, x, y).to_vector() == a_ref);  // a again: a miss, compiled (or relinked) again
  const jit::CacheCounts k = Counts(jit::Cache::kKernel);
  CHECK(k.misses == 3);
  CHECK(k.hits == 0);
  CHECK(k.evictions == held_before + 2);  // each compile evicts the one kernel held
  CHECK(broadcast(a, x, y).to_vector() == a_ref);  // now a hit
  CHECK(Counts(jit::Cache::kKernel).hits == 1);
}

template <int... K>
std::vector<Kernel> ChurnKernels(std::integer_sequence<int, K...>) {
  return {kernel("bound_churn", [](auto x, auto s) { return x * s + K; })...};
}

// Eviction frees a CPU kernel's code once nobody holds it (cpu_backend.h).
// Threads that run different kernels through a cache of two keep evicting
// each other's: a kernel one thread is running, or has in its launch plan,
// must stay valid, and one asked for again must come back right.
TEST_CASE("threads running more kernels than the cache holds: results right while kernels unlink") {
  constexpr int kThreads = 4, kKernels = 6, kRounds = 40;
  // Kernels of one structure share their code whatever their names: each
  // adds its own constant, so these are six kernels.
  const std::vector<Kernel> kernels = ChurnKernels(std::make_integer_sequence<int, kKernels>());
  const auto x = Array<double>::from({1.5, -2, 0.25, 4, 8}, {5});
  CapacityScope scope(2);
  jit::ResetStats();
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        const int k = (t + r) % kKernels;
        const double scale = k + 2;  // exact products: the expected values are exact
        const auto s = Array<double>::from({scale}, {1});
        const std::vector<double> got = broadcast(kernels[static_cast<size_t>(k)], x, s).to_vector();
        const std::vector<double> xv = x.to_vector();
        for (size_t i = 0; i < xv.size(); ++i) {
          if (got[i] != xv[i] * scale + k) ++wrong[t];
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) CHECK(wrong[t] == 0);
  const jit::CacheCounts k = Counts(jit::Cache::kKernel);
  MESSAGE("kernel cache: " << k.hits << " hits, " << k.misses << " misses, " << k.evictions
                            << " evictions");
  CHECK(k.evictions > 0);
}

TEST_CASE("the compose and jvp caches count a repeated fused group as hits") {
  const Kernel f = kernel("bound_f", [](auto x, auto y) { return x * x * y; });
  const Kernel g2 = kernel("bound_g", [](auto u, auto x) { return u + x; });
  const auto x = Array<double>::from({1, 2}, {2});
  const auto y = Array<double>::from({3, -1}, {2});
  jit::ResetStats();
  for (int i = 0; i < 3; ++i) {
    // Cache mode: the sweep with stored partials uses the jvp cache (the
    // default would take the one-pass gradient, which has its own).
    Tape tape(PartialsMode::kCache);
    // loss = sum(x^2 y + x): one fused group of two nodes.
    auto loss = sum(broadcast(g2, broadcast(f, x, y), x));
    auto g = tape.gradient(loss, {x, y});
    CHECK(g[0].to_vector() == std::vector<double>{2 * 1 * 3 + 1, 2 * 2 * -1 + 1});
    CHECK(g[1].to_vector() == std::vector<double>{1, 4});
  }
  const jit::CacheCounts compose = Counts(jit::Cache::kCompose);
  const jit::CacheCounts jvp = Counts(jit::Cache::kJvp);
  CHECK(compose.hits + compose.misses == 3);
  CHECK(compose.hits >= 2);
  CHECK(jvp.hits + jvp.misses == 3);
  CHECK(jvp.hits >= 2);
}

// dc::kernel made again each step (in a loop, or in a function called per
// step) traces again, but the trace is the same Function as before, so the
// caches keyed on it hit: a taped step was 10x slower, every cache missing.
TEST_CASE("a kernel made again with the same lambda reuses the earlier trace; another name does not") {
  auto make = [](const char* name) { return kernel(name, [](auto x, auto y) { return x * x * y - y; }); };
  const auto x = Array<double>::from({1, 2}, {2});
  const auto y = Array<double>::from({3, -1}, {2});
  const Kernel first = make("again");
  const auto f1 = first.function(2, jit::Type::kF64);
  CHECK(make("again").function(2, jit::Type::kF64) == f1);
  CHECK(make("again").function(2, jit::Type::kF32) != f1);
  const auto other = make("again_renamed").function(2, jit::Type::kF64);
  CHECK(other != f1);
  CHECK(other->name == "again_renamed");  // errors name the kernel the user made
  jit::ResetStats();
  for (int i = 0; i < 3; ++i) {
    Tape tape(PartialsMode::kCache);
    auto loss = sum(broadcast(make("again"), x, y));
    auto g = tape.gradient(loss, {x, y});
    CHECK(g[0].to_vector() == std::vector<double>{2 * 1 * 3, 2 * 2 * -1});
    CHECK(g[1].to_vector() == std::vector<double>{1 * 1 - 1, 2 * 2 - 1});
  }
  const jit::CacheCounts jvp = Counts(jit::Cache::kJvp);
  CHECK(jvp.hits + jvp.misses == 3);
  CHECK(jvp.misses <= 1);
}

}  // namespace
}  // namespace dualcast
