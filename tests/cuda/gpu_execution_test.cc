// GPU execution on cuda:0 (values, partials) against the interpreter, the CPU backend and Dual; skipped, visibly, without a GPU.
//
// These cases need a CUDA device and report "SKIPPED (needs a GPU): no CUDA
// device: ..." otherwise (the suite still passes). scripts/gpu-check runs
// them on a GPU machine. Tolerances: CUDA's math library is within a few ulp
// of correctly rounded (expf 2, powf 4, erfcf 4 ulp; double 1-2, erfc 5), and
// a partial chains several such ops, so values are compared to 16 ulp or a
// relative 1e-5 (f32) / 1e-13 (f64); pure arithmetic must agree exactly.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/cuda_test_support.h"
#include "dualcast/array.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/kernel.hpp"
#include "dualcast/partials.hpp"
#include "jit/codegen/kernel_abi.h"
#include "jit/cpu/cpu_backend.h"
#include "jit/ir/interpret.h"

#ifdef DUALCAST_HAVE_NVRTC
#include "jit/cuda/cuda_backend.h"
#include "jit/cuda/driver.h"
#endif

namespace dualcast::testing {
namespace {

template <class T>
bool Close(T got, T want) {
  if (std::isnan(want)) return std::isnan(got);
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

#ifdef DUALCAST_HAVE_NVRTC

// Runs suite kernel K (jvp'ed) on cuda:0 over a [rows, cols] space with input
// 0 broadcast along the inner dim, and compares every output element with the
// interpreter and with the CPU backend at the same inputs.
template <class K, class T>
void RunSuiteKernelOnGpu() {
  CAPTURE(std::string(K::name));
  constexpr size_t N = Arity<K>();
  const jit::Type type = sizeof(T) == 4 ? jit::Type::kF32 : jit::Type::kF64;
  auto f = SuiteJvp<K>(type);
  const int64_t rows = 37, cols = 129;  // not multiples of a warp or block
  std::vector<uint32_t> bcast(N, 0);
  bcast[0] = 0b10;
  jit::KernelSpec spec = MakeSpec(f, type, 2, bcast);
  const std::vector<Domain> domain = K::domain();
  std::mt19937_64 rng(42);
  std::vector<std::vector<T>> in(N);
  for (size_t i = 0; i < N; ++i) {
    std::uniform_real_distribution<double> u(domain[i].lo, domain[i].hi);
    in[i].resize(static_cast<size_t>(i == 0 ? rows : rows * cols));
    for (T& v : in[i]) v = static_cast<T>(domain[i].binary ? std::round(u(rng)) : u(rng));
  }
  const size_t M = f->num_outputs();
  const size_t count = static_cast<size_t>(rows * cols);
  // Device buffers.
  std::vector<uint64_t> d_in(N), d_out(M);
  for (size_t i = 0; i < N; ++i) {
    d_in[i] = jit::cuda::DeviceAlloc(0, in[i].size() * sizeof(T)).value();
    REQUIRE(jit::cuda::CopyToDevice(0, d_in[i], in[i].data(), in[i].size() * sizeof(T)).ok());
  }
  for (size_t m = 0; m < M; ++m) d_out[m] = jit::cuda::DeviceAlloc(0, count * sizeof(T)).value();
  std::vector<int64_t> sizes = {rows, cols};
  std::vector<int64_t> in_strides, out_strides;
  for (size_t i = 0; i < N; ++i) {
    in_strides.push_back(i == 0 ? 1 : cols);
    in_strides.push_back(i == 0 ? 0 : 1);
  }
  for (size_t m = 0; m < M; ++m) {
    out_strides.push_back(cols);
    out_strides.push_back(1);
  }
  std::vector<const void*> in_ptrs;
  for (uint64_t p : d_in) in_ptrs.push_back(reinterpret_cast<const void*>(p));
  std::vector<void*> out_ptrs;
  for (uint64_t p : d_out) out_ptrs.push_back(reinterpret_cast<void*>(p));
  jit::KernelArgs args{sizes.data(), in_ptrs.data(), in_strides.data(), out_ptrs.data(),
                       out_strides.data(), 0, rows};
  absl::StatusOr<std::shared_ptr<const jit::cuda::CudaKernel>> k = jit::cuda::GetCudaKernel(spec, 0);
  REQUIRE_MESSAGE(k.ok(), k.status().message());
  REQUIRE(jit::cuda::LaunchCudaKernel(**k, args, 2).ok());
  std::vector<std::vector<T>> gpu(M, std::vector<T>(count));
  for (size_t m = 0; m < M; ++m) {
    REQUIRE(jit::cuda::CopyToHost(0, gpu[m].data(), d_out[m], count * sizeof(T)).ok());
  }
  // The CPU backend on host copies of the same inputs.
  std::vector<std::vector<T>> cpu(M, std::vector<T>(count));
  std::vector<const void*> h_in;
  for (auto& v : in) h_in.push_back(v.data());
  std::vector<void*> h_out;
  for (auto& v : cpu) h_out.push_back(v.data());
  jit::KernelSpec cpu_spec = spec;
  cpu_spec.target = jit::Target::kCpu;
  absl::StatusOr<jit::CompiledCpuKernel> ck = jit::CompileCpuKernel(cpu_spec, nullptr);
  REQUIRE(ck.ok());
  jit::KernelArgs cpu_args{sizes.data(), h_in.data(), in_strides.data(), h_out.data(),
                           out_strides.data(), 0, rows};
  ck->entry(&cpu_args);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; c += 7) {
      std::vector<T> x(N);
      for (size_t i = 0; i < N; ++i) x[i] = in[i][static_cast<size_t>(i == 0 ? r : r * cols + c)];
      std::vector<T> want = jit::Interpret(*f, std::span<const T>(x));
      for (size_t m = 0; m < M; ++m) {
        const size_t e = static_cast<size_t>(r * cols + c);
        CAPTURE(m);
        CAPTURE(r);
        CAPTURE(c);
        CHECK(Close(gpu[m][e], want[m]));
        CHECK(Close(gpu[m][e], cpu[m][e]));
      }
    }
  }
  for (size_t i = 0; i < N; ++i) jit::cuda::DeviceFree(0, d_in[i], in[i].size() * sizeof(T));
  for (size_t m = 0; m < M; ++m) jit::cuda::DeviceFree(0, d_out[m], count * sizeof(T));
}

TEST_CASE("GPU: every suite kernel's values and partials match the interpreter and the CPU backend (f32, f64)") {
  DC_REQUIRE_GPU();
  std::apply([](auto... k) { (RunSuiteKernelOnGpu<decltype(k), float>(), ...); }, AllKernels{});
  std::apply([](auto... k) { (RunSuiteKernelOnGpu<decltype(k), double>(), ...); }, AllKernels{});
}

TEST_CASE("GPU: the caching allocator serves repeated steps without cuMemAlloc, newest first") {
  DC_REQUIRE_GPU();
  for (int step = 0; step < 3; ++step) {
    uint64_t a = jit::cuda::DeviceAlloc(0, 3 << 20).value();
    uint64_t b = jit::cuda::DeviceAlloc(0, 1000).value();
    jit::cuda::DeviceFree(0, a, 3 << 20);
    jit::cuda::DeviceFree(0, b, 1000);
  }
  const int64_t calls = jit::cuda::DeviceAllocCalls();
  uint64_t a = jit::cuda::DeviceAlloc(0, 3 << 20).value();
  CHECK(jit::cuda::DeviceAllocCalls() == calls);
  // Of two cached blocks of a size, the one freed last comes back first.
  uint64_t b = jit::cuda::DeviceAlloc(0, 3 << 20).value();
  jit::cuda::DeviceFree(0, a, 3 << 20);
  jit::cuda::DeviceFree(0, b, 3 << 20);
  uint64_t c = jit::cuda::DeviceAlloc(0, 3 << 20).value();
  CHECK(c == b);
  CHECK(c != a);
  jit::cuda::DeviceFree(0, c, 3 << 20);
}

#endif  // DUALCAST_HAVE_NVRTC

auto Cell = [](auto z, auto zb, auto c, auto f, auto i, auto g) {
  using namespace dualcast::math;
  if (z == 1) return sigmoid(i) * tanh(g);
  if (zb == 0) return c;
  return sigmoid(f) * c + sigmoid(i) * tanh(g);
};

template <class T>
void RuntimeOnGpu() {
  const int64_t n = 67;
  auto z = Array<T>::from(std::vector<T>(n, 0), {n, 1});
  std::vector<T> zv(n), zbv(n);
  for (int64_t r = 0; r < n; ++r) {
    zv[r] = static_cast<T>(r % 3 == 0);
    zbv[r] = static_cast<T>(r % 2);
  }
  z = Array<T>::from(zv, {n, 1});
  auto zb = Array<T>::from(zbv, {n, 1});
  auto c = Array<T>::uniform({n, n}, 1, -2, 2);
  auto f = Array<T>::uniform({n, n}, 2, -3, 3);
  auto i = Array<T>::uniform({n, n}, 3, -3, 3);
  auto g = Array<T>::uniform({1, n}, 4, -3, 3);  // broadcast along rows
  Kernel cell = kernel("hmlstm_cell", Cell);
  const Device gpu = Device::cuda();
  std::vector<Array<T>> host = {z, zb, c, f, i, g}, dev;
  for (const auto& a : host) dev.push_back(a.to(gpu));
  CHECK(dev[2].device() == gpu);
  // Round trip is exact.
  CHECK(dev[2].to(Device::cpu()).to_vector() == c.to_vector());
  // Values: a fused chain (cell then a product) on the GPU vs the CPU.
  Kernel mul = kernel("mul", [](auto a, auto b) { return a * b; });
  Array<T> y_gpu = broadcast(mul, broadcast(cell, dev[0], dev[1], dev[2], dev[3], dev[4], dev[5]), dev[2]);
  Array<T> y_cpu = broadcast(mul, broadcast(cell, z, zb, c, f, i, g), c);
  CHECK(y_gpu.device() == gpu);
  std::vector<T> yg = y_gpu.to_vector(), yc = y_cpu.to_vector();
  REQUIRE(yg.size() == yc.size());
  for (size_t e = 0; e < yg.size(); ++e) CHECK(Close(yg[e], yc[e]));
  // Partials: every dy/dx_j on the GPU vs the CPU backend.
  Partials<T> pg = partials(cell, dev), pc = partials(cell, host);
  for (int j = 0; j < 6; ++j) {
    CAPTURE(j);
    std::vector<T> a = pg.d(0, j).to_vector(), b = pc.d(0, j).to_vector();
    REQUIRE(a.size() == b.size());
    for (size_t e = 0; e < a.size(); ++e) CHECK(Close(a[e], b[e]));
  }
}

TEST_CASE("GPU runtime: arrays on cuda:0, fused broadcast values and partials match the CPU (f32, f64)") {
  DC_REQUIRE_GPU();
  RuntimeOnGpu<float>();
  RuntimeOnGpu<double>();
}

// Gradients through the tape on CUDA arrays: gpu_reduce_test.cc.

}  // namespace
}  // namespace dualcast::testing
