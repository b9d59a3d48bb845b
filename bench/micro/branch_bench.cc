// Branching micro-benchmark: trace + compile time, IR size and run time of k sequential conditions, plain `if` vs dc::cond.
//
// The kernel of issues 17 and 20: k sequential independent
//   if (x > t_i) a = a * y; else a = a + y;
// written with plain C++ `if` (the tracer re-runs the lambda once per path,
// 2^k runs, and merges the paths at their joins) and with dc::cond (one run).
// Per k: trace ms (including the merge), IR instructions of the traced
// function and of the compiled partials kernel (jvp wrt x and y, optimised),
// cold CPU compile ms (no disk cache; the minimum of 3), and the steady run time on 256x256
// float32 (values and both partials stored). Figures only, never asserts.
// Usage: dualcast-branch-bench [--reps 20] [--kmax 14] (--help for all)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "jit/codegen/broadcast_layout.h"
#include "jit/cpu/cpu_backend.h"
#include "jit/cpu/launch.h"
#include "jit/passes/jvp.h"
#include "jit/passes/optimize.h"
#include "jit/trace/trace.h"

namespace dualcast::bench {
namespace {

using Clock = std::chrono::steady_clock;
double Ms(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

auto PlainIfs(int k) {
  return [k](auto x, auto y) {
    auto a = x;
    for (int i = 0; i < k; ++i) {
      if (x > -1.0 + 2.0 * i / k) {
        a = a * y;
      } else {
        a = a + y;
      }
    }
    return a;
  };
}

auto Conds(int k) {
  return [k](auto x, auto y) {
    auto a = x;
    for (int i = 0; i < k; ++i) {
      a = jit::cond(x > -1.0 + 2.0 * i / k, [&] { return a * y; }, [&] { return a + y; });
    }
    return a;
  };
}

struct Row {
  double trace_ms = 0, compile_ms = 0, run_ms = 0;
  size_t traced_insts = 0, kernel_insts = 0;
};

constexpr int64_t kN = 256;

template <class F>
Row Measure(const std::string& name, F kernel, int reps) {
  Row row;
  const jit::Type f32[2] = {jit::Type::kF32, jit::Type::kF32};
  auto t0 = Clock::now();
  jit::Function traced = jit::Trace(name, kernel, f32);
  row.trace_ms = Ms(t0);
  row.traced_insts = traced.insts.size();
  const int wrt[] = {0, 1};
  auto fn = std::make_shared<const jit::Function>(jit::Optimize(jit::Jvp(traced, wrt).function));
  row.kernel_insts = fn->insts.size();
  std::vector<std::vector<int64_t>> shapes = {{kN, kN}, {kN, kN}};
  std::vector<std::vector<int64_t>> strides = {jit::ContiguousStrides(shapes[0]),
                                               jit::ContiguousStrides(shapes[1])};
  jit::BroadcastLayout layout = jit::MergeBroadcast(shapes, strides, name).value();
  jit::KernelSpec spec = jit::KernelSpec::For(fn, jit::Type::kF32, jit::Target::kCpu, layout);
  // The minimum of 3 cold compiles (renamed copies, so each is compiled
  // afresh): the machine is shared, the minimum is the figure to compare.
  absl::StatusOr<jit::CompiledCpuKernel> compiled;
  row.compile_ms = 1e30;
  for (int c = 0; c < 3; ++c) {
    auto copy = std::make_shared<jit::Function>(*fn);
    copy->name = name + "_c" + std::to_string(c);
    jit::KernelSpec fresh = spec;
    fresh.function = copy;
    t0 = Clock::now();
    compiled = jit::CompileCpuKernel(fresh, nullptr);
    row.compile_ms = std::min(row.compile_ms, Ms(t0));
    if (!compiled.ok()) break;
  }
  if (!compiled.ok()) {
    std::printf("%s: compile failed: %s\n", name.c_str(),
                std::string(compiled.status().message()).c_str());
    std::exit(1);
  }
  // x spans the thresholds, so every condition splits the elements.
  std::vector<float> x(kN * kN), y(kN * kN, 1.0001f);
  for (int64_t i = 0; i < kN * kN; ++i) x[i] = -1.1f + 2.2f * static_cast<float>(i % 977) / 977;
  std::vector<float> out(3 * kN * kN);
  const void* inputs[2] = {x.data(), y.data()};
  void* outputs[3] = {out.data(), out.data() + kN * kN, out.data() + 2 * kN * kN};
  const int rank = layout.rank();
  std::vector<int64_t> in_strides, out_strides;
  for (const auto& s : layout.in_strides) in_strides.insert(in_strides.end(), s.begin(), s.end());
  std::vector<int64_t> contiguous = jit::ContiguousStrides(layout.out_shape);
  for (int m = 0; m < 3; ++m) out_strides.insert(out_strides.end(), contiguous.begin(), contiguous.end());
  jit::KernelArgs args{layout.out_shape.data(), inputs, in_strides.data(), outputs,
                       out_strides.data(), 0, rank > 0 ? layout.out_shape[0] : 1};
  std::vector<double> times;
  jit::LaunchCpu(compiled->entry, args, rank);
  for (int r = 0; r < reps; ++r) {
    t0 = Clock::now();
    jit::LaunchCpu(compiled->entry, args, rank);
    times.push_back(Ms(t0));
  }
  std::sort(times.begin(), times.end());
  row.run_ms = times[times.size() / 2];
  return row;
}

constexpr char kUsage[] =
    "usage: dualcast-branch-bench [--reps N] [--kmax K]\n"
    "  --reps N   timed runs per row, 1..100000 (default 20)\n"
    "  --kmax K   plain-if rows for k = 6..K, K in 6..16 (default 14)\n";

[[noreturn]] void Bad(const std::string& why) {
  std::fprintf(stderr, "dualcast-branch-bench: %s\n(run dualcast-branch-bench --help for all options)\n",
               why.c_str());
  std::exit(2);
}

void Print(const char* kind, int k, const Row& r) {
  std::printf("%-7s k=%2d  trace %8.2f ms  IR %6zu insts (kernel %6zu)  compile %8.2f ms  "
              "trace+compile %8.2f ms  run %7.3f ms\n",
              kind, k, r.trace_ms, r.traced_insts, r.kernel_insts, r.compile_ms,
              r.trace_ms + r.compile_ms, r.run_ms);
}

}  // namespace
}  // namespace dualcast::bench

int main(int argc, char** argv) {
  using namespace dualcast::bench;
  int reps = 20, kmax = 14;
  // Strict, like dualcast-hmlstm: a typo must not cost a whole run.
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return 0;
    }
    if (a != "--reps" && a != "--kmax") Bad("unknown option '" + a + "' (valid: --reps --kmax --help)");
    if (i + 1 >= argc) Bad(a + " needs a value");
    // kmax: the plain rows start at k = 6; past 16 ifs the tracer's path limit refuses the kernel.
    const int lo = a == "--reps" ? 1 : 6, hi = a == "--reps" ? 100000 : 16;
    int v;
    if (!absl::SimpleAtoi(argv[++i], &v) || v < lo || v > hi) {
      Bad(a + " '" + argv[i] + "': must be a whole number in " + std::to_string(lo) + ".." + std::to_string(hi));
    }
    (a == "--reps" ? reps : kmax) = v;
  }
  (void)Measure("warm", PlainIfs(1), 1);  // brings LLJIT up: excluded from the rows
  std::printf("k sequential conditions, 256x256 f32 partials kernel (median of %d runs)\n", reps);
  Row plain6, plain12;
  for (int k = 6; k <= kmax; ++k) {
    Row r = Measure("plain" + std::to_string(k), PlainIfs(k), reps);
    Print("if", k, r);
    if (k == 6) plain6 = r;
    if (k == 12) plain12 = r;
  }
  for (int k : {6, 12, 20}) Print("cond", k, Measure("cond" + std::to_string(k), Conds(k), reps));
  if (kmax >= 12) {
    std::printf("plain if, k=12 vs k=6: run time %.2fx, IR %.2fx\n",
                plain12.run_ms / plain6.run_ms,
                static_cast<double>(plain12.traced_insts) / plain6.traced_insts);
  }
  return 0;
}
