// CompileCudaImage / CompileCudaKernel / LaunchCudaKernel: NVRTC images, module loading, occupancy and launches.
#include "jit/cuda/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jit/codegen/disk_cache.h"
#include "jit/cuda/driver.h"
#include "jit/cuda/driver_api.h"
#include "jit/error.h"
#include "jit/stats.h"

namespace dualcast::jit::cuda {
namespace {

std::string KernelName(const KernelSpec& spec) {
  return spec.function != nullptr ? spec.function->name : std::string("<null>");
}

absl::Status CheckLaunch(CUresult result, const CudaKernel& kernel, int64_t n, int64_t grid,
                         int block) {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  return CheckCu(result, "cuLaunchKernel",
                 absl::StrFormat("launch of %s on cuda:%d (%d elements, grid %d x block %d)",
                                 kernel.symbol, kernel.ordinal, n, grid, block));
}

}  // namespace

// The format version changes with the generated kernels' parameters (an
// image cached by an older dualcast would take the wrong arguments): v2 adds
// each reduced output's divisor.
std::string CudaObjectKey(const KernelSpec& spec, const NvrtcTarget& target) {
  return absl::StrFormat("dualcast-cuda-v2/%s/%s/%016x/%s", NvrtcVersionString(), target.Name(),
                         Fnv1a64(absl::StrJoin(NvrtcOptions(target), " ")),
                         CudaKernelSymbol(spec));
}

absl::StatusOr<CudaImage> CompileCudaImage(const KernelSpec& spec, const NvrtcTarget& target,
                                           ObjectStore* store) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<CudaKernelSource> src = BuildCudaKernelSource(spec);
  if (!src.ok()) return src.status();
  CudaImage image;
  image.target = target;
  image.symbol = src->symbol;
  image.params = src->params;
  image.output_reduce = src->output_reduce;
  image.has_finish = src->has_finish;
  const std::string key = store != nullptr ? CudaObjectKey(spec, target) : std::string();
  if (store != nullptr) {
    if (std::optional<std::string> bytes = store->Load(key); bytes && !bytes->empty()) {
      image.bytes = *std::move(bytes);
      image.from_object_store = true;
      return image;
    }
  }
  StoreReservation reservation(store, key);  // a failed compile lets other processes go on
  absl::StatusOr<NvrtcImage> compiled = NvrtcCompile(src->text, src->symbol, target);
  if (!compiled.ok()) return compiled.status();
  image.bytes = std::move(compiled->bytes);
  image.source = std::move(src->text);
  image.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  reservation.Save(image.bytes);
  return image;
}

absl::StatusOr<CompiledKernel> CompileCudaKernel(const KernelSpec& spec, ObjectStore* store,
                                                 int ordinal) {
  absl::StatusOr<DeviceInfo> info = GetDeviceInfo(ordinal);
  if (!info.ok()) return info.status();
  if (absl::Status s = MakeCurrent(ordinal); !s.ok()) return s;
  const NvrtcTarget target = TargetForDevice(info->major, info->minor);
  absl::StatusOr<CudaImage> image = CompileCudaImage(spec, target, store);
  if (!image.ok()) return image.status();

  const DriverApi& cu = *LoadedDriver();
  const std::string where = absl::StrFormat("loading kernel '%s' (%s) on cuda:%d (%s)",
                                            KernelName(spec), target.Name(), ordinal, info->name);
  CUmodule module = nullptr;
  DC_RETURN_IF_CU_ERROR(cu.cuModuleLoadData(&module, image->bytes.data()), "cuModuleLoadData",
                        where);
  auto kernel = std::make_shared<CudaKernel>();
  kernel->module = std::shared_ptr<void>(module, [](void* m) {
    if (const DriverApi* api = LoadedDriver()) api->cuModuleUnload(static_cast<CUmodule>(m));
  });
  kernel->ordinal = ordinal;
  kernel->element_bytes = spec.dtype == Type::kF32 ? 4 : 8;
  kernel->symbol = image->symbol;
  kernel->params = image->params;
  kernel->output_reduce = image->output_reduce;
  kernel->target = target;
  struct Entry {
    const char* suffix;
    void** function;
    int* block;
    int* min_grid;
  };
  for (const Entry& e : {Entry{"_i32", &kernel->function_i32, &kernel->block_i32,
                               &kernel->min_grid_i32},
                         Entry{"_i64", &kernel->function_i64, &kernel->block_i64,
                               &kernel->min_grid_i64}}) {
    const std::string name = image->symbol + e.suffix;
    CUfunction fn = nullptr;
    DC_RETURN_IF_CU_ERROR(cu.cuModuleGetFunction(&fn, module, name.c_str()),
                          "cuModuleGetFunction", where);
    DC_RETURN_IF_CU_ERROR(
        cu.cuOccupancyMaxPotentialBlockSize(e.min_grid, e.block, fn, nullptr, 0, 0),
        "cuOccupancyMaxPotentialBlockSize", where);
    *e.function = fn;
    // Reductions assign work per warp: a block must be whole warps.
    *e.block = std::max(32, *e.block / 32 * 32);
  }
  if (image->has_finish) {
    const std::string name = image->symbol + "_fin";
    CUfunction fn = nullptr;
    DC_RETURN_IF_CU_ERROR(cu.cuModuleGetFunction(&fn, module, name.c_str()),
                          "cuModuleGetFunction", where);
    kernel->function_fin = fn;
  }
  CompiledKernel out;
  out.entry = kernel.get();
  out.symbol = image->symbol;
  out.compile_ms = image->compile_ms;
  out.from_disk = image->from_object_store;
  out.owner = kernel;
  return out;
}

absl::StatusOr<std::shared_ptr<const CudaKernel>> GetCudaKernel(const KernelSpec& spec,
                                                                int ordinal) {
  if (absl::Status s = MakeCurrent(ordinal); !s.ok()) return s;
  // One cache per device: a CUfunction lives in one context, and devices may
  // differ in architecture (which the spec's key does not hold).
  static auto* caches = new std::vector<std::unique_ptr<KernelCache>>(DeviceCount());
  if (ordinal >= static_cast<int>(caches->size())) {
    return MakeStatus(ErrorKind::kDevice, absl::StrCat("no CUDA device: cuda:", ordinal,
                                                       " does not exist"));
  }
  static std::once_flag once;
  std::call_once(once, [] {
    for (auto& c : *caches) {
      c = std::make_unique<KernelCache>(
          EnvCapacity("DUALCAST_KERNEL_CACHE_MAX", kDefaultKernelCacheCapacity));
    }
  });
  absl::StatusOr<KernelCache::Ref> cached =
      (*caches)[static_cast<size_t>(ordinal)]->GetOrCompile(spec, [&] {
        return CompileCudaKernel(spec, &DiskCache::Default(), ordinal);
      });
  if (!cached.ok()) return cached.status();
  // Aliases the cache entry, which owns the module (`owner`).
  return std::shared_ptr<const CudaKernel>(*cached, (*cached)->entry_as<const CudaKernel*>());
}

absl::Status LaunchCudaKernel(const CudaKernel& kernel, const KernelArgs& args, int rank,
                              std::span<const double> divisors) {
  const bool reduced = kernel.function_fin != nullptr;
  if (reduced && rank > 0 && (args.begin != 0 || args.end != args.sizes[0])) {
    return MakeStatus(ErrorKind::kInternal,
                      absl::StrFormat("launch of %s: a kernel with reduced outputs must cover all "
                                      "of dim 0 (got rows [%d, %d) of %d)",
                                      kernel.symbol, args.begin, args.end, args.sizes[0]));
  }
  CudaReductionPlan plan;
  uint64_t scratch = 0;
  if (reduced) {
    plan = PlanCudaReduction(kernel.output_reduce, args.sizes, rank);
    plan.divisors.assign(divisors.begin(), divisors.end());
    absl::StatusOr<uint64_t> buffer =
        DeviceAlloc(kernel.ordinal, static_cast<size_t>(plan.scratch_doubles) * sizeof(double));
    if (!buffer.ok()) return buffer.status();
    scratch = *buffer;
  }
  // The scratch goes back to the cache once the launches are queued (stream-ordered reuse).
  struct ScratchGuard {
    int ordinal;
    uint64_t address;
    size_t bytes;
    ~ScratchGuard() {
      if (address != 0) DeviceFree(ordinal, address, bytes);
    }
  } guard{kernel.ordinal, scratch, static_cast<size_t>(plan.scratch_doubles) * sizeof(double)};
  CudaLaunchValues launch =
      MarshalCudaLaunch(kernel.params, kernel.element_bytes, args, rank, &plan, scratch);
  const int64_t n = launch.n;
  if (n == 0 && (!reduced || plan.max_kept == 0)) return absl::OkStatus();
  std::vector<uint64_t>& values = launch.values;
  std::vector<void*> pointers;
  for (uint64_t& v : values) pointers.push_back(&v);
  absl::StatusOr<void*> stream = DeviceStream(kernel.ordinal);
  if (!stream.ok()) return stream.status();
  auto launch_one = [&](void* fn, int64_t grid, int block) {
    return CheckLaunch(LoadedDriver()->cuLaunchKernel(
                           static_cast<CUfunction>(fn), static_cast<unsigned>(grid), 1, 1,
                           static_cast<unsigned>(block), 1, 1, 0, static_cast<CUstream>(*stream),
                           pointers.data(), nullptr),
                       kernel, n, grid, block);
  };
  const auto queued = std::chrono::steady_clock::now();
  absl::Status status = absl::OkStatus();
  if (n > 0) {
    const bool narrow = launch.narrow;
    const int block = std::max(32, narrow ? kernel.block_i32 : kernel.block_i64);
    const int64_t grid = CudaGridSize(n / launch.vector_width, block,
                                      narrow ? kernel.min_grid_i32 : kernel.min_grid_i64);
    status = launch_one(narrow ? kernel.function_i32 : kernel.function_i64, grid, block);
  }
  if (status.ok() && reduced) {
    const int64_t grid = std::max<int64_t>(
        1, std::min<int64_t>(plan.max_kept, 4 * int64_t{std::max(1, kernel.min_grid_i64)}));
    status = launch_one(kernel.function_fin, grid, kCudaFinishBlock);
  }
  // Counted like a CPU launch (FormatStats); a CUDA launch only queues the
  // kernel, so the time recorded is the host's, not the kernel's.
  if (status.ok()) {
    RecordLaunch(n, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                              queued).count());
  }
  return status;
}

}  // namespace dualcast::jit::cuda
