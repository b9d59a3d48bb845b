// dualcast-hmlstm --device cuda: paper (dc::partials) and full (Tape::gradient) variants on CUDA arrays, timed with CUDA events, peers on the same GPU.
//
// NOT YET RUN ON A GPU (written on machines without one): the no-device path
// ("no CUDA device: <reason>", exit 1) is tested, and the whole run was
// exercised by hand on the emulated device of tests/cuda_host/emulated
// (host memory and host-compiled kernels: correctness of the path, no timing).
#pragma once

#include "bench/hmlstm/cli.h"

namespace dualcast::bench {

// Exit status: 0 all rows match the float64 reference, 1 no device or a
// mismatch.
int RunCuda(const Options& options);

}  // namespace dualcast::bench
