// CI entry of the public-surface differential tester: >= 10^4 gradient cases, every one matches or raises the documented Error.
//
// Fixed seeds (1, 2, ...) until 10^4 cases: the run is deterministic. To
// explore or replay: DUALCAST_SURFACE_SEED=<first seed> and
// DUALCAST_SURFACE_CASES=<how many cases>; DUALCAST_SURFACE_DEVICE=cuda puts
// every array on GPU 0 (the ctest surface_emulated_gpu: the emulated one).
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "differential/surface.h"
#include "dualcast/device.hpp"

namespace dualcast::surface {
namespace {

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

TEST_CASE("public surface: random programs, tape at random points, gradients vs finite differences") {
  const uint64_t first = EnvOr("DUALCAST_SURFACE_SEED", 1);
  const int64_t want = static_cast<int64_t>(EnvOr("DUALCAST_SURFACE_CASES", 10000));
  Stats stats;
  uint64_t seed = first;
  // DUALCAST_SURFACE_DEVICE=cuda: every array on GPU 0 (the emulated GPU's ctest).
  const char* device = std::getenv("DUALCAST_SURFACE_DEVICE");
  const bool cuda = device != nullptr && std::string(device) == "cuda";
  if (cuda && !Device::cuda().available()) {
    MESSAGE("SKIPPED (needs a GPU): " << Device::cuda().unavailable_reason());
    return;
  }
  for (; stats.cases < want; ++seed) {
    Program p = RandomProgram(seed);
    p.cuda = cuda;
    Check(p, stats);
    if (stats.reports.size() >= 3) break;  // enough to act on
  }
  std::cout << "public surface (seeds " << first << ".." << seed - 1 << "): " << stats.Summary()
            << std::endl;
  for (const std::string& r : stats.reports) FAIL_CHECK(r);
  CHECK(stats.failures == 0);
  CHECK(stats.cases >= want);
  // The mix of cases, over a sample large enough to say (the emulated GPU's 120 cases are not).
  if (want >= 10000) {
    CHECK(stats.errors_expected * 10 <= stats.cases * 6);  // most cases are real gradients
    CHECK(stats.skipped * 50 <= stats.elements);
    CHECK(stats.tie_excused * 200 <= stats.elements);  // exact ties stay rare
  }
}

}  // namespace
}  // namespace dualcast::surface
