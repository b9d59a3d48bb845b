// mpi_bar_displacement_*: SubdomainBar::Displacement on an 8-element bar, at the node given as argv[1].
//
// Nodes 0 .. 8 have exactly one owner and read back on every rank; any other
// node must end the job with a message (it returned 0 when no rank owned it).
// Prints "u(node) = value" on rank 0 and exits 0 when the call returns.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "bar_subdomains.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const mpi_example::World world;
  mpi_example::ExitIfAnyError(argc == 2 ? "" : "usage: subdomain_bar_displacement NODE");
  const int64_t node = std::atoll(argv[1]);
  mpi_example::SubdomainBar bar(sim::Bar{.elements = 8}, sim::Material{}, MPI_COMM_WORLD);
  bar.Step(1e-3);  // u = 1e-3 * node / 8 and nonzero inside: a missing owner would read 0
  bar.Commit();
  const double u = bar.Displacement(node);
  if (world.root()) std::printf("u(%lld) = %.17g\n", static_cast<long long>(node), u);
  MPI_Finalize();
  return 0;
}
