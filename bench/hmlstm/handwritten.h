// The hand-written fused C++ loops: what a performance engineer would write for this one cell.
//
// The physical-limit proxy on the CPU. Rows layout: the branch is decided once
// per row and each branch is a straight vectorised loop. Columns layout: the
// flags change per element, so all three formulas are computed and blended
// (branch-free, vectorised). Built with -O3 -march=native -ffast-math (this
// file only), threaded over rows with dualcast's own pool so both sides use
// the same threads.
#pragma once

#include "bench/hmlstm/problem.h"

namespace dualcast::bench {

// Writes into `out` (buffers allocated on first use, reused after).
void HandwrittenPaper(const Problem& p, Results& out);
void HandwrittenFull(const Problem& p, Results& out);

}  // namespace dualcast::bench
