// Loads NVRTC with dlopen (never linked) and resolves the entry points dualcast uses.
#include "jit/cuda/nvrtc_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jit/error.h"

// From jit/CMakeLists.txt: the NVRTC this was built with.
#ifndef DUALCAST_NVRTC_SONAME
#error "DUALCAST_NVRTC_SONAME (e.g. \"libnvrtc.so.13\") must be defined by the build"
#endif

namespace dualcast::jit::cuda {
namespace {

struct Loaded {
  NvrtcApi api;
  absl::Status status;
};

std::vector<std::string> Candidates() {
  if (const char* env = std::getenv("DUALCAST_NVRTC_LIBRARY"); env != nullptr && *env != '\0') {
    return {env};
  }
  std::vector<std::string> names;
#ifdef DUALCAST_NVRTC_TOOLKIT_LIBRARY
  names.push_back(DUALCAST_NVRTC_TOOLKIT_LIBRARY);
#endif
  names.push_back(DUALCAST_NVRTC_SONAME);
  names.push_back("libnvrtc.so");
  return names;
}

const Loaded* Load() {
  auto* loaded = new Loaded;  // leaked: kernels may compile during exit
  std::vector<std::string> tried;
  void* lib = nullptr;
  std::string path;
  for (const std::string& candidate : Candidates()) {
    lib = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      path = candidate;
      break;
    }
    const char* why = dlerror();
    tried.push_back(absl::StrCat(candidate, " (", why != nullptr ? why : "not found", ")"));
  }
  if (lib == nullptr) {
    loaded->status = MakeStatus(
        ErrorKind::kDevice,
        absl::StrCat("NVRTC (the CUDA compiler, needed for every CUDA kernel) could not be "
                     "loaded; tried ",
                     absl::StrJoin(tried, "; "), ". Install the CUDA toolkit's NVRTC ",
                     DUALCAST_NVRTC_MAJOR,
                     ".x (e.g. the cuda-nvrtc package) or set DUALCAST_NVRTC_LIBRARY to its "
                     "libnvrtc.so; the CPU backend does not need it"));
    return loaded;
  }
  std::vector<std::string> missing;
#define DUALCAST_NVRTC_RESOLVE(name)                                         \
  loaded->api.name = reinterpret_cast<decltype(&::name)>(dlsym(lib, #name)); \
  if (loaded->api.name == nullptr) missing.push_back(#name);
  DUALCAST_NVRTC_FUNCTIONS(DUALCAST_NVRTC_RESOLVE)
#undef DUALCAST_NVRTC_RESOLVE
  if (!missing.empty()) {
    loaded->status = MakeStatus(
        ErrorKind::kDevice,
        absl::StrCat("NVRTC at ", path, " lacks ", absl::StrJoin(missing, ", "),
                     ": it is older than the NVRTC ", DUALCAST_NVRTC_MAJOR,
                     ".x dualcast was built with; set DUALCAST_NVRTC_LIBRARY to a newer one"));
  }
  return loaded;
}

const Loaded& Get() {
  static const Loaded* loaded = Load();
  return *loaded;
}

}  // namespace

const NvrtcApi* LoadedNvrtc() { return Get().status.ok() ? &Get().api : nullptr; }

const absl::Status& NvrtcStatus() { return Get().status; }

}  // namespace dualcast::jit::cuda
