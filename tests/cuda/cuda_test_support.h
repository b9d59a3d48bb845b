// Shared helpers of the CUDA tests: suite kernels as jvp'ed IR, specs, ptxas, and the GPU skip.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "jit/codegen/kernel_spec.h"
#include "jit/ir/hash.h"
#include "jit/ir/ir.h"
#include "jit/passes/jvp.h"
#include "jit/passes/optimize.h"
#include "jit/trace/trace.h"
#include "kernels/kernels.h"

#ifdef DUALCAST_HAVE_NVRTC
#include "jit/cuda/driver.h"
#endif

namespace dualcast::testing {

// Suite kernel K traced on `type`, jvp'ed wrt every input and optimised: what the runtime compiles.
template <class K>
std::shared_ptr<jit::Function> SuiteJvp(jit::Type type) {
  constexpr size_t N = Arity<K>();
  std::vector<jit::Type> types(N, type);
  jit::Function f = jit::Trace(K::name, K::fn, types);
  std::vector<int> wrt(N);
  std::iota(wrt.begin(), wrt.end(), 0);
  return std::make_shared<jit::Function>(jit::Optimize(jit::Jvp(f, wrt).function));
}

// A spec over merged rank `rank` with the given broadcast bits (empty: none broadcast).
inline jit::KernelSpec MakeSpec(std::shared_ptr<const jit::Function> f, jit::Type dtype, int rank,
                                std::vector<uint32_t> bcast, bool inner_contiguous = true) {
  jit::KernelSpec spec;
  if (bcast.empty()) bcast.assign(f->num_inputs(), 0);
  spec.function_hash = jit::StructuralHash(*f);
  spec.write.assign(f->num_outputs(), true);
  spec.function = std::move(f);
  spec.dtype = dtype;
  spec.target = jit::Target::kCuda;
  spec.rank = rank;
  spec.input_broadcast = std::move(bcast);
  spec.inner_contiguous = inner_contiguous;
  return spec;
}

inline const char* kPtxas = "/usr/local/cuda/bin/ptxas";

// Runs ptxas on `ptx` for `arch` ("sm_90"); returns "" when it accepts the
// PTX (or is absent: *ran = false), else its output.
inline std::string PtxasCheck(const std::string& ptx, const std::string& arch, bool* ran) {
  *ran = access(kPtxas, X_OK) == 0;
  if (!*ran) return "";
  const std::string base = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                           "/dualcast-ptxas-" + std::to_string(getpid());
  {
    std::ofstream out(base + ".ptx", std::ios::binary);
    out << ptx.c_str();  // without the trailing NUL
  }
  const std::string cmd = std::string(kPtxas) + " -arch=" + arch + " " + base + ".ptx -o " +
                          base + ".cubin > " + base + ".log 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream log_in(base + ".log");
  std::stringstream log;
  log << log_in.rdbuf();
  std::remove((base + ".ptx").c_str());
  std::remove((base + ".cubin").c_str());
  std::remove((base + ".log").c_str());
  return rc == 0 ? "" : "ptxas exit " + std::to_string(rc) + ": " + log.str();
}

// Why GPU execution tests cannot run here ("" when a CUDA device is usable).
inline std::string NoGpuReason() {
#ifdef DUALCAST_HAVE_NVRTC
  const absl::Status& s = jit::cuda::DriverStatus();
  return s.ok() ? "" : std::string(s.message());
#else
  return "no CUDA device: this build has no CUDA toolkit (NVRTC)";
#endif
}

}  // namespace dualcast::testing

// First statement of every GPU execution test: without a device the test
// reports itself skipped (a visible MESSAGE with the reason) and passes.
#define DC_REQUIRE_GPU()                                                          \
  do {                                                                            \
    const std::string dc_no_gpu_ = ::dualcast::testing::NoGpuReason();            \
    if (!dc_no_gpu_.empty()) {                                                    \
      MESSAGE("SKIPPED (needs a GPU): " << dc_no_gpu_);                           \
      return;                                                                     \
    }                                                                             \
  } while (false)
