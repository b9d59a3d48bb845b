// dualcast-hmlstm --device cuda: the paper variant through dc::partials on CUDA arrays, timed with CUDA events.
//
// UNTESTED on a GPU (written on a machine without one): only the no-device
// path ("no CUDA device: <reason>", exit 1) is exercised by the tests.
#pragma once

#include "bench/hmlstm/cli.h"

namespace dualcast::bench {

// Exit status: 0 all rows match the float64 reference, 1 no device or a
// mismatch.
int RunCuda(const Options& options);

}  // namespace dualcast::bench
