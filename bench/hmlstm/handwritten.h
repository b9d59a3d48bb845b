// The hand-written fused C++ loops: the best code a performance engineer would write for this one cell.
//
// The physical-limit proxy on the CPU: one pass over memory (c and every
// gradient written once), vectorised with GCC vector extensions and its own
// vector exp/sigmoid/tanh, compiled for AVX-512, AVX2+FMA and a generic
// width and picked at run time from the CPU (so the file builds anywhere).
// Rows layout: the branch is decided once per row; columns layout: all
// branches computed and blended. Threaded over rows with dualcast's own pool
// so both sides use the same threads.
#pragma once

#include "bench/hmlstm/problem.h"

namespace dualcast::bench {

// Which exp/sigmoid/tanh the loop uses (handwritten_kernel.inc): kFast, the
// cheapest formulas that pass the benchmark's inputs (the `handwritten` row,
// the comparator every ratio is taken against), or kDualcast, dualcast's own
// steps by hand (`handwritten-dcmath`: the same arithmetic as the JIT's
// kernels, so dualcast's time over it is what code generation costs).
enum class HandMath { kFast, kDualcast };

// Writes into `out` (buffers allocated on first use, reused after).
void HandwrittenPaper(const Problem& p, Results& out, HandMath math = HandMath::kFast);
void HandwrittenFull(const Problem& p, Results& out, HandMath math = HandMath::kFast);

// The code path in use: "avx512", "avx2", or "generic". The environment
// variable DUALCAST_HANDWRITTEN_ISA=avx2|generic forces a narrower one (tests).
const char* HandwrittenIsa();

}  // namespace dualcast::bench
