// CPU backend micro-benchmark: the HM-LSTM partials kernel vs a hand-written loop, compile and launch costs.
//
// Reports (never asserts) the figures the CPU-backend issue asks for:
//   1. the paper-variant kernel (4 partial arrays) at n = 2048 on all threads,
//      as a ratio to the hand-written fused loop, measured in this process;
//   2. cold compile of the HM-LSTM jvp kernel (LLJIT already up, and total);
//   3. cache-hit launch overhead for a 1-element array;
//   4. on-disk cache hit in a second process (this binary re-executed).
// Usage: dualcast-cpu-kernel-bench [--n 2048] [--reps 20]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/hmlstm/handwritten.h"
#include "bench/hmlstm/problem.h"
#include "jit/broadcast_layout.h"
#include "jit/cpu/cpu_backend.h"
#include "jit/cpu/launch.h"
#include "jit/cpu/thread_pool.h"
#include "jit/disk_cache.h"
#include "jit/jvp.h"
#include "jit/kernel_cache.h"
#include "jit/optimize.h"
#include "jit/trace.h"
#include <dualcast/dual.hpp>

namespace dualcast::bench {
namespace {

using Clock = std::chrono::steady_clock;
double Ms(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

constexpr auto kCell = [](auto z, auto zb, auto c, auto f, auto i, auto g) {
  using namespace dualcast::math;
  if (z == 1) return sigmoid(i) * tanh(g);
  if (zb == 0) return c;
  return sigmoid(f) * c + sigmoid(i) * tanh(g);
};

// The paper's kernel: partials wrt c, f, i, g; the value is not stored.
jit::KernelSpec PaperSpec(const std::vector<std::vector<int64_t>>& shapes) {
  const jit::Type f32[6] = {jit::Type::kF32, jit::Type::kF32, jit::Type::kF32,
                            jit::Type::kF32, jit::Type::kF32, jit::Type::kF32};
  jit::Function cell = jit::Trace("hmlstm_cell", kCell, f32);
  const int wrt[] = {2, 3, 4, 5};
  auto fn = std::make_shared<const jit::Function>(jit::Optimize(jit::Jvp(cell, wrt).function));
  std::vector<std::vector<int64_t>> strides;
  for (const auto& s : shapes) strides.push_back(jit::ContiguousStrides(s));
  jit::BroadcastLayout layout = jit::MergeBroadcast(shapes, strides, "hmlstm_cell").value();
  jit::KernelSpec spec = jit::KernelSpec::For(fn, jit::Type::kF32, jit::Target::kCpu, layout);
  spec.write[0] = false;
  return spec;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Compiles a trivial kernel: brings LLJIT up so later timings exclude it.
void WarmJit() {
    const jit::Type f32[1] = {jit::Type::kF32};
    auto tiny = std::make_shared<const jit::Function>(
        jit::Trace("warm", [](auto x) { return x + 1; }, f32));
    std::vector<std::vector<int64_t>> sh = {{4}}, st = {{1}};
    auto layout = jit::MergeBroadcast(sh, st, "warm").value();
    (void)jit::CompileCpuKernel(jit::KernelSpec::For(tiny, jit::Type::kF32, jit::Target::kCpu, layout),
                                nullptr);
}

int DiskHitChild(const std::string& dir, int64_t n) {
  WarmJit();  // process start-up of LLJIT is not part of a cache hit
  jit::DiskCache store(dir);
  jit::KernelSpec spec = PaperSpec({{n, 1}, {n, 1}, {n, n}, {n, n}, {n, n}, {n, n}});
  auto t0 = Clock::now();
  auto k = jit::CompileCpuKernel(spec, &store);
  double ms = Ms(t0);
  if (!k.ok()) {
    std::printf("disk hit: compile failed: %s\n", std::string(k.status().message()).c_str());
    return 1;
  }
  std::printf("  fresh process, %s: %.3f ms\n",
              k->from_object_store ? "on-disk cache hit (object linked, no compile)"
                                   : "cache miss (compiled and stored)",
              ms);
  return 0;
}

int Main(int argc, char** argv) {
  int64_t n = 2048;
  int reps = 20;
  for (int k = 1; k + 1 < argc; k += 2) {
    std::string a = argv[k];
    if (a == "--n") n = std::atol(argv[k + 1]);
    else if (a == "--reps") reps = std::atoi(argv[k + 1]);
    else if (a == "--disk-hit") return DiskHitChild(argv[k + 1], std::atol(argv[k + 2]));
  }
  const int threads = jit::ThreadPool::Global().num_threads();
  std::printf("CPU backend micro-benchmark, n = %ld, %d threads, %d reps\n", static_cast<long>(n),
              threads, reps);

  // 2. Compile latency: first any kernel (brings LLJIT up), then the cell.
  auto t_total = Clock::now();
  WarmJit();
  double jit_up_ms = Ms(t_total);

  const std::vector<std::vector<int64_t>> shapes = {{n, 1}, {n, 1}, {n, n}, {n, n}, {n, n}, {n, n}};
  auto t_trace = Clock::now();
  jit::KernelSpec spec = PaperSpec(shapes);
  double trace_ms = Ms(t_trace);
  auto t_compile = Clock::now();
  auto compiled = jit::CompileCpuKernel(spec, nullptr);
  double compile_ms = Ms(t_compile);
  if (!compiled.ok()) {
    std::printf("compile failed: %s\n", std::string(compiled.status().message()).c_str());
    return 1;
  }
  std::printf("cold compile of the HM-LSTM jvp kernel: %.2f ms (trace+jvp+optimize %.2f ms; "
              "first-ever kernel incl. LLJIT start %.2f ms)\n",
              compile_ms, trace_ms, jit_up_ms);

  // 1. The kernel vs the hand-written loop on the same data.
  Problem p = MakeProblem(n, Layout::kRows);
  Results hand;
  std::vector<float> d_cp(n * n), d_f(n * n), d_i(n * n), d_g(n * n);
  const void* inputs[6] = {p.z.data(), p.zb.data(), p.c_prev.data(), p.f.data(), p.i.data(), p.g.data()};
  jit::BroadcastLayout layout;
  {
    std::vector<std::vector<int64_t>> strides;
    for (const auto& s : shapes) strides.push_back(jit::ContiguousStrides(s));
    layout = jit::MergeBroadcast(shapes, strides, "hmlstm_cell").value();
  }
  const int rank = layout.rank();
  std::vector<int64_t> in_strides, out_strides;
  for (const auto& s : layout.in_strides) in_strides.insert(in_strides.end(), s.begin(), s.end());
  std::vector<int64_t> contiguous = jit::ContiguousStrides(layout.out_shape);
  for (int m = 0; m < 5; ++m) out_strides.insert(out_strides.end(), contiguous.begin(), contiguous.end());
  void* outputs[5] = {nullptr, d_cp.data(), d_f.data(), d_i.data(), d_g.data()};
  jit::KernelArgs args{layout.out_shape.data(), inputs, in_strides.data(), outputs,
                       out_strides.data(), 0, rank > 0 ? layout.out_shape[0] : 1};
  auto time = [&](auto&& body) {
    body();
    body();
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
      auto t0 = Clock::now();
      body();
      t.push_back(Ms(t0));
    }
    return Median(t);
  };
  double t_jit = time([&] { jit::LaunchCpu(compiled->entry, args, rank); });
  double t_hand = time([&] { HandwrittenPaper(p, hand); });
  float worst = 0;
  for (size_t e = 0; e < d_cp.size(); ++e) {
    worst = std::max({worst, std::abs(d_cp[e] - hand.d_cprev[e]), std::abs(d_f[e] - hand.d_f[e]),
                      std::abs(d_i[e] - hand.d_i[e]), std::abs(d_g[e] - hand.d_g[e])});
  }
  std::printf("HM-LSTM partials kernel, n = %ld: jit %.3f ms, hand-written %.3f ms, ratio %.2fx "
              "(max |diff| %.2g)\n",
              static_cast<long>(n), t_jit, t_hand, t_jit / t_hand, worst);

  // 3. Cache-hit launch overhead for one element.
  {
    std::vector<std::vector<int64_t>> one = {{1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
    jit::KernelSpec one_spec = PaperSpec(one);
    auto compile = [&]() -> absl::StatusOr<jit::CompiledKernel> {
      auto k = jit::CompileCpuKernel(one_spec, nullptr);
      if (!k.ok()) return k.status();
      jit::CompiledKernel ck;
      ck.entry = reinterpret_cast<void*>(k->entry);
      return ck;
    };
    float x[6] = {0, 1, 0.5f, 0.5f, 0.5f, 0.5f}, y[5];
    const void* in1[6] = {&x[0], &x[1], &x[2], &x[3], &x[4], &x[5]};
    void* out1[5] = {nullptr, &y[1], &y[2], &y[3], &y[4]};
    jit::KernelArgs a1{nullptr, in1, nullptr, out1, nullptr, 0, 1};
    auto& cache = jit::KernelCache::Global();
    (void)cache.GetOrCompile(one_spec, compile);
    const int iters = 200000;
    auto t0 = Clock::now();
    for (int k = 0; k < iters; ++k) {
      auto hit = cache.GetOrCompile(one_spec, compile);
      jit::LaunchCpu(hit.value()->template entry_as<jit::KernelEntry>(), a1, 0);
    }
    std::printf("cache-hit launch overhead, 1 element: %.3f us per call (lookup + launch)\n",
                Ms(t0) * 1e3 / iters);
  }

  // 4. On-disk hit in a second process.
  {
    std::string dir = std::filesystem::temp_directory_path() /
                      ("dualcast-bench-cache-" + std::to_string(getpid()));
    std::printf("on-disk cache across processes (%s):\n", dir.c_str());
    std::fflush(stdout);
    std::string cmd = std::string("'") + argv[0] + "' --disk-hit '" + dir + "' " + std::to_string(n);
    int rc = std::system(cmd.c_str());  // first process: compiles and stores
    if (rc == 0) rc = std::system(cmd.c_str());  // second process: must hit
    std::filesystem::remove_all(dir);
    if (rc != 0) std::printf("disk-hit child failed (%d)\n", rc);
  }
  return 0;
}

}  // namespace
}  // namespace dualcast::bench

int main(int argc, char** argv) { return dualcast::bench::Main(argc, argv); }
