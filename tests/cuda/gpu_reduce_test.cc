// GPU: reduced/accumulating Execute outputs, matmul through cuBLAS and the tape's reverse sweep on cuda:0, against the CPU; skipped, visibly, without a GPU.
//
// Reduced sums on the GPU add in double in another order than the CPU (warp
// lanes, a shuffle tree, splits), so they are compared within a relative
// 1e-5 (f32) / 1e-12 (f64) of the CPU's; two GPU runs must agree BITWISE
// (the order depends on the sizes only). cuBLAS gemm: relative 1e-4 (f32, k
// up to 300 products) / 1e-12 (f64) of OpenBLAS. Without a GPU, only the
// error paths run: cuBLAS without a driver is kDevice "no CUDA device".
#include <doctest/doctest.h>
#include <dlfcn.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda/cuda_test_support.h"
#include "dualcast/dualcast.hpp"
#include "dualcast/detail/execute.hpp"
#include "jit/error.h"
#include "jit/codegen/broadcast_layout.h"
#include "jit/ir/ir.h"
#include "jit/stats.h"
#include "runtime/one_pass.h"

#ifdef DUALCAST_HAVE_NVRTC
#include "jit/cuda/cublas_api.h"
#include "jit/cuda/driver.h"
#endif

namespace dualcast::testing {
namespace {

using Shape = std::vector<int64_t>;

template <class T>
void CheckNear(const std::vector<T>& got, const std::vector<T>& want, double rel,
               const std::string& what) {
  CAPTURE(what);
  REQUIRE(got.size() == want.size());
  int bad = 0;
  for (size_t e = 0; e < got.size(); ++e) {
    const double scale = std::max(1.0, std::fabs(static_cast<double>(want[e])));
    if (!(std::fabs(static_cast<double>(got[e]) - want[e]) <= rel * scale) && bad++ < 3) {
      FAIL_CHECK("element " << e << ": got " << got[e] << " want " << want[e]);
    }
  }
}

template <class T>
std::vector<T> Host(const Array<T>& a) {
  return a.to(Device::cpu()).to_vector();
}

// f(x, y, z) = (x * y + z, exp(x) - z): two outputs with two reduce patterns in one kernel.
template <class T>
std::shared_ptr<const jit::Function> TwoOutputs() {
  const jit::Type t = sizeof(T) == 4 ? jit::Type::kF32 : jit::Type::kF64;
  return std::make_shared<const jit::Function>(jit::Trace(
      "gpu_reduce",
      [](auto x, auto y, auto z) {
        using namespace dualcast::math;
        return std::tuple{x * y + z, exp(x) - z};
      },
      std::vector<jit::Type>(3, t)));
}

template <class T>
void ReducedOnGpu() {
  const Device gpu = Device::cuda();
  const double rel = sizeof(T) == 4 ? 1e-5 : 1e-12;
  auto fn = TwoOutputs<T>();
  struct Case {
    Shape full, x, y, z, out0, out1;
  };
  const std::vector<Case> cases = {
      {{3000}, {3000}, {1}, {3000}, {1}, {3000}},                       // total sum, 3 splits
      {{40000}, {40000}, {40000}, {1}, {1}, {1}},                       // > 16 splits: block finish
      {{67, 129}, {67, 1}, {1, 129}, {67, 129}, {67, 1}, {1, 129}},     // row and column sums
      {{5, 7, 9}, {5, 1, 9}, {7, 1}, {5, 7, 9}, {1, 7, 1}, {5, 1, 9}},  // middle and outer axes
      {{0, 9}, {0, 9}, {1, 9}, {1}, {1, 9}, {0, 9}},                    // a sum over nothing
  };
  for (const Case& c : cases) {
    CAPTURE(jit::FormatShape(c.full));
    for (bool acc : {false, true}) {
      CAPTURE(acc);
      std::vector<Array<T>> cpu = {Array<T>::uniform(c.x, 1, -1, 1), Array<T>::uniform(c.y, 2, -1, 1),
                                   Array<T>::uniform(c.z, 3, -1, 1)};
      auto run = [&](const Device& device) {
        std::vector<std::shared_ptr<detail::ArrayImpl>> in;
        for (const auto& a : cpu) in.push_back(a.to(device).impl());
        detail::ExecuteOptions o;
        o.output_shapes = {c.out0, c.out1};
        o.iteration_shape = c.full;
        if (acc) {
          o.destinations = {Array<T>::uniform(c.out0, 4, -1, 1).to(device).impl(),
                            Array<T>::uniform(c.out1, 5, -1, 1).to(device).impl()};
          o.accumulate = {true, false};
        }
        std::vector<std::shared_ptr<detail::ArrayImpl>> outs =
            detail::Execute("gpu_reduce", fn, in, o);
        return std::vector<std::vector<T>>{Host(Array<T>(outs[0])), Host(Array<T>(outs[1]))};
      };
      const auto want = run(Device::cpu());
      const auto got = run(gpu), again = run(gpu);
      for (int m = 0; m < 2; ++m) {
        CheckNear(got[m], want[m], rel, "output " + std::to_string(m) + " vs the CPU");
        CHECK_MESSAGE(got[m] == again[m], "two GPU runs differ (not deterministic)");
      }
    }
  }
}

TEST_CASE("GPU: reduced and accumulating Execute outputs match the CPU and are deterministic") {
  DC_REQUIRE_GPU();
  ReducedOnGpu<float>();
  ReducedOnGpu<double>();
}

template <class T>
void MatmulOnGpu() {
  const Device gpu = Device::cuda();
  const double rel = sizeof(T) == 4 ? 1e-4 : 1e-12;
  for (auto [m, k, n] : {std::tuple{5, 7, 3}, std::tuple{64, 300, 33}, std::tuple{1, 1, 1},
                         std::tuple{4, 0, 6}}) {
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(n);
    Array<T> a = Array<T>::uniform({m, k}, 11, -1, 1), b = Array<T>::uniform({k, n}, 12, -1, 1);
    Array<T> bt = Array<T>::uniform({n, k}, 13, -1, 1);
    CheckNear(Host(matmul(a.to(gpu), b.to(gpu))), matmul(a, b).to_vector(), rel, "a b");
    // A transposed view goes to cuBLAS with op T, no copy.
    CheckNear(Host(matmul(a.to(gpu), bt.to(gpu).transpose())), matmul(a, bt.transpose()).to_vector(),
              rel, "a btᵀ");
  }
}

TEST_CASE("GPU: matmul on CUDA arrays through cuBLAS matches OpenBLAS (f32, f64, transposed views)") {
  DC_REQUIRE_GPU();
  MatmulOnGpu<float>();
  MatmulOnGpu<double>();
}

template <class T>
void TapeOnGpu() {
  const Device gpu = Device::cuda();
  const double rel = sizeof(T) == 4 ? 1e-4 : 1e-11;
  const int64_t n = 67;
  Kernel cell = kernel("gpu_tape_cell", [](auto z, auto c, auto f, auto i, auto g) {
    using namespace dualcast::math;
    if (z == 1) return sigmoid(i) * tanh(g);
    return sigmoid(f) * c + sigmoid(i) * tanh(g);
  });
  std::vector<T> zv(n);
  for (int64_t r = 0; r < n; ++r) zv[r] = static_cast<T>(r % 3 == 0);
  std::vector<Array<T>> host = {Array<T>::from(zv, {n, 1}), Array<T>::uniform({n, n}, 1, -2, 2),
                                Array<T>::uniform({n, n}, 2, -3, 3), Array<T>::uniform({1, n}, 3, -3, 3),
                                Array<T>::uniform({n, n}, 4, -3, 3)};
  Array<T> w = Array<T>::uniform({n, 5}, 5, -1, 1), cbar = Array<T>::uniform({n, n}, 6, -1, 1);
  auto grads = [&](const Device& device) {
    std::vector<Array<T>> x;
    for (const auto& a : host) x.push_back(a.to(device));
    Array<T> wd = w.to(device), cb = cbar.to(device);
    Tape tape;
    Array<T> c = broadcast(cell, x[0], x[1], x[2], x[3], x[4]);
    // A fused cell, a weighted sum, and a matmul: every kind of node on the sweep.
    Array<T> loss = sum(c * cb) + sum(matmul(c, wd));
    std::vector<Array<T>> g = tape.gradient(loss, x);
    std::vector<std::vector<T>> out;
    for (const auto& a : g) out.push_back(Host(a));
    return out;
  };
  const auto want = grads(Device::cpu()), got = grads(gpu);
  for (size_t j = 0; j < want.size(); ++j) {
    CheckNear(got[j], want[j], rel, "gradient of input " + std::to_string(j));
  }
}

TEST_CASE("GPU: Tape::gradient over CUDA arrays (fused cell, sums, matmul) matches the CPU") {
  DC_REQUIRE_GPU();
  TapeOnGpu<float>();
  TapeOnGpu<double>();
}

// Calls of the named driver entry points so far, from the emulated driver's
// counters (tests/cuda_host/emulated/fake_cuda.cc); -1 on a real driver.
long DriverCalls(std::initializer_list<const char*> names) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto* calls = lib ? reinterpret_cast<long (*)(const char*)>(dlsym(lib, "dualcast_fake_cuda_calls"))
                    : nullptr;
  if (calls == nullptr) return -1;
  long total = 0;
  for (const char* name : names) total += calls(name);
  return total;
}

// A training step must queue its work and return: a wait for the device in
// every step (a number operand copied over and synchronised, say) serialises
// the host with the GPU, and at small sizes the step then costs the sum of both.
TEST_CASE("GPU: a repeated tape step on CUDA arrays never waits for the device") {
  DC_REQUIRE_GPU();
  const Shape nn = {16, 16};
  std::vector<float> v(256);
  for (size_t e = 0; e < v.size(); ++e) v[e] = static_cast<float>(std::cos(0.3 * e));
  auto x = Array<float>::from(v, nn, Device::cuda(0));
  auto w = Array<float>::from(v, nn, Device::cuda(0));
  auto unused = Array<float>::from(v, nn, Device::cuda(0));  // its zero gradient is filled on the device
  auto step = [&] {
    Tape tape;
    Array<float> y = broadcast(kernel("step_cell", [](auto a, auto b) { return a * b + 0.5 * a; }), x, w);
    return tape.gradient(mean(y * 2.0 + 1.0), {x, w, unused}, GradientOptions{.allow_unused = true});
  };
  std::vector<Array<float>> first = step();
  const std::initializer_list<const char*> waits = {"cuStreamSynchronize", "cuCtxSynchronize",
                                                     "cuMemcpyDtoHAsync_v2", "cuMemcpyHtoDAsync_v2"};
  const long before = DriverCalls(waits);
  std::vector<Array<float>> again;
  for (int k = 0; k < 3; ++k) again = step();
  const long after = DriverCalls(waits);
  // The gradients are right: d/dx mean(2(xw + x/2) + 1) = (2w + 1)/N, d/dw = 2x/N.
  const std::vector<float> gx = Host(again[0]), gw = Host(again[1]);
  for (size_t e = 0; e < v.size(); ++e) {
    CHECK(gx[e] == doctest::Approx((2 * v[e] + 1) / 256.0).epsilon(1e-5));
    CHECK(gw[e] == doctest::Approx(2 * v[e] / 256.0).epsilon(1e-5));
  }
  for (float u : Host(again[2])) CHECK(u == 0.0f);
  if (before < 0) {
    MESSAGE("driver call counts need the emulated driver (ctest cuda_host_emulated_gpu); values checked");
    return;
  }
  CHECK_MESSAGE(after == before, "3 steps waited for the device or copied through the host "
                                     << after - before << " times");
}

// Reductions of a pending operand join the kernel that produces it on the GPU
// as on the CPU (no stored operand, no second pass), and a loss still pending
// takes the one-pass gradient: one generated kernel for the value and every
// gradient. Values against the CPU; two GPU runs bitwise equal.
template <class T>
void FusedReductionsOnGpu() {
  const Shape shape = {33, 70};
  std::vector<T> xv(33 * 70), wv(33 * 70);
  for (size_t e = 0; e < xv.size(); ++e) {
    xv[e] = static_cast<T>(std::sin(0.11 * e) * 1.5);
    wv[e] = static_cast<T>(0.5 + 0.25 * std::cos(0.07 * e));
  }
  const double rel = sizeof(T) == 4 ? 2e-5 : 1e-12;
  const Kernel k = kernel("fused_red_cell", [](auto x, auto w) {
    if (x > 0) return x * w + 0.25;
    return w - x * x;
  });
  using Fn = Array<T> (*)(const Array<T>&);
  const std::vector<std::pair<const char*, Fn>> ops = {
      {"sum", [](const Array<T>& y) { return sum(y); }},
      {"sum axis 0", [](const Array<T>& y) { return sum(y, {0}); }},
      {"mean axis 1 keepdims", [](const Array<T>& y) { return mean(y, {1}, true); }},
      {"max axis 1", [](const Array<T>& y) { return max(y, {1}); }},
      {"prod axis 0", [](const Array<T>& y) { return prod(y, {0}); }},
      {"logsumexp axis 1", [](const Array<T>& y) { return logsumexp(y, {1}); }},
  };
  for (const auto& [name, op] : ops) {
    CAPTURE(name);
    std::vector<std::vector<T>> got;
    for (Device d : {Device::cpu(), Device::cuda(0), Device::cuda(0)}) {
      Array<T> y = broadcast(k, Array<T>::from(xv, shape, d), Array<T>::from(wv, shape, d));
      REQUIRE(y.is_pending());
      got.push_back(Host(op(y)));
    }
    CheckNear(got[1], got[0], rel, std::string(name) + " on the GPU vs the CPU");
    CHECK_MESSAGE(got[1] == got[2], "two GPU runs differ (not deterministic)");
  }
  // The one-pass gradient of a pending loss, on the GPU, against the CPU's.
  std::vector<std::vector<T>> grads[2];
  for (int g = 0; g < 2; ++g) {
    const Device d = g == 0 ? Device::cpu() : Device::cuda(0);
    auto x = Array<T>::from(xv, shape, d), w = Array<T>::from(wv, shape, d);
    const int64_t one_pass_before = detail::OnePassGradients();
    Tape tape;
    std::vector<Array<T>> dg = tape.gradient(mean(broadcast(k, x, w) * w), {x, w});
    CHECK_MESSAGE(detail::OnePassGradients() == one_pass_before + 1,
                  "the pending loss did not take the one-pass gradient on " << d.name());
    for (const Array<T>& a : dg) grads[g].push_back(Host(a));
  }
  CheckNear(grads[1][0], grads[0][0], rel, "one-pass d/dx on the GPU vs the CPU");
  CheckNear(grads[1][1], grads[0][1], rel, "one-pass d/dw on the GPU vs the CPU");
}

TEST_CASE("GPU: reductions of pending operands join their producer, and a pending loss takes one pass") {
  DC_REQUIRE_GPU();
  FusedReductionsOnGpu<float>();
  FusedReductionsOnGpu<double>();
}

// accumulate_gradient with a buffer on another device than its input: an
// Error naming the call and the buffer, before anything is written; CUDA
// launches show in the JIT counters like CPU launches.
TEST_CASE("GPU: accumulate_gradient into a buffer on the wrong device, and CUDA launches in the stats") {
  DC_REQUIRE_GPU();
  std::vector<float> v = {1, 2, 3, 4};
  auto x = Array<float>::from(v, {2, 2}, Device::cuda(0));
  auto host_buffer = Array<float>::full({2, 2}, 7.0f);
  Tape tape;
  Array<float> loss = sum(x * x);
  try {
    tape.accumulate_gradient(loss, {x}, {host_buffer});
    FAIL("no error for a cpu buffer of a cuda:0 input");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kDevice);
    const std::string what = e.what();
    CHECK_MESSAGE(what.find("Tape::accumulate_gradient") != std::string::npos, what);
    CHECK_MESSAGE(what.find("grads[0]") != std::string::npos, what);
    CHECK_MESSAGE(what.find("cuda:0") != std::string::npos, what);
  }
  for (float b : host_buffer.to_vector()) CHECK(b == 7.0f);
  jit::ResetStats();
  (void)Host(Array<float>(x * 3.0f + 1.0f));
  CHECK(jit::GetStats().launches >= 1);
  CHECK(jit::GetStats().elements >= 4);
}

// max, min, prod, logsumexp, var, norm and their gradients on cuda:0 against
// the same calls on the CPU (generated kernels on both: the reduction order
// differs, so within rel; max/min exactly).
template <class T>
void ArrayReductionsOnGpu() {
  const Shape shape = {37, 45};
  std::vector<T> v(37 * 45);
  for (size_t e = 0; e < v.size(); ++e) v[e] = static_cast<T>(std::sin(0.37 * e) * (1 + e % 3) * 0.6);
  v[100] = v[101];  // a tie in row 2
  v[200] = 0;       // a zero for prod's rule
  const double rel = sizeof(T) == 4 ? 2e-5 : 1e-12;
  using Fn = Array<T> (*)(const Array<T>&);
  const std::vector<std::pair<const char*, Fn>> ops = {
      {"max", [](const Array<T>& a) { return max(a, {1}); }},
      {"min", [](const Array<T>& a) { return min(a, {0}, true); }},
      {"prod", [](const Array<T>& a) { return prod(a * 0.5 + 1.0, {0}); }},
      {"logsumexp", [](const Array<T>& a) { return logsumexp(a, {1}); }},
      {"var", [](const Array<T>& a) { return var(a, {0}); }},
      {"norm", [](const Array<T>& a) { return norm(a, {1}, true); }},
  };
  for (const auto& [name, op] : ops) {
    CAPTURE(name);
    std::vector<std::vector<T>> results, grads;
    for (Device d : {Device::cpu(), Device::cuda(0)}) {
      auto x = Array<T>::from(v, shape, d);
      Tape tape;
      Array<T> r = op(x);
      results.push_back(Host(r));
      grads.push_back(Host(tape.gradient(sum(r * r), {x})[0]));
    }
    CheckNear(results[1], results[0], rel, std::string(name) + " value");
    CheckNear(grads[1], grads[0], 10 * rel, std::string(name) + " gradient");
  }
}

TEST_CASE("GPU: max, min, prod, logsumexp, var, norm and their gradients match the CPU") {
  DC_REQUIRE_GPU();
  ArrayReductionsOnGpu<float>();
  ArrayReductionsOnGpu<double>();
}

// A mean on the GPU is its double total divided by the count in the finish
// kernel, rounded once, as on the CPU (mean_rounding_test.cc): before, the
// total was rounded to the element type first, so a float32 mean of 3e38s
// was inf and mean(ones(49)) in double was 0.99999999999999989.
template <class T>
void MeansOnGpu() {
  const Device gpu = Device::cuda(0);
  for (int n : {1, 41, 49, 98, 4097}) {
    CAPTURE(n);
    const auto ones = Array<T>::ones({n}, gpu);
    CHECK(Host(mean(ones))[0] == T(1));
    CHECK(Host(mean(ones * T(1)))[0] == T(1));  // fused into the producer
    const auto rows = Array<T>::ones({3, n}, gpu);
    for (T m : Host(mean(rows, {1}))) CHECK(m == T(1));
    for (T m : Host(mean(rows + T(0), {0}))) CHECK(m == T(1));
  }
  if constexpr (sizeof(T) == 4) {
    const auto big = Array<float>::full({4}, 3e38f, gpu);
    CHECK(Host(mean(big))[0] == 3e38f);
    CHECK(std::isinf(Host(sum(big))[0]));  // the sum itself overflows
  }
  CHECK(std::isnan(Host(mean(Array<T>::zeros({0}, gpu)))[0]));  // 0 / 0, as NumPy
  // Through a tape: the loss value and d mean / d x_i = 1/n.
  const int n = 49;
  const auto x = Array<T>::full({n}, T(2), gpu);
  Tape tape;
  auto [value, grads] = tape.value_and_gradient(mean(x * x), {x});
  CHECK(Host(value)[0] == T(4));
  for (T g : Host(grads[0])) CHECK(g == static_cast<T>(4.0 / n));
}

TEST_CASE("GPU: means are divided before their one rounding, as on the CPU") {
  DC_REQUIRE_GPU();
  MeansOnGpu<float>();
  MeansOnGpu<double>();
}

// slice's gradient scattered into zeros made on the CPU, so it failed on
// CUDA arrays ("add_into: destination ... is on cpu"); concat and stack
// refused CUDA arrays with a message about the reverse sweep; item(), at()
// and assign() refused them naming Array::data. All now run where the
// arrays live, against hand values.
template <class T>
void JoinsAndElementAccessOnGpu() {
  const Device gpu = Device::cuda(0);
  const auto x = Array<T>::from({1, 2, 3, 4}, {4}, gpu);
  {
    Tape tape;
    auto g = tape.gradient(sum(slice(x, {{0, 2}}) * slice(x, {{0, 2}})), {x});
    CHECK(g[0].device() == gpu);
    CHECK(Host(g[0]) == std::vector<T>{2, 4, 0, 0});
  }
  const auto y = Array<T>::from({10, 20, 30, 40}, {4}, gpu);
  const Array<T> c = concat(std::vector<Array<T>>{x, y}, 0);
  CHECK(c.device() == gpu);
  CHECK(Host(c) == std::vector<T>{1, 2, 3, 4, 10, 20, 30, 40});
  const Array<T> st = stack(std::vector<Array<T>>{x, y}, -1);
  CHECK(st.shape() == Shape{4, 2});
  CHECK(Host(st) == std::vector<T>{1, 10, 2, 20, 3, 30, 4, 40});
  {
    Tape tape;
    const auto w = Array<T>::from({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, gpu);
    auto g = tape.gradient(sum(stack(std::vector<Array<T>>{x, y}, -1) * w), {x, y});
    CHECK(Host(g[0]) == std::vector<T>{1, 3, 5, 7});
    CHECK(Host(g[1]) == std::vector<T>{2, 4, 6, 8});
  }
  const auto on_cpu = Array<T>::from({5}, {1});
  CHECK_THROWS_WITH_AS(concat(std::vector<Array<T>>{x, on_cpu}, 0),
                       doctest::Contains("concat: array 2 is on cpu but array 1 is on cuda:0"), Error);
  // Element reads copy the element; assign copies the values there.
  CHECK(sum(x).item() == T(10));
  const auto m = Array<T>::from({1, 2, 3, 4, 5, 6}, {2, 3}, gpu);
  CHECK(m.at({1, 2}) == T(6));
  CHECK(m.transpose().at({2, 0}) == T(3));
  Array<T> z = Array<T>::zeros({2, 3}, gpu);
  const Array<T> pending = z + T(1);  // reads z's old values
  z.transpose().assign({1, 2, 3, 4, 5, 6});
  CHECK(Host(z) == std::vector<T>{1, 3, 5, 2, 4, 6});
  CHECK(Host(pending) == std::vector<T>(6, T(1)));
  CHECK_THROWS_WITH_AS(z.mutable_data(), doctest::Contains("Array::mutable_data: the array lives on cuda:0"),
                       Error);
}

TEST_CASE("GPU: slice gradients, concat, stack, item, at and assign on CUDA arrays") {
  DC_REQUIRE_GPU();
  JoinsAndElementAccessOnGpu<float>();
  JoinsAndElementAccessOnGpu<double>();
}

// copy() used to be from(to_vector()): a CUDA array went to the host and
// back. It is a copy kernel on the device now (a copying reshape is too), and
// str() prints from one host copy; values and the tape's copy node as on the CPU.
template <class T>
void CopiesOnGpu() {
  const Device gpu = Device::cuda(0);
  const std::vector<T> v = {1, 2, 3, 4, 5, 6};
  auto x = Array<T>::from(v, {2, 3}, gpu);
  auto t = x.transpose();  // a strided view on the device
  Array<T> c = t.copy();
  CHECK(c.device() == gpu);
  CHECK(c.strides() == Shape{2, 1});
  CHECK(Host(c) == std::vector<T>{1, 4, 2, 5, 3, 6});
  Array<T> same = x.copy();  // contiguous
  CHECK(same.device() == gpu);
  CHECK(Host(same) == v);
  CHECK(Host(t.reshape({6})) == std::vector<T>{1, 4, 2, 5, 3, 6});
  CHECK(t.str() == std::string("array([[1, 4],\n       [2, 5],\n       [3, 6]], dtype=") +
                       (sizeof(T) == 4 ? "float32" : "float64") + ", device=cuda:0)");
  Tape tape;
  auto w = Array<T>::from({1, 10, 100, 1000, 10000, 100000}, {3, 2}, gpu);
  auto g = tape.gradient(sum(x.transpose().copy() * w), {x});
  CHECK(g[0].device() == gpu);
  CHECK(Host(g[0]) == std::vector<T>{1, 100, 10000, 10, 1000, 100000});
}

TEST_CASE("GPU: copy(), a copying reshape and str() of CUDA arrays (strided views too) stay on the device") {
  DC_REQUIRE_GPU();
  CopiesOnGpu<float>();
  CopiesOnGpu<double>();
}

#ifdef DUALCAST_HAVE_NVRTC
TEST_CASE("cuBLAS is loaded at run time: without a GPU a device gemm is kDevice with the reason") {
  const absl::Status& blas = jit::cuda::CublasStatus();
  MESSAGE("cuBLAS: " << (blas.ok() ? std::string("loaded") : std::string(blas.message())));
  if (!blas.ok()) CHECK(std::string(blas.message()).find("cuBLAS") != std::string::npos);
  if (jit::cuda::DriverStatus().ok()) {
    MESSAGE("a GPU is present: the error path needs a machine without one");
    return;
  }
  absl::Status s = jit::cuda::CublasGemm(0, false, {}, {}, 2, 2, 2, 0, 2);
  CHECK(!s.ok());
  CHECK(std::string(s.message()).find("no CUDA device") != std::string::npos);
  // And a CUDA array (hence a CUDA matmul or gradient) cannot even be made: kDevice, same reason.
  try {
    (void)Array<float>::zeros({2, 2}, Device::cuda());
    FAIL("a CUDA array was created without a device");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kDevice);
    CHECK(std::string(e.what()).find("no CUDA device") != std::string::npos);
  }
}
#endif

}  // namespace
}  // namespace dualcast::testing
