// An emulated NVRTC for the emulated CUDA driver (tests only): "compiling" keeps the CUDA C source, which is the image fake_cuda.cc loads.
//
// The real NVRTC compiles every printed kernel in the `cuda` ctest; here the
// point is to hand the exact source to the emulated driver, which compiles it
// as host C++. Version 99.0, so the object-store keys of emulated images
// never collide with real ones.
#include <nvrtc.h>

#include <cstring>
#include <string>

struct _nvrtcProgram {
  std::string source;
};

extern "C" {

const char* nvrtcGetErrorString(nvrtcResult r) {
  return r == NVRTC_SUCCESS ? "NVRTC_SUCCESS" : "emulated NVRTC error";
}
nvrtcResult nvrtcVersion(int* major, int* minor) {
  *major = 99;
  *minor = 0;
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcGetNumSupportedArchs(int* n) {
  *n = 1;
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcGetSupportedArchs(int* archs) {
  archs[0] = 90;
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcCreateProgram(nvrtcProgram* p, const char* src, const char*, int,
                               const char* const*, const char* const*) {
  *p = new _nvrtcProgram{src};
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcDestroyProgram(nvrtcProgram* p) {
  delete *p;
  *p = nullptr;
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcCompileProgram(nvrtcProgram, int, const char* const*) { return NVRTC_SUCCESS; }
nvrtcResult nvrtcGetPTXSize(nvrtcProgram p, size_t* n) {
  *n = p->source.size() + 1;
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcGetPTX(nvrtcProgram p, char* out) {
  memcpy(out, p->source.c_str(), p->source.size() + 1);
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram p, size_t* n) { return nvrtcGetPTXSize(p, n); }
nvrtcResult nvrtcGetCUBIN(nvrtcProgram p, char* out) { return nvrtcGetPTX(p, out); }
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram, size_t* n) {
  *n = 1;
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcGetProgramLog(nvrtcProgram, char* log) {
  log[0] = '\0';
  return NVRTC_SUCCESS;
}

}  // extern "C"
