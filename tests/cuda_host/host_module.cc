// HostCudaModule: one translation unit of printed kernels + launchers, g++ -shared, dlopen, dlsym.
#include "cuda_host/host_module.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jit/cuda/cuda_printer.h"

namespace dualcast::testing {
namespace {

using jit::cuda::CudaParam;

// extern "C" void dc_host_<symbol>_<variant>(grid, block, values): the
// emulated cuLaunchKernel of one entry point.
std::string Launcher(const jit::cuda::CudaKernelSource& src, const char* variant,
                     const char* elem) {
  std::vector<std::string> args;
  for (size_t k = 0; k < src.params.size(); ++k) {
    switch (src.params[k].kind) {
      case CudaParam::Kind::kInputPtr:
        args.push_back(absl::StrCat("(const ", elem, "*)(unsigned long)v[", k, "]"));
        break;
      case CudaParam::Kind::kOutputPtr:
        args.push_back(absl::StrCat("(", elem, "*)(unsigned long)v[", k, "]"));
        break;
      case CudaParam::Kind::kScratch:
        args.push_back(absl::StrCat("(double*)(unsigned long)v[", k, "]"));
        break;
      case CudaParam::Kind::kDivisor:  // a double's bits, as cuLaunchKernel reads them
        args.push_back(absl::StrCat("__longlong_as_double((long long)v[", k, "])"));
        break;
      default: args.push_back(absl::StrCat("(long long)v[", k, "]")); break;
    }
  }
  // Kernels with barriers run a block's threads as fibers (cuda_host_shim.h).
  const bool barriers = src.text.find("__syncthreads") != std::string::npos ||
                        src.text.find("__shfl_") != std::string::npos ||
                        src.text.find("__syncwarp") != std::string::npos;
  return absl::StrCat("extern \"C\" int dc_host_", src.symbol, "_", variant,
                      "(long long grid, int block, const unsigned long long* v) {\n"
                      "  auto thread = [v] { ",
                      src.symbol, "_", variant, "(", absl::StrJoin(args, ", "), "); };\n",
                      "  return ", barriers ? "dc_host_run_grid" : "dc_host_run_grid_plain",
                      "(grid, block, thread);\n}\n");
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

HostCudaModule::HostCudaModule(const std::vector<jit::cuda::CudaKernelSource>& sources,
                               jit::Type dtype, const std::string& tag) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp",
                                     "/dualcast-cuda-host-", tag, "-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("cuda_host: cannot create a folder from " + pattern);
  }
  dir_ = pattern;
  const char* elem = jit::cuda::CudaType(dtype);
  std::string text;
  for (const auto& src : sources) {
    absl::StrAppend(&text, src.text, "\n");
    for (const char* variant : {"i32", "i64", "fin"}) {
      if (variant[0] != 'f' || src.has_finish) absl::StrAppend(&text, Launcher(src, variant, elem));
    }
  }
  const std::string source = dir_ + "/kernels.cc", library = dir_ + "/kernels.so",
                    log = dir_ + "/compile.log";
  std::ofstream(source) << text;
  // -fno-builtin: every math call goes to libm, as the interpreter's do (GCC
  // would otherwise fold constant calls with its own correctly rounded MPFR).
  // The sanitizer of the test build instruments the kernels too, so an
  // out-of-bounds index in printed code is reported by ASan.
  std::string command = absl::StrCat(
      DUALCAST_CUDA_HOST_CXX, " -std=c++17 -O1 -shared -fPIC -fno-fast-math -ffp-contract=off ",
      "-fno-builtin -include ", DUALCAST_CUDA_HOST_SHIM, " ", DUALCAST_CUDA_HOST_FLAGS, " -o ",
      library, " ", source, " > ", log, " 2>&1");
  const auto start = std::chrono::steady_clock::now();
  const int rc = std::system(command.c_str());
  compile_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (rc != 0) {
    throw std::runtime_error(absl::StrCat("cuda_host: the printed CUDA C of batch '", tag,
                                          "' did not compile as host C++ (", command,
                                          "); source kept in ", source, "\n", ReadFile(log)));
  }
  handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) throw std::runtime_error(absl::StrCat("cuda_host: dlopen: ", dlerror()));
}

HostCudaModule::~HostCudaModule() {
  if (handle_ != nullptr) dlclose(handle_);
  if (const char* keep = std::getenv("DUALCAST_CUDA_HOST_KEEP"); keep != nullptr && *keep == '1') {
    std::fprintf(stderr, "cuda_host: kept %s\n", dir_.c_str());
    return;
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void HostCudaModule::Launch(const std::string& symbol, bool wide, int64_t grid, int block,
                            const std::vector<uint64_t>& values) const {
  LaunchEntry(absl::StrCat(symbol, wide ? "_i64" : "_i32"), grid, block, values);
}

void HostCudaModule::LaunchEntry(const std::string& entry, int64_t grid, int block,
                                 const std::vector<uint64_t>& values) const {
  using Fn = int (*)(long long, int, const unsigned long long*);
  const std::string name = "dc_host_" + entry;
  auto fn = reinterpret_cast<Fn>(dlsym(handle_, name.c_str()));
  if (fn == nullptr) throw std::runtime_error("cuda_host: no launcher " + name);
  if (fn(grid, block, reinterpret_cast<const unsigned long long*>(values.data())) != 0) {
    auto error = reinterpret_cast<const char* (*)()>(dlsym(handle_, "dc_host_last_error"));
    throw std::runtime_error(absl::StrCat("cuda_host: launch of ", name, " (grid ", grid,
                                          ", block ", block, "): ", error ? error() : "?"));
  }
}

}  // namespace dualcast::testing
