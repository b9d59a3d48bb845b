// CPU backend micro-benchmark: the HM-LSTM partials kernel vs a hand-written loop, compile and launch costs.
//
// Reports (never asserts) the figures the CPU-backend issue asks for:
//   1. the paper-variant kernel (4 partial arrays) at n = 2048 on all threads,
//      as a ratio to the hand-written fused loop, measured in this process
//      (also rows at a cache-resident n = 256, where code quality rather than
//      memory bandwidth decides, and the columns layout);
//   2. cold compile of the HM-LSTM jvp kernel (LLJIT already up, and total),
//      in wall and thread CPU time, and the minimum over fresh recompiles of
//      the same module (IR build + optimiser + codegen, no link): on a shared,
//      loaded machine the CPU minimum is the figure to compare;
//   3. cache-hit launch overhead for a 1-element array: the cache lookup and
//      launch alone, the whole `broadcast(k, x, y).eval()`, a tape step
//      (broadcast + sum + gradient), and 2 threads launching independent
//      small broadcasts against 1 (throughput ratio; --only launch runs
//      just these rows);
//   4. on-disk cache hit in a second process (this binary re-executed);
//   5. code generation that scales (issue 17): k sequential data-dependent ifs
//      (IR size, compile ms, steady ms), the cost of an untaken 200-op side,
//      half the rows taking it vs every element computing both sides, a
//      long dependency chain interleaved vs one vector per step, and
//      compile time of straight-line kernels of 1k / 5k / 10k ops;
//   6. cold compile of the one-pass HM-LSTM gradient kernel (issue 16:
//      tape.gradient(sum(cbar .* c)) with no disk cache), and that a second
//      size reuses it (kernel compiles counted by jit::GetStats()).
// Timings are the median and the minimum of --reps runs.
// Usage: dualcast-cpu-kernel-bench [--n 2048] [--reps 20] [--only scaling|onepass|line|ifs|launch]
// (with --only line or ifs, --n is the one kernel's op or if count; --help for all)
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <latch>
#include <thread>
#include <tuple>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "bench/hmlstm/handwritten.h"
#include "bench/hmlstm/problem.h"
#include "jit/codegen/broadcast_layout.h"
#include "jit/codegen/disk_cache.h"
#include "jit/codegen/kernel_cache.h"
#include "jit/cpu/cpu_backend.h"
#include "jit/cpu/interleave.h"
#include "jit/cpu/launch.h"
#include "jit/cpu/thread_pool.h"
#include "jit/passes/jvp.h"
#include "jit/passes/optimize.h"
#include "jit/stats.h"
#include "jit/trace/trace.h"
#include <dualcast/dual.hpp>
#include <dualcast/dualcast.hpp>

namespace dualcast::bench {
namespace {

using Clock = std::chrono::steady_clock;
double Ms(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
// CPU time of the calling thread (compilation runs on the caller's thread).
double ThreadCpuMs() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}
// CPU time of every thread of the process: the work a parallel kernel does,
// which other engineers' processes on a shared machine do not inflate as they
// do wall time (the pool's workers sleep, never spin, while idle).
double ProcessCpuMs() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

constexpr auto kCell = [](auto z, auto zb, auto c, auto f, auto i, auto g) {
  using namespace dualcast::math;
  if (z == 1) return sigmoid(i) * tanh(g);
  if (zb == 0) return c;
  return sigmoid(f) * c + sigmoid(i) * tanh(g);
};

std::vector<std::vector<int64_t>> CellShapes(int64_t n, Layout layout) {
  const std::vector<int64_t> flags = layout == Layout::kRows ? std::vector<int64_t>{n, 1}
                                                             : std::vector<int64_t>{1, n};
  return {flags, flags, {n, n}, {n, n}, {n, n}, {n, n}};
}

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

struct Timing {
  double median = 0, min = 0;
};

Timing Summarise(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return Timing{v[v.size() / 2], v.front()};
}

// Compiles a trivial kernel: brings LLJIT up so later timings exclude it.
void WarmJit() {
  const jit::Type f32[1] = {jit::Type::kF32};
  auto tiny = std::make_shared<const jit::Function>(
      jit::Trace("warm", [](auto x) { return x + 1; }, f32));
  std::vector<std::vector<int64_t>> sh = {{4}}, st = {{1}};
  auto layout = jit::MergeBroadcast(sh, st, "warm").value();
  (void)jit::CompileCpuKernel(
      jit::KernelSpec::For(tiny, jit::Type::kF32, jit::Target::kCpu, layout), nullptr);
}

int DiskHitChild(const std::string& dir, int64_t n) {
  WarmJit();  // process start-up of LLJIT is not part of a cache hit
  jit::DiskCache store(dir);
  jit::KernelSpec spec = PaperSpec(CellShapes(n, Layout::kRows));
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

// Cold compile of the rows-layout kernel: the first compile (with link) and
// the minimum over `reps` fresh builds of the same object.
void ReportCompile(int64_t n, int reps) {
  auto t_total = Clock::now();
  WarmJit();
  const double jit_up_ms = Ms(t_total);
  for (Layout layout : {Layout::kRows, Layout::kColumns}) {
    auto t_trace = Clock::now();
    jit::KernelSpec spec = PaperSpec(CellShapes(n, layout));
    const double trace_ms = Ms(t_trace);
    auto t0 = Clock::now();
    const double c0 = ThreadCpuMs();
    auto compiled = jit::CompileCpuKernel(spec, nullptr);
    const double cpu_ms = ThreadCpuMs() - c0, wall_ms = Ms(t0);
    if (!compiled.ok()) {
      std::printf("compile failed: %s\n", std::string(compiled.status().message()).c_str());
      std::exit(1);
    }
    std::vector<double> wall, cpu;
    size_t object_bytes = 0;
    for (int r = 0; r < reps; ++r) {
      auto t1 = Clock::now();
      const double c1 = ThreadCpuMs();
      auto object = jit::CpuKernelObject(spec);
      cpu.push_back(ThreadCpuMs() - c1);
      wall.push_back(Ms(t1));
      if (object.ok()) object_bytes = object->size();
    }
    const Timing w = Summarise(wall), c = Summarise(cpu);
    std::printf("cold compile of the HM-LSTM jvp kernel (%s): first %.2f ms wall / %.2f ms CPU; "
                "%d rebuilds: min %.2f ms CPU (median %.2f), min %.2f ms wall; object %zu bytes\n",
                LayoutName(layout), wall_ms, cpu_ms, reps, c.min, c.median, w.min, object_bytes);
    if (layout == Layout::kRows) {
      std::printf("  (trace+jvp+optimize %.2f ms; first-ever kernel incl. LLJIT start %.2f ms)\n",
                  trace_ms, jit_up_ms);
    }
  }
}

// The kernel vs the hand-written loop on the same data.
void ReportKernel(int64_t n, Layout layout, int reps) {
  const std::vector<std::vector<int64_t>> shapes = CellShapes(n, layout);
  auto compiled = jit::CompileCpuKernel(PaperSpec(shapes), nullptr);
  if (!compiled.ok()) {
    std::printf("compile failed: %s\n", std::string(compiled.status().message()).c_str());
    std::exit(1);
  }
  Problem p = MakeProblem(n, layout);
  Results hand;
  std::vector<float> d_cp(n * n), d_f(n * n), d_i(n * n), d_g(n * n);
  const void* inputs[6] = {p.z.data(), p.zb.data(), p.c_prev.data(), p.f.data(), p.i.data(), p.g.data()};
  std::vector<std::vector<int64_t>> strides;
  for (const auto& s : shapes) strides.push_back(jit::ContiguousStrides(s));
  jit::BroadcastLayout layout_merged = jit::MergeBroadcast(shapes, strides, "hmlstm_cell").value();
  const int rank = layout_merged.rank();
  std::vector<int64_t> in_strides, out_strides;
  for (const auto& s : layout_merged.in_strides) in_strides.insert(in_strides.end(), s.begin(), s.end());
  std::vector<int64_t> contiguous = jit::ContiguousStrides(layout_merged.out_shape);
  for (int m = 0; m < 5; ++m) out_strides.insert(out_strides.end(), contiguous.begin(), contiguous.end());
  void* outputs[5] = {nullptr, d_cp.data(), d_f.data(), d_i.data(), d_g.data()};
  jit::KernelArgs args{layout_merged.out_shape.data(), inputs, in_strides.data(), outputs,
                       out_strides.data(), 0, rank > 0 ? layout_merged.out_shape[0] : 1};
  // Small arrays repeat the call so that one sample is long enough to time.
  const int inner = static_cast<int>(std::max<int64_t>(1, (1 << 22) / (n * n)));
  // CPU time as the mean over all samples: the process clock adds a thread
  // running on another core only at its next tick or switch, so a single
  // sample of a ms-long call often misses the worker's share (the minimum of
  // such samples was about the wall time, as if one thread had run).
  auto time = [&](auto&& body, double& cpu_mean) {
    body();
    body();
    std::vector<double> t;
    const double c0 = ProcessCpuMs();
    for (int r = 0; r < reps; ++r) {
      auto t0 = Clock::now();
      for (int k = 0; k < inner; ++k) body();
      t.push_back(Ms(t0) / inner);
    }
    cpu_mean = (ProcessCpuMs() - c0) / (reps * inner);
    return Summarise(t);
  };
  double c_jit = 0, c_hand = 0, c_same = 0;
  Results same_math;
  const Timing t_jit = time([&] { jit::LaunchCpu(compiled->entry, args, rank); }, c_jit);
  const Timing t_hand = time([&] { HandwrittenPaper(p, hand); }, c_hand);
  const Timing t_same = time([&] { HandwrittenPaper(p, same_math, HandMath::kDualcast); }, c_same);
  float worst = 0;
  for (size_t e = 0; e < d_cp.size(); ++e) {
    worst = std::max({worst, std::abs(d_cp[e] - hand.d_cprev[e]), std::abs(d_f[e] - hand.d_f[e]),
                      std::abs(d_i[e] - hand.d_i[e]), std::abs(d_g[e] - hand.d_g[e])});
  }
  std::printf("HM-LSTM partials kernel, %s, n = %ld: jit %.3f ms (min %.3f), hand-written %.3f ms "
              "(min %.3f), ratio %.2fx (of minima %.2fx); CPU time of all threads, mean: "
              "jit %.3f ms, hand %.3f ms, ratio %.2fx; max |diff| %.2g\n",
              LayoutName(layout), static_cast<long>(n), t_jit.median, t_jit.min, t_hand.median,
              t_hand.min, t_jit.median / t_hand.median, t_jit.min / t_hand.min, c_jit,
              c_hand, c_jit / c_hand, worst);
  std::printf("  the hand loop with dualcast's exp/sigmoid/tanh: %.3f ms (min %.3f); jit / it %.2fx "
              "(code generation alone)\n",
              t_same.median, t_same.min, t_jit.median / t_same.median);
}

// --- 3. The runtime's launch path on one element ---------------------------

// Microseconds per call of `body`, wall and this thread's CPU time (which
// other processes on a shared, loaded machine do not inflate), each the
// minimum over `reps` samples of `iters` calls.
struct PerCall {
  double wall_us = 1e300, cpu_us = 1e300;
};
template <class Body>
PerCall UsPerCall(int reps, int iters, Body&& body) {
  for (int k = 0; k < iters / 10 + 1; ++k) body();  // warm: compile, caches, allocator
  PerCall best;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    const double c0 = ThreadCpuMs();
    for (int k = 0; k < iters; ++k) body();
    best.cpu_us = std::min(best.cpu_us, (ThreadCpuMs() - c0) * 1e3 / iters);
    best.wall_us = std::min(best.wall_us, Ms(t0) * 1e3 / iters);
  }
  return best;
}

// Broadcasts per second with `threads` threads, each on its own arrays, over
// about `seconds`; `own_kernel`: each thread makes its own handle of the same
// kernel (its own traced function, the same compiled code) instead of
// sharing `k`. `cpu_us` receives the process CPU time per broadcast.
template <class Lambda>
double Throughput(double* cpu_us, const dualcast::Kernel& shared, Lambda lambda, bool own_kernel, int threads,
                  double seconds) {
  std::atomic<bool> stop{false};
  std::vector<int64_t> done(static_cast<size_t>(threads), 0);
  std::latch start(threads + 1);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const dualcast::Kernel k = own_kernel ? dualcast::kernel("bench_axpy", lambda) : shared;
      auto x = dualcast::Array<float>::full({1}, 0.5f), y = dualcast::Array<float>::full({1}, 2.0f);
      dualcast::broadcast(k, x, y).eval();
      start.arrive_and_wait();
      int64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 100; ++i) dualcast::broadcast(k, x, y).eval();
        n += 100;
      }
      done[static_cast<size_t>(t)] = n;
    });
  }
  start.arrive_and_wait();
  auto t0 = Clock::now();
  const double c0 = ProcessCpuMs();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& th : pool) th.join();
  const double s = Ms(t0) / 1e3;
  int64_t total = 0;
  for (int64_t n : done) total += n;
  *cpu_us = (ProcessCpuMs() - c0) * 1e3 / static_cast<double>(total);
  return static_cast<double>(total) / s;
}

// A simulation's time loop under one Tape: per step a periodic stencil
// (two slices joined by concat each way) and one broadcast, 64 elements, so
// the runtime's bookkeeping is what is timed. Recording must cost the same
// per step however long the tape already is (it was quadratic: every launch
// copied the ancestry of everything the tape kept alive).
// The stencil's step: a logistic source with a branch on the data, and diffusion.
dualcast::Kernel StencilKernel(const char* name) {
  return dualcast::kernel(name, [](auto v, auto l, auto r, auto k) {
    auto src = v * (1 - v);
    if (v > 0.5) src = src * 0.5;
    return v + 0.1 * (k * (l - 2 * v + r) + src);
  });
}

// `steps` explicit steps of `step` on a periodic 1-D grid: per step two
// concats of slices (the neighbours) and one broadcast.
dualcast::Array<double> StencilSteps(const dualcast::Kernel& step, dualcast::Array<double> u,
                                     const dualcast::Array<double>& kappa, int steps) {
  namespace dc = dualcast;
  const int64_t n = u.shape()[0];
  for (int s = 0; s < steps; ++s) {
    const dc::Array<double> left = dc::concat({dc::slice(u, {{n - 1, n}}), dc::slice(u, {{0, n - 1}})});
    const dc::Array<double> right = dc::concat({dc::slice(u, {{1, n}}), dc::slice(u, {{0, 1}})});
    u = dc::broadcast(step, u, left, right, kappa);
  }
  return u;
}

void ReportLongTape(int reps) {
  namespace dc = dualcast;
  using A = dc::Array<double>;
  const dc::Kernel step = StencilKernel("bench_stencil");
  const A u0 = A::uniform({64}, 3, 0.2, 0.8), kappa = A::scalar(0.3);
  auto run = [&](int steps, bool taped) {
    std::optional<dc::Tape> tape;
    if (taped) tape.emplace();
    const A u = StencilSteps(step, u0, kappa, steps);
    const A loss = dc::sum(u * u);
    if (taped) (void)tape->gradient(loss, {u0, kappa});
    else (void)loss.item();
  };
  double per_step[2][2];  // [taped][short, long]
  const int lengths[2] = {100, 1000};
  for (int t = 0; t < 2; ++t) {
    for (int l = 0; l < 2; ++l) {
      const int steps = lengths[l];
      per_step[t][l] = UsPerCall(std::max(1, reps / 4), 1, [&] { run(steps, t == 1); }).wall_us / steps;
    }
  }
  std::printf("a 64-element stencil loop (2 concats of slices + 1 broadcast per step): untaped %.2f / "
              "%.2f us per step at %d / %d steps; under a Tape with the gradient %.2f / %.2f us per "
              "step: %.2fx per step for a 10x longer tape (target <= 1.3: linear), %.2fx untaped\n",
              per_step[0][0], per_step[0][1], lengths[0], lengths[1], per_step[1][0], per_step[1][1],
              per_step[1][1] / per_step[1][0], per_step[1][1] / per_step[0][1]);
}

// What kAuto chooses (runtime/auto_partials.h) against both explicit modes,
// one taped run with its gradient each, on the stencil as it is and with a
// tanh in its step: kAuto should match the faster explicit mode (the cheap
// one recomputes; the tanh one recomputes on a 512-bit host and is cached on
// a 256-bit one, where recomputing it was measured 1.35x slower:
// runtime/auto_partials.h).
void ReportAutoPartials(int reps) {
  namespace dc = dualcast;
  using A = dc::Array<double>;
  const dc::Kernel cheap = StencilKernel("bench_auto_stencil");
  const dc::Kernel costly = dc::kernel("bench_auto_tanh", [](auto v, auto l, auto r, auto k) {
    return v + 0.1 * tanh(k * (l - 2 * v + r));
  });
  constexpr int64_t n = 100000;
  constexpr int steps = 50;
  const A u0 = A::uniform({n}, 5, 0.2, 0.8), kappa = A::scalar(0.3);
  auto run = [&](const dc::Kernel& k, dc::PartialsMode mode) {
    dc::Tape tape(mode);
    const A u = StencilSteps(k, u0, kappa, steps);
    (void)tape.gradient(dc::sum(u * u), {u0, kappa});
  };
  for (const dc::Kernel* k : {&cheap, &costly}) {
    // Interleaved rounds, the best of each mode: the machine's drift hits all three alike.
    double ms[3] = {1e30, 1e30, 1e30};
    const dc::PartialsMode modes[3] = {dc::PartialsMode::kCache, dc::PartialsMode::kRecompute,
                                       dc::PartialsMode::kAuto};
    for (int m = 0; m < 3; ++m) run(*k, modes[m]);  // warm: compile
    for (int round = 0; round < std::max(2, reps / 4); ++round) {
      for (int m = 0; m < 3; ++m) {
        const auto t0 = Clock::now();
        run(*k, modes[m]);
        ms[m] = std::min(ms[m], Ms(t0));
      }
    }
    std::printf("taped %s stencil, n = %lld, %d steps, with the gradient: kCache %.1f ms, kRecompute %.1f "
                "ms, kAuto %.1f ms: kAuto / the faster explicit mode %.2fx (target <= 1.1)\n",
                k == &cheap ? "cheap" : "tanh", static_cast<long long>(n), steps, ms[0], ms[1], ms[2],
                ms[2] / std::min(ms[0], ms[1]));
  }
}

// `rows`: "eval", "tape" or "threads" for one row (to profile it), else all.
void ReportRuntimeLaunch(int reps, const std::string& rows = "") {
  namespace dc = dualcast;
  const auto axpy = [](auto x, auto y) { return x * y + x; };
  const dc::Kernel k = dc::kernel("bench_axpy", axpy);
  auto x = dc::Array<float>::full({1}, 0.5f), y = dc::Array<float>::full({1}, 2.0f);
  const bool all = rows != "eval" && rows != "tape" && rows != "threads";
  if (all || rows == "eval") {
    const PerCall eval = UsPerCall(reps, 20000, [&] { dc::broadcast(k, x, y).eval(); });
    std::printf("cache-hit broadcast(k, x, y).eval(), 1 element: %.3f us per call, %.3f us "
                "thread CPU (target <= 1)\n",
                eval.wall_us, eval.cpu_us);
  }
  if (all || rows == "tape") {
    const PerCall tape = UsPerCall(reps, 5000, [&] {
      dc::Tape t;
      auto loss = dc::sum(dc::broadcast(k, x, y));
      auto g = t.gradient(loss, {x, y});
      (void)g;
    });
    std::printf("tape step (broadcast + sum + gradient wrt x, y), 1 element: %.3f us per step, "
                "%.3f us thread CPU (target <= 3)\n",
                tape.wall_us, tape.cpu_us);
  }
  if (all || rows == "tape") ReportLongTape(reps);
  if (all || rows == "tape") ReportAutoPartials(reps);
  if (!all && rows != "threads") return;
  // One window each way is at the mercy of the neighbours on a shared VM
  // (single 0.5 s windows gave 1.2x-2.5x run to run, and one thread's CPU
  // time per broadcast moved between 0.35 and 0.63 us from run to run):
  // nine rounds of 0.1 s, one thread then two, and the best of each, as the
  // per-call rows above take their minimum (neighbours only ever slow a
  // round down).
  constexpr int kRounds = 9;
  auto best = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
  for (bool own : {false, true}) {
    std::vector<double> one, two, cpu1, cpu2;
    for (int r = 0; r < kRounds; ++r) {
      double c = 0;
      one.push_back(Throughput(&c, k, axpy, own, 1, 0.1));
      cpu1.push_back(c);
      two.push_back(Throughput(&c, k, axpy, own, 2, 0.1));
      cpu2.push_back(c);
    }
    const double m1 = best(one), m2 = best(two);
    std::printf("independent 1-element broadcasts (%s), best of %d interleaved rounds: 1 thread "
                "%.3g/s, 2 threads %.3g/s: %.2fx (target >= 1.6x; %u hardware threads); CPU per "
                "broadcast %.3f us with 1 thread, %.3f us with 2\n",
                own ? "a kernel handle per thread" : "one shared kernel handle", kRounds, m1, m2,
                m2 / m1, std::thread::hardware_concurrency(), Summarise(cpu1).min,
                Summarise(cpu2).min);
  }
  std::fflush(stdout);
}

// --- 5. Code generation that scales ---------------------------------------

// A compiled kernel over full (n, n) f32 arrays, except inputs listed in
// `row_inputs`, which are (n, 1) (one value per row, broadcast along it).
struct BenchKernel {
  std::shared_ptr<const jit::Function> fn;
  std::vector<std::vector<int64_t>> shapes;
  jit::BroadcastLayout layout;
  jit::CompiledCpuKernel compiled;
  double compile_ms = 0, compile_cpu_ms = 0;
};

BenchKernel BuildKernel(std::shared_ptr<const jit::Function> fn, int64_t n,
                        const std::vector<int>& row_inputs) {
  BenchKernel k;
  k.fn = std::move(fn);
  for (size_t i = 0; i < k.fn->num_inputs(); ++i) {
    const bool row = std::find(row_inputs.begin(), row_inputs.end(), int(i)) != row_inputs.end();
    k.shapes.push_back(row ? std::vector<int64_t>{n, 1} : std::vector<int64_t>{n, n});
  }
  std::vector<std::vector<int64_t>> strides;
  for (const auto& sh : k.shapes) strides.push_back(jit::ContiguousStrides(sh));
  k.layout = jit::MergeBroadcast(k.shapes, strides, k.fn->name).value();
  jit::KernelSpec spec = jit::KernelSpec::For(k.fn, jit::Type::kF32, jit::Target::kCpu, k.layout);
  auto t0 = Clock::now();
  const double c0 = ThreadCpuMs();
  auto compiled = jit::CompileCpuKernel(spec, nullptr);
  k.compile_cpu_ms = ThreadCpuMs() - c0;
  k.compile_ms = Ms(t0);
  if (!compiled.ok()) {
    std::printf("compile failed: %s\n", std::string(compiled.status().message()).c_str());
    std::exit(1);
  }
  k.compiled = *compiled;
  return k;
}

// Minimum wall ms of one launch over `inputs` (one vector per input, sized as its shape).
double SteadyMs(const BenchKernel& k, const std::vector<std::vector<float>>& inputs, int reps) {
  const int rank = k.layout.rank();
  std::vector<const void*> in_ptrs;
  for (const auto& v : inputs) in_ptrs.push_back(v.data());
  std::vector<int64_t> in_strides, out_strides;
  for (const auto& st : k.layout.in_strides) in_strides.insert(in_strides.end(), st.begin(), st.end());
  const std::vector<int64_t> contiguous = jit::ContiguousStrides(k.layout.out_shape);
  std::vector<std::vector<float>> outs(k.fn->num_outputs(),
                                       std::vector<float>(k.layout.num_elements));
  std::vector<void*> out_ptrs;
  for (auto& o : outs) {
    out_ptrs.push_back(o.data());
    out_strides.insert(out_strides.end(), contiguous.begin(), contiguous.end());
  }
  jit::KernelArgs args{k.layout.out_shape.data(), in_ptrs.data(), in_strides.data(),
                       out_ptrs.data(), out_strides.data(), 0, rank > 0 ? k.layout.out_shape[0] : 1};
  // Each sample times back-to-back launches filling about 2 ms: a single
  // launch of a 20 us kernel is mostly the worker's wake-up, and the minimum
  // of 20 such samples moved 5x between runs (k = 12 ifs: 0.032 to 0.170 ms).
  auto t_first = Clock::now();
  jit::LaunchCpu(k.compiled.entry, args, rank);
  const int batch = static_cast<int>(std::clamp(2.0 / std::max(Ms(t_first), 1e-3), 1.0, 1000.0));
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    for (int b = 0; b < batch; ++b) jit::LaunchCpu(k.compiled.entry, args, rank);
    t.push_back(Ms(t0) / batch);
  }
  return Summarise(t).min;
}

std::vector<float> Uniform(size_t size, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(size);
  for (float& x : v) x = dist(rng);
  return v;
}

// k sequential independent `if (x > t_i) a = a * y; else a = a + y;`, its
// partials wrt x and y (the table: 256 x 256 f32, data in [-1, 1], so
// lanes disagree on every branch).
void ReportSequentialIfs(int reps, std::vector<int> ks = {6, 8, 10, 12}) {
  const int64_t n = 256;
  std::printf("k sequential ifs (%ldx%ld f32, partials wrt x and y, element-divergent data):\n",
              static_cast<long>(n), static_cast<long>(n));
  std::printf("  %3s %9s %11s %9s\n", "k", "IR insts", "compile ms", "steady ms");
  for (int k : ks) {
    auto kernel = [k](auto x, auto y) {
      auto a = x;
      for (int i = 0; i < k; ++i) {
        const float t = -0.9f + 1.8f * static_cast<float>(i) / static_cast<float>(k);
        if (x > t) a = a * y;
        else a = a + y;
      }
      return a;
    };
    const jit::Type f32[2] = {jit::Type::kF32, jit::Type::kF32};
    const std::string name = "seq_ifs_" + std::to_string(k);
    auto t_trace = Clock::now();
    jit::Function f = jit::Trace(name, kernel, f32);
    const int wrt[] = {0, 1};
    auto fn = std::make_shared<const jit::Function>(jit::Optimize(jit::Jvp(f, wrt).function));
    const double trace_ms = Ms(t_trace);
    BenchKernel bk = BuildKernel(fn, n, {});
    const double steady = SteadyMs(bk, {Uniform(n * n, -1, 1, 1), Uniform(n * n, -1, 1, 2)}, reps);
    std::printf("  %3d %9zu %11.1f %9.3f   (trace+jvp+optimize %.1f ms; compile CPU %.1f ms)\n",
                k, fn->insts.size(), bk.compile_ms, steady, trace_ms, bk.compile_cpu_ms);
    std::fflush(stdout);
  }
}

// `if (z > 0) { 200 ops on x } else { x * 2 }` with z one value per row,
// against the same kernel without the heavy side, and against one that
// computes both sides for every element (a select).
void ReportUntakenSide(int reps) {
  const int64_t n = 1024;
  const jit::Type f32[2] = {jit::Type::kF32, jit::Type::kF32};
  auto heavy = [](auto x) {
    auto a = x;
    for (int i = 0; i < 100; ++i) a = a * 0.999f + 0.001f;  // 200 ops
    return a;
  };
  auto with_side = std::make_shared<const jit::Function>(jit::Optimize(jit::Trace(
      "untaken_side", [&](auto z, auto x) {
        if (z > 0) return heavy(x);
        return x * 2;
      },
      f32)));
  auto without_side = std::make_shared<const jit::Function>(
      jit::Optimize(jit::Trace("no_side", [](auto z, auto x) { return x * 2 + z * 0; }, f32)));
  auto both_sides = std::make_shared<const jit::Function>(jit::Optimize(jit::Trace(
      "both_sides", [&](auto z, auto x) { return select(z > 0, heavy(x), x * 2); }, f32)));
  BenchKernel k_with = BuildKernel(with_side, n, {0});
  BenchKernel k_without = BuildKernel(without_side, n, {0});
  BenchKernel k_both = BuildKernel(both_sides, n, {0});
  std::vector<float> x = Uniform(n * n, -1, 1, 3);
  std::vector<float> none(n, -1.0f), half(n);
  for (int64_t r = 0; r < n; ++r) half[r] = r % 2 == 0 ? 1.0f : -1.0f;
  // Five interleaved rounds, the minimum of each kernel over all of them:
  // the ratios compare kernels a few percent apart, and the VM drifts by more
  // between one kernel's samples and the next's.
  double t_untaken = 1e300, t_without = 1e300, t_half = 1e300, t_both = 1e300;
  const int per_round = std::max(1, reps / 5);
  for (int round = 0; round < 5; ++round) {
    t_untaken = std::min(t_untaken, SteadyMs(k_with, {none, x}, per_round));
    t_without = std::min(t_without, SteadyMs(k_without, {none, x}, per_round));
    t_half = std::min(t_half, SteadyMs(k_with, {half, x}, per_round));
    t_both = std::min(t_both, SteadyMs(k_both, {half, x}, per_round));
  }
  std::printf("untaken 200-op side (%ldx%ld f32, z per row): with the side, no row takes it "
              "%.3f ms; without the side %.3f ms; ratio %.2fx (target <= 1.1x)\n",
              static_cast<long>(n), static_cast<long>(n), t_untaken, t_without,
              t_untaken / t_without);
  std::printf("half the rows take the 200-op side: %.3f ms; every element computes both "
              "(select) %.3f ms; ratio %.2fx (target <= 0.6x); %d / %d host vectors per step\n",
              t_half, t_both, t_half / t_both, jit::cpu::InterleaveFactor(*with_side),
              jit::cpu::InterleaveFactor(*both_sides));
}

// A kernel that is one long dependency chain (interleave.h): its steady time
// as generated (several host vectors per step) against the same IR forced to
// one host vector per step (TraceOptions::vector_width), interleaved rounds.
void ReportDependencyChain(int reps) {
  const int64_t n = 1024;
  const jit::Type f32[2] = {jit::Type::kF32, jit::Type::kF32};
  auto chain = [](auto x, auto y) {
    auto a = x;
    for (int i = 0; i < 250; ++i) a = a * y + 0.001f;  // 500 dependent ops
    return a;
  };
  auto fn = std::make_shared<const jit::Function>(jit::Optimize(jit::Trace("chain_500", chain, f32)));
  jit::Function narrow = *fn;
  narrow.hints.vector_width = jit::cpu::HostLanes(jit::Type::kF32);
  BenchKernel k_auto = BuildKernel(fn, n, {});
  BenchKernel k_one = BuildKernel(std::make_shared<const jit::Function>(std::move(narrow)), n, {});
  const std::vector<std::vector<float>> in = {Uniform(n * n, -1, 1, 5), Uniform(n * n, 0.5f, 1, 6)};
  double t_auto = 1e300, t_one = 1e300;
  const int per_round = std::max(1, reps / 5);
  for (int round = 0; round < 5; ++round) {
    t_auto = std::min(t_auto, SteadyMs(k_auto, in, per_round));
    t_one = std::min(t_one, SteadyMs(k_one, in, per_round));
  }
  std::printf("a 500-op dependency chain (%ldx%ld f32): %d host vectors per step %.3f ms (compile "
              "%.1f ms), one per step %.3f ms (compile %.1f ms); ratio %.2fx\n",
              static_cast<long>(n), static_cast<long>(n), jit::cpu::InterleaveFactor(*fn), t_auto,
              k_auto.compile_ms, t_one, k_one.compile_ms, t_auto / t_one);

  // Its one-pass gradient through the public API, y one value per row: a
  // kernel with row sums (dy), interleaved with host-wide accumulators.
  namespace dc = dualcast;
  const auto x = dc::Array<float>::uniform({n, n}, 7, -1, 1);
  const auto y = dc::Array<float>::uniform({n, 1}, 8, 0.5, 1);
  dc::jit::TraceOptions one_vector;
  one_vector.vector_width = jit::cpu::HostLanes(jit::Type::kF32);
  const dc::Kernel k_default = dc::kernel("bench_chain", chain);
  const dc::Kernel k_narrow = dc::kernel("bench_chain", chain, one_vector);
  auto gradient_ms = [&](const dc::Kernel& k) {
    auto t0 = Clock::now();
    dc::Tape tape;
    const std::vector<dc::Array<float>> g = tape.gradient(dc::sum(dc::broadcast(k, x, y)), {x, y});
    (void)g[1].to_vector();
    return Ms(t0);
  };
  double g_auto = 1e300, g_one = 1e300;
  for (int round = 0; round < 5; ++round) {
    for (int r = 0; r < per_round; ++r) {
      g_auto = std::min(g_auto, gradient_ms(k_default));
      g_one = std::min(g_one, gradient_ms(k_narrow));
    }
  }
  std::printf("  its one-pass gradient wrt x and y (y per row: row sums): %.3f ms interleaved, %.3f ms "
              "one vector per step; ratio %.2fx\n", g_auto, g_one, g_auto / g_one);
}

// Straight-line kernels of about `ops` ops: compile time (the target:
// 10,000 ops <= 500 ms, 10k/5k <= 2.3x).
void ReportStraightLine(std::vector<int> sizes = {1000, 5000, 10000}) {
  const jit::Type f32[2] = {jit::Type::kF32, jit::Type::kF32};
  // Each row: the compile of one kernel of about `ops` ops, made by `make`, over `n` x `n`.
  auto rows = [&](const char* title, const char* prefix, int64_t n, auto make) {
    std::printf("%s:\n", title);
    double ms_5k = 0;
    for (int ops : sizes) {
      auto fn = std::make_shared<const jit::Function>(
          jit::Optimize(jit::Trace(prefix + std::to_string(ops), make(ops), f32)));
      BenchKernel bk = BuildKernel(fn, n, {});
      std::printf("  %5d ops (%zu IR insts, %d host vector(s) per step): compile %.1f ms wall, %.1f ms CPU",
                  ops, fn->insts.size(), jit::cpu::InterleaveFactor(*fn), bk.compile_ms,
                  bk.compile_cpu_ms);
      if (ops == 5000) ms_5k = bk.compile_cpu_ms;
      if (ops == 10000 && ms_5k > 0) std::printf("; 10k/5k %.2fx (CPU)", bk.compile_cpu_ms / ms_5k);
      std::printf("\n");
      std::fflush(stdout);
    }
  };
  rows("straight-line kernels (2 inputs, 256x256 f32)", "line_", 256, [](int ops) {
    return [ops](auto x, auto y) {
      auto a = x;
      for (int i = 0; i < ops / 2; ++i) a = (i % 3 == 0 ? a * y : a * x) + y;
      return a;
    };
  });
  // A chain through a literal on one element (rank 0, every value uniform): the
  // shape on which InstCombine's time grew with the square of the length
  // (10k ops 0.35 s, 20k 1.1 s) until kernels this large skipped it.
  rows("literal chains (a = a * 1.0000001 + y, one element)", "literal_", 1, [](int ops) {
    return [ops](auto x, auto y) {
      auto a = x;
      for (int i = 0; i < ops / 2; ++i) a = a * 1.0000001 + y;
      return a;
    };
  });
}

// 6. The one-pass gradient of sum(cbar .* cell.(z, zb, c, f, i, g)) through
// the tape at size n, then at a second size: the first call's kernel compile
// time (from the JIT's counters, so tracing and the launch are excluded) and
// the number of compiles the second size needs (target 0).
void ReportOnePassGradient(int64_t n) {
  namespace dc = dualcast;
  const dc::Kernel cell = dc::kernel("hmlstm_cell", kCell);
  auto run = [&](int64_t size) {
    Problem p = MakeProblem(size, Layout::kRows);
    const dc::Shape nn = {size, size};
    auto view = [](const std::vector<float>& v, const dc::Shape& s) {
      return dc::Array<float>::view(v.data(), s);
    };
    std::vector<dc::Array<float>> in = {view(p.z, p.flag_shape()), view(p.zb, p.flag_shape()),
                                        view(p.c_prev, nn), view(p.f, nn), view(p.i, nn),
                                        view(p.g, nn)};
    const jit::Stats before = jit::GetStats();
    auto t0 = Clock::now();
    dc::Tape tape;
    dc::Array<float> c = dc::broadcast(cell, in[0], in[1], in[2], in[3], in[4], in[5]);
    std::vector<dc::Array<float>> grads = tape.gradient(dc::sum(c * view(p.cbar, nn)), in);
    (void)grads[5].to_vector();
    const double wall = Ms(t0);
    const jit::Stats after = jit::GetStats();
    return std::tuple{wall, after.compiles - before.compiles, after.compile_ms - before.compile_ms};
  };
  const auto [wall1, compiles1, compile_ms1] = run(n);
  const auto [wall2, compiles2, compile_ms2] = run(n / 2 + 1);
  std::printf("one-pass HM-LSTM gradient (rows, n = %ld): first call %.2f ms wall, %ld kernel "
              "compile(s) %.2f ms (target <= 30 ms); n = %ld: %.2f ms wall, %ld compile(s) "
              "(target 0)\n",
              static_cast<long>(n), wall1, static_cast<long>(compiles1), compile_ms1,
              static_cast<long>(n / 2 + 1), wall2, static_cast<long>(compiles2));
  (void)compile_ms2;
  std::fflush(stdout);
}

constexpr char kUsage[] =
    "usage: dualcast-cpu-kernel-bench [--n N] [--reps N] [--only ROWS]\n"
    "  --n N        problem size, 1..100000 (default 2048; with --only line or ifs: the one\n"
    "               kernel's op or if count)\n"
    "  --reps N     timed runs per row, 1..100000 (default 20)\n"
    "  --only ROWS  run only these rows: scaling, onepass, line, ifs, launch (eval, tape or\n"
    "               threads: one launch row); default: every row (about a minute)\n";

constexpr const char* kOnlyRows[] = {"scaling", "onepass", "line", "ifs",
                                     "launch",  "eval",    "tape", "threads"};

[[noreturn]] void Bad(const std::string& why) {
  std::fprintf(stderr, "dualcast-cpu-kernel-bench: %s\n(run dualcast-cpu-kernel-bench --help for all options)\n",
               why.c_str());
  std::exit(2);
}

int64_t WholeNumber(const std::string& option, const std::string& text, int64_t lo, int64_t hi) {
  int64_t v;
  if (!absl::SimpleAtoi(text, &v) || v < lo || v > hi) {
    Bad(option + " '" + text + "': must be a whole number in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return v;
}

int Main(int argc, char** argv) {
  // Every compile row measures a cold compile: kernels the runtime builds
  // (the one-pass row) must not come from the user's on-disk cache, which a
  // run before this one filled (it reported a 1 ms "compile" that way). The
  // disk-hit rows use a store of their own.
  setenv("DUALCAST_CACHE_DIR", "off", /*overwrite=*/1);
  int64_t n = 2048;
  bool n_given = false;
  int reps = 20;
  std::string only;
  // Strict, like dualcast-hmlstm: a typo must not cost a whole minute-long run.
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    auto value = [&]() -> std::string {
      if (k + 1 >= argc) Bad(a + " needs a value");
      return argv[++k];
    };
    if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return 0;
    } else if (a == "--n") {
      n = WholeNumber(a, value(), 1, 100000);
      n_given = true;
    } else if (a == "--reps") {
      reps = static_cast<int>(WholeNumber(a, value(), 1, 100000));
    } else if (a == "--only") {
      only = value();
      if (std::find(std::begin(kOnlyRows), std::end(kOnlyRows), only) == std::end(kOnlyRows)) {
        Bad("unknown --only '" + only + "' (valid: scaling, onepass, line, ifs, launch, eval, tape, threads)");
      }
    } else if (a == "--disk-hit") {  // the re-executed child of row 4, not for users
      const std::string dir = value();
      return DiskHitChild(dir, WholeNumber(a, value(), 1, 100000));
    } else {
      Bad("unknown option '" + a + "' (valid: --n --reps --only --help)");
    }
  }
  const int threads = jit::ThreadPool::Global().num_threads();
  std::printf("CPU backend micro-benchmark, n = %ld, %d threads, %d reps\n", static_cast<long>(n),
              threads, reps);

  // --n sizes these two rows (ops, ifs); without it they run their usual
  // sizes (2048 sequential ifs would only meet the tracer's path limit).
  if (only == "line") {  // straight-line kernels (one of --n ops: for -time-passes)
    WarmJit();
    if (n_given) ReportStraightLine({static_cast<int>(n)});
    else ReportStraightLine();
    return 0;
  }
  if (only == "launch" || only == "eval" || only == "tape" || only == "threads") {
    ReportRuntimeLaunch(reps, only);  // the runtime launch-path rows of 3. (or one of them)
    return 0;
  }
  if (only == "ifs") {  // the kernels of k sequential ifs (k = --n if given)
    WarmJit();
    if (n_given) ReportSequentialIfs(reps, {static_cast<int>(n)});
    else ReportSequentialIfs(reps);
    return 0;
  }
  // 2. Compile latency first: the process is otherwise idle.
  ReportCompile(n, std::max(5, reps / 4));
  if (only == "onepass") {
    WarmJit();
    ReportOnePassGradient(n);
    return 0;
  }
  if (only == "scaling") {
    ReportOnePassGradient(n);
    ReportStraightLine();
    ReportUntakenSide(reps);
    ReportDependencyChain(reps);
    ReportSequentialIfs(reps);
    return 0;
  }

  // 1. The kernel vs the hand-written loop.
  ReportKernel(n, Layout::kRows, reps);
  ReportKernel(256, Layout::kRows, reps);
  ReportKernel(n, Layout::kColumns, reps);

  // 3. Cache-hit launch overhead for one element.
  {
    jit::KernelSpec one_spec = PaperSpec(CellShapes(1, Layout::kRows));
    auto compile = [&]() -> absl::StatusOr<jit::CompiledKernel> {
      auto k = jit::CompileCpuKernel(one_spec, nullptr);
      if (!k.ok()) return k.status();
      jit::CompiledKernel ck;
      ck.entry = reinterpret_cast<void*>(k->entry);
      ck.owner = k->code;  // the cache holds the code while it holds the kernel
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
    ReportRuntimeLaunch(reps);
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

  // 5. Code generation that scales; 6. the one-pass gradient kernel.
  ReportOnePassGradient(n);
  ReportStraightLine();
  ReportUntakenSide(reps);
  ReportDependencyChain(reps);
  ReportSequentialIfs(reps);
  return 0;
}

}  // namespace
}  // namespace dualcast::bench

int main(int argc, char** argv) {
  try {
    return dualcast::bench::Main(argc, argv);
  } catch (const std::exception& e) {  // dualcast::Error included: its message says what to do
    std::fprintf(stderr, "dualcast-cpu-kernel-bench: %s\n", e.what());
    return 1;
  }
}
