// The JIT core against Dual: every suite kernel traced, jvp'ed, optimised and interpreted vs Dual<T, N>.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <set>

#include "jit/ir/interpret.h"
#include "jit/ir/verify.h"
#include "jit/passes/jvp.h"
#include "jit/passes/optimize.h"
#include "jit/trace/trace.h"
#include "kernels/kernels.h"

namespace dualcast::testing {
namespace {

using jit::Function;
using jit::Type;

bool CloseF64(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= 1e-12 * std::max(1.0, std::abs(want));
}

int64_t UlpDistance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  auto key = [](float v) {
    int32_t i = std::bit_cast<int32_t>(v);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
  };
  return std::abs(key(a) - key(b));
}

template <size_t N>
std::array<double, N> Sample(const std::vector<Domain>& domain, std::mt19937_64& rng) {
  std::array<double, N> x{};
  for (size_t i = 0; i < N; ++i) {
    std::uniform_real_distribution<double> u(domain[i].lo, domain[i].hi);
    x[i] = domain[i].binary ? std::round(u(rng)) : u(rng);
  }
  return x;
}

// Number of straight-line paths of a traced function (every block holds at
// most one If, at its end: a decision tree).
// Sequential Ifs in a block (paths that re-joined) multiply the paths.
size_t CountPaths(const Function& f, jit::BlockId b = 0) {
  size_t paths = 1;
  for (jit::ValueId v : f.blocks[b].body) {
    const jit::Inst& inst = f.inst(v);
    if (inst.op == jit::Op::kIf) paths *= CountPaths(f, inst.then_block) + CountPaths(f, inst.else_block);
  }
  return paths;
}

template <class K>
void CheckKernelF64() {
  constexpr size_t N = Arity<K>();
  const std::vector<Domain> domain = K::domain();
  REQUIRE(domain.size() == N);
  std::vector<Type> types(N, Type::kF64);
  Function f = jit::Trace(K::name, K::fn, types);
  REQUIRE(jit::Verify(f).ok());
  std::vector<int> wrt(N);
  std::iota(wrt.begin(), wrt.end(), 0);
  jit::JvpResult jvp = jit::Jvp(f, wrt);
  REQUIRE(jit::Verify(jvp.function).ok());
  Function optimized = jit::Optimize(jvp.function);
  REQUIRE(jit::Verify(optimized).ok());

  using D = Dual<double, N>;
  std::mt19937_64 rng(0x5eed + N);
  std::set<std::vector<jit::BlockId>> paths;
  for (int point = 0; point < 1000; ++point) {
    std::array<double, N> x = Sample<N>(domain, rng);
    std::array<D, N> xd;
    for (size_t i = 0; i < N; ++i) xd[i] = D::variable(x[i], static_cast<int>(i));
    auto want = OutputsOf(CallKernel<K>(xd));
    const size_t M = want.size();
    REQUIRE(f.num_outputs() == M);

    std::vector<jit::BlockId> taken;
    std::vector<double> values = jit::Interpret(f, x, &taken);
    paths.insert(taken);
    std::vector<double> got = jit::Interpret(jvp.function, x);
    std::vector<double> got_opt = jit::Interpret(optimized, x);
    REQUIRE(got.size() == M + M * N);
    for (size_t m = 0; m < M; ++m) {
      CAPTURE(m);
      CAPTURE(point);
      INFO("x = ", std::vector<double>(x.begin(), x.end()));
      CHECK(std::bit_cast<uint64_t>(values[m]) == std::bit_cast<uint64_t>(want[m].value()));
      CHECK(CloseF64(got[m], want[m].value()));
      for (size_t j = 0; j < N; ++j) {
        CAPTURE(j);
        CHECK(CloseF64(got[jit::PartialIndex(M, N, m, j)], want[m].partial(static_cast<int>(j))));
      }
    }
    for (size_t k = 0; k < got.size(); ++k) {
      // Optimisation is exact: bit for bit (NaN for NaN).
      CHECK((std::bit_cast<uint64_t>(got[k]) == std::bit_cast<uint64_t>(got_opt[k]) ||
             (std::isnan(got[k]) && std::isnan(got_opt[k]))));
    }
  }
  CHECK_MESSAGE(paths.size() == CountPaths(f), std::string(K::name), ": random points reached ",
                paths.size(), " of ", CountPaths(f), " paths");
}

template <class K>
void CheckKernelF32() {
  const std::string kernel = K::name;
  CAPTURE(kernel);
  constexpr size_t N = Arity<K>();
  const std::vector<Domain> domain = K::domain();
  std::vector<Type> types(N, Type::kF32);
  Function f = jit::Trace(K::name, K::fn, types);
  REQUIRE(jit::Verify(f).ok());
  std::vector<int> wrt(N);
  std::iota(wrt.begin(), wrt.end(), 0);
  Function g = jit::Optimize(jit::Jvp(f, wrt).function);

  using D = Dual<float, N>;
  std::mt19937_64 rng(0xf10a7 + N);
  for (int point = 0; point < 1000; ++point) {
    std::array<double, N> xd64 = Sample<N>(domain, rng);
    std::array<float, N> x;
    std::array<D, N> xd;
    for (size_t i = 0; i < N; ++i) {
      x[i] = static_cast<float>(xd64[i]);
      xd[i] = D::variable(x[i], static_cast<int>(i));
    }
    auto want = OutputsOf(CallKernel<K>(xd));
    // The jvp rules are Dual's formulas in the same order (dual_math.hpp's conventions
    // table; pow's f32 rule in f64 on both sides), so value and partials equal
    // Dual<float>'s bit for bit (0 ulp).
    const size_t M = want.size();
    std::vector<float> got = jit::Interpret(g, std::span<const float>(x));
    REQUIRE(got.size() == M + M * N);
    for (size_t m = 0; m < M; ++m) {
      CAPTURE(m);
      CAPTURE(point);
      CHECK(UlpDistance(got[m], want[m].value()) == 0);
      for (size_t j = 0; j < N; ++j) {
        CAPTURE(j);
        CHECK(UlpDistance(got[jit::PartialIndex(M, N, m, j)], want[m].partial(static_cast<int>(j))) ==
              0);
      }
    }
  }
}

TEST_CASE("every suite kernel: interpreter and jvp equal Dual<double, N> on every path") {
  std::apply([](auto... k) { (CheckKernelF64<decltype(k)>(), ...); }, AllKernels{});
}

TEST_CASE("every suite kernel in float: jvp + interpreter equal Dual<float, N> bit for bit") {
  std::apply([](auto... k) { (CheckKernelF32<decltype(k)>(), ...); }, AllKernels{});
}

TEST_CASE("the suite has at least 25 kernels") {
  CHECK(std::tuple_size_v<AllKernels> >= 25);
}

}  // namespace
}  // namespace dualcast::testing
