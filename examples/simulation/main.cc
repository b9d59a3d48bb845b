// dualcast-simulation: a tapered elastoplastic bar solved by Newton with dualcast tangents, plus reaction sensitivities vs finite differences.
//
// Prints, per load step, the relative residual of every Newton iterate and
// r_{k+1}/r_k² (bounded when convergence is quadratic), then the gradient
// of the end reaction with respect to the five material parameters by the
// tape (adjoint) next to central finite differences of the whole nonlinear
// solve. With --check it exits non-zero when convergence is not quadratic
// (a ratio above --ratio-bound, or no step with an order estimate >= --min-order) or a sensitivity differs from its finite
// difference by more than --fd-tolerance (relative).
//
// Example:
//   dualcast-simulation                          # 10^5 points, 4 load steps
//   dualcast-simulation --elements 2000 --check  # what ctest runs
#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bar.hpp"

namespace {

struct Options {
  int elements = 100000;
  int steps = 4;
  double u_max = 4e-3;
  int sensitivity_elements = 2000;
  bool check = false;
  double ratio_bound = 10;
  double min_order = 1.8;
  double fd_tolerance = 1e-5;
};

// --help: the usage on stdout, exit 0; a bad command line: what is wrong and the usage on stderr, exit 2.
[[noreturn]] void Usage(const char* why = nullptr) {
  std::FILE* to = why == nullptr ? stdout : stderr;
  if (why != nullptr) std::fprintf(to, "dualcast-simulation: %s\n", why);
  std::fprintf(to,
               "usage: dualcast-simulation [--elements N] [--steps S] [--u-max U]\n"
               "                           [--sensitivity-elements N] [--check]\n"
               "                           [--ratio-bound B] [--min-order P] [--fd-tolerance T]\n");
  std::exit(why == nullptr ? 0 : 2);
}

// The whole word as a number, or the usage with what is wrong (atoi read
// "--steps 4x" as 4 and "--elements 1e5" as 1).
int WholeNumber(const char* option, const char* text) {
  int v = 0;
  const char* end = text + std::strlen(text);
  const auto [ptr, ec] = std::from_chars(text, end, v);
  if (*text == '\0' || ptr != end || ec != std::errc()) {
    Usage((std::string(option) + " '" + text + "': not a whole number that fits in an int").c_str());
  }
  return v;
}
double RealNumber(const char* option, const char* text) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (*text == '\0' || std::isspace(static_cast<unsigned char>(*text)) || *end != '\0' ||
      !std::isfinite(v)) {
    Usage((std::string(option) + " '" + text + "': not a finite number").c_str());
  }
  return v;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];  // value() moves i on
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) Usage((std::string(argv[i]) + " needs a value").c_str());
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) Usage();
    else if (!std::strcmp(argv[i], "--elements")) o.elements = WholeNumber(arg, value());
    else if (!std::strcmp(argv[i], "--steps")) o.steps = WholeNumber(arg, value());
    else if (!std::strcmp(argv[i], "--u-max")) o.u_max = RealNumber(arg, value());
    else if (!std::strcmp(argv[i], "--sensitivity-elements")) o.sensitivity_elements = WholeNumber(arg, value());
    else if (!std::strcmp(argv[i], "--check")) o.check = true;
    else if (!std::strcmp(argv[i], "--ratio-bound")) o.ratio_bound = RealNumber(arg, value());
    else if (!std::strcmp(argv[i], "--min-order")) o.min_order = RealNumber(arg, value());
    else if (!std::strcmp(argv[i], "--fd-tolerance")) o.fd_tolerance = RealNumber(arg, value());
    else Usage(("unknown option '" + std::string(argv[i]) + "'").c_str());
  }
  if (o.elements < 2 || o.steps < 1 || o.sensitivity_elements < 2) {
    Usage("--elements and --sensitivity-elements must be whole numbers >= 2, --steps >= 1");
  }
  return o;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = Parse(argc, argv);
  int failures = 0;
  int quadratic_pairs = 0;
  double best_order = 0;
  try {
    const sim::Bar bar{.elements = opt.elements};
    const sim::Material material;
    std::printf("tapered bar: %d elements (integration points), E=%g sy0=%g H=%g sinf=%g delta=%g\n",
                opt.elements, material.E, material.sy0, material.H, material.sinf, material.delta);
    sim::BarSolver solver(bar, material);
    const auto start = std::chrono::steady_clock::now();
    for (int step = 1; step <= opt.steps; ++step) {
      const double u_end = opt.u_max * step / opt.steps;
      sim::NewtonLog log = solver.Step(u_end);
      std::printf("step %d: u_end = %.3e, plastic points %d / %d, reaction %.6f\n", step, u_end,
                  log.plastic_points, opt.elements, solver.Reaction());
      for (size_t k = 0; k < log.residuals.size(); ++k) {
        std::printf("  iter %zu  |R| L/(A0 sy0 h) = %.3e  branch changes %6d", k, log.residuals[k],
                    log.branch_changes[k]);
        if (k > 0) {
          std::printf("  r_k/r_{k-1}^2 = %.3e",
                      log.residuals[k] / std::pow(log.residuals[k - 1], 2));
        }
        std::printf("\n");
      }
      const sim::QuadraticCheck q = sim::CheckQuadratic(log);
      std::printf("  converged to %.1e; quadratic phase (fixed branches): %d pair(s), "
                  "max r_{k+1}/r_k^2 = %.3e, order %.2f\n",
                  log.tolerance, q.pairs, q.max_ratio, q.order);
      quadratic_pairs += q.pairs;
      best_order = std::max(best_order, q.order);
      if (!log.converged || q.max_ratio > opt.ratio_bound) {
        std::printf("  NOT QUADRATIC (bound %g)\n", opt.ratio_bound);
        ++failures;
      }
      solver.Commit();
    }
    std::printf("load history: %.3f s\n", Seconds(start));
    // A bounded ratio alone could come from a short linear run; the order
    // estimate (1 for linear convergence) makes the check discriminating.
    if (quadratic_pairs < 2 || best_order < opt.min_order) {
      std::printf("NOT DEMONSTRATED: %d quadratic-phase pair(s), best order %.2f (need 2, >= %.1f)\n",
                  quadratic_pairs, best_order, opt.min_order);
      ++failures;
    }

    const auto sens_start = std::chrono::steady_clock::now();
    const sim::Bar small{.elements = opt.sensitivity_elements};
    sim::Sensitivity s = sim::ReactionSensitivity(small, material, opt.u_max);
    std::printf("reaction sensitivity, one step to u_end = %.3e on %d elements (F = %.10f):\n",
                opt.u_max, opt.sensitivity_elements, s.reaction);
    std::printf("  %-6s %22s %22s %10s\n", "param", "tape (adjoint)", "central FD", "rel.err");
    for (int i = 0; i < sim::Material::kCount; ++i) {
      const double err = std::abs(s.tape[i] - s.fd[i]) / std::max(std::abs(s.fd[i]), 1e-30);
      std::printf("  %-6s %22.12e %22.12e %10.2e%s\n", sim::Material::Names()[i], s.tape[i], s.fd[i],
                  err, err > opt.fd_tolerance ? "  MISMATCH" : "");
      failures += err > opt.fd_tolerance;
    }
    std::printf("sensitivity: %.3f s\n", Seconds(sens_start));
  } catch (const dualcast::Error& e) {
    std::fprintf(stderr, "dualcast error (%s): %s\n", dualcast::ErrorKindName(e.kind()), e.what());
    return 1;
  }
  if (opt.check) std::printf("%s\n", failures ? "CHECK FAILED" : "CHECK OK");
  return opt.check && failures ? 1 : 0;
}
