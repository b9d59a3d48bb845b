// The runtime's GPU path: Storage on cuda:i through the caching allocator, transfers, and Execute's launch.
#include "cuda_runtime.h"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dualcast/detail/execute.hpp"
#include "jit/error.h"
#include "jit/ir/ir.h"
#include "runtime/backend.h"
#include "runtime/grad_kernels.h"

#ifdef DUALCAST_HAVE_NVRTC
#include "jit/cuda/cublas_api.h"
#include "jit/cuda/cuda_backend.h"
#include "jit/cuda/driver.h"
#endif

namespace dualcast::detail {

#ifdef DUALCAST_HAVE_NVRTC

namespace {
// Adds what we were doing to a driver error, keeping its kind (kDevice, kMemory).
void ThrowIfBad(const absl::Status& status, const std::string& what) {
  if (status.ok()) return;
  ThrowStatus(absl::Status(status.code(), absl::StrCat(what, ": ", status.message())));
}

void RequireDevice(const Device& device, const std::string& what) {
  const std::string why = CudaUnavailableReason(device);
  if (!why.empty()) throw Error(ErrorKind::kDevice, absl::StrCat(what, ": ", why));
}

}  // namespace

std::string CudaUnavailableReason(const Device& device) {
  const absl::Status& s = jit::cuda::DriverStatus();
  if (!s.ok()) return std::string(s.message());
  if (device.index() < 0 || device.index() >= jit::cuda::DeviceCount()) {
    return absl::StrCat("no CUDA device: ", device.name(), " does not exist (",
                        jit::cuda::DeviceCount(), " device(s) present)");
  }
  return "";
}

std::shared_ptr<Storage> CudaAllocate(size_t bytes, Device device) {
  RequireDevice(device, absl::StrCat("cannot allocate ", bytes, " bytes on ", device.name()));
  absl::StatusOr<uint64_t> address = jit::cuda::DeviceAlloc(device.index(), bytes);
  if (!address.ok()) ThrowStatus(address.status());
  auto storage = std::make_shared<Storage>();
  storage->bytes = bytes;
  storage->device = device;
  storage->data = reinterpret_cast<void*>(*address);
  return storage;
}

void CudaRelease(Storage& storage) {
  jit::cuda::DeviceFree(storage.device.index(), reinterpret_cast<uint64_t>(storage.data),
                        storage.bytes);
}

std::shared_ptr<ArrayImpl> CudaTransfer(const ArrayImpl& src, Device to) {
  const std::string what = absl::StrCat("Array::to(", to.name(), ") from ", src.device.name());
  if (to.is_cuda()) RequireDevice(to, what);
  if (src.device.is_cuda()) RequireDevice(src.device, what);
  const size_t es = SizeOf(src.dtype);
  const int64_t n = src.size();
  // Gather the source's elements into a contiguous host buffer.
  std::vector<char> host(static_cast<size_t>(n) * es);
  if (src.device.is_cpu()) {
    const char* base = static_cast<const char*>(src.data());
    ForEachElement(src.shape, src.strides, [&](int64_t i, int64_t off) {
      std::memcpy(host.data() + i * es, base + off * static_cast<int64_t>(es), es);
    });
  } else if (n > 0) {
    // Copy the span the view covers, then gather on the host.
    int64_t extent = 0;
    for (size_t d = 0; d < src.shape.size(); ++d) extent += (src.shape[d] - 1) * src.strides[d];
    std::vector<char> span(static_cast<size_t>(extent + 1) * es);
    ThrowIfBad(jit::cuda::CopyToHost(src.device.index(), span.data(),
                                     reinterpret_cast<uint64_t>(src.data()), span.size()),
               what);
    ForEachElement(src.shape, src.strides, [&](int64_t i, int64_t off) {
      std::memcpy(host.data() + i * es, span.data() + off * static_cast<int64_t>(es), es);
    });
  }
  std::shared_ptr<ArrayImpl> out = NewArray(src.dtype, src.shape, to);
  if (host.empty()) return out;
  if (to.is_cpu()) {
    std::memcpy(out->data(), host.data(), host.size());
  } else {
    ThrowIfBad(jit::cuda::CopyToDevice(to.index(), reinterpret_cast<uint64_t>(out->data()),
                                       host.data(), host.size()),
               what);
    // The host buffer dies here; the driver staged pageable memory already,
    // but wait anyway so an error surfaces at this call.
    ThrowIfBad(jit::cuda::Synchronize(to.index()), what);
  }
  return out;
}

void CudaExecute(const std::string& kernel_name, const jit::KernelSpec& spec,
                 const jit::KernelArgs& args, Device device, std::span<const double> divisors) {
  RequireDevice(device, kernel_name);
  absl::StatusOr<std::shared_ptr<const jit::cuda::CudaKernel>> kernel =
      jit::cuda::GetCudaKernel(spec, device.index());
  if (!kernel.ok()) ThrowStatus(kernel.status());
  ThrowIfError(jit::cuda::LaunchCudaKernel(**kernel, args, spec.rank, divisors));
}

namespace {
// zeros(x) = 0 (x never read), one per element type.
std::shared_ptr<const jit::Function> Zeros(DType dtype) {
  auto make = [](jit::Type t) {
    auto f = std::make_shared<jit::Function>("zeros");
    jit::Builder b(*f);
    b.Input(t);
    b.Return({b.Const(t, 0)});
    return std::shared_ptr<const jit::Function>(std::move(f));
  };
  static const auto f32 = make(jit::Type::kF32);
  static const auto f64 = make(jit::Type::kF64);
  return dtype == DType::kF32 ? f32 : f64;
}

// How cuBLAS reads one operand (a contiguous copy when neither row- nor column-major).
struct DeviceOperand {
  std::shared_ptr<ArrayImpl> keep;
  jit::cuda::GemmMatrix m;
};
DeviceOperand DescribeOperand(const std::shared_ptr<ArrayImpl>& a) {
  const int64_t r = a->shape[0], c = a->shape[1], s0 = a->strides[0], s1 = a->strides[1];
  DeviceOperand op;
  op.m.address = reinterpret_cast<uint64_t>(a->data());
  if (c <= 1 || s1 == 1) {
    op.m.ld = r <= 1 ? std::max<int64_t>(c, 1) : s0;
    if (op.m.ld >= std::max<int64_t>(c, 1)) return op;
  }
  if (r <= 1 || s0 == 1) {
    op.m.transposed = true;
    op.m.ld = c <= 1 ? std::max<int64_t>(r, 1) : s1;
    if (op.m.ld >= std::max<int64_t>(r, 1)) return op;
  }
  op.keep = CopyArray(*a);  // a generated copy kernel on the device
  op.m = {reinterpret_cast<uint64_t>(op.keep->data()), std::max<int64_t>(c, 1), false};
  return op;
}
}  // namespace

std::shared_ptr<ArrayImpl> CudaGemm(const std::shared_ptr<ArrayImpl>& a,
                                    const std::shared_ptr<ArrayImpl>& b) {
  const int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
  const std::string what = absl::StrCat("matmul on ", a->device.name());
  RequireDevice(a->device, what);
  ThrowIfBad(jit::cuda::CublasStatus(), what);
  auto out = NewArray(a->dtype, {m, n}, a->device);
  if (m == 0 || n == 0) return out;
  if (k == 0) {
    ThrowIfBad(jit::cuda::FillZero(a->device.index(), reinterpret_cast<uint64_t>(out->data()),
                                   static_cast<size_t>(m * n) * SizeOf(a->dtype)),
               what);
    return out;
  }
  DeviceOperand pa = DescribeOperand(a), pb = DescribeOperand(b);
  for (int64_t s : {m, n, k, pa.m.ld, pb.m.ld}) {
    if (s > INT_MAX) {
      throw Error(ErrorKind::kShape, absl::StrCat(what, ": size or stride ", s,
                                                  " exceeds the 32-bit cuBLAS interface"));
    }
  }
  ThrowIfBad(jit::cuda::CublasGemm(a->device.index(), a->dtype == DType::kF64, pa.m, pb.m, m, n, k,
                                   reinterpret_cast<uint64_t>(out->data()), n),
             what);
  // The copies in pa/pb die here; their blocks go back to the cache, reused in stream order.
  return out;
}

void CudaStoreZeros(const std::shared_ptr<ArrayImpl>& dest) {
  if (dest->size() == 0) return;
  RequireDevice(dest->device, "storing an empty sum");
  ExecuteOptions o;
  o.destinations = {dest};
  o.iteration_shape = dest->shape;
  // zeros(x) = 0 over the destination's shape; x (a rank-0 array) is never read.
  Execute("zeros", Zeros(dest->dtype), {NewArray(dest->dtype, {}, dest->device)}, o);
}

#else  // no CUDA toolkit in this build

namespace {
[[noreturn]] void NoCuda(const std::string& what) {
  throw Error(ErrorKind::kDevice,
              absl::StrCat(what, ": no CUDA device: this build of dualcast has no CUDA backend "
                                 "(rebuild with the CUDA toolkit installed)"));
}
}  // namespace

std::string CudaUnavailableReason(const Device&) {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::StrCat("no CUDA device: the CUDA driver (libcuda.so.1) could not be loaded (",
                        why ? why : "unknown reason", ")");
  }
  dlclose(handle);
  return "no CUDA device: this build of dualcast has no CUDA backend (rebuild with the CUDA "
         "toolkit installed)";
}
std::shared_ptr<Storage> CudaAllocate(size_t, Device device) { NoCuda(device.name()); }
void CudaRelease(Storage&) {}
std::shared_ptr<ArrayImpl> CudaTransfer(const ArrayImpl&, Device to) { NoCuda(to.name()); }
void CudaExecute(const std::string& kernel_name, const jit::KernelSpec&, const jit::KernelArgs&,
                 Device, std::span<const double>) {
  NoCuda(kernel_name);
}
void CudaStoreZeros(const std::shared_ptr<ArrayImpl>& dest) { NoCuda(dest->device.name()); }
std::shared_ptr<ArrayImpl> CudaGemm(const std::shared_ptr<ArrayImpl>& a,
                                    const std::shared_ptr<ArrayImpl>&) {
  NoCuda("matmul on " + a->device.name());
}
#endif

namespace {

// The CUDA backend: thin, over the functions above (without the CUDA
// toolkit, each throws kDevice saying so).
class Cuda final : public Backend {
 public:
  const char* name() const override { return "cuda"; }
  jit::Target target() const override { return jit::Target::kCuda; }
  std::string UnavailableReason(const Device& device) const override {
    return CudaUnavailableReason(device);
  }
  std::shared_ptr<Storage> Allocate(size_t bytes, Device device) override {
    return CudaAllocate(bytes, device);
  }
  void Release(Storage& storage) noexcept override { CudaRelease(storage); }
  std::shared_ptr<ArrayImpl> Transfer(const ArrayImpl& src, Device to) override {
    return CudaTransfer(src, to);
  }
  void StoreZeros(const std::shared_ptr<ArrayImpl>& dest) override { CudaStoreZeros(dest); }
  bool SumsIntoScratch() const override { return false; }
  jit::KernelCache::Ref Run(const std::string& kernel_name, const jit::KernelSpec& spec,
                            const jit::KernelArgs& args,
                            std::span<const jit::ReducedDestination> reduced, Device device) override {
    // Sums land in their destinations, divided (a mean) before their rounding;
    // the divisors are gathered only when some output has one.
    std::vector<double> divisors;
    if (std::any_of(reduced.begin(), reduced.end(), [](const auto& r) { return r.divisor != 1; })) {
      for (const jit::ReducedDestination& r : reduced) divisors.push_back(r.divisor);
    }
    CudaExecute(kernel_name, spec, args, device, divisors);
    return nullptr;
  }
  std::shared_ptr<ArrayImpl> Gemm(const std::shared_ptr<ArrayImpl>& a,
                                  const std::shared_ptr<ArrayImpl>& b) override {
    return CudaGemm(a, b);
  }
};

}  // namespace

Backend& CudaBackend() {
  static Cuda cuda;
  return cuda;
}

}  // namespace dualcast::detail
