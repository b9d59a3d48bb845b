// dualcast-hmlstm --device cuda: paper (dc::partials) and full (Tape::gradient) variants on CUDA arrays, timed with CUDA events, peers on the same GPU.
//
// The paper variant also runs a hand-written CUDA kernel of the same partials
// (cuda_handwritten.h), the `handwritten` row that `slower than hand` divides by.
// Run on an H200 (scripts/gpu-check --bundle; figures in bench/results/hmlstm-gpu-h200.md).
// Without a GPU: "no CUDA device: <reason>", exit 1 (ctest); on the emulated
// device of tests/cuda_host/emulated the whole run executes (correctness of
// the path, no timing: ctest cuda_host_emulated_hmlstm).
#pragma once

#include "bench/hmlstm/cli.h"

namespace dualcast::bench {

// Exit status: 0 all rows match the float64 reference, 1 no device or a
// mismatch.
int RunCuda(const Options& options);

}  // namespace dualcast::bench
