// SubdomainBar: the elastoplastic bar of examples/simulation split into one subdomain per MPI rank, solved by a distributed Newton.
//
// Rank p owns a contiguous block of elements and the nodes at both ends of
// it; neighbouring ranks share their end node (an interface node). Per
// Newton iterate:
//  1. every rank runs the constitutive law on its own points through
//     dualcast::partials (stress, history and the consistent tangent dσ/dε
//     written straight into its arrays: no communication);
//  2. it condenses its interior nodes (static condensation, a tridiagonal
//     solve with three right-hand sides) to a 2x2 Schur complement and a
//     2-vector on its two end nodes;
//  3. one MPI_Allgather of 9 doubles per rank (Schur pieces, the interface
//     residual parts, the local residual max and branch changes) gives every
//     rank the (P-1)-node interface system, which all ranks solve
//     redundantly (same data, same order: the same bits everywhere);
//  4. each rank recovers its interior correction from the interface values.
// The stopping test uses the global residual max (a max is exact in any
// order), so all ranks stop at the same iterate.
//
// Compared with the one-process sim::BarSolver (one Thomas sweep), the
// correction is eliminated in another order, so iterates differ in the last
// bits; both converge to the same discrete equilibrium (see docs/scaling.md
// for the tolerance).
//
// Example:
//   SubdomainBar bar(sim::Bar{.elements = 4000}, sim::Material{}, MPI_COMM_WORLD);
//   sim::NewtonLog log = bar.Step(2e-3);
//   bar.Commit();
//   double f = bar.Reaction();  // the same on every rank
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include <dualcast/dualcast.hpp>

#include "bar.hpp"
#include "mpi_common.hpp"

namespace mpi_example {

class SubdomainBar {
 public:
  // Collective. Each rank needs at least 2 elements.
  SubdomainBar(sim::Bar bar, sim::Material material, MPI_Comm comm);

  // Collective: equilibrium at end displacement `u_end` from the committed
  // state (not committed); the log is the same on every rank.
  sim::NewtonLog Step(double u_end, double tolerance = 1e-10, int max_iterations = 30);
  void Commit();

  // Collective: the end reaction at x = L, on every rank.
  double Reaction() const;
  // Collective: u at global node `node` (0 .. elements), on every rank; any
  // other node aborts the job with a message (it has no owner).
  double Displacement(int64_t node) const;
  const Block& elements() const { return block_; }

 private:
  void EvaluateLaw();
  // The Newton correction du (K du = R) on this rank's nodes, given the
  // local residual parts `b` (one per local node); also returns the global
  // residual max and branch-change count through the gathered data.
  struct Gathered {
    double residual_max = 0;
    int64_t branch_changes = 0;
  };
  Gathered Correction(const std::vector<double>& b, double local_max, int local_changes,
                      std::vector<double>& du);

  sim::Bar bar_;
  sim::Material material_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  int64_t n_;  // global elements
  double h_;
  Block block_;  // my elements [begin, end); my nodes begin .. end
  std::vector<dualcast::Array<double>> params_;  // rank-0 material parameters
  std::vector<double> area_, u_, u_committed_, eps_;
  std::vector<double> ep_n_, alpha_n_;
  std::vector<double> sigma_, ep_, alpha_, tangent_;
};

}  // namespace mpi_example
