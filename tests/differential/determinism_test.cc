// Determinism: outputs and gradients are bitwise identical across runs and thread counts (1, 2, 3, 8).
//
// Each count runs in its own process (the pool size is read once per
// process): `dualcast-difftest --determinism-digest` with DUALCAST_NUM_THREADS
// set, compared digest for digest; 8 threads on a 2-core machine also shakes
// the chunk scheduling order.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "differential/determinism.h"

namespace dualcast::difftest {
namespace {

std::string RunDigest(int threads) {
  const std::string command = std::string("DUALCAST_NUM_THREADS=") + std::to_string(threads) + " '" +
                              DUALCAST_DIFFTEST_PATH + "' --determinism-digest";
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
  CHECK(::pclose(pipe) == 0);
  return out;
}

TEST_CASE("determinism: same inputs, bitwise-identical outputs and gradients across runs and threads") {
  const std::string here = DeterminismDigest() + "\n";
  MESSAGE("digest: ", here);
  CHECK(DeterminismDigest() + "\n" == here);  // run to run, same process
  for (int threads : {1, 2, 3, 8}) {
    CAPTURE(threads);
    CHECK(RunDigest(threads) == here);
  }
}

}  // namespace
}  // namespace dualcast::difftest
