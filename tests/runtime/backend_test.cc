// Tests of the Backend seam: which backend a device gets, the CPU backend's pieces against plain references, the CUDA backend's errors without a GPU.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dualcast/dualcast.hpp"
#include "jit/error.h"
#include "runtime/backend.h"
#include "runtime/grad_kernels.h"

namespace dualcast::detail {
namespace {

TEST_CASE("BackendFor: the CPU backend for the host, the CUDA one for cuda:i") {
  CHECK(std::string(BackendFor(Device::cpu()).name()) == "cpu");
  CHECK(BackendFor(Device::cpu()).target() == jit::Target::kCpu);
  CHECK(&BackendFor(Device::cpu()) == &CpuBackend());
  CHECK(std::string(BackendFor(Device::cuda(0)).name()) == "cuda");
  CHECK(BackendFor(Device::cuda(1)).target() == jit::Target::kCuda);
  CHECK(&BackendFor(Device::cuda(3)) == &CudaBackend());
  CHECK(BackendFor(Device::cpu()).UnavailableReason(Device::cpu()).empty());
  // The device's own answer is the backend's.
  CHECK(Device::cuda(0).unavailable_reason() ==
        BackendFor(Device::cuda(0)).UnavailableReason(Device::cuda(0)));
}

TEST_CASE("CPU backend: a strided transfer gathers, zeros fill any strides, Gemm matches a loop") {
  Backend& cpu = CpuBackend();
  // A (3, 4) array viewed transposed: (4, 3) with strides (1, 4).
  std::shared_ptr<ArrayImpl> a = NewArray(DType::kF64, {3, 4}, Device::cpu());
  for (int i = 0; i < 12; ++i) static_cast<double*>(a->data())[i] = 1.5 * i - 4;
  std::shared_ptr<ArrayImpl> t = ViewOf(*a, {4, 3}, {1, 4});
  std::shared_ptr<ArrayImpl> copy = cpu.Transfer(*t, Device::cpu());
  REQUIRE(copy->shape == std::vector<int64_t>{4, 3});
  CHECK(copy->contiguous());
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 3; ++c) {
      CHECK(static_cast<const double*>(copy->data())[r * 3 + c] ==
            static_cast<const double*>(a->data())[c * 4 + r]);
    }
  }
  // Gemm: (4, 3) view times the (3, 4) array, against a triple loop.
  std::shared_ptr<ArrayImpl> p = cpu.Gemm(t, a);
  REQUIRE(p->shape == std::vector<int64_t>{4, 4});
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      double want = 0;
      for (int k = 0; k < 3; ++k) {
        want += static_cast<const double*>(a->data())[k * 4 + i] *
                static_cast<const double*>(a->data())[k * 4 + j];
      }
      CHECK(static_cast<const double*>(p->data())[i * 4 + j] == doctest::Approx(want).epsilon(1e-14));
    }
  }
  cpu.StoreZeros(t);  // every element of the strided view, i.e. all of `a`
  for (int i = 0; i < 12; ++i) CHECK(static_cast<const double*>(a->data())[i] == 0.0);
}

TEST_CASE("CUDA backend without a GPU: every call says there is no CUDA device, nothing allocated") {
  if (Device::cuda(0).available()) {
    MESSAGE("a CUDA device is present: the no-device errors are not reachable here");
    return;
  }
  Backend& cuda = CudaBackend();
  CHECK_FALSE(cuda.UnavailableReason(Device::cuda(0)).empty());
  auto expect_no_device = [](auto&& call, const std::string& names) {
    try {
      call();
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kDevice);
      const std::string what = e.what();
      CHECK_MESSAGE(what.find("no CUDA device") != std::string::npos, what);
      CHECK_MESSAGE(what.find(names) != std::string::npos, what);
    }
  };
  expect_no_device([&] { cuda.Allocate(64, Device::cuda(0)); }, "cuda:0");
  std::shared_ptr<ArrayImpl> host = NewArray(DType::kF32, {2, 2}, Device::cpu());
  expect_no_device([&] { cuda.Transfer(*host, Device::cuda(0)); }, "cuda:0");
  // The public road to the same place: a clear error, the host array intact.
  static_cast<float*>(host->data())[0] = 7.0f;
  auto x = Array<float>::from({1, 2, 3, 4}, {2, 2});
  expect_no_device([&] { (void)x.to(Device::cuda(0)); }, "cuda:0");
  CHECK(x.to_vector() == std::vector<float>{1, 2, 3, 4});
}

}  // namespace
}  // namespace dualcast::detail
