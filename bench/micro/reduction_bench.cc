// Reduction micro-benchmark: dualcast's fused `sum` and axis sums (sum_to) in GB/s against the STREAM read probe.
//
// Rows (median of --reps, after one cold call that compiles):
//   sum(x * y)            all elements of a pending product (the fusion the reverse sweep needs)
//   sum(x)                all elements of a plain array
//   sum(x * y, {1})       per-row sums into (n, 1): sum_to over a broadcast column axis
//   sum(x * y, {0})       per-column sums into (1, n): sum_to over a broadcast row axis
//   fused ...             the same through Execute's reduced outputs: ONE generated kernel
//                         computes x * y and sums it (the product never materialises)
//   fused sum_to(x) ...   a plain axis sum_to of x through the same path
//   logsumexp/norm(x * y, {1})  row composites: their first pass (max, max|.|) joins the
//                         kernel that produces x * y; `unfused` computes x * y first
//                         (dc::Unfused), then both passes read it
// GB/s counts the bytes the inputs must be read (4 n² per operand); the
// STREAM read figure is what a read-only pass can reach on this machine.
// Each result is checked against a float64 sum (relative error printed).
// Figures, never assertions; the machine may be shared (noisy).
// Usage: dualcast-reduction-bench [--n 2048] [--reps 20]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <dualcast/dualcast.hpp>
#include <dualcast/detail/execute.hpp>

#include "absl/strings/numbers.h"
#include "bench/hmlstm/roofline.h"

namespace dc = dualcast;

namespace {

double Ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double MaxRelError(const std::vector<float>& got, const std::vector<double>& ref) {
  if (got.size() != ref.size()) return INFINITY;
  double worst = 0;
  for (size_t k = 0; k < ref.size(); ++k) {
    worst = std::max(worst, std::abs(got[k] - ref[k]) / std::max(std::abs(ref[k]), 1.0));
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = 2048;
  int reps = 20;
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (arg == "--help" || arg == "-h") {
      std::printf("usage: dualcast-reduction-bench [--n N>=2] [--reps N>=1]\n");
      return 0;
    }
    int64_t v;
    if (arg == "--n" && k + 1 < argc && absl::SimpleAtoi(argv[++k], &v) && v >= 2) {
      n = v;
      continue;
    }
    if (arg == "--reps" && k + 1 < argc && absl::SimpleAtoi(argv[++k], &v) && v >= 1 && v <= 100000) {
      reps = static_cast<int>(v);
      continue;
    }
    std::fprintf(stderr, "dualcast-reduction-bench: bad option '%s' (valid: --n N>=2, --reps N>=1, --help)\n",
                 arg.c_str());
    return 2;
  }
  const size_t nn = static_cast<size_t>(n * n);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> xv(nn), yv(nn);
  for (size_t k = 0; k < nn; ++k) {
    xv[k] = u(rng);
    yv[k] = u(rng);
  }
  const dc::Array<float> x = dc::Array<float>::from(xv, {n, n}), y = dc::Array<float>::from(yv, {n, n});

  // float64 references.
  std::vector<double> all_xy(1, 0), all_x(1, 0), rows(static_cast<size_t>(n), 0), cols(static_cast<size_t>(n), 0);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      const double p = double(xv[r * n + c]) * double(yv[r * n + c]);
      all_xy[0] += p;
      all_x[0] += xv[r * n + c];
      rows[r] += p;
      cols[c] += p;
    }
  }
  const dc::bench::Bandwidth bw = dc::bench::MeasureBandwidth(64);
  std::printf("%s\n", dc::bench::FormatBandwidth(bw).c_str());
  std::printf("n = %lld, float32, %d reps (median); machine may be shared: figures are noisy\n",
              static_cast<long long>(n), reps);
  std::printf("%-24s %10s %10s %8s %8s %10s\n", "reduction", "cold ms", "median ms", "GB/s", "%read", "rel err");

  struct Case {
    const char* name;
    int operands;
    std::function<dc::Array<float>()> run;
    std::vector<double> ref;
  };
  // x * y (or x alone) with its output stored reduced to `shape`, as one kernel.
  auto fused = [&](bool product, std::vector<int64_t> shape) {
    auto f = std::make_shared<dc::jit::Function>(product ? "bench_xy" : "bench_x");
    dc::jit::Builder b(*f);
    dc::jit::ValueId v = b.Input(dc::jit::Type::kF32);
    if (product) v = b.Mul(v, b.Input(dc::jit::Type::kF32));
    b.Return({v});
    std::shared_ptr<const dc::jit::Function> fn = std::move(f);
    return [fn, product, shape = std::move(shape), &x, &y] {
      dc::detail::ExecuteOptions o;
      o.output_shapes = {shape};
      std::vector<std::shared_ptr<dc::detail::ArrayImpl>> in = {x.impl()};
      if (product) in.push_back(y.impl());
      return dc::Array<float>(dc::detail::Execute(fn->name, fn, in, o)[0]);
    };
  };
  std::vector<double> cols_x(static_cast<size_t>(n), 0);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < n; ++c) cols_x[c] += xv[r * n + c];
  }
  std::vector<double> row_lse(static_cast<size_t>(n)), row_norm(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    double m = -INFINITY, scale = 0;
    for (int64_t c = 0; c < n; ++c) {
      const double p = double(xv[r * n + c]) * double(yv[r * n + c]);
      m = std::max(m, p);
      scale += p * p;
    }
    double total = 0;
    for (int64_t c = 0; c < n; ++c) total += std::exp(double(xv[r * n + c]) * double(yv[r * n + c]) - m);
    row_lse[r] = m + std::log(total);
    row_norm[r] = std::sqrt(scale);
  }
  auto unfused = [&](auto op) {
    return [&, op] {
      dc::Unfused off;
      return op(x * y);
    };
  };
  auto lse = [](const dc::Array<float>& a) { return dc::logsumexp(a, {1}); };
  auto norm = [](const dc::Array<float>& a) { return dc::norm(a, {1}); };
  std::vector<Case> cases = {
      {"sum(x * y)", 2, [&] { return dc::sum(x * y); }, all_xy},
      {"sum(x)", 1, [&] { return dc::sum(x); }, all_x},
      {"sum(x * y, {1}) (n,1)", 2, [&] { return dc::sum(x * y, {1}, true); }, rows},
      {"sum(x * y, {0}) (1,n)", 2, [&] { return dc::sum(x * y, {0}, true); }, cols},
      {"fused sum(x * y)", 2, fused(true, {1, 1}), all_xy},
      {"fused x * y -> (n,1)", 2, fused(true, {n, 1}), rows},
      {"fused x * y -> (1,n)", 2, fused(true, {1, n}), cols},
      {"fused sum_to(x) (1,n)", 1, fused(false, {1, n}), cols_x},
      {"logsumexp(x * y, {1})", 2, [&] { return lse(x * y); }, row_lse},
      {"  unfused", 2, unfused(lse), row_lse},
      {"norm(x * y, {1})", 2, [&] { return norm(x * y); }, row_norm},
      {"  unfused", 2, unfused(norm), row_norm},
  };
  for (Case& c : cases) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<float> got = c.run().to_vector();  // to_vector forces a pending result
    const double cold = Ms(t0);
    std::vector<double> times;
    for (int r = 0; r < reps; ++r) {
      auto t = std::chrono::steady_clock::now();
      (void)c.run().to_vector();
      times.push_back(Ms(t));
    }
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];
    const double gbps = c.operands * 4.0 * static_cast<double>(nn) / (median * 1e-3) / 1e9;
    std::printf("%-24s %10.3f %10.3f %8.1f %8.0f %10.1e\n", c.name, cold, median, gbps,
                100.0 * gbps / bw.read_gbps, MaxRelError(got, c.ref));
  }
  return 0;
}
