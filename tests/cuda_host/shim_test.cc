// Self-test of cuda_host_shim.h: hand-written kernels with shared memory, __syncthreads, warp shuffles and atomics run on the host.
//
// The reduction kernels the CUDA printer writes rely on the shim's barriers
// being real; these kernels check it against sums and lane maps computed here
// in plain C++, and check that misuse (deadlock, partial warp) is an error.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_host/host_module.h"

namespace dualcast::testing {
namespace {

using jit::cuda::CudaKernelSource;
using jit::cuda::CudaParam;
using K = CudaParam::Kind;

// A hand-written kernel over (const double* in0, double* out0, long long n).
CudaKernelSource Hand(const std::string& symbol, const std::string& body) {
  CudaKernelSource s;
  s.symbol = symbol;
  s.params = {{K::kInputPtr, 0, 0}, {K::kOutputPtr, 0, 0}, {K::kCount, 0, 0}};
  for (const char* v : {"i32", "i64"}) {
    s.text += "extern \"C\" __global__ void " + symbol + "_" + v +
              "(const double* __restrict__ in0, double* __restrict__ out0, const long long n) {\n" +
              body + "}\n";
  }
  return s;
}

std::vector<uint64_t> Values(const double* in, double* out, int64_t n) {
  return {reinterpret_cast<uint64_t>(in), reinterpret_cast<uint64_t>(out),
          static_cast<uint64_t>(n)};
}

// Block sum: each thread a grid-stride partial, warp shuffles down, warp
// partials in shared memory, warp 0 folds them; out0[block] = block's sum.
const char* kBlockSum = R"(
  __shared__ double warp_sums[32];
  double v = 0;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += in0[i];
  for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? warp_sums[lane] : 0.0;
    for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
    if (lane == 0) out0[blockIdx.x] = v;
  }
)";

TEST_CASE("cuda_host shim: a block reduction with shuffles, shared memory and __syncthreads") {
  HostCudaModule module({Hand("block_sum", kBlockSum)}, jit::Type::kF64, "shim");
  for (int block : {32, 64, 256}) {
    for (int grid : {1, 3}) {
      for (int64_t n : {0, 1, 31, 33, 1000}) {
        CAPTURE(block);
        CAPTURE(grid);
        CAPTURE(n);
        // Integers: every summation order gives the exact sum.
        std::vector<double> in(static_cast<size_t>(n) + 1);
        std::iota(in.begin(), in.end(), 1.0);
        std::vector<double> out(static_cast<size_t>(grid), -1);
        module.Launch("block_sum", false, grid, block, Values(in.data(), out.data(), n));
        // Block b's elements: i with (i / block) % grid == b.
        for (int b = 0; b < grid; ++b) {
          double want = 0;
          for (int64_t i = 0; i < n; ++i) {
            if ((i / block) % grid == b) want += in[static_cast<size_t>(i)];
          }
          CHECK(out[static_cast<size_t>(b)] == want);
        }
      }
    }
  }
}

TEST_CASE("cuda_host shim: shuffle variants move the right lanes; atomics add up") {
  // out0[t * 4 + k]: lane t's result of shfl_down 3, shfl_up 5, shfl_xor 7, shfl from lane 9.
  const char* body = R"(
  const double mine = in0[threadIdx.x];
  const unsigned t = threadIdx.x;
  out0[t * 4 + 0] = __shfl_down_sync(0xffffffffu, mine, 3);
  out0[t * 4 + 1] = __shfl_up_sync(0xffffffffu, mine, 5);
  out0[t * 4 + 2] = __shfl_xor_sync(0xffffffffu, mine, 7);
  out0[t * 4 + 3] = __shfl_sync(0xffffffffu, mine, 9);
  __shared__ unsigned counter;
  if (t == 0) counter = 0;
  __syncthreads();
  atomicAdd(&counter, t + 1);
  __syncthreads();
  if (t == 0) out0[4 * blockDim.x] = counter;
)";
  HostCudaModule module({Hand("lanes", body)}, jit::Type::kF64, "shim-lanes");
  const int block = 64;
  std::vector<double> in(block), out(4 * block + 1, -1);
  for (int t = 0; t < block; ++t) in[t] = 100.0 + t;
  module.Launch("lanes", true, 1, block, Values(in.data(), out.data(), block));
  for (int t = 0; t < block; ++t) {
    CAPTURE(t);
    const int lane = t % 32, warp = t - lane;
    CHECK(out[t * 4 + 0] == in[lane + 3 < 32 ? t + 3 : t]);
    CHECK(out[t * 4 + 1] == in[lane >= 5 ? t - 5 : t]);
    CHECK(out[t * 4 + 2] == in[warp + (lane ^ 7)]);
    CHECK(out[t * 4 + 3] == in[warp + 9]);
  }
  CHECK(out[4 * block] == block * (block + 1) / 2);
}

TEST_CASE("cuda_host shim: barrier misuse is an error, not a result") {
  // Half a warp waits at __syncwarp, the other half at __syncthreads: neither can open.
  const char* deadlock = R"(
  if (threadIdx.x < 16) __syncwarp();
  else __syncthreads();
)";
  // Half the block exits, the other half waits at __syncthreads.
  const char* exited = R"(
  if (threadIdx.x % 2 == 0) return;
  __syncthreads();
  out0[0] = 1;
)";
  // A shuffle in a warp of 16 lanes (block of 16).
  const char* partial = R"(
  out0[threadIdx.x] = __shfl_down_sync(0xffffffffu, in0[threadIdx.x], 1);
)";
  HostCudaModule module({Hand("deadlock", deadlock), Hand("exited", exited), Hand("partial", partial)},
                        jit::Type::kF64, "shim-misuse");
  std::vector<double> in(64, 1), out(64, 0);
  CHECK_THROWS_WITH_AS(module.Launch("deadlock", false, 1, 32, Values(in.data(), out.data(), 64)),
                       doctest::Contains("deadlock"), std::runtime_error);
  CHECK_THROWS_WITH_AS(module.Launch("exited", false, 1, 64, Values(in.data(), out.data(), 64)),
                       doctest::Contains("exited"), std::runtime_error);
  CHECK_THROWS_WITH_AS(module.Launch("partial", false, 1, 16, Values(in.data(), out.data(), 16)),
                       doctest::Contains("fewer than 32"), std::runtime_error);
  // The module still works after an abandoned launch.
  HostCudaModule sum({Hand("block_sum", kBlockSum)}, jit::Type::kF64, "shim-after");
  std::vector<double> one(1, 0);
  sum.Launch("block_sum", false, 1, 64, Values(in.data(), one.data(), 64));
  CHECK(one[0] == 64);
}

}  // namespace
}  // namespace dualcast::testing
