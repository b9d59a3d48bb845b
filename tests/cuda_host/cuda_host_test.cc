// The CUDA printer's output executed on the host: every kernel kind, random views and broadcasts,
// vs the interpreter and the CPU backend.
//
// This tests the CUDA C that jit/cuda writes, NOT a GPU: the printed source is
// compiled as host C++ behind cuda_host_shim.h (host_module.h) and launched
// with the parameter values MarshalCudaLaunch computes from the runtime's
// KernelArgs, exactly as LaunchCudaKernel passes them to cuLaunchKernel.
// Shapes, views and outputs are built the way runtime/execute.cc builds them
// (MergeBroadcast over inputs and destinations, KernelSpec::For, the same
// KernelArgs), on small random shapes: odd sizes, size 0, size 1, rank 0-3,
// broadcasts in every position, transposed, strided and offset views for
// inputs and destinations, values-only / partials-only write masks.
//
// Every case runs both entry points (_i32, _i64), a one-element-per-thread
// grid and a small grid that makes the grid-stride loop go round, and a
// launch split in two along dim 0 (pointer shifting). Checks:
//   - every element of every written output equals the interpreter at that
//     element's inputs BITWISE (both call the same glibc functions with the
//     same formulas; NaN matches NaN), the reference computed from the
//     unmerged shapes and strides (independent of MergeBroadcast);
//   - destination memory outside the view keeps its sentinel bits;
//   - the CPU backend on the same KernelArgs agrees bitwise when the kernel
//     calls no libm function, else within 16 ulp or a relative 1e-5 (f32) /
//     1e-13 (f64): the CPU backend vectorises libm calls with glibc's libmvec,
//     which is within 4 ulp per call (jit/cpu/vector_math.h).
// Kernel kinds: the suite's forward kernels, their jvp'ed values+partials
// (multi-output, branches, early returns), multi-output primal kernels,
// random branchy kernels (tests/kernels/random_kernel.h, extended ops), in
// f32 and f64.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "cuda/cuda_test_support.h"
#include "cuda_host/host_module.h"
#include "cuda_host/views.h"
#include "jit/codegen/broadcast_layout.h"
#include "jit/codegen/codegen.h"
#include "jit/codegen/kernel_abi.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/cpu/cpu_backend.h"
#include "jit/cuda/cuda_kernel.h"
#include "jit/ir/interpret.h"
#include "jit/passes/optimize.h"
#include "jit/trace/trace.h"
#include "kernels/kernels.h"
#include "kernels/random_kernel.h"

namespace dualcast::testing {
namespace {

using jit::cuda::CudaKernelSource;
using jit::cuda::CudaLaunchValues;

// Within 16 ulp or relative 1e-5 (f32) / 1e-13 (f64).
template <class T>
bool Close(T got, T want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want)) return got == want;
  const double rel = sizeof(T) == 4 ? 1e-5 : 1e-13;
  const double scale = std::max(1.0, std::abs(static_cast<double>(want)));
  if (std::abs(static_cast<double>(got) - want) <= rel * scale) return true;
  using Bits = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  auto key = [](T v) {
    Bits b = std::bit_cast<Bits>(v);
    return b < 0 ? static_cast<int64_t>(std::numeric_limits<Bits>::min()) - b : int64_t{b};
  };
  return std::llabs(key(got) - key(want)) <= 16;
}

// Whether the CPU backend may differ from the interpreter: a libm call it
// vectorises, or an op built on one (tanh's expm1, sigmoid's exp, softplus).
bool CallsLibm(const jit::Function& f) {
  for (const jit::Inst& inst : f.insts) {
    if (jit::LibmName(inst.op, jit::Type::kF64) != nullptr || inst.op == jit::Op::kSigmoid ||
        inst.op == jit::Op::kTanh || inst.op == jit::Op::kSoftplus) {
      return true;
    }
  }
  return false;
}

// One broadcast call as the runtime would make it.
template <class T>
struct Case {
  std::string name;
  std::shared_ptr<const jit::Function> f;
  std::vector<View<T>> in;
  std::vector<View<T>> out;  // one per function output (unused when not written)
  std::vector<bool> write;
  std::vector<int64_t> out_shape;  // the full (unmerged) broadcast shape
  // Filled by Prepare:
  jit::KernelSpec spec;
  jit::BroadcastLayout layout;
  CudaKernelSource source;
  std::vector<std::vector<T>> reference;  // per output, row-major over out_shape
};

// Builds the case: random inputs in the domains, the interpreter reference,
// the layout, spec and printed source (the same steps as runtime/execute.cc).
template <class T>
void Prepare(Case<T>& c, const std::vector<Domain>& domain, std::mt19937_64& rng) {
  const jit::Type type = sizeof(T) == 4 ? jit::Type::kF32 : jit::Type::kF64;
  for (size_t i = 0; i < c.in.size(); ++i) {
    std::uniform_real_distribution<double> u(domain[i].lo, domain[i].hi);
    for (T& v : c.in[i].buffer) v = static_cast<T>(domain[i].binary ? std::round(u(rng)) : u(rng));
  }
  const size_t M = c.f->num_outputs();
  if (c.write.empty()) c.write.assign(M, true);
  std::vector<std::vector<int64_t>> shapes, strides;
  for (const auto& v : c.in) shapes.push_back(v.shape);
  c.out_shape = BroadcastShape(shapes);
  for (size_t m = 0; m < M; ++m) {
    for (T& v : c.out[m].buffer) v = Sentinel<T>();
  }
  // Reference from the unmerged views, element by element.
  c.reference.assign(M, {});
  ForEachIndex(c.out_shape, [&](const std::vector<int64_t>& idx) {
    std::vector<T> x;
    for (const auto& v : c.in) x.push_back(v.buffer[static_cast<size_t>(OffsetOf(v, idx))]);
    std::vector<T> y = jit::Interpret(*c.f, std::span<const T>(x));
    for (size_t m = 0; m < M; ++m) c.reference[m].push_back(y[m]);
  });
  // Layout over inputs and written destinations, as execute.cc does.
  for (const auto& v : c.in) strides.push_back(v.strides);
  for (size_t m = 0; m < M; ++m) {
    if (!c.write[m]) continue;
    shapes.push_back(c.out[m].shape);
    strides.push_back(c.out[m].strides);
  }
  absl::StatusOr<jit::BroadcastLayout> merged = jit::MergeBroadcast(shapes, strides, c.name);
  REQUIRE_MESSAGE(merged.ok(), merged.status().message());
  c.layout = *merged;
  jit::BroadcastLayout in_layout = *merged;
  in_layout.in_strides.resize(c.in.size());
  in_layout.in_broadcast.resize(c.in.size());
  c.spec = jit::KernelSpec::For(c.f, type, jit::Target::kCuda, in_layout);
  c.spec.write = c.write;
  absl::StatusOr<CudaKernelSource> src = jit::cuda::BuildCudaKernelSource(c.spec);
  REQUIRE_MESSAGE(src.ok(), src.status().message());
  c.source = *std::move(src);
}

// The runtime's KernelArgs for the case (pointers to the buffers' origins;
// view offsets folded into the pointers, as an Array's data() does).
template <class T>
struct Args {
  std::vector<int64_t> sizes, in_strides, out_strides;
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  jit::KernelArgs args{};
  int rank = 0;
};
template <class T>
Args<T> MakeArgs(Case<T>& c, std::vector<std::vector<T>>& out_buffers) {
  Args<T> a;
  const jit::BroadcastLayout& l = c.layout;
  a.rank = l.rank();
  const size_t n_in = c.in.size(), M = c.f->num_outputs();
  a.in_strides.assign(n_in * a.rank + 1, 0);
  for (size_t i = 0; i < n_in; ++i) {
    a.in_ptrs.push_back(c.in[i].buffer.data() + c.in[i].offset);
    std::copy(l.in_strides[i].begin(), l.in_strides[i].end(), a.in_strides.begin() + i * a.rank);
  }
  a.out_ptrs.assign(M, nullptr);
  a.out_strides.assign(M * a.rank + 1, 0);
  size_t operand = n_in;
  for (size_t m = 0; m < M; ++m) {
    if (!c.write[m]) continue;
    a.out_ptrs[m] = out_buffers[m].data() + c.out[m].offset;
    std::copy(l.in_strides[operand].begin(), l.in_strides[operand].end(),
              a.out_strides.begin() + m * a.rank);
    ++operand;
  }
  a.sizes = l.out_shape;
  a.sizes.push_back(1);
  a.args = jit::KernelArgs{a.sizes.data(),
                           a.in_ptrs.data(),
                           a.in_strides.data(),
                           a.out_ptrs.data(),
                           a.out_strides.data(),
                           0,
                           a.rank == 0 ? 1 : a.sizes[0]};
  return a;
}

// Checks written outputs against the reference (`exact`: bitwise, else Close)
// and that memory outside the destination views still holds the sentinel.
// With `silent`, failures are only counted there (the mutation check).
template <class T>
void CheckOutputs(const Case<T>& c, const std::vector<std::vector<T>>& out_buffers, bool exact,
                  const char* what, int* silent = nullptr) {
  CAPTURE(what);
  for (size_t m = 0; m < c.out.size(); ++m) {
    if (!c.write[m]) continue;
    CAPTURE(m);
    std::vector<bool> in_view(out_buffers[m].size(), false);
    size_t e = 0, bad = 0;
    ForEachIndex(c.out_shape, [&](const std::vector<int64_t>& idx) {
      const size_t o = static_cast<size_t>(OffsetOf(c.out[m], idx));
      in_view[o] = true;
      const T got = out_buffers[m][o], want = c.reference[m][e++];
      const bool ok = exact ? SameBits(got, want) : Close(got, want);
      if (!ok && silent != nullptr) ++*silent;
      if (!ok && silent == nullptr && bad++ < 3) {
        FAIL_CHECK("element " << e - 1 << ": got " << got << " want " << want << " ("
                              << (IsSentinel(got) ? "never written" : "wrong value") << ")");
      }
    });
    for (size_t o = 0; o < in_view.size(); ++o) {
      if (!in_view[o] && !IsSentinel(out_buffers[m][o])) {
        if (silent != nullptr) {
          ++*silent;
          break;
        }
        FAIL_CHECK("wrote outside the destination view at buffer offset " << o);
        break;
      }
    }
  }
}

template <class T>
std::vector<std::vector<T>> FreshOutputs(const Case<T>& c) {
  std::vector<std::vector<T>> out;
  for (const auto& v : c.out) out.emplace_back(v.buffer.size(), Sentinel<T>());
  return out;
}

bool HasVectorLoop(const CudaKernelSource& src) {
  return std::any_of(src.params.begin(), src.params.end(), [](const jit::cuda::CudaParam& p) {
    return p.kind == jit::cuda::CudaParam::Kind::kVectorized;
  });
}

struct RunStats {
  int cases = 0, launches = 0, elements = 0;
  // _i32 launches of specs with the 16-byte loop: taken, or declined by the
  // launcher (odd row length, a misaligned view).
  int vector_loops = 0, vector_declined = 0;
};

// Runs every case's printed kernel on the host (both entry points, two grid
// shapes, a split launch) and the CPU backend, and checks them. `mutate`
// (the mutation check) edits every printed source first; then mismatches of
// the printed kernels are counted into `*mutant_failures` instead of failing.
template <class T>
void RunCases(std::vector<Case<T>>& cases, const std::string& tag, RunStats& stats,
              const std::function<std::string(std::string)>& mutate = nullptr,
              int* mutant_failures = nullptr) {
  const jit::Type type = sizeof(T) == 4 ? jit::Type::kF32 : jit::Type::kF64;
  std::vector<CudaKernelSource> sources;
  absl::flat_hash_set<std::string> seen;
  for (const auto& c : cases) {
    if (seen.insert(c.source.symbol).second) sources.push_back(c.source);
  }
  if (mutate) {
    for (CudaKernelSource& src : sources) src.text = mutate(src.text);
  }
  HostCudaModule module(sources, type, tag);
  MESSAGE("cuda_host " << tag << ": " << sources.size()
                       << " printed kernels compiled as host C++ in " << module.compile_seconds()
                       << " s");
  for (Case<T>& c : cases) {
    CAPTURE(c.name);
    CAPTURE(c.spec.Describe());
    ++stats.cases;
    const int elem = static_cast<int>(sizeof(T));
    // Launch shapes: (block, min_grid) -> grid = CudaGridSize(n, block, min_grid).
    struct Shape {
      int block, min_grid;
    };
    for (bool wide : {false, true}) {
      for (Shape shape : {Shape{32, 1}, Shape{128, 1 << 20}}) {
        CAPTURE(wide);
        CAPTURE(shape.block);
        std::vector<std::vector<T>> out = FreshOutputs(c);
        Args<T> a = MakeArgs(c, out);
        CudaLaunchValues v = jit::cuda::MarshalCudaLaunch(c.source.params, elem, a.args, a.rank);
        const int64_t items = wide ? v.n : v.n / v.vector_width;  // as LaunchCudaKernel sizes it
        const int64_t grid =
            std::max<int64_t>(1, jit::cuda::CudaGridSize(items, shape.block, shape.min_grid));
        module.Launch(c.source.symbol, wide, grid, shape.block, v.values);
        ++stats.launches;
        if (!wide && HasVectorLoop(c.source) && v.n > 0) {
          ++(v.vector_width > 1 ? stats.vector_loops : stats.vector_declined);
        }
        stats.elements += static_cast<int>(v.n);
        CheckOutputs(c, out, /*exact=*/true, wide ? "printed kernel _i64" : "printed kernel _i32",
                     mutant_failures);
      }
    }
    // Split along dim 0 as a launcher that shares the rows out would.
    if (c.layout.rank() >= 1 && c.layout.num_elements > 0 && c.layout.out_shape[0] >= 2) {
      std::vector<std::vector<T>> out = FreshOutputs(c);
      Args<T> a = MakeArgs(c, out);
      const int64_t rows = a.sizes[0], mid = rows / 2;
      for (auto [begin, end] : {std::pair{int64_t{0}, mid}, std::pair{mid, rows}}) {
        a.args.begin = begin;
        a.args.end = end;
        CudaLaunchValues v = jit::cuda::MarshalCudaLaunch(c.source.params, elem, a.args, a.rank);
        module.Launch(c.source.symbol, false, jit::cuda::CudaGridSize(v.n, 32, 1), 32, v.values);
        ++stats.launches;
      }
      CheckOutputs(c, out, true, "printed kernel, launch split along dim 0", mutant_failures);
    }
    if (mutate) continue;
    // The CPU backend on the same arguments.
    std::vector<std::vector<T>> cpu = FreshOutputs(c);
    Args<T> a = MakeArgs(c, cpu);
    if (c.layout.num_elements > 0) {
      jit::KernelSpec cpu_spec = c.spec;
      cpu_spec.target = jit::Target::kCpu;
      absl::StatusOr<jit::CompiledCpuKernel> k = jit::CompileCpuKernel(cpu_spec, nullptr);
      REQUIRE_MESSAGE(k.ok(), k.status().message());
      k->entry(&a.args);
    }
    CheckOutputs(c, cpu, !CallsLibm(*c.f), "CPU backend");
  }
}

// ---- case generators ----

template <class T>
Case<T> MakeCase(std::string name, std::shared_ptr<const jit::Function> f,
                 const std::vector<std::vector<int64_t>>& in_shapes,
                 const std::vector<Layout>& in_layouts, Layout out_layout) {
  Case<T> c;
  c.name = std::move(name);
  c.f = std::move(f);
  for (size_t i = 0; i < in_shapes.size(); ++i)
    c.in.push_back(MakeView<T>(in_shapes[i], in_layouts[i]));
  const std::vector<int64_t> out_shape = BroadcastShape(in_shapes);
  for (size_t m = 0; m < c.f->num_outputs(); ++m)
    c.out.push_back(MakeView<T>(out_shape, out_layout));
  return c;
}

// A random output shape of rank 0..3 (odd sizes mostly, sometimes 1 or 0)
// and per input a right-aligned shape broadcast along random dims.
std::vector<std::vector<int64_t>> RandomShapes(std::mt19937_64& rng, size_t inputs,
                                               bool allow_zero) {
  const int64_t sizes[] = {1, 2, 3, 5, 7, 9};
  const int rank = static_cast<int>(rng() % 4);
  std::vector<int64_t> full(rank);
  for (int64_t& s : full) s = sizes[rng() % 6];
  if (allow_zero && rank > 0) full[rng() % rank] = 0;
  std::vector<std::vector<int64_t>> shapes(inputs);
  for (auto& s : shapes) {
    const int r = rank == 0 ? 0 : static_cast<int>(rng() % (rank + 1));
    s.assign(full.end() - r, full.end());
    for (int64_t& d : s) {
      if (rng() % 3 == 0) d = 1;
    }
  }
  return shapes;
}

Layout RandomLayout(std::mt19937_64& rng) { return static_cast<Layout>(rng() % 3); }

template <class K>
std::shared_ptr<const jit::Function> SuitePrimal(jit::Type type) {
  std::vector<jit::Type> types(Arity<K>(), type);
  return std::make_shared<const jit::Function>(jit::Optimize(jit::Trace(K::name, K::fn, types)));
}

// Every suite kernel, forward and jvp'ed, on random shapes and views; the
// jvp'ed ones sometimes with only the values or only the partials written.
template <class T>
void AddSuiteCases(std::vector<Case<T>>& cases, std::mt19937_64& rng) {
  const jit::Type type = sizeof(T) == 4 ? jit::Type::kF32 : jit::Type::kF64;
  auto add = [&]<class K>(K) {
    constexpr size_t N = Arity<K>();
    for (int jvp = 0; jvp < 2; ++jvp) {
      std::shared_ptr<const jit::Function> f =
          jvp ? std::shared_ptr<const jit::Function>(SuiteJvp<K>(type)) : SuitePrimal<K>(type);
      std::vector<Layout> layouts(N);
      for (Layout& l : layouts) l = RandomLayout(rng);
      Case<T> c = MakeCase<T>(std::string(K::name) + (jvp ? " (values+partials)" : " (forward)"), f,
                              RandomShapes(rng, N, rng() % 8 == 0), layouts, RandomLayout(rng));
      if (jvp) {
        const size_t values = f->num_outputs() / (N + 1);  // outputs: values, then partials
        const int mask = static_cast<int>(rng() % 3);      // 0 all, 1 values only, 2 partials only
        c.write.assign(f->num_outputs(), true);
        for (size_t m = 0; m < f->num_outputs(); ++m) {
          if (mask == 1) c.write[m] = m < values;
          if (mask == 2) c.write[m] = m >= values;
        }
      }
      Prepare(c, K::domain(), rng);
      cases.push_back(std::move(c));
    }
  };
  std::apply([&](auto... k) { (add(k), ...); }, AllKernels{});
}

// Input 0 and input 1 each broadcast along every subset of two dims (16
// combinations, so every operand is stretched in every position), plus rank 0.
template <class T>
void AddBroadcastMatrix(std::vector<Case<T>>& cases, std::mt19937_64& rng) {
  const jit::Type type = sizeof(T) == 4 ? jit::Type::kF32 : jit::Type::kF64;
  auto f = SuiteJvp<BranchOnIntermediate>(type);
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) {
      std::vector<int64_t> sa = {a & 2 ? 1 : 5, a & 1 ? 1 : 7};
      std::vector<int64_t> sb = {b & 2 ? 1 : 5, b & 1 ? 1 : 7};
      Case<T> c = MakeCase<T>("broadcast matrix a" + std::to_string(a) + " b" + std::to_string(b),
                              f, {sa, sb}, {Layout::kContiguous, Layout::kTransposed},
                              b % 2 ? Layout::kStrided : Layout::kContiguous);
      Prepare(c, BranchOnIntermediate::domain(), rng);
      cases.push_back(std::move(c));
    }
  }
  // More elements than the small launch's 4 x 32 threads: the grid-stride loop goes round.
  for (Layout l : {Layout::kContiguous, Layout::kTransposed, Layout::kStrided}) {
    Case<T> big = MakeCase<T>("grid-stride", f, {{13, 17}, {13, 1}}, {l, Layout::kContiguous}, l);
    Prepare(big, BranchOnIntermediate::domain(), rng);
    cases.push_back(std::move(big));
  }
  // Rows of 16 and 48 elements: the launcher's 16-byte loop (HM-LSTM's rows and
  // columns layouts: input 1 broadcast along the rows or along the columns),
  // looping, split along dim 0, and declined for a misaligned input or output.
  for (const std::vector<int64_t>& sb : {std::vector<int64_t>{13, 1}, std::vector<int64_t>{1, 16}}) {
    for (Layout l : {Layout::kContiguous, Layout::kShifted}) {
      Case<T> rows = MakeCase<T>("16-byte rows", f, {{13, 16}, sb}, {l, Layout::kContiguous},
                                 Layout::kContiguous);
      Prepare(rows, BranchOnIntermediate::domain(), rng);
      cases.push_back(std::move(rows));
    }
  }
  Case<T> long_rows = MakeCase<T>("16-byte rows, grid-stride", f, {{12, 48}, {12, 1}},
                                  {Layout::kContiguous, Layout::kContiguous}, Layout::kShifted);
  Prepare(long_rows, BranchOnIntermediate::domain(), rng);
  cases.push_back(std::move(long_rows));
  Case<T> long_rows_aligned = MakeCase<T>("16-byte rows, grid-stride", f, {{12, 48}, {12, 1}},
                                          {Layout::kContiguous, Layout::kContiguous},
                                          Layout::kContiguous);
  Prepare(long_rows_aligned, BranchOnIntermediate::domain(), rng);
  cases.push_back(std::move(long_rows_aligned));
  // The middle dim broadcast in input 1 only: no two dims merge, the merged rank is 3 (the
  // random cases reach it only by chance).
  Case<T> rank3 = MakeCase<T>("merged rank 3", f, {{3, 4, 5}, {3, 1, 5}},
                              {Layout::kContiguous, Layout::kStrided}, Layout::kContiguous);
  Prepare(rank3, BranchOnIntermediate::domain(), rng);
  cases.push_back(std::move(rank3));
  Case<T> scalar = MakeCase<T>("rank 0", f, {{}, {}}, {Layout::kContiguous, Layout::kContiguous},
                               Layout::kContiguous);
  Prepare(scalar, BranchOnIntermediate::domain(), rng);
  cases.push_back(std::move(scalar));
}

// Random branchy kernels (extended ops), forward and jvp'ed.
template <class T, int N, int M>
void AddRandomCase(std::vector<Case<T>>& cases, std::mt19937_64& rng, int index) {
  const jit::Type type = sizeof(T) == 4 ? jit::Type::kF32 : jit::Type::kF64;
  Tree tree = GrowTree(
      rng, GrowOptions{
               .num_inputs = N, .num_outputs = M, .depth = 5, .max_ifs = 4, .extended_ops = true});
  TreeKernel<N, M> fn{std::make_shared<const Tree>(tree)};
  std::vector<jit::Type> types(N, type);
  const jit::Function primal =
      jit::Optimize(jit::Trace("random" + std::to_string(index), fn, types));
  std::vector<int> wrt(N);
  std::iota(wrt.begin(), wrt.end(), 0);
  const bool jvp = index % 2 == 1;
  auto f = std::make_shared<const jit::Function>(jvp ? jit::Optimize(jit::Jvp(primal, wrt).function)
                                                     : primal);
  std::vector<Layout> layouts(N);
  for (Layout& l : layouts) l = RandomLayout(rng);
  Case<T> c = MakeCase<T>(
      "random kernel " + std::to_string(index) + (jvp ? " (jvp)" : "") + ":\n" + ToCpp(tree), f,
      RandomShapes(rng, N, false), layouts, RandomLayout(rng));
  Prepare(c, std::vector<Domain>(N, Domain{-2, 2}), rng);
  cases.push_back(std::move(c));
}

template <class T>
void AddRandomCases(std::vector<Case<T>>& cases, std::mt19937_64& rng) {
  int k = 0;
  for (int rep = 0; rep < 3; ++rep) {
    AddRandomCase<T, 1, 1>(cases, rng, k++);
    AddRandomCase<T, 2, 1>(cases, rng, k++);
    AddRandomCase<T, 3, 2>(cases, rng, k++);
    AddRandomCase<T, 4, 1>(cases, rng, k++);
  }
}

template <class T>
void RunAll(uint64_t seed, const std::string& tag) {
  MESSAGE(
      "cuda_host: executes the CUDA C that the CUDA printer writes, compiled as host C++ "
      "(tests the printed code, not a GPU)");
  std::mt19937_64 rng(seed);
  std::vector<Case<T>> cases;
  AddSuiteCases(cases, rng);
  AddBroadcastMatrix(cases, rng);
  AddRandomCases(cases, rng);
  // What the cases cover (asserted, so a generator change cannot silently drop a kind).
  int strided_inner = 0, rank0 = 0, empty = 0, masked = 0, looping = 0, multi_output = 0,
      max_rank = 0;
  for (const auto& c : cases) {
    strided_inner += !c.spec.inner_contiguous;
    rank0 += c.layout.rank() == 0;
    empty += c.layout.num_elements == 0;
    masked += std::count(c.write.begin(), c.write.end(), false) > 0;
    looping += c.layout.num_elements > 4 * 32;
    multi_output += c.f->num_outputs() > 1;
    max_rank = std::max(max_rank, c.layout.rank());
  }
  MESSAGE("cuda_host " << tag << " coverage: " << strided_inner << " non-unit inner strides, "
                       << rank0 << " rank 0, " << empty << " size 0, " << masked
                       << " write masks, " << looping << " grid-stride loops, " << multi_output
                       << " multi-output, merged rank up to " << max_rank);
  CHECK(strided_inner > 0);
  CHECK(rank0 > 0);
  CHECK(empty > 0);
  CHECK(masked > 0);
  CHECK(looping > 0);
  CHECK(multi_output > 0);
  CHECK(max_rank >= 3);
  RunStats stats;
  RunCases(cases, tag, stats);
  MESSAGE("cuda_host " << tag << ": " << stats.cases << " cases, " << stats.launches
                       << " host launches, " << stats.elements << " elements checked, "
                       << stats.vector_loops << " through the 16-byte loop, "
                       << stats.vector_declined << " declined by the launcher");
  CHECK(stats.cases == static_cast<int>(cases.size()));
  CHECK(stats.vector_loops > 0);
  CHECK(stats.vector_declined > 0);
}

TEST_CASE(
    "cuda_host: printed CUDA kernels run as host C++ match the interpreter bitwise and the CPU "
    "backend (f32)") {
  RunAll<float>(20261123, "f32");
}

TEST_CASE(
    "cuda_host: printed CUDA kernels run as host C++ match the interpreter bitwise and the CPU "
    "backend (f64)") {
  RunAll<double>(20261124, "f64");
}

// The harness can fail: small deliberate bugs in the printed source (the
// kinds a printer change could make) must each be caught.
TEST_CASE("cuda_host: the harness catches wrong printed code (mutation check)") {
  struct Mutation {
    const char* what;
    std::string from, to;
  };
  const std::vector<Mutation> mutations = {
      {"grid-stride step one too far (elements skipped)", "idx += step", "idx += step + 1"},
      {"inner and outer index swapped", "const I i0 = rem;", "const I i0 = rem % 2;"},
      {"log1p(x) rewritten as log(1 + x) (ulp differences)", "log1pf(", "logf(1.0f + "},
      {"comparison reversed", " > ", " < "},
      {"16-byte loop: lanes stored out of order", "out0_lane[0], out0_lane[1]",
       "out0_lane[1], out0_lane[0]"},
      {"16-byte loop: grid-stride step one group too far", "group += step", "group += step + 1"},
  };
  for (const Mutation& mutation : mutations) {
    CAPTURE(std::string(mutation.what));
    std::mt19937_64 rng(7);
    std::vector<Case<float>> cases;
    {
      auto f = SuiteJvp<ExpLog>(jit::Type::kF32);
      // 13 x 17 > 4 blocks x 32 threads: the grid-stride loop goes round.
      Case<float> c =
          MakeCase<float>("exp_log", f, {{13, 17}}, {Layout::kContiguous}, Layout::kContiguous);
      Prepare(c, ExpLog::domain(), rng);
      cases.push_back(std::move(c));
      auto g = SuiteJvp<Nested3>(jit::Type::kF32);
      Case<float> d = MakeCase<float>(
          "nested3", g, {{7, 9}, {9}, {7, 1}},
          {Layout::kContiguous, Layout::kContiguous, Layout::kContiguous}, Layout::kContiguous);
      Prepare(d, Nested3::domain(), rng);
      cases.push_back(std::move(d));
      // Rows of 48 floats: the 16-byte loop, 144 groups > 4 blocks x 32 threads.
      Case<float> e =
          MakeCase<float>("exp_log_rows", f, {{12, 48}}, {Layout::kContiguous}, Layout::kContiguous);
      Prepare(e, ExpLog::domain(), rng);
      cases.push_back(std::move(e));
    }
    int failures = 0, applied = 0;
    RunStats stats;
    RunCases<float>(
        cases, "mutant", stats,
        [&](std::string text) {
          for (size_t at = text.find(mutation.from); at != std::string::npos;
               at = text.find(mutation.from, at + mutation.to.size())) {
            text.replace(at, mutation.from.size(), mutation.to);
            ++applied;
          }
          return text;
        },
        &failures);
    CHECK(applied > 0);
    CHECK(failures > 0);
  }
}

}  // namespace
}  // namespace dualcast::testing
