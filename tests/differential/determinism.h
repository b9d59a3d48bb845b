// Determinism digest: one fixed, multi-chunk workload whose outputs and gradients are hashed bit for bit.
//
// The same inputs must give bitwise-identical outputs and gradients across
// runs and across thread counts. The thread count is fixed per process
// (DUALCAST_NUM_THREADS, read once), so the check runs this workload in
// separate processes (`dualcast-difftest --determinism-digest`) with
// different counts and compares the digests. The workload is large enough
// (about 10 launch chunks of 32K elements) that the launcher really splits
// it, and covers the forward kernel, partials, and both reverse-sweep modes
// with broadcast inputs (whose gradients are reductions), and axis sums:
// reductions are generated kernels that accumulate in double in chunks fixed
// by the sizes, so their order does not depend on the threads.
//
// Example:
//   std::string d = DeterminismDigest();   // "f64 ... 9c0f...; f32 ... 1a2b..."
#pragma once

#include <string>

namespace dualcast::difftest {

std::string DeterminismDigest();

}  // namespace dualcast::difftest
