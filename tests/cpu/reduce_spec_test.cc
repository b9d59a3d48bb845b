// Tests of reduced/accumulating outputs at the jit level: KernelSpec key/validation and LaunchCpu(spec) against the interpreter.
//
// A branchy three-output function runs over hand-made merged layouts (sizes
// and strides computed here) with each output reduced along a different set
// of merged dims; the expected sums are the interpreter's per-element values
// added in double, written by this test.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "jit/codegen/kernel_spec.h"
#include "jit/cpu/cpu_backend.h"
#include "jit/cpu/interleave.h"
#include "jit/cpu/launch.h"
#include "jit/cuda/cuda_kernel.h"
#include "jit/error.h"
#include "jit/ir/hash.h"
#include "jit/ir/interpret.h"
#include "jit/ir/ir.h"

namespace dualcast::jit {
namespace {

// Three outputs through nested ifs (libm-free, so values are exact per element).
std::shared_ptr<Function> Branchy(Type t) {
  auto f = std::make_shared<Function>("reduce_branchy");
  Builder b(*f);
  ValueId a = b.Input(t), c = b.Input(t);
  b.BeginIf(b.Emit(Op::kGt, {a, b.Const(t, 0)}));
  b.BeginElse({b.Mul(a, c), b.Sub(c, a)});
  auto r = b.EndIf({b.Add(a, c), b.Mul(c, c)});
  b.Return({r[0], r[1], b.Add(a, b.Const(t, 1))});
  return f;
}

KernelSpec SpecFor(std::shared_ptr<Function> f, Type t, int rank, std::vector<uint32_t> bcast,
                   std::vector<uint32_t> reduce, std::vector<bool> accumulate) {
  KernelSpec spec;
  spec.function_hash = StructuralHash(*f);
  spec.function = std::move(f);
  spec.dtype = t;
  spec.rank = rank;
  spec.input_broadcast = std::move(bcast);
  spec.write.assign(3, true);
  spec.output_reduce = std::move(reduce);
  spec.accumulate = std::move(accumulate);
  return spec;
}

TEST_CASE("reduce bits and accumulate flags are part of the key, the description and validation") {
  auto f = Branchy(Type::kF32);
  KernelSpec plain = SpecFor(f, Type::kF32, 2, {0, 0}, {}, {});
  KernelSpec rows = SpecFor(f, Type::kF32, 2, {0, 0}, {0b10, 0, 0}, {});
  KernelSpec cols = SpecFor(f, Type::kF32, 2, {0, 0}, {0b01, 0, 0}, {});
  KernelSpec acc = SpecFor(f, Type::kF32, 2, {0, 0}, {0b01, 0, 0}, {false, true, false});
  KernelSpec zeros = SpecFor(f, Type::kF32, 2, {0, 0}, {0, 0, 0}, {false, false, false});
  CHECK(plain.Key() != rows.Key());
  CHECK(rows.Key() != cols.Key());
  CHECK(cols.Key() != acc.Key());
  CHECK(plain.Key() == zeros.Key());  // all-zero masks are no reduction: same kernel
  CHECK(rows.Describe().find("reduce [01,00,00] acc") != std::string::npos);
  CHECK(plain.Describe().find("reduce [") == std::string::npos);

  KernelSpec high = SpecFor(f, Type::kF32, 2, {0, 0}, {0b100, 0, 0}, {});
  CHECK(!high.Validate("cpu").ok());
  CHECK(std::string(high.Validate("cpu").message()).find("reduce_branchy") != std::string::npos);
  KernelSpec unwritten = acc;
  unwritten.write = {true, false, true};
  CHECK(!unwritten.Validate("cpu").ok());
  KernelSpec wrong_count = SpecFor(f, Type::kF32, 2, {0, 0}, {0, 0}, {});
  CHECK(!wrong_count.Validate("cpu").ok());
}

// (The CUDA source writer generates these specs; tests/cuda_host/reduce_test.cc runs its output.)
TEST_CASE("the CUDA source writer accepts reduced or accumulating outputs") {
  auto f = Branchy(Type::kF32);
  KernelSpec plain = SpecFor(f, Type::kF32, 2, {0, 0}, {}, {});
  plain.target = Target::kCuda;
  REQUIRE(cuda::BuildCudaKernelSource(plain).ok());
  CHECK(!cuda::BuildCudaKernelSource(plain)->has_finish);
  KernelSpec reduced = SpecFor(f, Type::kF32, 2, {0, 0}, {0b01, 0, 0}, {});
  KernelSpec accumulated = SpecFor(f, Type::kF32, 2, {0, 0}, {}, {false, false, true});
  reduced.target = accumulated.target = Target::kCuda;
  absl::StatusOr<cuda::CudaKernelSource> r = cuda::BuildCudaKernelSource(reduced);
  absl::StatusOr<cuda::CudaKernelSource> a = cuda::BuildCudaKernelSource(accumulated);
  REQUIRE(r.ok());
  REQUIRE(a.ok());
  CHECK(r->has_finish);   // a reduced output: partials, then <symbol>_fin
  CHECK(!a->has_finish);  // accumulating only: dest = dest + value in the one kernel
}

template <class T>
std::vector<std::vector<T>> RunReduced(const std::vector<int64_t>& sizes, std::vector<uint32_t> bcast,
                                      std::vector<uint32_t> reduce, std::vector<bool> accumulate,
                                      std::vector<ReduceOp> ops = {},
                                      std::shared_ptr<Function> function = nullptr) {
  const Type t = std::is_same_v<T, float> ? Type::kF32 : Type::kF64;
  const int rank = static_cast<int>(sizes.size());
  auto f = function != nullptr ? function : Branchy(t);
  KernelSpec spec = SpecFor(f, t, rank, bcast, reduce, accumulate);
  spec.hints = f->hints;
  spec.output_reduce_op = ops;
  CAPTURE(spec.Describe());
  absl::StatusOr<CompiledCpuKernel> k = CompileCpuKernel(spec, nullptr);
  REQUIRE_MESSAGE(k.ok(), k.status().ToString());

  // Inputs: contiguous over their non-broadcast dims.
  std::vector<std::vector<T>> in(2);
  std::vector<int64_t> in_strides(2 * rank + 1, 0);
  for (int i = 0; i < 2; ++i) {
    int64_t step = 1;
    for (int d = rank; d-- > 0;) {
      if ((bcast[i] >> d) & 1u) continue;
      in_strides[i * rank + d] = step;
      step *= sizes[d];
    }
    in[i].resize(static_cast<size_t>(step));
    for (int64_t e = 0; e < step; ++e) in[i][e] = static_cast<T>(std::sin(0.3 * e + i) * 2);
  }
  // Outputs: a reduced one is stored contiguous over its kept dims.
  std::vector<std::vector<T>> out(3), before(3);
  std::vector<ReducedDestination> dests(3);
  std::vector<int64_t> out_strides(3 * rank + 1, 0);
  for (int m = 0; m < 3; ++m) {
    int64_t step = 1;
    std::vector<int64_t> kept_shape;
    for (int d = rank; d-- > 0;) {
      if ((reduce[m] >> d) & 1u) continue;
      out_strides[m * rank + d] = step;
      step *= sizes[d];
    }
    for (int d = 0; d < rank; ++d) {
      if (!((reduce[m] >> d) & 1u)) kept_shape.push_back(sizes[d]);
    }
    out[m].assign(static_cast<size_t>(step), T(0.25) * static_cast<T>(m + 1));
    before[m] = out[m];
    std::vector<int64_t> kept_strides(kept_shape.size());
    int64_t s = 1;
    for (size_t d = kept_shape.size(); d-- > 0;) {
      kept_strides[d] = s;
      s *= kept_shape[d];
    }
    dests[m] = {out[m].data(), kept_shape, kept_strides};
  }
  const void* in_ptrs[2] = {in[0].data(), in[1].data()};
  void* out_ptrs[3] = {out[0].data(), out[1].data(), out[2].data()};
  std::vector<int64_t> sz = sizes;
  sz.push_back(1);
  KernelArgs args{sz.data(), in_ptrs, in_strides.data(), out_ptrs, out_strides.data(), 0, sz[0]};
  LaunchCpu(k->entry, args, spec, dests);

  // Reference: the interpreter per element, combined in double in element
  // order (ReduceCombine; sums by default).
  std::vector<std::vector<double>> sums(3);
  for (int m = 0; m < 3; ++m) sums[m].assign(out[m].size(), ReduceIdentity(spec.reduce_op(m)));
  int64_t total = 1;
  for (int64_t s : sizes) total *= s;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rest = flat;
    for (int d = rank; d-- > 0;) {
      idx[d] = rest % sizes[d];
      rest /= sizes[d];
    }
    double x[2];
    for (int i = 0; i < 2; ++i) {
      int64_t off = 0;
      for (int d = 0; d < rank; ++d) off += idx[d] * in_strides[i * rank + d];
      x[i] = in[i][off];
    }
    std::vector<double> y = Interpret(*f, x);
    for (int m = 0; m < 3; ++m) {
      int64_t off = 0;
      for (int d = 0; d < rank; ++d) off += idx[d] * out_strides[m * rank + d];
      sums[m][off] = ReduceCombine(spec.reduce_op(m), sums[m][off], y[m]);
    }
  }
  const double tol = t == Type::kF32 ? 2e-6 : 1e-13;
  for (int m = 0; m < 3; ++m) {
    for (size_t e = 0; e < out[m].size(); ++e) {
      double want = static_cast<T>(sums[m][e]);
      if (!accumulate.empty() && accumulate[m]) want = static_cast<T>(before[m][e] + static_cast<T>(want));
      const double got = out[m][e];
      if (!(std::fabs(got - want) <= tol * (1 + std::fabs(want)))) {
        FAIL_CHECK("output " << m << " element " << e << ": got " << got << ", want " << want);
        break;
      }
    }
  }
  return out;
}

TEST_CASE("LaunchCpu(spec): reduced along inner, outer, middle and all merged dims, vs the interpreter") {
  // rank 1: a total sum split into fixed chunks; rank 2/3: every output a different pattern.
  RunReduced<float>({100003}, {0, 0}, {0b1, 0b1, 0}, {false, true, false});
  RunReduced<double>({100003}, {0, 0}, {0b1, 0, 0b1}, {});
  RunReduced<float>({37, 1029}, {0b01, 0}, {0b10, 0b01, 0b11}, {true, false, false});
  RunReduced<double>({700, 61}, {0, 0b10}, {0b01, 0b10, 0}, {false, false, true});
  RunReduced<float>({5, 33, 9}, {0b010, 0b101}, {0b010, 0b101, 0b111}, {false, true, true});
  RunReduced<double>({3, 1, 17}, {0, 0}, {0b100, 0b001, 0}, {});
  // Column sums only (no output summed along the inner dim): rows added in blocks.
  RunReduced<float>({203, 45}, {0, 0b10}, {0b01, 0, 0b01}, {false, true, false});
  RunReduced<double>({4, 11, 70}, {0b001, 0}, {0b010, 0b011, 0}, {true, false, false});
}

TEST_CASE("LaunchCpu(spec): max, min and product reductions along every pattern, vs the interpreter") {
  using enum ReduceOp;
  // Max and min are exact whatever the order; products of values in [-2, 2]
  // stay finite over these lengths.
  RunReduced<float>({100003}, {0, 0}, {0b1, 0b1, 0b1}, {}, {kMax, kMin, kMax});
  RunReduced<double>({37, 1029}, {0b01, 0}, {0b10, 0b01, 0b11}, {}, {kMin, kMax, kMin});
  RunReduced<float>({5, 33, 9}, {0b010, 0b101}, {0b010, 0b101, 0b111}, {}, {kMax, kMin, kSum});
  RunReduced<double>({203, 45}, {0, 0b10}, {0b01, 0, 0b01}, {false, true, false}, {kMin, kSum, kMax});
  RunReduced<double>({3, 1, 17}, {0, 0}, {0b100, 0b001, 0}, {}, {kProd, kProd, kSum});
  RunReduced<float>({7, 13}, {0, 0b01}, {0b10, 0b01, 0b11}, {}, {kProd, kProd, kProd});
}

// Three outputs of a long chain of dependent steps (libm-free), through an if:
// the CPU backend runs several host vectors per step for it (interleave.h).
std::shared_ptr<Function> LongChain(Type t, int vector_width) {
  auto f = std::make_shared<Function>("reduce_long_chain");
  f->hints.vector_width = vector_width;
  Builder b(*f);
  ValueId a = b.Input(t);
  const ValueId c = b.Input(t);
  for (int k = 0; k < 40; ++k) a = b.Add(b.Mul(a, b.Const(t, 0.75)), c);
  b.BeginIf(b.Emit(Op::kGt, {a, b.Const(t, 0)}));
  ValueId p = a, q = a;
  for (int k = 0; k < 10; ++k) p = b.Sub(b.Mul(p, b.Const(t, 0.5)), c);
  b.BeginElse({p});
  for (int k = 0; k < 10; ++k) q = b.Add(b.Mul(q, b.Const(t, 0.25)), c);
  const ValueId r = b.EndIf({q})[0];
  b.Return({r, b.Mul(r, c), b.Add(a, b.Const(t, 1))});
  return f;
}

template <class T>
void CheckInterleavedReductions(const std::vector<int64_t>& sizes, std::vector<uint32_t> bcast,
                                std::vector<uint32_t> reduce, std::vector<ReduceOp> ops) {
  const Type t = std::is_same_v<T, float> ? Type::kF32 : Type::kF64;
  auto interleaved = LongChain(t, 0);
  REQUIRE(cpu::InterleaveFactor(*interleaved) == 4);  // or nothing here is interleaved
  const auto got = RunReduced<T>(sizes, bcast, reduce, {}, ops, interleaved);
  const auto want = RunReduced<T>(sizes, bcast, reduce, {}, ops, LongChain(t, cpu::HostLanes(t)));
  for (int m = 0; m < 3; ++m) {
    CAPTURE(m);
    REQUIRE(got[m].size() == want[m].size());
    CHECK(std::memcmp(got[m].data(), want[m].data(), got[m].size() * sizeof(T)) == 0);
  }
}

TEST_CASE("a long chain's reductions run interleaved with the bits of one host vector per step") {
  using enum ReduceOp;
  // Rows with a tail, rows shorter than a host vector, and a long rank-1 sum;
  // every output reduced along a different pattern, sums, max, min and products.
  CheckInterleavedReductions<float>({37, 1029}, {0b01, 0}, {0b10, 0b01, 0b11}, {kSum, kSum, kSum});
  CheckInterleavedReductions<double>({700, 61}, {0, 0b10}, {0b01, 0b10, 0}, {kSum, kMax, kSum});
  CheckInterleavedReductions<float>({5, 33, 9}, {0b010, 0b101}, {0b010, 0b101, 0b111}, {kMin, kSum, kMax});
  CheckInterleavedReductions<double>({100003}, {0, 0}, {0b1, 0b1, 0b1}, {kSum, kMax, kMin});
  CheckInterleavedReductions<float>({9, 3}, {0, 0b10}, {0b01, 0b10, 0b11}, {kSum, kMax, kProd});
}

TEST_CASE("max and min reductions let a NaN through wherever it sits; the op is in the key") {
  using enum ReduceOp;
  const double nan = std::nan("");
  CHECK(std::isnan(ReduceCombine(kMax, 1.0, nan)));
  CHECK(std::isnan(ReduceCombine(kMax, nan, 1.0)));
  CHECK(std::isnan(ReduceCombine(kMin, nan, -HUGE_VAL)));
  CHECK(ReduceCombine(kMax, ReduceIdentity(kMax), -HUGE_VAL) == -HUGE_VAL);
  CHECK(ReduceCombine(kMin, 3.0, 2.0) == 2.0);
  CHECK(ReduceCombine(kProd, ReduceIdentity(kProd), 5.0) == 5.0);
  auto f = Branchy(Type::kF64);
  KernelSpec a = SpecFor(f, Type::kF64, 1, {0, 0}, {1, 0, 0}, {});
  KernelSpec b = a;
  b.output_reduce_op = {kMax, kSum, kSum};
  KernelSpec c = a;
  c.output_reduce_op = {kSum, kSum, kSum};  // all sums: the same key as none given
  CHECK(a.Key() != b.Key());
  CHECK(a.Key() == c.Key());
  CHECK(b.Describe().find("out0 max") != std::string::npos);
  KernelSpec bad = a;
  bad.output_reduce_op = {kSum, kMax, kSum};  // output 1 is not reduced
  CHECK_FALSE(bad.Validate("cpu").ok());
  // A NaN element inside a row, in a vector lane and in the tail: max is NaN.
  std::vector<double> x(37, 1.0);
  x[20] = nan;
  std::vector<double> y(37, 0.5);
  KernelSpec spec = SpecFor(f, Type::kF64, 1, {0, 0}, {1, 1, 1}, {});
  spec.output_reduce_op = {kMax, kMin, kMax};
  absl::StatusOr<CompiledCpuKernel> k = CompileCpuKernel(spec, nullptr);
  REQUIRE_MESSAGE(k.ok(), k.status().ToString());
  double out[3] = {0, 0, 0};
  std::vector<ReducedDestination> dests = {{&out[0], {}, {}}, {&out[1], {}, {}}, {&out[2], {}, {}}};
  int64_t sizes[2] = {37, 1}, in_strides[3] = {1, 1, 0}, out_strides[4] = {0, 0, 0, 0};
  const void* in_ptrs[2] = {x.data(), y.data()};
  void* out_ptrs[3] = {&out[0], &out[1], &out[2]};
  KernelArgs args{sizes, in_ptrs, in_strides, out_ptrs, out_strides, 0, 37};
  LaunchCpu(k->entry, args, spec, dests);
  // a > 0 yields (a c, c - a), else (a + c, c c); a = 1 except the NaN.
  CHECK(std::isnan(out[0]));  // a + c at the NaN
  CHECK(std::isnan(out[2]));  // a + 1 at the NaN
  CHECK(out[1] == -0.5);      // min(c - a = -0.5 ..., c c = 0.25 at the NaN): no NaN read
}

}  // namespace
}  // namespace dualcast::jit
