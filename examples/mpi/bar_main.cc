// dualcast-mpi-bar: the elastoplastic bar solved over MPI subdomains; prints per load step what a one-rank run must match.
//
// Per load step: Newton iterations, end reaction, plastic points and the
// displacement at the quarter points. With --check, rank 0 also solves the
// whole bar with the one-process sim::BarSolver (examples/simulation) and
// exits non-zero when the reaction or a displacement differs by more than
// --tolerance relative, or either side is NaN. Default 1e-12: the subdomain solve eliminates in
// another order, so its iterates differ from the one-process ones by
// rounding (measured: 6e-16 with 2 and 4 ranks; one rank is bitwise equal);
// Newton damps such differences rather than amplifying them, as long as both
// take the same iterations (checked: the counts are printed and compared).
//
// Usage: mpirun -np P dualcast-mpi-bar [--elements 2000] [--steps 4] [--check] [--tolerance 1e-12]
// (--inject-nan, for the tests: the last step's reaction is replaced by NaN, which --check must reject.)
// Lines starting with '#' are diagnostics and timings (not compared).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bar.hpp"
#include "bar_subdomains.hpp"

// The most elements sim::Bar{.elements} (an int) and sim::BarSolver (nodes 0 .. elements in an int) hold.
constexpr int64_t kMaxElements = INT_MAX - 1;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const mpi_example::World world;
  int64_t elements = 2000, steps = 4;
  bool check = false, inject_nan = false;
  double tolerance = 1e-12;
  mpi_example::Options options("dualcast-mpi-bar", "[--elements N (2000)] [--steps N (4)] [--check] "
                                                   "[--tolerance X (1e-12)] [--inject-nan]");
  options.Int("--elements", &elements, 2, kMaxElements, "the node count, elements + 1, must fit in an int");
  options.Int("--steps", &steps, 1, INT_MAX);
  options.Flag("--check", &check);
  options.Real("--tolerance", &tolerance, 0, DBL_MAX);
  options.Flag("--inject-nan", &inject_nan);  // tests: the last reaction becomes NaN, --check must fail
  options.Parse(argc, argv);
  mpi_example::ExitIfAnyError(
      elements < 2 * world.size
          ? "--elements " + std::to_string(elements) + " is too few for " + std::to_string(world.size) +
                " ranks: each rank needs at least 2 elements (at least " +
                std::to_string(2 * world.size) + ")"
          : "");
  const sim::Bar bar{.elements = static_cast<int>(elements)};
  const sim::Material material;
  const double u_max = 4e-3;
  const std::vector<int64_t> probes = {elements / 4, elements / 2, 3 * elements / 4, elements - 1};

  mpi_example::SubdomainBar solver(bar, material, MPI_COMM_WORLD);
  if (world.root()) {
    std::printf("bar subdomains: elements %lld steps %lld\n", static_cast<long long>(elements),
                static_cast<long long>(steps));
  }
  // Rank 0's independent reference: the one-process solver on the whole bar.
  std::vector<double> reference_reactions, reference_u;
  if (check && world.root()) {
    sim::BarSolver serial(bar, material);
    for (int64_t s = 1; s <= steps; ++s) {
      serial.Step(u_max * s / steps);
      serial.Commit();
      reference_reactions.push_back(serial.Reaction());
      for (int64_t p : probes) reference_u.push_back(serial.displacement()[p]);
    }
  }
  double worst = 0, solve_ms = 0, cpu_ms = 0;
  bool converged = true;
  for (int64_t s = 1; s <= steps; ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = mpi_example::CpuMs();
    const sim::NewtonLog log = solver.Step(u_max * s / steps);
    solver.Commit();
    solve_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    cpu_ms += mpi_example::CpuMs() - cpu_start;
    converged = converged && log.converged;
    double reaction = solver.Reaction();
    if (inject_nan && s == steps) reaction = std::nan("");
    std::vector<double> u;
    for (int64_t p : probes) u.push_back(solver.Displacement(p));
    if (!world.root()) continue;
    std::printf("step %lld iterations %zu converged %d plastic %d reaction %.17g u",
                static_cast<long long>(s), log.residuals.size() - 1, log.converged ? 1 : 0,
                log.plastic_points, reaction);
    for (double v : u) std::printf(" %.17g", v);
    std::printf("\n#   residuals");
    for (double r : log.residuals) std::printf(" %.2e", r);
    std::printf("\n");
    if (check) {
      auto rel = [](double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-300); };
      worst = mpi_example::MaxKeepNan(worst, rel(reaction, reference_reactions[s - 1]));
      for (size_t k = 0; k < u.size(); ++k) {
        worst = mpi_example::MaxKeepNan(worst, rel(u[k], reference_u[(s - 1) * probes.size() + k]));
      }
    }
  }
  double max_ms = solve_ms, max_cpu_ms = cpu_ms, sum_cpu_ms = cpu_ms;
  MPI_Reduce(&solve_ms, &max_ms, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&cpu_ms, &max_cpu_ms, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&cpu_ms, &sum_cpu_ms, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  int failed = 0;
  if (world.root()) {
    std::printf("# ranks %d solve wall_ms %.1f cpu_ms per rank (max) %.1f all ranks %.1f "
                "(elements per rank ~%lld)\n",
                world.size, max_ms, max_cpu_ms, sum_cpu_ms, static_cast<long long>(elements / world.size));
    if (check) {
      std::printf("# largest relative difference from the one-process solver: %.3g (tolerance %.3g)\n",
                  worst, tolerance);
      failed = !(worst <= tolerance) || !converged;  // a NaN anywhere fails
      if (failed) std::fprintf(stderr, "error: the subdomain solve differs from the one-process solver\n");
    }
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return failed;
}
