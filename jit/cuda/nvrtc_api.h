// NVRTC, loaded at run time with dlopen: the entry points dualcast uses, as a table (jit/cuda internal).
//
// libdualcast.so must load on a machine without the CUDA toolkit, so NVRTC is
// never linked (a NEEDED libnvrtc.so.13 makes the CPU library fail to start
// there; CI checks `readelf -d` of libdualcast.so). The first CUDA compile
// dlopens, in order:
//   $DUALCAST_NVRTC_LIBRARY                 when set (and nothing else)
//   <toolkit lib dir>/libnvrtc.so.<major>   the toolkit this was built with
//   libnvrtc.so.<major>, libnvrtc.so        through the loader's search path
// keeping the NVRTC major version of the headers we compiled against (the
// ABI of nvrtc.h). When none loads, NvrtcStatus() says which files were tried
// and why each failed (kDevice), and every CUDA compile returns that error;
// the CPU backend is unaffected.
//
// Example:
//   const NvrtcApi* nv = LoadedNvrtc();          // null when NVRTC is missing
//   if (nv == nullptr) return NvrtcStatus();     // "NVRTC (the CUDA compiler) could not be loaded: ..."
//   nv->nvrtcVersion(&major, &minor);
#pragma once

#include <nvrtc.h>

#include "absl/status/status.h"

namespace dualcast::jit::cuda {

#define DUALCAST_NVRTC_FUNCTIONS(X)                                                         \
  X(nvrtcGetErrorString) X(nvrtcVersion) X(nvrtcGetNumSupportedArchs)                       \
  X(nvrtcGetSupportedArchs) X(nvrtcCreateProgram) X(nvrtcDestroyProgram)                    \
  X(nvrtcCompileProgram) X(nvrtcGetPTXSize) X(nvrtcGetPTX) X(nvrtcGetCUBINSize)              \
  X(nvrtcGetCUBIN) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog)

struct NvrtcApi {
#define DUALCAST_NVRTC_MEMBER(name) decltype(&::name) name = nullptr;
  DUALCAST_NVRTC_FUNCTIONS(DUALCAST_NVRTC_MEMBER)
#undef DUALCAST_NVRTC_MEMBER
};

// The loaded table, or null when NVRTC could not be loaded. Loaded once per
// process; thread-safe.
const NvrtcApi* LoadedNvrtc();
// OK when loaded; otherwise kDevice naming every library tried and the fix.
const absl::Status& NvrtcStatus();

}  // namespace dualcast::jit::cuda
