// BackendFor, and the CPU backend: host memory, LLVM kernels through the kernel cache, BLAS.
#include "runtime/backend.h"

#include "absl/status/statusor.h"
#include "jit/codegen/disk_cache.h"
#include "jit/cpu/cpu_backend.h"
#include "jit/error.h"
#include "runtime/grad_kernels.h"

namespace dualcast::detail {
namespace {

class Cpu final : public Backend {
 public:
  const char* name() const override { return "cpu"; }
  jit::Target target() const override { return jit::Target::kCpu; }
  std::string UnavailableReason(const Device&) const override { return ""; }

  std::shared_ptr<Storage> Allocate(size_t bytes, Device) override { return CpuAllocate(bytes); }
  void Release(Storage& storage) noexcept override { CpuRelease(storage); }

  // Host to host: a contiguous copy (the other backends handle copies that
  // cross to their device).
  std::shared_ptr<ArrayImpl> Transfer(const ArrayImpl& src, Device) override { return CopyArray(src); }

  void StoreZeros(const std::shared_ptr<ArrayImpl>& dest) override { CpuStoreZeros(*dest); }

  bool SumsIntoScratch() const override { return true; }

  jit::KernelCache::Ref Run(const std::string&, const jit::KernelSpec& spec,
                            const jit::KernelArgs& args,
                            std::span<const jit::ReducedDestination> reduced, Device) override {
    absl::StatusOr<jit::KernelCache::Ref> kernel = jit::KernelCache::Global().GetOrCompile(
        spec, [&]() -> absl::StatusOr<jit::CompiledKernel> {
          absl::StatusOr<jit::CompiledCpuKernel> c =
              jit::CompileCpuKernel(spec, &jit::DiskCache::Default());
          if (!c.ok()) return c.status();
          return jit::CompiledKernel{reinterpret_cast<void*>(c->entry), c->symbol, c->compile_ms,
                                     c->from_object_store, c->code, c->already_linked};
        });
    if (!kernel.ok()) ThrowStatus(kernel.status());
    const auto entry = (*kernel)->entry_as<jit::KernelEntry>();
    jit::LaunchCpu(entry, args, spec, reduced);  // without reductions: the plain launch
    return *kernel;
  }

  std::shared_ptr<ArrayImpl> Gemm(const std::shared_ptr<ArrayImpl>& a,
                                  const std::shared_ptr<ArrayImpl>& b) override {
    return CpuGemm(a, b);
  }
};

}  // namespace

Backend& CpuBackend() {
  static Cpu cpu;
  return cpu;
}

Backend& BackendFor(const Device& device) {
  switch (device.kind()) {
    case Device::Kind::kCpu: return CpuBackend();
    case Device::Kind::kCuda: return CudaBackend();
  }
  return CpuBackend();
}

}  // namespace dualcast::detail
