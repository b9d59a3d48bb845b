// dualcast-difftest: the randomised differential tester as a command (nightly long runs, replaying seeds).
//
// usage: dualcast-difftest [--cases N] [--seed S] [--kernels K] [--ci] [--quiet]
//   (no flags)   the CI run: fixed seeds plus one fresh random seed (printed)
//   --ci         the same, explicitly
//   --seed S     run seed S only (what a failure report says to rerun)
//   --cases N    run seeds S, S+1, ... (S from --seed, else fresh) until N cases
//   --kernels K  kernels per seed (default 34)
//   --determinism-digest  print the digest of the determinism workload (determinism.h)
// Exit status 0 when every executor agreed, 1 on any disagreement, 2 on bad flags.
// Compiled kernels go to a disk cache of the run's own, removed at exit, unless
// DUALCAST_CACHE_DIR is set.
//
// Example:
//   dualcast-difftest --cases 1000000            # nightly
//   dualcast-difftest --seed 12345678901234      # replay a CI failure
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>

#include <stdlib.h>

#include "differential/ci_seeds.h"
#include "differential/determinism.h"

namespace {

// The run's kernels are random and never wanted again: unless the caller
// chose DUALCAST_CACHE_DIR, they go to a directory of this run's own,
// removed at exit, not into the user's cache. (A nightly run of a million
// cases filled ~/.cache/dualcast to its 1 GiB cap with 170,000 objects,
// evicting the user's real kernels; and every later process's first save
// then scanned them all: 0.4 s.) The disk cache's code paths still run.
class PrivateCacheDir {
 public:
  PrivateCacheDir() {
    if (std::getenv("DUALCAST_CACHE_DIR") != nullptr) return;
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = tmp != nullptr && *tmp != 0 ? tmp : "/tmp";
    pattern += "/dualcast-difftest-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) return;  // then the default cache, as before
    dir_ = pattern;
    ::setenv("DUALCAST_CACHE_DIR", dir_.c_str(), 1);
  }
  PrivateCacheDir(const PrivateCacheDir&) = delete;
  PrivateCacheDir& operator=(const PrivateCacheDir&) = delete;
  ~PrivateCacheDir() {
    if (dir_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

 private:
  std::string dir_;
};

int Usage() {
  std::cerr << "usage: dualcast-difftest [--cases N] [--seed S] [--kernels K] [--ci] [--quiet]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dualcast::difftest;
  int64_t cases = 0;
  bool have_seed = false, quiet = false;
  uint64_t seed = 0;
  Options options = CiOptions();
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (flag == "--cases") {
      const char* v = value();
      if (!v) return Usage();
      cases = std::strtoll(v, nullptr, 10);
    } else if (flag == "--seed") {
      const char* v = value();
      if (!v) return Usage();
      seed = std::strtoull(v, nullptr, 10);
      have_seed = true;
    } else if (flag == "--kernels") {
      const char* v = value();
      if (!v) return Usage();
      options.kernels_per_seed = std::atoi(v);
    } else if (flag == "--quiet") {
      quiet = true;
    } else if (flag == "--determinism-digest") {
      std::cout << DeterminismDigest() << std::endl;
      return 0;
    } else if (flag == "--ci") {
    } else {
      return Usage();
    }
  }
  if (!quiet) options.log = &std::cout;
  const PrivateCacheDir cache_dir;
  const auto start = std::chrono::steady_clock::now();
  Stats stats;
  if (cases > 0) {
    uint64_t s = have_seed ? seed : FreshSeed();
    std::cout << "difftest: seeds from " << s << " until " << cases << " cases" << std::endl;
    options.max_cases = cases;
    while (stats.total_cases() < cases) {
      RunSeed(s++, options, stats);
      if (!quiet) std::cout << "difftest: through seed " << s - 1 << ": " << stats.total_cases() << " cases, "
                            << stats.failures << " failures" << std::endl;
    }
  } else if (have_seed) {
    std::cout << "difftest: seed " << seed << std::endl;
    RunSeed(seed, options, stats);
  } else {
    for (uint64_t s : kCiSeeds) RunSeed(s, options, stats);
    const uint64_t fresh = FreshSeed();
    std::cout << "difftest: fresh seed " << fresh << " (replay: dualcast-difftest --seed " << fresh << ")"
              << std::endl;
    RunSeed(fresh, options, stats);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "difftest: " << stats.Summary() << "\ndifftest: " << seconds << " s" << std::endl;
  return stats.failures == 0 ? 0 : 1;
}
