// SubdomainBar: per-rank law evaluation with dualcast::partials, static condensation, and the gathered interface solve.
#include "bar_subdomains.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "elastoplastic_law.hpp"
#include "vector_views.hpp"

namespace mpi_example {
namespace {

using dualcast::Array;
using sim::In;
using sim::Out;

// Solves the tridiagonal system (diag, upper; symmetric) for each right-hand
// side in `rhs` in place: the Thomas algorithm in the order sim::BarSolver
// uses, so one rank reproduces it bit for bit.
void Thomas(std::vector<double> diag, const std::vector<double>& upper,
            std::initializer_list<std::vector<double>*> rhs) {
  const size_t m = diag.size();
  for (size_t r = 1; r < m; ++r) {
    const double f = upper[r - 1] / diag[r - 1];
    diag[r] -= f * upper[r - 1];
    for (std::vector<double>* b : rhs) (*b)[r] -= f * (*b)[r - 1];
  }
  for (std::vector<double>* b : rhs) {
    (*b)[m - 1] /= diag[m - 1];
    for (size_t r = m - 1; r-- > 0;) (*b)[r] = ((*b)[r] - upper[r] * (*b)[r + 1]) / diag[r];
  }
}

// What each rank contributes to the interface system, gathered everywhere.
enum Slot { kSLL, kSLR, kSRR, kGL, kGR, kBL, kBR, kLocalMax, kChanges, kSlots };

}  // namespace

SubdomainBar::SubdomainBar(sim::Bar bar, sim::Material material, MPI_Comm comm)
    : bar_(bar), material_(material), comm_(comm), n_(bar.elements), h_(bar.length / bar.elements) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  block_ = Partition(n_, rank_, size_);
  if (block_.count() < 2) Fail("SubdomainBar: every rank needs at least 2 elements");
  for (double p : material.ToArray()) params_.push_back(Array<double>::scalar(p));
  const int64_t ne = block_.count();
  area_.resize(ne);
  for (int64_t le = 0; le < ne; ++le) {
    const double x_mid = (block_.begin + le + 0.5) * h_;
    area_[le] = bar.area0 * (1 - bar.taper * x_mid / bar.length);
  }
  u_.assign(ne + 1, 0.0);
  u_committed_.assign(ne + 1, 0.0);
  for (auto* v : {&eps_, &ep_n_, &alpha_n_, &sigma_, &ep_, &alpha_, &tangent_}) v->assign(ne, 0.0);
}

void SubdomainBar::EvaluateLaw() {
  const int64_t ne = block_.count();
  for (int64_t le = 0; le < ne; ++le) eps_[le] = (u_[le + 1] - u_[le]) / h_;
  // Only this rank's points: the law is local, the tangent lands in tangent_.
  dualcast::PartialsOptions<double> options;
  options.wrt = {0};
  options.value_out = {Out(sigma_), Out(ep_), Out(alpha_)};
  options.partial_out = {Out(tangent_), Array<double>(), Array<double>()};
  dualcast::partials(sim::LawKernel(),
                     {In(eps_), In(ep_n_), In(alpha_n_), params_[0], params_[1], params_[2],
                      params_[3], params_[4]},
                     options);
}

SubdomainBar::Gathered SubdomainBar::Correction(const std::vector<double>& b, double local_max,
                                                int local_changes, std::vector<double>& du) {
  const int64_t ne = block_.count(), m = ne - 1;  // m interior nodes: local 1 .. ne-1
  const bool has_left = rank_ > 0, has_right = rank_ < size_ - 1;
  auto k = [&](int64_t le) { return area_[le] * tangent_[le] / h_; };
  // Interior block of K and three right-hand sides: the residual, and the
  // coupling columns to the left and right end nodes.
  std::vector<double> diag(m), upper(m), yb(m), yl(m, 0.0), yr(m, 0.0);
  for (int64_t j = 1; j <= m; ++j) {
    diag[j - 1] = k(j - 1) + k(j);
    upper[j - 1] = -k(j);
    yb[j - 1] = b[j];
  }
  yl[0] = -k(0);
  yr[m - 1] = -k(ne - 1);
  Thomas(diag, upper, {&yb, &yl, &yr});

  // Schur complement on the end nodes (only interface ends count; Dirichlet
  // ends have a zero correction).
  std::array<double, kSlots> mine{};
  const double k0 = k(0), kl = k(ne - 1);
  if (has_left) {
    mine[kSLL] = k0 + k0 * yl[0];
    mine[kGL] = b[0] + k0 * yb[0];
    mine[kBL] = b[0];
  }
  if (has_right) {
    mine[kSRR] = kl + kl * yr[m - 1];
    mine[kGR] = b[ne] + kl * yb[m - 1];
    mine[kBR] = b[ne];
  }
  if (has_left && has_right) mine[kSLR] = k0 * yr[0];
  mine[kLocalMax] = local_max;
  mine[kChanges] = local_changes;
  std::vector<double> all(static_cast<size_t>(kSlots) * size_);
  MPI_Allgather(mine.data(), kSlots, MPI_DOUBLE, all.data(), kSlots, MPI_DOUBLE, comm_);
  auto at = [&](int p, Slot s) { return all[static_cast<size_t>(p) * kSlots + s]; };

  Gathered g;
  for (int p = 0; p < size_; ++p) {
    g.residual_max = std::max(g.residual_max, at(p, kLocalMax));
    g.branch_changes += static_cast<int64_t>(at(p, kChanges));
  }
  // Interface node q (0 .. P-2) joins rank q's right end and rank q+1's left end.
  const int q_count = size_ - 1;
  std::vector<double> t_diag(q_count), t_upper(q_count, 0.0), x(q_count);
  for (int q = 0; q < q_count; ++q) {
    t_diag[q] = at(q, kSRR) + at(q + 1, kSLL);
    if (q + 1 < q_count) t_upper[q] = at(q + 1, kSLR);
    x[q] = at(q, kGR) + at(q + 1, kGL);
    g.residual_max = std::max(g.residual_max, std::abs(at(q, kBR) + at(q + 1, kBL)));
  }
  if (q_count > 0) Thomas(t_diag, t_upper, {&x});

  const double x_left = has_left ? x[rank_ - 1] : 0.0, x_right = has_right ? x[rank_] : 0.0;
  du.assign(ne + 1, 0.0);
  du[0] = x_left;
  du[ne] = x_right;
  for (int64_t j = 1; j <= m; ++j) du[j] = yb[j - 1] - yl[j - 1] * x_left - yr[j - 1] * x_right;
  return g;
}

sim::NewtonLog SubdomainBar::Step(double u_end, double tolerance, int max_iterations) {
  const int64_t ne = block_.count();
  // Every rank knows the committed end displacement: the last rank's end node.
  double committed_end = rank_ == size_ - 1 ? u_committed_[ne] : 0.0;
  MPI_Bcast(&committed_end, 1, MPI_DOUBLE, size_ - 1, comm_);
  const double du_end = u_end - committed_end;
  for (int64_t j = 0; j <= ne; ++j) {
    const int64_t i = block_.begin + j;
    u_[j] = u_committed_[j] + du_end * static_cast<double>(i) / static_cast<double>(n_);
  }
  // The same scales and stopping rule as sim::BarSolver::Step.
  const double force_scale = bar_.area0 * material_.sy0 * h_ / bar_.length;
  const double ulp_u = std::abs(u_end) * 0x1p-52;
  const double floor = material_.E * ulp_u / h_ * bar_.area0 / force_scale;
  sim::NewtonLog log;
  log.tolerance = std::max(tolerance, floor);
  const double qh = bar_.body_force * h_;
  std::vector<double> b(ne + 1), du;
  std::vector<char> plastic(ne, 0);
  for (int it = 0;; ++it) {
    EvaluateLaw();
    int changes = 0;
    for (int64_t le = 0; le < ne; ++le) {
      const char now = alpha_[le] > alpha_n_[le];
      changes += it > 0 && now != plastic[le];
      plastic[le] = now;
    }
    // Residual parts per local node; an interface node's body force goes to
    // the rank on its right (its left end), so the two parts sum to R.
    double local_max = 0;
    for (int64_t j = 1; j < ne; ++j) {
      b[j] = area_[j - 1] * sigma_[j - 1] - area_[j] * sigma_[j] - qh;
      local_max = std::max(local_max, std::abs(b[j]));
    }
    b[0] = -area_[0] * sigma_[0] - qh;
    b[ne] = area_[ne - 1] * sigma_[ne - 1];
    const Gathered g = Correction(b, local_max, changes, du);
    log.branch_changes.push_back(static_cast<int>(g.branch_changes));
    log.residuals.push_back(g.residual_max / force_scale);
    if (log.residuals.back() < log.tolerance) {
      log.converged = true;
      break;
    }
    if (it == max_iterations) break;
    for (int64_t j = 0; j <= ne; ++j) u_[j] -= du[j];
  }
  int plastic_points = 0;
  for (int64_t le = 0; le < ne; ++le) plastic_points += plastic[le];
  MPI_Allreduce(&plastic_points, &log.plastic_points, 1, MPI_INT, MPI_SUM, comm_);
  return log;
}

void SubdomainBar::Commit() {
  u_committed_ = u_;
  ep_n_ = ep_;
  alpha_n_ = alpha_;
}

double SubdomainBar::Reaction() const {
  const int64_t ne = block_.count();
  double f = rank_ == size_ - 1 ? area_[ne - 1] * sigma_[ne - 1] - bar_.body_force * h_ / 2 : 0.0;
  MPI_Bcast(&f, 1, MPI_DOUBLE, size_ - 1, comm_);
  return f;
}

double SubdomainBar::Displacement(int64_t node) const {
  // The same node on every rank (a collective), so every rank fails alike.
  if (node < 0 || node > n_) {
    Fail("SubdomainBar::Displacement: node " + std::to_string(node) + " is outside 0 .. " +
         std::to_string(n_));
  }
  // The owner: the rank whose block starts at or before it (the last one for node n).
  const bool owner = (node >= block_.begin && node < block_.end) || (node == n_ && rank_ == size_ - 1);
  double v = owner ? u_[node - block_.begin] : 0.0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_SUM, comm_);  // one nonzero term: exact
  return v;
}

}  // namespace mpi_example
