// dualcast: mixed-mode AD of fused broadcasts — the one header users include.
//
// Example:
//   #include <dualcast/dualcast.hpp>
//   namespace dc = dualcast;
//   dc::Kernel cell = dc::kernel("cell", [](auto z, auto c, auto g) {
//     using namespace dc::math;
//     if (z == 1) return tanh(g);      // a real branch: only the taken side runs
//     return c * sigmoid(g);
//   });
//   auto Z = dc::Array<float>::from({1, 0}, {2, 1});
//   auto C = dc::Array<float>::uniform({2, 3}, 1), G = dc::Array<float>::uniform({2, 3}, 2);
//   dc::Tape tape;
//   auto loss = dc::sum(dc::broadcast(cell, Z, C, G));
//   std::vector<dc::Array<float>> grads = tape.gradient(loss, {C, G});
#pragma once

#include <dualcast/dual.hpp>

#include "dualcast/array.hpp"
#include "dualcast/array_ops.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/device.hpp"
#include "dualcast/error.hpp"
#include "dualcast/kernel.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/partials.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "jit/stats.h"

namespace dualcast {

// Kernel cache and launch counters (compiles, hits, launches, times);
// DUALCAST_LOG=1 also prints each compile and a summary at exit.
using Stats = jit::Stats;
inline Stats stats() { return jit::GetStats(); }
using jit::FormatStats;
using jit::ResetStats;

// Gives the freed array memory dualcast keeps for reuse back to the system
// (blocks of 32 KiB and up, at most DUALCAST_ARRAY_CACHE_MAX, default 1G):
// for a code that leaves a phase of large arrays behind. The resident memory
// falls by that much (blocks of 256 KiB and up are unmapped; smaller free
// pages are trimmed from the C library's heap). Arrays in use are untouched;
// later allocations fault their pages in again.
inline void release_cached_memory() { detail::ReleaseCachedMemory(); }

}  // namespace dualcast
