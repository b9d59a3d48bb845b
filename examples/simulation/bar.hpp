// A 1-D elastoplastic bar: finite elements, a global Newton solve with the consistent tangent from dualcast::partials, and adjoint sensitivities through the tape.
//
// The model: a tapered bar on [0, L] (area A(x) = A0 (1 - taper x / L)),
// clamped at x = 0, pulled by a prescribed end displacement ū at x = L and
// loaded by a constant body force q per unit length. Linear elements, one
// integration point each; the law is sim::kReturnMapping. Everything is
// double precision and lives in the solver's own std::vectors: dualcast only
// sees views of them (inputs as views of const memory, results written in
// place), as a simulation code would use it.
//
// Newton: at each iterate the law runs once over all points through
// dualcast::partials, which writes the stress, the updated history and the
// consistent tangent dσ/dε straight into the solver's arrays; the tangent
// assembles a tridiagonal stiffness, solved by the Thomas algorithm.
//
// Sensitivity: dF/dθ of the end reaction F with respect to the material
// parameters θ = (E, σy0, H, σ∞, δ) at equilibrium, by the adjoint method:
// K λ = ∂F/∂u, then dF/dθ = ∂/∂θ [F - λᵀ R] at fixed u, a weighted sum of
// stresses that the tape differentiates with the parameters broadcast as
// rank-0 arrays.
//
// Thread safety: a BarSolver is used by one thread at a time.
//
// Example:
//   sim::BarSolver solver(sim::Bar{.elements = 100000}, sim::Material{});
//   for (int k = 1; k <= 4; ++k) {
//     sim::NewtonLog log = solver.Step(k * 1e-3);       // residual per iteration
//     solver.Commit();                                  // accept the history
//   }
//   sim::Sensitivity s = sim::ReactionSensitivity(sim::Bar{.elements = 2000}, sim::Material{}, 4e-3);
#pragma once

#include <array>
#include <string>
#include <vector>

#include <dualcast/dualcast.hpp>

namespace sim {

struct Bar {
  int elements = 100000;
  double length = 1.0;
  double area0 = 1.0;
  double taper = 0.5;        // A(L) = A0 (1 - taper)
  double body_force = 20.0;  // q, per unit length, along +x
};

// Steel-like, in MPa.
struct Material {
  double E = 200e3;
  double sy0 = 250;
  double H = 2e3;
  double sinf = 450;
  double delta = 1000;
  static constexpr int kCount = 5;
  static const std::array<const char*, kCount>& Names();
  std::array<double, kCount> ToArray() const { return {E, sy0, H, sinf, delta}; }
  static Material FromArray(const std::array<double, kCount>& v) {
    return Material{v[0], v[1], v[2], v[3], v[4]};
  }
};

struct NewtonLog {
  // At each iterate, the first after the predictor: ‖R‖∞ / (A0 σy0 h / L),
  // the nodal force imbalance per unit length relative to the yield force
  // per unit length: the discrete d(Aσ)/dx + q, independent of the mesh.
  std::vector<double> residuals;
  // Points whose branch (elastic / plastic) at iterate k differs from
  // iterate k-1 (0 for k = 0). Newton is quadratic once this stays 0: each
  // point's law is then smooth on the segment between the iterates.
  std::vector<int> branch_changes;
  // The stopping tolerance used: the requested one, raised to the rounding
  // floor of strains differenced from displacements (E ulp(u) / h per
  // element force, in the units above).
  double tolerance = 0;
  bool converged = false;
  int plastic_points = 0;  // at the converged state
};

class BarSolver {
 public:
  BarSolver(Bar bar, Material material);

  // Solves equilibrium for end displacement `u_end` from the committed
  // history; does not commit. Stops when the relative residual is below
  // `tolerance` (or after `max_iterations` updates).
  NewtonLog Step(double u_end, double tolerance = 1e-10, int max_iterations = 30);
  // Accepts the state of the last Step as the history of the next.
  void Commit();

  // End reaction at x = L of the current state.
  double Reaction() const;
  // dF/dθ at the current (equilibrium) state by adjoint + tape.
  std::array<double, Material::kCount> ReactionGradient() const;

  const std::vector<double>& stress() const { return sigma_; }
  const std::vector<double>& strain() const { return eps_; }
  const std::vector<double>& displacement() const { return u_; }
  int elements() const { return n_; }

 private:
  // Strains from u, then stress, history and tangent at every point.
  void EvaluateLaw();
  // Free-node residual R (nodes 1 .. n-1) from the current stress.
  void Residual(std::vector<double>& r) const;
  // Solves K x = b on the free nodes with the current tangent (b is overwritten by x).
  void SolveTangent(std::vector<double>& b) const;

  Bar bar_;
  Material material_;
  int n_;
  double h_;
  std::array<dualcast::Array<double>, Material::kCount> params_;  // rank-0
  std::vector<double> area_, u_, u_committed_, eps_;
  std::vector<double> ep_n_, alpha_n_;            // committed history
  std::vector<double> sigma_, ep_, alpha_, tangent_;  // at the current iterate
};

// The law as a dualcast kernel (one per process: traced and compiled once).
const dualcast::Kernel& LawKernel();

// Newton's quadratic convergence as measured on a log. Pairs (k, k+1)
// count when every point is on the same branch at both iterates
// (branch_changes[k + 1] == 0), r_k <= `asymptotic` (close enough for the
// local theory) and r_{k+1} >= the stopping tolerance (above rounding
// noise, which no C r_k² bounds). Over those pairs: the largest
// r_{k+1} / r_k², the smallest r_k, and the last order estimate
// p = log(r_{k+1} / r_k) / log(r_k / r_{k-1}) (2 for quadratic, 1 for linear).
struct QuadraticCheck {
  int pairs = 0;
  double max_ratio = 0;
  double min_residual = 0;
  double order = 0;  // 0 when fewer than two consecutive pairs
};
QuadraticCheck CheckQuadratic(const NewtonLog& log, double asymptotic = 1.0);

// Reaction sensitivities of one load step from the virgin state to `u_end`:
// by the tape (adjoint) and by central finite differences of the full
// nonlinear solve with relative parameter steps `fd_step`.
struct Sensitivity {
  std::array<double, Material::kCount> tape{}, fd{};
  double reaction = 0;
};
Sensitivity ReactionSensitivity(const Bar& bar, const Material& material, double u_end,
                                double fd_step = 1e-6);

}  // namespace sim
