// The CUDA printer's reduced and accumulating outputs executed on the host: sums, adjoint steps and one-pass-gradient-like kernels vs a double reference.
//
// This tests the CUDA C that jit/cuda writes, NOT a GPU: printed source
// compiled as host C++ behind cuda_host_shim.h, whose fibers make
// __syncthreads and warp shuffles real. Each case is built as the runtime
// builds a reduced Execute: MergeBroadcast over the inputs, the destinations
// (size 1 along the reduced axes, so their broadcast bits are the reduce
// bits) and the iteration shape; KernelSpec with output_reduce/accumulate;
// the launch is the main entry point then <symbol>_fin with the scratch of
// PlanCudaReduction, as LaunchCudaKernel does.
// Checks:
//   - outputs that are not reduced equal the interpreter BITWISE (dest + value
//     when accumulating);
//   - reduced outputs equal T(sum) (or dest + T(sum)) of the interpreter's
//     values, the sum taken here in long double, WITHIN A TOLERANCE: the
//     kernel sums in double in its own order (lanes, shuffle tree, splits),
//     which differs from any sequential order, so we allow n * 2^-52 * sum|v|
//     plus two ulps of the element type;
//   - every launch shape (grid, block, _i32/_i64) gives the same bits: the
//     summation order depends on the sizes only (determinism);
//   - memory outside the destination views keeps its sentinel, and unwritten
//     scratch (NaN-filled) is never read.
// Coverage: every reduce-axes combination of ranks 1-3, odd sizes, sizes that
// need several splits (> 1024 reduced elements) and many (> 16, the block
// finish), size 0 along a reduced and a kept axis, broadcast inputs in every
// position, transposed/strided views, f32 and f64, accumulate on and off.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda_host/host_module.h"
#include "cuda_host/views.h"
#include "jit/codegen/broadcast_layout.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/cuda/cuda_kernel.h"
#include "jit/ir/interpret.h"
#include "jit/passes/optimize.h"
#include "jit/trace/trace.h"

namespace dualcast::testing {
namespace {

using jit::cuda::CudaKernelSource;

template <class T>
struct RCase {
  std::string name;
  std::shared_ptr<const jit::Function> f;
  std::vector<View<T>> in;
  std::vector<int64_t> full;             // iteration shape
  std::vector<View<T>> out;              // per output, shape = full with 1 on reduced axes
  std::vector<bool> reduced, accumulate;  // per output
  std::vector<jit::ReduceOp> ops;         // per output; empty: every reduced output sums
  // Filled by Prepare:
  jit::BroadcastLayout layout;
  jit::KernelSpec spec;
  CudaKernelSource source;
  std::vector<std::vector<T>> initial;       // destination buffers before the launch
  std::vector<std::map<int64_t, long double>> sum, magnitude;  // per output, by buffer offset
  std::vector<std::map<int64_t, int64_t>> terms;
  std::vector<std::map<int64_t, T>> elementwise;  // exact expected values, by buffer offset
  jit::ReduceOp spec_op(size_t m) const { return m < ops.size() ? ops[m] : jit::ReduceOp::kSum; }
};

template <class T>
jit::Type TypeOf() {
  return sizeof(T) == 4 ? jit::Type::kF32 : jit::Type::kF64;
}

// Inputs random in [-2, 2]; destinations random (accumulate) or sentinel.
template <class T>
void Prepare(RCase<T>& c, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-2, 2);
  for (auto& v : c.in) {
    for (T& x : v.buffer) x = static_cast<T>(u(rng));
  }
  const size_t M = c.f->num_outputs();
  c.initial.clear();
  for (size_t m = 0; m < M; ++m) {
    std::vector<T> b(c.out[m].buffer.size(), Sentinel<T>());
    if (c.accumulate[m]) {
      ForEachIndex(c.out[m].shape, [&](const std::vector<int64_t>& idx) {
        b[static_cast<size_t>(OffsetOf(c.out[m], idx))] = static_cast<T>(u(rng));
      });
    }
    c.initial.push_back(std::move(b));
  }
  // Reference: the interpreter at every element of the iteration shape.
  c.sum.assign(M, {});
  c.magnitude.assign(M, {});
  c.terms.assign(M, {});
  c.elementwise.assign(M, {});
  for (size_t m = 0; m < M; ++m) {
    if (!c.reduced[m]) continue;
    ForEachIndex(c.out[m].shape, [&](const std::vector<int64_t>& idx) {
      const int64_t o = OffsetOf(c.out[m], idx);
      c.sum[m][o] = 0;
      c.magnitude[m][o] = 0;
      c.terms[m][o] = 0;
    });
  }
  ForEachIndex(c.full, [&](const std::vector<int64_t>& idx) {
    std::vector<T> x;
    for (const auto& v : c.in) x.push_back(v.buffer[static_cast<size_t>(OffsetOf(v, idx))]);
    std::vector<T> y = jit::Interpret(*c.f, std::span<const T>(x));
    for (size_t m = 0; m < M; ++m) {
      const int64_t o = OffsetOf(c.out[m], idx);
      if (c.reduced[m] && c.spec_op(m) != jit::ReduceOp::kSum) {
        // Max, min, product: combined in element order (max/min are exact in
        // any order; products are checked within their rounding below).
        long double& acc = c.sum[m][o];
        if (c.terms[m][o] == 0) acc = jit::ReduceIdentity(c.spec_op(m));
        acc = jit::ReduceCombine(c.spec_op(m), static_cast<double>(acc), static_cast<double>(y[m]));
        c.magnitude[m][o] = std::fabs(acc);
        ++c.terms[m][o];
      } else if (c.reduced[m]) {
        c.sum[m][o] += y[m];
        c.magnitude[m][o] += std::fabs(static_cast<long double>(y[m]));
        ++c.terms[m][o];
      } else {
        c.elementwise[m][o] =
            c.accumulate[m] ? static_cast<T>(c.initial[m][static_cast<size_t>(o)] + y[m]) : y[m];
      }
    }
  });
  // Layout over inputs, destinations and the iteration shape (a contiguous stand-in).
  std::vector<std::vector<int64_t>> shapes, strides;
  for (const auto& v : c.in) {
    shapes.push_back(v.shape);
    strides.push_back(v.strides);
  }
  for (const auto& v : c.out) {
    shapes.push_back(v.shape);
    strides.push_back(v.strides);
  }
  shapes.push_back(c.full);
  strides.push_back(jit::ContiguousStrides(c.full));
  absl::StatusOr<jit::BroadcastLayout> merged = jit::MergeBroadcast(shapes, strides, c.name);
  REQUIRE_MESSAGE(merged.ok(), merged.status().message());
  c.layout = *merged;
  jit::BroadcastLayout in_layout = *merged;
  in_layout.in_strides.resize(c.in.size());
  in_layout.in_broadcast.resize(c.in.size());
  c.spec = jit::KernelSpec::For(c.f, TypeOf<T>(), jit::Target::kCuda, in_layout);
  c.spec.output_reduce.assign(M, 0);
  for (size_t m = 0; m < M; ++m) {
    if (c.reduced[m]) c.spec.output_reduce[m] = c.layout.in_broadcast[c.in.size() + m];
  }
  c.spec.accumulate = c.accumulate;
  c.spec.output_reduce_op = c.ops;
  absl::StatusOr<CudaKernelSource> src = jit::cuda::BuildCudaKernelSource(c.spec);
  REQUIRE_MESSAGE(src.ok(), src.status().message());
  c.source = *std::move(src);
}

// One launch as LaunchCudaKernel makes it; returns the destination buffers.
template <class T>
std::vector<std::vector<T>> Run(const RCase<T>& c, const HostCudaModule& module, bool wide,
                                int block, int64_t min_grid) {
  const jit::BroadcastLayout& l = c.layout;
  const int rank = l.rank();
  const size_t n_in = c.in.size(), M = c.out.size();
  std::vector<std::vector<T>> out = c.initial;
  std::vector<int64_t> sizes = l.out_shape, in_strides(n_in * rank + 1, 0),
                       out_strides(M * rank + 1, 0);
  sizes.push_back(1);
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  for (size_t i = 0; i < n_in; ++i) {
    in_ptrs.push_back(c.in[i].buffer.data() + c.in[i].offset);
    std::copy(l.in_strides[i].begin(), l.in_strides[i].end(), in_strides.begin() + i * rank);
  }
  for (size_t m = 0; m < M; ++m) {
    out_ptrs.push_back(out[m].data() + c.out[m].offset);
    const auto& s = l.in_strides[n_in + m];
    std::copy(s.begin(), s.end(), out_strides.begin() + m * rank);
  }
  const jit::KernelArgs args{sizes.data(), in_ptrs.data(), in_strides.data(), out_ptrs.data(),
                             out_strides.data(), 0, rank == 0 ? 1 : sizes[0]};
  const jit::cuda::CudaReductionPlan plan =
      jit::cuda::PlanCudaReduction(c.source.output_reduce, sizes.data(), rank);
  // NaN-filled: a partial the finish reads but the main kernel never wrote shows up.
  std::vector<double> scratch(static_cast<size_t>(plan.scratch_doubles) + 1,
                              std::numeric_limits<double>::quiet_NaN());
  jit::cuda::CudaLaunchValues v = jit::cuda::MarshalCudaLaunch(
      c.source.params, sizeof(T), args, rank, &plan, reinterpret_cast<uint64_t>(scratch.data()));
  if (v.n > 0) {
    const int64_t grid = std::max<int64_t>(1, jit::cuda::CudaGridSize(v.n, block, min_grid));
    module.Launch(c.source.symbol, wide, grid, block, v.values);
  }
  if (c.source.has_finish) {
    const int64_t grid = std::max<int64_t>(1, std::min<int64_t>(plan.max_kept, 3));
    module.LaunchEntry(c.source.symbol + "_fin", grid, jit::cuda::kCudaFinishBlock, v.values);
  }
  return out;
}

template <class T>
double Ulp(T v) {
  const T a = std::fabs(v);
  return static_cast<double>(std::nextafter(a, std::numeric_limits<T>::infinity()) - a);
}

// Counts wrong elements (and writes outside the views); with `report`, the first few FAIL.
template <class T>
int Check(const RCase<T>& c, const std::vector<std::vector<T>>& got, bool report) {
  int wrong = 0;
  for (size_t m = 0; m < c.out.size(); ++m) {
    CAPTURE(m);
    std::vector<bool> in_view(got[m].size(), false);
    int bad = 0;
    ForEachIndex(c.out[m].shape, [&](const std::vector<int64_t>& idx) {
      const int64_t o = OffsetOf(c.out[m], idx);
      in_view[static_cast<size_t>(o)] = true;
      const T value = got[m][static_cast<size_t>(o)];
      if (!c.reduced[m]) {
        if (!SameBits(value, c.elementwise[m].at(o))) {
          ++wrong;
          if (report && bad++ < 3) {
            FAIL_CHECK("element at " << o << ": got " << value << " want "
                                     << c.elementwise[m].at(o));
          }
        }
        return;
      }
      const T sum = static_cast<T>(c.sum[m].at(o));
      const jit::ReduceOp op = c.spec_op(m);
      if (op == jit::ReduceOp::kMax || op == jit::ReduceOp::kMin) {  // exact in any order
        if (!SameBits(value, sum) && !(value != value && sum != sum)) {
          ++wrong;
          if (report && bad++ < 3) {
            FAIL_CHECK(jit::ReduceOpName(op) << " element at " << o << ": got " << value
                                             << " want " << sum);
          }
        }
        return;
      }
      const T want = c.accumulate[m] ? static_cast<T>(c.initial[m][static_cast<size_t>(o)] + sum)
                                     : sum;
      const double tol = static_cast<double>(c.terms[m].at(o)) * std::ldexp(1.0, -52) *
                             static_cast<double>(c.magnitude[m].at(o)) +
                         2 * (Ulp(want) + Ulp(sum));
      if (!(std::fabs(static_cast<double>(value) - static_cast<double>(want)) <= tol)) {
        ++wrong;
        if (report && bad++ < 3) {
          FAIL_CHECK("reduced element at " << o << " (" << c.terms[m].at(o) << " terms): got "
                                           << value << " want " << want << " tol " << tol);
        }
      }
    });
    for (size_t o = 0; o < in_view.size(); ++o) {
      if (!in_view[o] && !IsSentinel(got[m][o])) {
        ++wrong;
        if (report) FAIL_CHECK("wrote outside the destination view at buffer offset " << o);
        break;
      }
    }
  }
  return wrong;
}

template <class T>
bool SameOutputs(const std::vector<std::vector<T>>& a, const std::vector<std::vector<T>>& b) {
  for (size_t m = 0; m < a.size(); ++m) {
    for (size_t e = 0; e < a[m].size(); ++e) {
      if (!SameBits(a[m][e], b[m][e])) return false;
    }
  }
  return true;
}

// Runs every case under several launch shapes; `mutate` edits the printed sources (mutation check).
template <class T>
int RunCases(std::vector<RCase<T>>& cases, const std::string& tag,
             const std::function<std::string(std::string)>& mutate = nullptr) {
  std::vector<CudaKernelSource> sources;
  std::map<std::string, bool> seen;
  for (const auto& c : cases) {
    if (!seen[c.source.symbol]) {
      seen[c.source.symbol] = true;
      sources.push_back(c.source);
      if (mutate) sources.back().text = mutate(sources.back().text);
    }
  }
  HostCudaModule module(sources, TypeOf<T>(), tag);
  MESSAGE("cuda_host " << tag << ": " << sources.size() << " reduction kernels compiled in "
                       << module.compile_seconds() << " s");
  int failures = 0;
  for (const RCase<T>& c : cases) {
    CAPTURE(c.name);
    CAPTURE(c.spec.Describe());
    struct Shape {
      bool wide;
      int block;
      int64_t min_grid;
    };
    std::vector<std::vector<T>> first;
    for (Shape s : {Shape{false, 32, 1}, Shape{true, 64, 3}, Shape{false, 128, 1 << 20},
                    Shape{true, 256, 1 << 20}}) {
      CAPTURE(s.wide);
      CAPTURE(s.block);
      std::vector<std::vector<T>> got = Run(c, module, s.wide, s.block, s.min_grid);
      if (mutate) {
        // A wrong result, or one that depends on the launch shape, counts.
        if (first.empty()) first = got;
        failures += Check(c, got, false) > 0 || !SameOutputs(got, first);
        continue;
      }
      Check(c, got, true);
      if (first.empty()) {
        first = got;
      } else {
        CHECK_MESSAGE(SameOutputs(got, first),
                      "the result depends on the launch shape (not deterministic)");
      }
    }
  }
  return failures;
}

// ---- case generators ----

template <class T>
View<T> DestView(const std::vector<int64_t>& full, uint32_t axes, Layout layout) {
  std::vector<int64_t> shape = full;
  for (size_t d = 0; d < full.size(); ++d) {
    if ((axes >> d) & 1u) shape[d] = 1;
  }
  return MakeView<T>(shape, layout);
}

// f(x, y) = x * y + sin(x) with its gradient against an adjoint ybar:
// outputs (value, ybar * (y + cos x), ybar * x) -- a one-pass-gradient-like kernel.
template <class T>
std::shared_ptr<const jit::Function> OnePassLike() {
  std::vector<jit::Type> types(3, TypeOf<T>());
  return std::make_shared<const jit::Function>(jit::Optimize(jit::Trace(
      "onepass_like",
      [](auto x, auto y, auto ybar) {
        using namespace dualcast::math;
        return std::tuple{x * y + sin(x), ybar * (y + cos(x)), ybar * x};
      },
      types)));
}

// An adjoint step: x̄ contribution = ȳ0 * P0 + ȳ1 * P1 (reduced to x's shape).
template <class T>
std::shared_ptr<const jit::Function> AdjointStep() {
  std::vector<jit::Type> types(4, TypeOf<T>());
  return std::make_shared<const jit::Function>(jit::Optimize(jit::Trace(
      "adjoint_step", [](auto yb0, auto p0, auto yb1, auto p1) { return yb0 * p0 + yb1 * p1; },
      types)));
}

// A branchy forward kernel (values to sum: a fused `sum(f(x, y))`).
template <class T>
std::shared_ptr<const jit::Function> Branchy() {
  std::vector<jit::Type> types(2, TypeOf<T>());
  return std::make_shared<const jit::Function>(jit::Optimize(jit::Trace(
      "branchy",
      [](auto x, auto y) {
        using namespace dualcast::math;
        if (x > y) return exp(x - y) * y;
        return x * x - y;
      },
      types)));
}

template <class T>
void AddCases(std::vector<RCase<T>>& cases, std::mt19937_64& rng) {
  auto layout = [&] { return static_cast<Layout>(rng() % 3); };
  auto in_shape = [&](const std::vector<int64_t>& full, uint32_t bcast) {
    std::vector<int64_t> s = full;
    for (size_t d = 0; d < full.size(); ++d) {
      if ((bcast >> d) & 1u) s[d] = 1;
    }
    return s;
  };
  // Every reduce-axes combination of ranks 1-3 with a branchy sum and an
  // adjoint step; inputs broadcast in rotating positions; accumulate alternating.
  const std::vector<std::vector<int64_t>> fulls = {{7}, {5, 9}, {3, 1, 7}, {4, 5, 3}, {2, 3, 35}};
  int k = 0;
  for (const auto& full : fulls) {
    const uint32_t all = (1u << full.size()) - 1;
    for (uint32_t axes = 1; axes <= all; ++axes, ++k) {
      {
        RCase<T> c;
        c.name = "branchy sum over axes " + std::to_string(axes);
        c.f = Branchy<T>();
        c.full = full;
        c.in.push_back(MakeView<T>(in_shape(full, k % 2 ? 0 : (1u << (k % full.size()))), layout()));
        c.in.push_back(MakeView<T>(in_shape(full, k % 3 == 0 ? 0 : all & ~axes), layout()));
        c.out.push_back(DestView<T>(full, axes, layout()));
        c.reduced = {true};
        c.accumulate = {k % 2 == 1};
        cases.push_back(std::move(c));
      }
      {
        RCase<T> c;
        c.name = "adjoint step over axes " + std::to_string(axes);
        c.f = AdjointStep<T>();
        c.full = full;
        for (int i = 0; i < 4; ++i) {
          c.in.push_back(MakeView<T>(in_shape(full, i == 1 ? axes : 0), layout()));
        }
        c.out.push_back(DestView<T>(full, axes, layout()));
        c.reduced = {true};
        c.accumulate = {k % 2 == 0};
        cases.push_back(std::move(c));
      }
    }
  }
  // One-pass-gradient-like: x (n, 1), y (1, m), ybar (n, m): value elementwise,
  // x̄ reduced along dim 1, ȳ along dim 0 -- different masks in one kernel.
  for (auto [n, m] : {std::pair{5, 7}, std::pair{1, 9}, std::pair{33, 40}}) {
    for (bool acc : {false, true}) {
      RCase<T> c;
      c.name = "one-pass-like " + std::to_string(n) + "x" + std::to_string(m);
      c.f = OnePassLike<T>();
      c.full = {n, m};
      c.in = {MakeView<T>({n, 1}, layout()), MakeView<T>({1, m}, layout()),
              MakeView<T>({n, m}, layout())};
      c.out = {MakeView<T>({n, m}, layout()), DestView<T>(c.full, 0b10, layout()),
               DestView<T>(c.full, 0b01, layout())};
      c.reduced = {false, true, true};
      c.accumulate = {acc, acc, !acc};
      cases.push_back(std::move(c));
    }
  }
  // Several splits (> 1024 reduced elements) and more than 16 (the block finish);
  // a sum of a broadcast scalar over an iteration shape larger than every input.
  for (int64_t n : {3000, 17 * 1024 + 5}) {
    RCase<T> c;
    c.name = "long sum " + std::to_string(n);
    c.f = Branchy<T>();
    c.full = {n};
    c.in = {MakeView<T>({n}, Layout::kContiguous), MakeView<T>({1}, Layout::kContiguous)};
    c.out = {DestView<T>(c.full, 1, Layout::kContiguous)};
    c.reduced = {true};
    c.accumulate = {n == 3000};
    cases.push_back(std::move(c));
  }
  {
    RCase<T> c;
    c.name = "columns of a tall matrix, 3 splits each";
    c.f = AdjointStep<T>();
    c.full = {2100, 3};
    for (int i = 0; i < 4; ++i) c.in.push_back(MakeView<T>(i == 2 ? std::vector<int64_t>{1, 3} : c.full, Layout::kContiguous));
    c.out = {DestView<T>(c.full, 0b01, Layout::kStrided)};
    c.reduced = {true};
    c.accumulate = {false};
    cases.push_back(std::move(c));
  }
  {
    RCase<T> c;
    c.name = "broadcast scalar summed over a larger iteration shape";
    c.f = Branchy<T>();
    c.full = {6, 5};
    c.in = {MakeView<T>({}, Layout::kContiguous), MakeView<T>({1, 5}, Layout::kContiguous)};
    c.out = {DestView<T>(c.full, 0b11, Layout::kContiguous)};
    c.reduced = {true};
    c.accumulate = {false};
    cases.push_back(std::move(c));
  }
  // Accumulate without reduction: dest = dest + value, elementwise.
  {
    RCase<T> c;
    c.name = "accumulate only";
    c.f = OnePassLike<T>();
    c.full = {4, 6};
    c.in = {MakeView<T>({4, 1}, layout()), MakeView<T>({4, 6}, layout()),
            MakeView<T>({1, 6}, layout())};
    c.out = {MakeView<T>({4, 6}, layout()), MakeView<T>({4, 6}, layout()),
             MakeView<T>({4, 6}, layout())};
    c.reduced = {false, false, false};
    c.accumulate = {true, false, true};
    cases.push_back(std::move(c));
  }
  // The same kernels reducing with max, min and product instead of sums
  // (products only over few terms, so they stay finite in any order).
  const size_t summed_cases = cases.size();
  for (size_t i = 0; i < summed_cases; i += 2) {
    RCase<T> c = cases[i];
    c.name += "-ops";
    c.ops.assign(c.out.size(), jit::ReduceOp::kSum);
    bool any = false;
    for (size_t m = 0; m < c.out.size(); ++m) {
      if (!c.reduced[m] || c.accumulate[m]) continue;
      int64_t terms = 1;
      for (size_t d = 0; d < c.full.size(); ++d) {
        if (c.out[m].shape[c.out[m].shape.size() - c.full.size() + d] == 1) terms *= c.full[d];
      }
      const jit::ReduceOp cycle[] = {jit::ReduceOp::kMax, jit::ReduceOp::kMin, jit::ReduceOp::kProd};
      c.ops[m] = cycle[(i / 2 + m) % 3];
      if (c.ops[m] == jit::ReduceOp::kProd && terms > 32) c.ops[m] = jit::ReduceOp::kMax;
      any = true;
    }
    if (any) cases.push_back(std::move(c));
  }
  for (auto& c : cases) Prepare(c, rng);
}

template <class T>
void RunAll(uint64_t seed, const std::string& tag) {
  MESSAGE("cuda_host: executes the CUDA C of reduced/accumulating outputs on the host (tests the "
          "printed code, not a GPU); reduced sums compared within n * 2^-52 * sum|v| + 2 ulp "
          "because the kernel's summation order differs from the reference's");
  std::mt19937_64 rng(seed);
  std::vector<RCase<T>> cases;
  AddCases(cases, rng);
  int block_finish = 0, multi_split = 0, mixed = 0, ranks[4] = {0, 0, 0, 0}, lane_modes[2] = {0, 0};
  for (const auto& c : cases) {
    std::vector<int64_t> sizes = c.layout.out_shape;
    const auto plan = jit::cuda::PlanCudaReduction(c.source.output_reduce, sizes.data(),
                                                   c.layout.rank());
    for (int64_t s : plan.splits) {
      multi_split += s > 1;
      block_finish += s > jit::cuda::kCudaFinishSerialSplits;
    }
    mixed += c.source.has_finish && std::count(c.reduced.begin(), c.reduced.end(), false) > 0;
    for (uint32_t bits : c.source.output_reduce) {
      if (bits != 0) ++lane_modes[jit::cuda::CudaReductionLanesOverKept(bits, c.layout.rank())];
    }
    ranks[std::min<size_t>(c.full.size(), 3)]++;
  }
  MESSAGE("cuda_host " << tag << " reductions: " << cases.size() << " cases, " << multi_split
                       << " multi-split outputs, " << block_finish << " block finishes, " << mixed
                       << " kernels mixing reduced and elementwise outputs, " << lane_modes[0]
                       << " outputs with lanes over the reduced range, " << lane_modes[1]
                       << " with lanes over kept elements");
  CHECK(lane_modes[0] > 0);
  CHECK(lane_modes[1] > 0);
  CHECK(multi_split > 0);
  CHECK(block_finish > 0);
  CHECK(mixed > 0);
  CHECK(ranks[1] > 0);
  CHECK(ranks[2] > 0);
  CHECK(ranks[3] > 0);
  RunCases(cases, tag);
}

TEST_CASE("cuda_host: printed reductions (sum, adjoint step, one-pass-like, accumulate) match a "
          "double reference and are deterministic (f32)") {
  RunAll<float>(1811, "reduce-f32");
}

TEST_CASE("cuda_host: printed reductions (sum, adjoint step, one-pass-like, accumulate) match a "
          "double reference and are deterministic (f64)") {
  RunAll<double>(1812, "reduce-f64");
}

// Size 0 along a reduced axis: the sum is 0 (kept elements still written);
// along a kept axis: nothing to write. Built by hand: MergeBroadcast
// collapses any size-0 shape to {0}, so the runtime must pass these sizes.
TEST_CASE("cuda_host: reductions over size-0 axes write zeros (or leave accumulators unchanged)") {
  auto f = Branchy<double>();
  for (bool acc : {false, true}) {
    for (uint32_t axes : {0b01u, 0b10u}) {
      CAPTURE(acc);
      CAPTURE(axes);
      jit::KernelSpec spec;
      spec.function = f;
      spec.function_hash = 0;
      spec.dtype = jit::Type::kF64;
      spec.target = jit::Target::kCuda;
      spec.rank = 2;
      spec.input_broadcast = {0, 0};
      spec.output_reduce = {axes};
      spec.accumulate = {acc};
      absl::StatusOr<CudaKernelSource> src = jit::cuda::BuildCudaKernelSource(spec);
      REQUIRE_MESSAGE(src.ok(), src.status().message());
      HostCudaModule module({*src}, jit::Type::kF64, "reduce-empty");
      // Reduced axis of size 0, kept axis of size 5.
      std::vector<int64_t> sizes = axes == 0b01 ? std::vector<int64_t>{0, 5} : std::vector<int64_t>{5, 0};
      sizes.push_back(1);
      std::vector<double> x(1), y(1), out(5, 1.5);
      const void* in_ptrs[] = {x.data(), y.data()};
      void* out_ptrs[] = {out.data()};
      int64_t in_strides[] = {0, 0, 0, 0}, out_strides[] = {axes == 0b01 ? 0 : 1, axes == 0b01 ? 1 : 0};
      jit::KernelArgs args{sizes.data(), in_ptrs, in_strides, out_ptrs, out_strides, 0, sizes[0]};
      auto plan = jit::cuda::PlanCudaReduction(src->output_reduce, sizes.data(), 2);
      CHECK(plan.scratch_doubles == 0);
      CHECK(plan.max_kept == 5);
      std::vector<double> scratch(1);
      auto v = jit::cuda::MarshalCudaLaunch(src->params, 8, args, 2, &plan,
                                            reinterpret_cast<uint64_t>(scratch.data()));
      CHECK(v.n == 0);  // no main launch: the finish alone writes the empty sums
      module.LaunchEntry(src->symbol + "_fin", 2, jit::cuda::kCudaFinishBlock, v.values);
      for (double o : out) CHECK(o == (acc ? 1.5 : 0.0));
    }
  }
}

// The reduction harness can fail: deliberate bugs in the printed reduction code must be caught.
TEST_CASE("cuda_host: the harness catches wrong printed reductions (mutation check)") {
  struct Mutation {
    const char* what;
    std::string from, to;
  };
  const std::vector<Mutation> mutations = {
      {"shuffle tree stops one step early", "d > 0; d /= 2) {", "d > 1; d /= 2) {"},
      {"lanes stride 64 (elements skipped)", "r += 32)", "r += 64)"},
      {"splits overlap by one element", "(split + 1) * chunk < red ? (split + 1) * chunk",
       "(split + 1) * chunk + 1 < red ? (split + 1) * chunk + 1"},
      {"finish skips the last split", "split < splits; ++split", "split + 1 < splits; ++split"},
      {"accumulate overwrites", " = out0[o_out0] + ", " = "},
      {"a lane over kept elements skips rows", "r < stop; ++r)", "r < stop; r += 2)"},
      // (Swapping which lane takes which k is NOT a bug: the lane computes and stores the same k.)
      {"partial stored at the neighbouring element", "(dc_i64)k] = acc;", "(dc_i64)(k ^ 1)] = acc;"},
  };
  for (const Mutation& mutation : mutations) {
    CAPTURE(std::string(mutation.what));
    std::mt19937_64 rng(3);
    std::vector<RCase<double>> all, cases;
    AddCases(all, rng);
    // The kinds every mutation reaches: mixed outputs, splits, both finishes, accumulate.
    for (auto& c : all) {
      if (c.name.starts_with("one-pass") || c.name.starts_with("long sum")) {
        cases.push_back(std::move(c));
      }
    }
    int applied = 0;
    const int failures = RunCases<double>(cases, "reduce-mutant", [&](std::string text) {
      for (size_t at = text.find(mutation.from); at != std::string::npos;
           at = text.find(mutation.from, at + mutation.to.size())) {
        text.replace(at, mutation.from.size(), mutation.to);
        ++applied;
      }
      return text;
    });
    CHECK(applied > 0);
    CHECK(failures > 0);
  }
}

}  // namespace
}  // namespace dualcast::testing
