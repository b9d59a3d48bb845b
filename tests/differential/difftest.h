// The randomised differential tester's driver: random kernels x random shapes x every executor, with shrinking.
//
// One seed determines a run: `kernels_per_seed` random branchy kernels
// (tests/kernels/random_kernel.h; 1-4 inputs, 1-2 outputs, extended ops half
// the time), each checked on `patterns_per_kernel` broadcast structures with
// `shapes_per_pattern` size/data draws each (same structure = the compiled
// kernel is reused, which keeps a CI run fast). A *case* is one kernel x
// shapes x executor comparison that ran; skips (no GPU, kinks within the
// finite-difference step, near-tie branch conditions) are counted apart.
//
// Any disagreement is shrunk — the shapes first (one element at rank 0,
// contiguous layouts, smaller dims), then the tree (subtrees replaced by
// children or inputs) while the same executor still disagrees — and
// reported with the kernel as C++, its IR (jit::Print), the shapes and the
// input values, and the command that reruns the seed.
//
// Example:
//   difftest::Stats stats;
//   difftest::RunSeed(20261121, difftest::Options{}, stats);
//   std::cout << stats.Summary();          // "12345 cases: interpreter 2400, ..."
//   if (stats.failures) std::cout << stats.reports[0];
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "differential/executors.h"

namespace dualcast::difftest {

struct Options {
  int kernels_per_seed = 40;
  int patterns_per_kernel = 2;
  int shapes_per_pattern = 6;
  int64_t max_cases = 0;     // stop a seed once the run has this many cases (0: no limit)
  int max_reports = 3;       // disagreements shrunk and reported in full
  std::ostream* log = nullptr;  // progress and reports, when set
};

struct Stats {
  std::array<int64_t, kNumExecutors> cases{};    // comparisons that ran and agreed or not
  std::array<int64_t, kNumExecutors> skipped{};  // comparisons that could not run meaningfully
  int64_t near_ties = 0;   // disagreements excused: a branch condition within 1e-9 of a tie
  int64_t ill_conditioned = 0;  // excused: an ulp in one input moves the reference beyond tolerance
  int64_t strong_zero = 0; // excused: the jvp-vs-Dual strong-zero mismatch (see Verdict)
  std::string strong_zero_example;  // the first one, minimised
  int64_t kernels = 0, shape_cases = 0, failures = 0;
  std::vector<std::string> reports;
  std::string gpu_skip_reason;

  int64_t total_cases() const;
  std::string Summary() const;
};

// Runs every kernel of `seed` (until options.max_cases), adding to `stats`.
void RunSeed(uint64_t seed, const Options& options, Stats& stats);

// Shrinks a disagreement of executor `e` and formats the reproducer; with
// `strong_zero`, an excused strong-zero mismatch (Verdict) counts as failing.
std::string Minimise(const KernelUnderTest& k, const ShapeCase& c, Executor e, uint64_t variant,
                     const Verdict& verdict, uint64_t seed, int kernel_index, bool strong_zero);

}  // namespace dualcast::difftest
