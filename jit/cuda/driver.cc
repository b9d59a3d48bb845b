// Loads libcuda.so.1 with dlopen + cuGetProcAddress, and implements contexts, streams, the caching allocator and copies.
#include "jit/cuda/driver.h"

#include <dlfcn.h>

#include <atomic>
#include <iterator>
#include <map>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jit/cuda/driver_api.h"
#include "jit/error.h"

namespace dualcast::jit::cuda {
namespace {

constexpr int kMaxDevices = 64;  // devices dualcast keeps state for

absl::Status NoDevice(const std::string& why) {
  return MakeStatus(ErrorKind::kDevice, absl::StrCat("no CUDA device: ", why));
}

struct Loaded {
  DriverApi api;
  absl::Status status;
  int device_count = 0;
  int driver_version = 0;
};

// cuGetProcAddress_v2 (CUDA >= 12): symbol, pfn, cudaVersion, flags, status out-param.
using GetProcAddressFn = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);

Loaded* Load() {
  auto* loaded = new Loaded;  // leaked: used until exit, also from destructors
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    loaded->status = NoDevice(absl::StrCat(
        "the CUDA driver library libcuda.so.1 could not be loaded (",
        why != nullptr ? why : "unknown reason",
        "); install the NVIDIA driver to use GPUs, arrays stay on the CPU meanwhile"));
    return loaded;
  }
  auto get_proc = reinterpret_cast<GetProcAddressFn>(dlsym(lib, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    loaded->status = NoDevice(
        "libcuda.so.1 has no cuGetProcAddress_v2: the NVIDIA driver is older than CUDA 12; "
        "update the driver");
    return loaded;
  }
  DriverApi& api = loaded->api;
#define DUALCAST_CU_LOAD(name)                                                             \
  {                                                                                        \
    void* fn = nullptr;                                                                    \
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;           \
    CUresult r = get_proc(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found);  \
    if (r != CUDA_SUCCESS || fn == nullptr || found != CU_GET_PROC_ADDRESS_SUCCESS) {      \
      loaded->status = NoDevice(absl::StrFormat(                                           \
          "the NVIDIA driver does not provide %s for CUDA %d.%d (cuGetProcAddress result " \
          "%d, status %d); update the driver",                                            \
          #name, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10, static_cast<int>(r),        \
          static_cast<int>(found)));                                                       \
      return loaded;                                                                       \
    }                                                                                      \
    api.name = reinterpret_cast<decltype(api.name)>(fn);                                   \
  }
  DUALCAST_CU_FUNCTIONS(DUALCAST_CU_LOAD)
#undef DUALCAST_CU_LOAD
  if (CUresult r = api.cuInit(0); r != CUDA_SUCCESS) {
    loaded->status = NoDevice(std::string(CheckCu(r, "cuInit", "driver start-up").message()));
    return loaded;
  }
  api.cuDriverGetVersion(&loaded->driver_version);
  if (CUresult r = api.cuDeviceGetCount(&loaded->device_count); r != CUDA_SUCCESS) {
    loaded->status =
        NoDevice(std::string(CheckCu(r, "cuDeviceGetCount", "driver start-up").message()));
    loaded->device_count = 0;
    return loaded;
  }
  if (loaded->device_count == 0) {
    loaded->status = NoDevice("the NVIDIA driver is loaded but reports no GPU");
  }
  return loaded;
}

const Loaded& State() {
  static const Loaded* loaded = Load();
  return *loaded;
}

// Per device: the retained primary context and dualcast's stream.
struct DeviceState {
  std::once_flag once;
  absl::Status status;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
};

DeviceState& StateOf(int ordinal) {
  static auto* states = new std::vector<DeviceState>(kMaxDevices);
  return (*states)[static_cast<size_t>(ordinal)];
}

}  // namespace

absl::Status CheckCu(CUresult result, const char* call, const std::string& context) {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  const DriverApi* api = LoadedDriver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (api != nullptr && api->cuGetErrorName != nullptr) api->cuGetErrorName(result, &name);
  if (api != nullptr && api->cuGetErrorString != nullptr) api->cuGetErrorString(result, &text);
  const ErrorKind kind =
      result == CUDA_ERROR_OUT_OF_MEMORY ? ErrorKind::kMemory : ErrorKind::kDevice;
  return MakeStatus(kind, absl::StrFormat("%s failed with %s (%d: %s) during %s", call,
                                          name != nullptr ? name : "CUresult",
                                          static_cast<int>(result),
                                          text != nullptr ? text : "no description", context));
}

const DriverApi* LoadedDriver() {
  const Loaded& s = State();
  return s.api.cuInit != nullptr && s.device_count > 0 ? &s.api : nullptr;
}

const absl::Status& DriverStatus() { return State().status; }

int DeviceCount() { return State().status.ok() ? State().device_count : 0; }

std::string DriverDescription() {
  const Loaded& s = State();
  if (!s.status.ok()) return std::string(s.status.message());
  return absl::StrFormat("CUDA driver %d.%d, %d device(s)", s.driver_version / 1000,
                         s.driver_version % 1000 / 10, s.device_count);
}

namespace {
absl::Status CheckOrdinal(int ordinal) {
  if (!DriverStatus().ok()) return DriverStatus();
  if (ordinal < 0 || ordinal >= DeviceCount() || ordinal >= kMaxDevices) {
    return MakeStatus(ErrorKind::kDevice,
                      absl::StrFormat("no CUDA device: cuda:%d does not exist (%d device(s) "
                                      "present; use Device::cuda(0..%d))",
                                      ordinal, DeviceCount(), DeviceCount() - 1));
  }
  return absl::OkStatus();
}

absl::Status InitDevice(int ordinal, DeviceState& d) {
  const DriverApi& cu = *LoadedDriver();
  const std::string where = absl::StrCat("initialisation of cuda:", ordinal);
  CUdevice device = 0;
  DC_RETURN_IF_CU_ERROR(cu.cuDeviceGet(&device, ordinal), "cuDeviceGet", where);
  DC_RETURN_IF_CU_ERROR(cu.cuDevicePrimaryCtxRetain(&d.context, device),
                        "cuDevicePrimaryCtxRetain", where);
  DC_RETURN_IF_CU_ERROR(cu.cuCtxSetCurrent(d.context), "cuCtxSetCurrent", where);
  DC_RETURN_IF_CU_ERROR(cu.cuStreamCreate(&d.stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate",
                        where);
  return absl::OkStatus();
}

// The device's state, initialised and current on this thread.
absl::StatusOr<DeviceState*> Ready(int ordinal) {
  if (absl::Status s = CheckOrdinal(ordinal); !s.ok()) return s;
  DeviceState& d = StateOf(ordinal);
  std::call_once(d.once, [&] { d.status = InitDevice(ordinal, d); });
  if (!d.status.ok()) return d.status;
  DC_RETURN_IF_CU_ERROR(LoadedDriver()->cuCtxSetCurrent(d.context), "cuCtxSetCurrent",
                        absl::StrCat("use of cuda:", ordinal));
  return &d;
}

// Free blocks per device, by rounded size.
class BlockCache {
 public:
  static BlockCache& Get() {
    static auto* cache = new BlockCache;  // leaked: frees can happen during exit
    return *cache;
  }
  static size_t Round(size_t bytes) {
    const size_t granule = bytes < (size_t{1} << 20) ? 512 : (size_t{1} << 20);
    return (bytes + granule - 1) / granule * granule;
  }
  CUdeviceptr Take(int ordinal, size_t rounded) {
    std::lock_guard<std::mutex> lock(mu_);
    // The block of this size freed last: the likeliest still in the GPU's L2.
    const auto [first, last] = free_.equal_range({ordinal, rounded});
    if (first == last) return 0;
    const auto it = std::prev(last);
    CUdeviceptr p = it->second;
    free_.erase(it);
    cached_ -= rounded;
    return p;
  }
  void Give(int ordinal, size_t rounded, CUdeviceptr p) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.emplace(std::make_pair(ordinal, rounded), p);
    cached_ += rounded;
  }
  // Frees every cached block (of one device, or all with ordinal < 0).
  void Release(int ordinal) {
    std::vector<std::pair<int, CUdeviceptr>> blocks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = free_.begin(); it != free_.end();) {
        if (ordinal >= 0 && it->first.first != ordinal) {
          ++it;
          continue;
        }
        blocks.emplace_back(it->first.first, it->second);
        cached_ -= it->first.second;
        it = free_.erase(it);
      }
    }
    for (auto [device, p] : blocks) {
      if (Ready(device).ok()) LoadedDriver()->cuMemFree(p);
    }
  }
  size_t cached() {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_;
  }
  std::atomic<int64_t> alloc_calls{0};

 private:
  std::mutex mu_;
  std::multimap<std::pair<int, size_t>, CUdeviceptr> free_;
  size_t cached_ = 0;
};

}  // namespace

absl::StatusOr<DeviceInfo> GetDeviceInfo(int ordinal) {
  if (absl::Status s = CheckOrdinal(ordinal); !s.ok()) return s;
  const DriverApi& cu = *LoadedDriver();
  const std::string where = absl::StrCat("query of cuda:", ordinal);
  CUdevice device = 0;
  DC_RETURN_IF_CU_ERROR(cu.cuDeviceGet(&device, ordinal), "cuDeviceGet", where);
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  DC_RETURN_IF_CU_ERROR(cu.cuDeviceGetName(name, sizeof(name), device), "cuDeviceGetName", where);
  info.name = name;
  DC_RETURN_IF_CU_ERROR(
      cu.cuDeviceGetAttribute(&info.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
      "cuDeviceGetAttribute", where);
  DC_RETURN_IF_CU_ERROR(
      cu.cuDeviceGetAttribute(&info.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
      "cuDeviceGetAttribute", where);
  DC_RETURN_IF_CU_ERROR(cu.cuDeviceGetAttribute(&info.multiprocessors,
                                                CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
                        "cuDeviceGetAttribute", where);
  DC_RETURN_IF_CU_ERROR(cu.cuDeviceTotalMem(&info.total_bytes, device), "cuDeviceTotalMem", where);
  return info;
}

absl::Status MakeCurrent(int ordinal) { return Ready(ordinal).status(); }

absl::StatusOr<void*> DeviceStream(int ordinal) {
  absl::StatusOr<DeviceState*> d = Ready(ordinal);
  if (!d.ok()) return d.status();
  return static_cast<void*>((*d)->stream);
}

absl::Status Synchronize(int ordinal) {
  absl::StatusOr<DeviceState*> d = Ready(ordinal);
  if (!d.ok()) return d.status();
  DC_RETURN_IF_CU_ERROR(LoadedDriver()->cuStreamSynchronize((*d)->stream), "cuStreamSynchronize",
                        absl::StrCat("synchronisation with cuda:", ordinal));
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> DeviceAlloc(int ordinal, size_t bytes) {
  if (bytes == 0) return uint64_t{0};
  absl::StatusOr<DeviceState*> d = Ready(ordinal);
  if (!d.ok()) return d.status();
  const size_t rounded = BlockCache::Round(bytes);
  if (CUdeviceptr p = BlockCache::Get().Take(ordinal, rounded)) return uint64_t{p};
  const DriverApi& cu = *LoadedDriver();
  CUdeviceptr p = 0;
  BlockCache::Get().alloc_calls++;
  CUresult r = cu.cuMemAlloc(&p, rounded);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    BlockCache::Get().Release(ordinal);  // cached blocks back to the driver, then retry once
    BlockCache::Get().alloc_calls++;
    r = cu.cuMemAlloc(&p, rounded);
  }
  if (r != CUDA_SUCCESS) {
    size_t free_bytes = 0, total_bytes = 0;
    cu.cuMemGetInfo(&free_bytes, &total_bytes);
    return CheckCu(r, "cuMemAlloc",
                   absl::StrFormat("allocation of %d bytes (%.1f MiB) on cuda:%d, which has %.1f "
                                   "MiB free of %.1f MiB; free arrays you no longer need",
                                   bytes, bytes / 1048576.0, ordinal, free_bytes / 1048576.0,
                                   total_bytes / 1048576.0));
  }
  return uint64_t{p};
}

void DeviceFree(int ordinal, uint64_t address, size_t bytes) {
  if (address == 0 || bytes == 0) return;
  BlockCache::Get().Give(ordinal, BlockCache::Round(bytes), static_cast<CUdeviceptr>(address));
}

void ReleaseCachedDeviceMemory() {
  if (LoadedDriver() != nullptr) BlockCache::Get().Release(-1);
}

size_t CachedDeviceBytes() { return BlockCache::Get().cached(); }

int64_t DeviceAllocCalls() { return BlockCache::Get().alloc_calls.load(); }

absl::Status CopyToDevice(int ordinal, uint64_t dst, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  absl::StatusOr<DeviceState*> d = Ready(ordinal);
  if (!d.ok()) return d.status();
  // From pageable memory the driver stages the bytes before returning, so
  // `src` may be freed as soon as this returns.
  DC_RETURN_IF_CU_ERROR(LoadedDriver()->cuMemcpyHtoDAsync(dst, src, bytes, (*d)->stream),
                        "cuMemcpyHtoDAsync",
                        absl::StrFormat("copy of %d bytes to cuda:%d", bytes, ordinal));
  return absl::OkStatus();
}

absl::Status CopyToHost(int ordinal, void* dst, uint64_t src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  absl::StatusOr<DeviceState*> d = Ready(ordinal);
  if (!d.ok()) return d.status();
  const std::string where = absl::StrFormat("copy of %d bytes from cuda:%d", bytes, ordinal);
  DC_RETURN_IF_CU_ERROR(LoadedDriver()->cuMemcpyDtoHAsync(dst, src, bytes, (*d)->stream),
                        "cuMemcpyDtoHAsync", where);
  DC_RETURN_IF_CU_ERROR(LoadedDriver()->cuStreamSynchronize((*d)->stream), "cuStreamSynchronize",
                        where);
  return absl::OkStatus();
}

absl::Status CopyOnDevice(int ordinal, uint64_t dst, uint64_t src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  absl::StatusOr<DeviceState*> d = Ready(ordinal);
  if (!d.ok()) return d.status();
  DC_RETURN_IF_CU_ERROR(LoadedDriver()->cuMemcpyDtoDAsync(dst, src, bytes, (*d)->stream),
                        "cuMemcpyDtoDAsync",
                        absl::StrFormat("copy of %d bytes within cuda:%d", bytes, ordinal));
  return absl::OkStatus();
}

absl::Status FillZero(int ordinal, uint64_t dst, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  absl::StatusOr<DeviceState*> d = Ready(ordinal);
  if (!d.ok()) return d.status();
  DC_RETURN_IF_CU_ERROR(LoadedDriver()->cuMemsetD8Async(dst, 0, bytes, (*d)->stream),
                        "cuMemsetD8Async",
                        absl::StrFormat("zeroing %d bytes on cuda:%d", bytes, ordinal));
  return absl::OkStatus();
}

}  // namespace dualcast::jit::cuda
