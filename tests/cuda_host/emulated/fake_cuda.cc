// An emulated CUDA driver (built as libcuda.so.1 for tests only): one "device" whose memory is host memory and whose modules are printed CUDA C compiled as host C++ behind cuda_host_shim.h.
//
// The cuda_host_emulated_gpu ctest puts this library first on the loader path
// and a fake NVRTC (fake_nvrtc.cc: its "image" is the CUDA C source itself) in
// DUALCAST_NVRTC_LIBRARY, so the GPU test cases run the WHOLE device path --
// Device::cuda arrays, the caching allocator, Execute, LaunchCudaKernel with
// reduction scratch and finish launches, the tape on CUDA arrays -- on a
// machine without a GPU. It tests dualcast's code, not a GPU: device memory
// is malloc, copies are memcpy, and launches run synchronously on the host
// (so stream-ordering bugs are invisible here).
//
// cuModuleLoadData writes the source with one launcher per `extern "C"
// __global__` entry point (the parameter list parsed from the source: every
// parameter is 8 bytes: a pointer, a long long or a double) and compiles it with the
// compiler that built the tests; cuLaunchKernel calls the launcher, which runs
// the grid through the shim's fibers.
#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Module {
  void* handle = nullptr;
  std::string dir;
};
struct Function {
  int (*launch)(long long grid, int block, void** params) = nullptr;
  std::string name;
};

int g_context, g_stream;  // addresses only

// "const float* __restrict__ in0" -> "const float*"; "const dc_i64 n" -> "const dc_i64".
std::string TypeOf(std::string param) {
  const size_t space = param.find_last_of(' ');
  std::string type = param.substr(0, space);
  const std::string restrict_kw = " __restrict__";
  if (type.size() > restrict_kw.size() &&
      type.compare(type.size() - restrict_kw.size(), restrict_kw.size(), restrict_kw) == 0) {
    type.resize(type.size() - restrict_kw.size());
  }
  return type;
}

// One launcher per entry point found in `source`.
std::string Launchers(const std::string& source) {
  const bool barriers = source.find("__syncthreads") != std::string::npos ||
                        source.find("__shfl_") != std::string::npos;
  std::string out;
  const std::string marker = "extern \"C\" __global__ void ";
  for (size_t at = source.find(marker); at != std::string::npos;
       at = source.find(marker, at + 1)) {
    const size_t name_begin = at + marker.size(), open = source.find('(', name_begin);
    const size_t close = source.find(") {", open);
    const std::string name = source.substr(name_begin, open - name_begin);
    std::stringstream params(source.substr(open + 1, close - open - 1));
    std::string param, args;
    int k = 0;
    while (std::getline(params, param, ',')) {
      while (!param.empty() && param[0] == ' ') param.erase(0, 1);
      if (k > 0) args += ", ";
      args += "*(" + TypeOf(param) + "*)p[" + std::to_string(k++) + "]";  // its 8 bytes, as the driver reads them
    }
    out += "extern \"C\" int dc_emu_" + name +
           "(long long grid, int block, void** p) {\n  auto thread = [p] { " + name + "(" + args +
           "); };\n  return " + (barriers ? "dc_host_run_grid" : "dc_host_run_grid_plain") +
           "(grid, block, thread);\n}\n";
  }
  return out;
}

// Driver calls by name, so tests can assert what a step asked of the device
// (e.g. that a tape step never waits for it): dualcast_fake_cuda_calls below.
// DUALCAST_FAKE_CUDA_TRACE=1 also prints each counted call (and `detail`) to stderr.
std::mutex g_count_mu;
std::map<std::string, long> g_counts;
void Count(const char* call, const std::string& detail = "") {
  static const bool trace = [] {
    const char* e = getenv("DUALCAST_FAKE_CUDA_TRACE");
    return e != nullptr && *e == '1';
  }();
  if (trace) fprintf(stderr, "fake cuda: %s%s\n", call, detail.c_str());
  std::lock_guard<std::mutex> lock(g_count_mu);
  ++g_counts[call];
}

}  // namespace

extern "C" {

// How many times the named driver entry point was called in this process.
long dualcast_fake_cuda_calls(const char* name) {
  std::lock_guard<std::mutex> lock(g_count_mu);
  auto it = g_counts.find(name);
  return it == g_counts.end() ? 0 : it->second;
}

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int* v) {
  *v = CUDA_VERSION;
  return CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult e, const char** s) {
  *s = e == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_EMULATED";
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult, const char** s) {
  *s = "error in the emulated CUDA driver (tests/cuda_host/emulated; see stderr)";
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int* n) {
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char* name, int len, CUdevice) {
  snprintf(name, static_cast<size_t>(len), "dualcast host emulation (not a GPU)");
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
  *v = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR   ? 9
       : a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT      ? 2
       : a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ? 0
                                                            : 0;
  return CUDA_SUCCESS;
}
CUresult cuDeviceTotalMem(size_t* bytes, CUdevice) {
  *bytes = size_t{1} << 32;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice) {
  *c = reinterpret_cast<CUcontext>(&g_context);
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult cuCtxSynchronize() {
  Count(__func__);
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream* s, unsigned int) {
  *s = reinterpret_cast<CUstream>(&g_stream);
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream) {
  Count(__func__);
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr* p, size_t bytes) {
  Count(__func__);
  void* m = nullptr;
  if (posix_memalign(&m, 256, bytes == 0 ? 1 : bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = reinterpret_cast<CUdeviceptr>(m);
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr p) {
  free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
CUresult cuMemGetInfo(size_t* free_bytes, size_t* total) {
  *free_bytes = *total = size_t{1} << 32;
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void* s, size_t n, CUstream) {
  Count(__func__);
  if (n > 0) memcpy(reinterpret_cast<void*>(d), s, n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoHAsync(void* d, CUdeviceptr s, size_t n, CUstream) {
  Count(__func__);
  if (n > 0) memcpy(d, reinterpret_cast<const void*>(s), n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream) {
  Count(__func__);
  if (n > 0) memmove(reinterpret_cast<void*>(d), reinterpret_cast<const void*>(s), n);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream) {
  Count(__func__);
  if (n > 0) memset(reinterpret_cast<void*>(d), v, n);
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  const std::string source = static_cast<const char*>(image);
  const char* tmp = getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                    "/dualcast-emulated-gpu-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) return CUDA_ERROR_OPERATING_SYSTEM;
  std::ofstream(dir + "/module.cc") << source << "\n" << Launchers(source);
  const std::string command = std::string(DUALCAST_CUDA_HOST_CXX) +
                              " -std=c++17 -O1 -shared -fPIC -fno-fast-math -ffp-contract=off "
                              "-fno-builtin -include " DUALCAST_CUDA_HOST_SHIM " -o " +
                              dir + "/module.so " + dir + "/module.cc > " + dir +
                              "/compile.log 2>&1";
  if (system(command.c_str()) != 0) {
    fprintf(stderr, "emulated CUDA driver: the module did not compile; see %s/compile.log\n",
            dir.c_str());
    return CUDA_ERROR_INVALID_IMAGE;
  }
  auto* m = new Module{dlopen((dir + "/module.so").c_str(), RTLD_NOW | RTLD_LOCAL), dir};
  if (m->handle == nullptr) {
    fprintf(stderr, "emulated CUDA driver: dlopen: %s\n", dlerror());
    return CUDA_ERROR_INVALID_IMAGE;
  }
  // The loaded library stays mapped: the folder goes now (kernels live until exit),
  // unless DUALCAST_CUDA_HOST_KEEP=1 asks to keep it for inspection.
  if (const char* keep = getenv("DUALCAST_CUDA_HOST_KEEP"); keep == nullptr || *keep != '1') {
    if (system(("rm -rf '" + dir + "'").c_str()) != 0) fprintf(stderr, "cannot remove %s\n", dir.c_str());
  }
  *module = reinterpret_cast<CUmodule>(m);
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule module) {
  auto* m = reinterpret_cast<Module*>(module);
  dlclose(m->handle);
  delete m;
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction* f, CUmodule module, const char* name) {
  Count(__func__);
  auto* m = reinterpret_cast<Module*>(module);
  auto* fn = new Function;  // lives as long as the process (CUfunctions are never released)
  fn->name = name;
  fn->launch = reinterpret_cast<decltype(fn->launch)>(
      dlsym(m->handle, (std::string("dc_emu_") + name).c_str()));
  if (fn->launch == nullptr) return CUDA_ERROR_NOT_FOUND;
  *f = reinterpret_cast<CUfunction>(fn);
  return CUDA_SUCCESS;
}
CUresult cuOccupancyMaxPotentialBlockSize(int* min_grid, int* block, CUfunction,
                                          CUoccupancyB2DSize, size_t, int) {
  Count(__func__);
  // Small: 4 * min_grid blocks of 64 threads make grid-stride loops go round.
  *min_grid = 2;
  *block = 64;
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int, CUstream,
                        void** params, void** extra) {
  auto* fn = reinterpret_cast<Function*>(f);
  Count(__func__, " " + fn->name + " <<<" + std::to_string(gx) + ", " + std::to_string(bx) + ">>>");
  if (gy != 1 || gz != 1 || by != 1 || bz != 1 || extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (fn->launch(gx, static_cast<int>(bx), params) != 0) {
    fprintf(stderr, "emulated CUDA driver: launch of %s failed (the shim's barrier check)\n",
            fn->name.c_str());
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  return CUDA_SUCCESS;
}

// cuGetProcAddress_v2: the table above by the names driver.cc asks for.
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t,
                             CUdriverProcAddressQueryResult* status) {
#define DC_FAKE(name) {#name, reinterpret_cast<void*>(&name)},
  static const std::map<std::string, void*> table = {
      DC_FAKE(cuInit) DC_FAKE(cuDriverGetVersion) DC_FAKE(cuGetErrorName) DC_FAKE(cuGetErrorString)
      DC_FAKE(cuDeviceGetCount) DC_FAKE(cuDeviceGet) DC_FAKE(cuDeviceGetName)
      DC_FAKE(cuDeviceGetAttribute) DC_FAKE(cuDeviceTotalMem) DC_FAKE(cuDevicePrimaryCtxRetain)
      DC_FAKE(cuCtxSetCurrent) DC_FAKE(cuCtxSynchronize) DC_FAKE(cuModuleLoadData)
      DC_FAKE(cuModuleUnload) DC_FAKE(cuModuleGetFunction)
      DC_FAKE(cuOccupancyMaxPotentialBlockSize) DC_FAKE(cuLaunchKernel) DC_FAKE(cuMemAlloc)
      DC_FAKE(cuMemFree) DC_FAKE(cuMemGetInfo) DC_FAKE(cuMemcpyHtoDAsync)
      DC_FAKE(cuMemcpyDtoHAsync) DC_FAKE(cuMemcpyDtoDAsync) DC_FAKE(cuMemsetD8Async)
      DC_FAKE(cuStreamCreate) DC_FAKE(cuStreamSynchronize)};
#undef DC_FAKE
  auto it = table.find(symbol);
  if (it == table.end()) {
    *pfn = nullptr;
    if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = it->second;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // extern "C"
