// Hand-written one-pass loops for the HM-LSTM cell, one copy per ISA and run-time dispatch (see handwritten.h).
#include "bench/hmlstm/handwritten.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

// The dcmath loops instantiate these templates on AVX2/AVX-512 vectors. The
// templates are defined outside the `#pragma GCC target` regions, so GCC warns
// that an out-of-line copy would pass such vectors without AVX; flatten on the
// loops inlines every call (no copy is ever called), so the warning is moot.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#include "dualcast/activation_steps.hpp"
#pragma GCC diagnostic pop
#include "jit/cpu/thread_pool.h"

namespace dualcast::bench {

// Where one call writes (shared by every ISA's copy of the kernel).
struct Out {
  const float* w;                 // output adjoint cbar (full) or nullptr (paper: 1)
  float *c, *dcp, *df, *di, *dg;  // c is nullptr in the paper variant
};

namespace generic {
constexpr int kW = 4;  // SSE2 width: vectorised without any ISA flag
#include "bench/hmlstm/handwritten_kernel.inc"
}  // namespace generic

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
constexpr int kW = 8;
#include "bench/hmlstm/handwritten_kernel.inc"
}  // namespace avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512vl,avx2,fma")
namespace avx512 {
constexpr int kW = 16;
#include "bench/hmlstm/handwritten_kernel.inc"
}  // namespace avx512
#pragma GCC pop_options
#define DUALCAST_HAVE_X86_PATHS 1
#endif

namespace {

using RangeFn = void (*)(const Problem&, int64_t, int64_t, const Out&);

struct Dispatch {
  const char* isa;
  RangeFn fast, exact;  // the two sets of math (handwritten_kernel.inc)
};

Dispatch Pick() {
  const char* force = std::getenv("DUALCAST_HANDWRITTEN_ISA");
  const std::string want = force ? force : "";
#ifdef DUALCAST_HAVE_X86_PATHS
  __builtin_cpu_init();
  if (want != "generic" && want != "avx2" && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512dq")) {
    return {"avx512", &avx512::Range<false>, &avx512::Range<true>};
  }
  if (want != "generic" && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return {"avx2", &avx2::Range<false>, &avx2::Range<true>};
  }
#endif
  return {"generic", &generic::Range<false>, &generic::Range<true>};
}

const Dispatch& Chosen() {
  static const Dispatch d = Pick();
  return d;
}

void Ensure(std::vector<float>& v, size_t n) {
  if (v.size() != n) v.assign(n, 0.0f);
}

void Run(const Problem& p, Results& out, bool full, HandMath math) {
  const size_t nn = static_cast<size_t>(p.n * p.n);
  Ensure(out.d_cprev, nn);
  Ensure(out.d_f, nn);
  Ensure(out.d_i, nn);
  Ensure(out.d_g, nn);
  if (full) {
    Ensure(out.c, nn);
    // dc/dz and dc/dzb are zero almost everywhere (piecewise-constant branch
    // choice): their gradients are zero vectors; hand-written code knows it.
    out.d_z.assign(static_cast<size_t>(p.n), 0.0f);
    out.d_zb.assign(static_cast<size_t>(p.n), 0.0f);
  }
  const Out o{full ? p.cbar.data() : nullptr, full ? out.c.data() : nullptr, out.d_cprev.data(),
                       out.d_f.data(), out.d_i.data(), out.d_g.data()};
  const RangeFn range = math == HandMath::kDualcast ? Chosen().exact : Chosen().fast;
  jit::ParallelFor(p.n, 8, [&](int64_t begin, int64_t end) { range(p, begin, end, o); });
}

}  // namespace

void HandwrittenPaper(const Problem& p, Results& out, HandMath math) { Run(p, out, false, math); }
void HandwrittenFull(const Problem& p, Results& out, HandMath math) { Run(p, out, true, math); }
const char* HandwrittenIsa() { return Chosen().isa; }

}  // namespace dualcast::bench
