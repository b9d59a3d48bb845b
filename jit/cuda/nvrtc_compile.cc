// NvrtcCompile: one nvrtcProgram per kernel, fixed options, log and saved source on failure.
#include "jit/cuda/nvrtc_compile.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jit/cuda/nvrtc_api.h"
#include "jit/error.h"

namespace dualcast::jit::cuda {
namespace {

absl::Status NvrtcError(nvrtcResult r, const char* call, const std::string& name) {
  return MakeStatus(ErrorKind::kCompile,
                    absl::StrCat("cuda kernel '", name, "': ", call,
                                 " failed: ", LoadedNvrtc()->nvrtcGetErrorString(r)));
}

// Releases the program on every path.
struct Program {
  nvrtcProgram handle = nullptr;
  ~Program() {
    if (handle != nullptr) LoadedNvrtc()->nvrtcDestroyProgram(&handle);
  }
};

std::string ProgramLog(nvrtcProgram program) {
  size_t size = 0;
  if (LoadedNvrtc()->nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1)
    return "";
  std::string log(size, '\0');
  if (LoadedNvrtc()->nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return "";
  log.resize(size - 1);  // drop the terminating NUL
  return log;
}

}  // namespace

std::string NvrtcTarget::Name() const {
  return absl::StrCat(kind == NvrtcKind::kCubin ? "sm_" : "compute_", arch);
}

std::vector<std::string> NvrtcOptions(const NvrtcTarget& target) {
  return {absl::StrCat("--gpu-architecture=", target.Name()),
          "--std=c++17",
          "--fmad=false",
          "--ftz=false",
          "--prec-div=true",
          "--prec-sqrt=true"};
}

std::string NvrtcVersionString() {
  if (LoadedNvrtc() == nullptr) return "NVRTC unavailable";
  int major = 0, minor = 0;
  if (LoadedNvrtc()->nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "NVRTC unknown";
  return absl::StrCat("NVRTC ", major, ".", minor);
}

std::vector<int> NvrtcSupportedArchs() {
  if (LoadedNvrtc() == nullptr) return {};
  int count = 0;
  if (LoadedNvrtc()->nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0) return {};
  std::vector<int> archs(static_cast<size_t>(count));
  if (LoadedNvrtc()->nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return {};
  std::sort(archs.begin(), archs.end());
  return archs;
}

NvrtcTarget TargetForDevice(int major, int minor) {
  const int arch = major * 10 + minor;
  const std::vector<int> archs = NvrtcSupportedArchs();
  if (std::find(archs.begin(), archs.end(), arch) != archs.end()) {
    return {arch, NvrtcKind::kCubin};
  }
  // Newer than this NVRTC: PTX for the newest arch it knows, JIT-compiled by
  // the driver. (An older, unsupported device gets PTX it will reject at load,
  // with the driver's error naming the problem.)
  return {archs.empty() ? arch : std::min(arch, archs.back()), NvrtcKind::kPtx};
}

std::string FailedSourcePath(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  return absl::StrCat(dir, "/dualcast-nvrtc-", name, "-", getpid(), ".cu");
}

absl::StatusOr<NvrtcImage> NvrtcCompile(const std::string& source, const std::string& name,
                                        const NvrtcTarget& target) {
  const NvrtcApi* nv = LoadedNvrtc();
  if (nv == nullptr) {
    return MakeStatus(
        ErrorKind::kDevice,
        absl::StrCat("cuda kernel '", name, "' cannot be compiled: ", NvrtcStatus().message()));
  }
  const auto start = std::chrono::steady_clock::now();
  Program program;
  const std::string file = name + ".cu";
  if (nvrtcResult r = nv->nvrtcCreateProgram(&program.handle, source.c_str(), file.c_str(), 0,
                                             nullptr, nullptr);
      r != NVRTC_SUCCESS) {
    return NvrtcError(r, "nvrtcCreateProgram", name);
  }
  const std::vector<std::string> options = NvrtcOptions(target);
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const nvrtcResult compiled =
      nv->nvrtcCompileProgram(program.handle, static_cast<int>(argv.size()), argv.data());
  NvrtcImage image;
  image.log = ProgramLog(program.handle);
  if (compiled != NVRTC_SUCCESS) {
    const std::string path = FailedSourcePath(name);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << source;
    const bool saved = static_cast<bool>(out.flush());
    return MakeStatus(
        ErrorKind::kCompile,
        absl::StrCat("cuda kernel '", name, "': NVRTC (", NvrtcVersionString(),
                     ") rejected the generated source for ", target.Name(), " (",
                     nv->nvrtcGetErrorString(compiled), "); ",
                     saved ? absl::StrCat("the source is saved in ", path)
                           : absl::StrCat("the source could not be saved to ", path),
                     "; options: ", absl::StrJoin(options, " "), "\nNVRTC log:\n", image.log,
                     "\nThis is a bug in dualcast's CUDA code generator: please report it with "
                     "that file."));
  }
  size_t size = 0;
  if (target.kind == NvrtcKind::kCubin) {
    if (nvrtcResult r = nv->nvrtcGetCUBINSize(program.handle, &size); r != NVRTC_SUCCESS) {
      return NvrtcError(r, "nvrtcGetCUBINSize", name);
    }
    image.bytes.resize(size);
    if (nvrtcResult r = nv->nvrtcGetCUBIN(program.handle, image.bytes.data()); r != NVRTC_SUCCESS) {
      return NvrtcError(r, "nvrtcGetCUBIN", name);
    }
  } else {
    if (nvrtcResult r = nv->nvrtcGetPTXSize(program.handle, &size); r != NVRTC_SUCCESS) {
      return NvrtcError(r, "nvrtcGetPTXSize", name);
    }
    image.bytes.resize(size);  // includes the NUL cuModuleLoadData wants for PTX
    if (nvrtcResult r = nv->nvrtcGetPTX(program.handle, image.bytes.data()); r != NVRTC_SUCCESS) {
      return NvrtcError(r, "nvrtcGetPTX", name);
    }
  }
  image.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return image;
}

}  // namespace dualcast::jit::cuda
