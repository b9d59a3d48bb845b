// RawCudaKernel: NVRTC, cuModuleLoadData and cuLaunchKernel for a hand-written kernel (see raw_kernel.h).
#include "jit/cuda/raw_kernel.h"

#include "absl/strings/str_cat.h"
#include "jit/cuda/driver.h"
#include "jit/cuda/driver_api.h"
#include "jit/cuda/nvrtc_compile.h"

namespace dualcast::jit::cuda {

absl::StatusOr<std::unique_ptr<RawCudaKernel>> RawCudaKernel::Compile(int ordinal,
                                                                      const std::string& source,
                                                                      const std::string& entry) {
  if (absl::Status s = MakeCurrent(ordinal); !s.ok()) return s;
  absl::StatusOr<DeviceInfo> info = GetDeviceInfo(ordinal);
  if (!info.ok()) return info.status();
  absl::StatusOr<NvrtcImage> image =
      NvrtcCompile(source, entry, TargetForDevice(info->major, info->minor));
  if (!image.ok()) return image.status();
  const DriverApi& cu = *LoadedDriver();  // MakeCurrent succeeded: there is one
  const std::string where = absl::StrCat("hand-written kernel '", entry, "' on cuda:", ordinal);
  std::unique_ptr<RawCudaKernel> kernel(new RawCudaKernel);
  kernel->ordinal_ = ordinal;
  kernel->entry_ = entry;
  CUmodule module = nullptr;
  DC_RETURN_IF_CU_ERROR(cu.cuModuleLoadData(&module, image->bytes.data()), "cuModuleLoadData",
                        where);
  kernel->module_ = module;
  CUfunction function = nullptr;
  DC_RETURN_IF_CU_ERROR(cu.cuModuleGetFunction(&function, module, entry.c_str()),
                        "cuModuleGetFunction", where);
  kernel->function_ = function;
  return kernel;
}

RawCudaKernel::~RawCudaKernel() {
  if (module_ == nullptr) return;
  if (const DriverApi* cu = LoadedDriver()) cu->cuModuleUnload(static_cast<CUmodule>(module_));
}

absl::Status RawCudaKernel::Launch(int64_t grid, int block, std::vector<uint64_t> params) const {
  if (absl::Status s = MakeCurrent(ordinal_); !s.ok()) return s;
  absl::StatusOr<void*> stream = DeviceStream(ordinal_);
  if (!stream.ok()) return stream.status();
  std::vector<void*> pointers;
  for (uint64_t& p : params) pointers.push_back(&p);
  return CheckCu(LoadedDriver()->cuLaunchKernel(
                     static_cast<CUfunction>(function_), static_cast<unsigned>(grid), 1, 1,
                     static_cast<unsigned>(block), 1, 1, 0, static_cast<CUstream>(*stream),
                     pointers.data(), nullptr),
                 "cuLaunchKernel",
                 absl::StrCat("hand-written kernel '", entry_, "' on cuda:", ordinal_));
}

}  // namespace dualcast::jit::cuda
