// The differential tester's CI configuration: fixed seeds plus one fresh seed per run.
//
// The fixed seeds make every CI run check the same >= 10^4 cases (a
// regression there is reproducible by construction); the fresh seed, drawn
// from std::random_device and printed in the log, explores new kernels each
// run. A failure on the fresh seed prints "rerun: dualcast-difftest --seed S".
//
// Example:
//   for (uint64_t s : kCiSeeds) RunSeed(s, CiOptions(), stats);
//   RunSeed(FreshSeed(), CiOptions(), stats);
#pragma once

#include <cstdint>
#include <cstdlib>
#include <random>

#include "differential/difftest.h"

namespace dualcast::difftest {

inline constexpr uint64_t kCiSeeds[] = {1, 2, 3, 1014, 1033, 20261121};  // 1014, 1033: found bugs

inline Options CiOptions() {
  Options o;
  o.kernels_per_seed = 34;
  o.patterns_per_kernel = 2;
  o.shapes_per_pattern = 7;
  return o;
}

// DUALCAST_DIFFTEST_SEED overrides the fresh seed (to replay a CI log).
inline uint64_t FreshSeed() {
  if (const char* env = std::getenv("DUALCAST_DIFFTEST_SEED")) return std::strtoull(env, nullptr, 10);
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace dualcast::difftest
