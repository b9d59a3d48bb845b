// NVRTC missing at run time: every CUDA compile is a clear kDevice error naming what was tried, and the CPU backend still works.
//
// Run by the ctest `cuda_nvrtc_missing`, which points DUALCAST_NVRTC_LIBRARY
// at a file that does not exist (NVRTC is dlopen'ed once per process, so this
// needs its own process); in the plain `cuda` run the case says it is skipped.
#include <doctest/doctest.h>

#ifdef DUALCAST_HAVE_NVRTC

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "cuda/cuda_test_support.h"
#include "jit/cpu/cpu_backend.h"
#include "jit/cuda/cuda_backend.h"
#include "jit/cuda/nvrtc_api.h"
#include "jit/cuda/nvrtc_compile.h"
#include "jit/error.h"

namespace dualcast::testing {
namespace {

TEST_CASE("NVRTC missing at run time: CUDA compiles fail with a clear error, the CPU backend works") {
  const char* lib = std::getenv("DUALCAST_NVRTC_LIBRARY");
  if (lib == nullptr || access(lib, F_OK) == 0) {
    MESSAGE("SKIPPED: needs DUALCAST_NVRTC_LIBRARY naming a missing file (ctest cuda_nvrtc_missing)");
    return;
  }
  CHECK(jit::cuda::LoadedNvrtc() == nullptr);
  CHECK(jit::cuda::NvrtcVersionString() == "NVRTC unavailable");
  CHECK(jit::cuda::NvrtcSupportedArchs().empty());
  auto f = SuiteJvp<ExpLog>(jit::Type::kF32);
  jit::KernelSpec spec = MakeSpec(f, jit::Type::kF32, 1, {});
  absl::StatusOr<jit::cuda::CudaImage> image =
      jit::cuda::CompileCudaImage(spec, {90, jit::cuda::NvrtcKind::kPtx}, nullptr);
  REQUIRE_FALSE(image.ok());
  try {
    ThrowStatus(image.status());
  } catch (const Error& e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK(e.kind() == ErrorKind::kDevice);
    CHECK(message.find("exp_log") != std::string::npos);          // the kernel
    CHECK(message.find(lib) != std::string::npos);                // what was tried
    CHECK(message.find("DUALCAST_NVRTC_LIBRARY") != std::string::npos);  // what to do
  }
  // The CPU backend does not need NVRTC.
  jit::KernelSpec cpu = spec;
  cpu.target = jit::Target::kCpu;
  absl::StatusOr<jit::CompiledCpuKernel> k = jit::CompileCpuKernel(cpu, nullptr);
  REQUIRE_MESSAGE(k.ok(), k.status().message());
  std::vector<float> x = {0.5f, 1.5f, 2.5f};
  std::vector<std::vector<float>> y(f->num_outputs(), std::vector<float>(3));
  std::vector<const void*> in = {x.data()};
  std::vector<void*> out;
  for (auto& v : y) out.push_back(v.data());
  const int64_t sizes[] = {3, 1};
  const int64_t in_strides[] = {1, 0};
  std::vector<int64_t> out_strides(f->num_outputs() + 1, 1);
  jit::KernelArgs args{sizes, in.data(), in_strides, out.data(), out_strides.data(), 0, 3};
  k->entry(&args);
  // exp(x) log(x) + expm1(x) - log1p(x) at 1.5, in float as the kernel computes it.
  const float want = std::exp(1.5f) * std::log(1.5f) + std::expm1(1.5f) - std::log1p(1.5f);
  CHECK(std::abs(y[0][1] - want) <= 4e-6f * std::abs(want));
}

}  // namespace
}  // namespace dualcast::testing

#endif  // DUALCAST_HAVE_NVRTC
