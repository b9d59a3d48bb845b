// NVRTC: CUDA C source to a CUBIN for one GPU architecture, or PTX for a virtual one, with fixed options.
//
// NVRTC runs without a GPU or driver, so this is exercised in every CI run.
// The options are fixed (NvrtcOptions) and enter every cache key, so a
// cached image always matches the flags it was built with:
//   --gpu-architecture=sm_XY | compute_XY   CUBIN (real arch) or PTX (virtual)
//   --std=c++17
//   --fmad=false      no a*b+c contraction: results match the CPU backend and
//                     the interpreter operation for operation
//   --ftz=false --prec-div=true --prec-sqrt=true
//                     denormals kept, IEEE division and square root (these
//                     are NVRTC's defaults; spelled out so they cannot drift)
// and never --use_fast_math (see cuda_printer.h for the math library choice).
//
// Which image for a device (TargetForDevice): a CUBIN for its exact
// architecture when this NVRTC supports it (no JIT work at module load);
// otherwise PTX for the newest virtual architecture NVRTC knows, which the
// driver JIT-compiles for newer GPUs.
//
// On failure the status (kCompile) holds the NVRTC log, the target, and the
// path of a file where the generated source was saved for inspection.
//
// Example:
//   absl::StatusOr<NvrtcImage> img = NvrtcCompile(src, "dc_cell_f32_...", {90, NvrtcKind::kCubin});
//   // img->bytes is an ELF CUBIN for sm_90, ready for cuModuleLoadData.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dualcast::jit::cuda {

enum class NvrtcKind { kPtx, kCubin };

struct NvrtcTarget {
  int arch = 90;  // compute capability * 10 + minor: 80, 86, 90, ...
  NvrtcKind kind = NvrtcKind::kCubin;

  // "sm_90" (CUBIN) or "compute_90" (PTX).
  std::string Name() const;
};

struct NvrtcImage {
  std::string bytes;   // CUBIN (ELF) or PTX text (NUL-terminated for the driver)
  std::string log;     // NVRTC's log (warnings), possibly empty
  double compile_ms = 0;
};

// The options for `target`, in order.
std::vector<std::string> NvrtcOptions(const NvrtcTarget& target);

// "NVRTC 13.0"; "NVRTC unavailable" in a build without it.
std::string NvrtcVersionString();

// The real architectures this NVRTC can build CUBINs for (e.g. 75, 80, ..., 120).
std::vector<int> NvrtcSupportedArchs();

// A CUBIN for `major.minor` when supported, else PTX for the newest supported arch.
NvrtcTarget TargetForDevice(int major, int minor);

// Compiles `source` (translation unit named `name`.cu). `name` appears in errors.
absl::StatusOr<NvrtcImage> NvrtcCompile(const std::string& source, const std::string& name,
                                        const NvrtcTarget& target);

// Where NvrtcCompile saves the source of a failed compile ($TMPDIR or /tmp).
std::string FailedSourcePath(const std::string& name);

}  // namespace dualcast::jit::cuda
