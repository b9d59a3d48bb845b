// The differential tester's driver and minimiser (see difftest.h).
#include "differential/difftest.h"

#include <cstring>
#include <optional>
#include <ostream>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jit/error.h"
#include "jit/ir/print.h"

namespace dualcast::difftest {

int64_t Stats::total_cases() const {
  int64_t n = 0;
  for (int64_t c : cases) n += c;
  return n;
}

std::string Stats::Summary() const {
  std::vector<std::string> per;
  for (int e = 0; e < kNumExecutors; ++e) {
    per.push_back(absl::StrCat(ExecutorName(static_cast<Executor>(e)), " ", cases[e],
                               skipped[e] ? absl::StrCat(" (+", skipped[e], " skipped)") : ""));
  }
  std::string s = absl::StrCat(total_cases(), " cases (", kernels, " kernels x ", shape_cases,
                               " shape cases): ", absl::StrJoin(per, ", "), "; ", near_ties,
                               " near-tie disagreements excused; ", ill_conditioned,
                               " excused as ill-conditioned (an ulp in one input moves the reference "
                               "beyond tolerance); ", strong_zero,
                               " non-finite partials excused as the jvp-vs-Dual strong-zero mismatch; ",
                               failures, " failures");
  if (!gpu_skip_reason.empty()) absl::StrAppend(&s, "\ngpu executor skipped: ", gpu_skip_reason);
  if (!strong_zero_example.empty()) {
    absl::StrAppend(&s, "\nfirst strong-zero mismatch (jit/passes/jvp.cc vs Dual's documented convention):\n",
                    strong_zero_example);
  }
  return s;
}

namespace {

std::optional<Verdict> Fails(const KernelUnderTest& k, const ShapeCase& c, Executor e, uint64_t variant,
                             bool strong_zero) {
  Reference ref = ComputeReference(k, c);
  Verdict v = RunExecutor(e, k, c, ref, variant);
  if (v.kind == Verdict::kDisagree || (strong_zero && v.strong_zero)) return v;
  return std::nullopt;
}

std::string InputValues(const ShapeCase& c) {
  std::string s;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const int64_t n = c.InputSize(static_cast<int>(i));
    std::vector<std::string> v;
    for (int64_t k = 0; k < std::min<int64_t>(n, 24); ++k) {
      v.push_back(absl::StrFormat("%.17g", c.InputValue(static_cast<int>(i), k)));
    }
    absl::StrAppend(&s, "  x", i, " = {", absl::StrJoin(v, ", "), n > 24 ? ", ..." : "", "}\n");
  }
  return s;
}

}  // namespace

std::string Minimise(const KernelUnderTest& k, const ShapeCase& c, Executor e, uint64_t variant,
                     const Verdict& verdict, uint64_t seed, int kernel_index, bool strong_zero) {
  ShapeCase best_c = c;
  Verdict best_v = verdict;
  int attempts = 0;
  // An excused mismatch gets a cheaper shrink: it must not dominate a CI run.
  const int budget = strong_zero ? 80 : 400;
  auto try_case = [&](const KernelUnderTest& kk, const ShapeCase& cc) {
    ++attempts;
    try {
      if (std::optional<Verdict> v = Fails(kk, cc, e, variant, strong_zero)) {
        best_v = *v;
        return true;
      }
    } catch (const std::exception&) {
    }
    return false;
  };
  auto shrink_shapes = [&](const KernelUnderTest& kk) {
    if (best_v.element >= 0 && e != Executor::kTape && e != Executor::kTapeFd) {
      ShapeCase scalar = ScalarCase(best_c, best_v.element);
      if (try_case(kk, scalar)) best_c = scalar;
    }
    for (bool progress = true; progress && attempts < budget / 2;) {
      progress = false;
      for (const ShapeCase& cand : ShrinkShapes(best_c)) {
        if (try_case(kk, cand)) {
          best_c = cand;
          progress = true;
          break;
        }
      }
    }
  };
  shrink_shapes(k);
  KernelUnderTest best_k = k;
  int shrunk = 0;
  for (bool progress = true; progress && attempts < budget;) {
    progress = false;
    for (const testing::Tree& t : testing::ShrinkCandidates(best_k.tree)) {
      try {
        KernelUnderTest cand = MakeKernel(t, absl::StrCat(k.name, "_s", ++shrunk));
        if (try_case(cand, best_c)) {
          best_k = std::move(cand);
          progress = true;
          break;
        }
      } catch (const std::exception&) {
      }
      if (attempts >= budget) break;
    }
  }
  shrink_shapes(best_k);
  return absl::StrCat(
      "=== difftest disagreement: executor ", ExecutorName(e), ", seed ", seed, ", kernel #",
      kernel_index, " (", k.name, "), variant ", variant, " ===\n",
      "as found: ", verdict.detail, "\n", "as found on shapes: ", c.Describe(), "\n",
      "minimised (", attempts, " attempts): ", best_v.detail, "\n", "shapes: ", best_c.Describe(),
      "\n", "input values (logical, row-major):\n", InputValues(best_c),
      "kernel (C++): ", testing::ToCpp(best_k.tree), "\n", "IR (jit::Print of the traced kernel):\n",
      jit::Print(*best_k.primal), "rerun: dualcast-difftest --seed ", seed, "\n");
}

void RunSeed(uint64_t seed, const Options& options, Stats& stats) {
  std::mt19937_64 rng(seed);
  stats.gpu_skip_reason = GpuSkipReason();
  for (int ki = 0; ki < options.kernels_per_seed; ++ki) {
    if (options.max_cases > 0 && stats.total_cases() >= options.max_cases) return;
    testing::GrowOptions grow;
    grow.num_inputs = 1 + static_cast<int>(rng() % 4);
    grow.num_outputs = rng() % 5 == 0 ? 2 : 1;
    grow.depth = 3 + static_cast<int>(rng() % 3);
    grow.max_ifs = 4;
    grow.extended_ops = rng() % 2 == 0;
    const testing::Tree tree = testing::GrowTree(rng, grow);
    const std::string name = absl::StrCat("rk_", seed, "_", ki);
    KernelUnderTest k;
    try {
      k = MakeKernel(tree, name);
    } catch (const Error& err) {
      ++stats.failures;
      stats.reports.push_back(absl::StrCat("=== difftest: kernel ", name, " failed to trace: ",
                                           err.what(), "\nkernel (C++): ", testing::ToCpp(tree), "\n"));
      continue;
    }
    ++stats.kernels;
    for (int pi = 0; pi < options.patterns_per_kernel; ++pi) {
      const ShapePattern pattern = RandomPattern(rng, grow.num_inputs);
      for (int si = 0; si < options.shapes_per_pattern; ++si) {
        const ShapeCase c = DrawShapes(pattern, rng);
        const uint64_t variant = rng();
        ++stats.shape_cases;
        const Reference ref = ComputeReference(k, c);
        int64_t input_elements = 0;
        for (int i = 0; i < grow.num_inputs; ++i) input_elements += c.InputSize(i);
        const bool tape = si % 2 == 0 && c.num_elements() <= 400;
        const bool tape_fd = tape && c.num_elements() <= 24 && input_elements <= 48;
        std::vector<Executor> executors = {Executor::kInterpreter, Executor::kCpuDirect,
                                           Executor::kRuntimePartials, Executor::kRuntimeBroadcast,
                                           Executor::kGpu};
        if (tape) executors.push_back(Executor::kTape);
        if (tape_fd) executors.push_back(Executor::kTapeFd);
        std::vector<std::vector<double>> before;
        for (const Operand& op : c.inputs) before.push_back(op.buffer);
        for (Executor e : executors) {
          Verdict v = RunExecutor(e, k, c, ref, variant);
          const int idx = static_cast<int>(e);
          if (v.kind == Verdict::kSkipped) {
            ++stats.skipped[idx];
            if (v.near_tie) ++stats.near_ties;
            if (v.ill_conditioned) ++stats.ill_conditioned;
            if (v.strong_zero && stats.strong_zero++ == 0) {
              Verdict as_failure = v;
              as_failure.kind = Verdict::kDisagree;
              stats.strong_zero_example = Minimise(k, c, e, variant, as_failure, seed, ki, true);
            }
            continue;
          }
          ++stats.cases[idx];
          if (v.kind == Verdict::kAgree) continue;
          ++stats.failures;
          if (static_cast<int>(stats.reports.size()) < options.max_reports) {
            std::string report = Minimise(k, c, e, variant, v, seed, ki, false);
            if (options.log) *options.log << report << std::flush;
            stats.reports.push_back(std::move(report));
          }
        }
        for (size_t i = 0; i < c.inputs.size(); ++i) {
          if (std::memcmp(before[i].data(), c.inputs[i].buffer.data(), before[i].size() * sizeof(double)) != 0) {
            ++stats.failures;
            stats.reports.push_back(absl::StrCat("=== difftest: input ", i, " of kernel ", name,
                                                 " was modified in place; shapes ", c.Describe(), "\n"));
          }
        }
      }
    }
  }
}

}  // namespace dualcast::difftest
