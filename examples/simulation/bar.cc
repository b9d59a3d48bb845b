// BarSolver: assembly, global Newton with dualcast::partials tangents, and the adjoint/tape reaction sensitivity.
#include "bar.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "elastoplastic_law.hpp"
#include "vector_views.hpp"

namespace sim {

using dualcast::Array;

const std::array<const char*, Material::kCount>& Material::Names() {
  static const std::array<const char*, kCount> names = {"E", "sy0", "H", "sinf", "delta"};
  return names;
}

const dualcast::Kernel& LawKernel() {
  static const dualcast::Kernel law = dualcast::kernel("voce_plasticity", kReturnMapping);
  return law;
}

QuadraticCheck CheckQuadratic(const NewtonLog& log, double asymptotic) {
  QuadraticCheck check;
  const auto& r = log.residuals;
  bool previous_counted = false;
  for (size_t k = 0; k + 1 < r.size(); ++k) {
    const bool counts =
        log.branch_changes[k + 1] == 0 && r[k] <= asymptotic && r[k + 1] >= log.tolerance;
    if (counts) {
      check.max_ratio = std::max(check.max_ratio, r[k + 1] / (r[k] * r[k]));
      check.min_residual = check.pairs ? std::min(check.min_residual, r[k]) : r[k];
      if (previous_counted) check.order = std::log(r[k + 1] / r[k]) / std::log(r[k] / r[k - 1]);
      ++check.pairs;
    }
    previous_counted = counts;
  }
  return check;
}

BarSolver::BarSolver(Bar bar, Material material)
    : bar_(bar), material_(material), n_(bar.elements), h_(bar.length / bar.elements) {
  if (n_ < 2) throw std::invalid_argument("BarSolver: at least 2 elements");
  const auto p = material.ToArray();
  for (int i = 0; i < Material::kCount; ++i) params_[i] = Array<double>::scalar(p[i]);
  area_.resize(n_);
  for (int e = 0; e < n_; ++e) {
    const double x_mid = (e + 0.5) * h_;
    area_[e] = bar.area0 * (1 - bar.taper * x_mid / bar.length);
  }
  u_.assign(n_ + 1, 0.0);
  u_committed_.assign(n_ + 1, 0.0);
  for (auto* v : {&eps_, &ep_n_, &alpha_n_, &sigma_, &ep_, &alpha_, &tangent_}) v->assign(n_, 0.0);
}

void BarSolver::EvaluateLaw() {
  for (int e = 0; e < n_; ++e) eps_[e] = (u_[e + 1] - u_[e]) / h_;
  // Results land in the solver's own arrays: three values and dσ/dε (the
  // other two partials are not needed, so dualcast allocates them).
  dualcast::PartialsOptions<double> options;
  options.wrt = {0};
  options.value_out = {Out(sigma_), Out(ep_), Out(alpha_)};
  options.partial_out = {Out(tangent_), Array<double>(), Array<double>()};
  dualcast::partials(LawKernel(),
                     {In(eps_), In(ep_n_), In(alpha_n_), params_[0], params_[1], params_[2],
                      params_[3], params_[4]},
                     options);
}

void BarSolver::Residual(std::vector<double>& r) const {
  r.resize(n_ - 1);
  for (int i = 1; i < n_; ++i) {
    r[i - 1] = area_[i - 1] * sigma_[i - 1] - area_[i] * sigma_[i] - bar_.body_force * h_;
  }
}

void BarSolver::SolveTangent(std::vector<double>& b) const {
  // Free node i (1 .. n-1) is row i-1; element e couples nodes e and e+1
  // with stiffness k_e = A_e C_e / h. Thomas algorithm (K is SPD).
  const int m = n_ - 1;
  std::vector<double> diag(m), upper(m);
  for (int i = 1; i < n_; ++i) {
    const double k_left = area_[i - 1] * tangent_[i - 1] / h_;
    const double k_right = area_[i] * tangent_[i] / h_;
    diag[i - 1] = k_left + k_right;
    upper[i - 1] = -k_right;
  }
  for (int r = 1; r < m; ++r) {
    const double f = upper[r - 1] / diag[r - 1];
    diag[r] -= f * upper[r - 1];
    b[r] -= f * b[r - 1];
  }
  b[m - 1] /= diag[m - 1];
  for (int r = m - 2; r >= 0; --r) b[r] = (b[r] - upper[r] * b[r + 1]) / diag[r];
}

NewtonLog BarSolver::Step(double u_end, double tolerance, int max_iterations) {
  // Predictor: the committed field plus a uniform stretch to the new end value.
  const double du = u_end - u_committed_[n_];
  for (int i = 0; i <= n_; ++i) u_[i] = u_committed_[i] + du * i / n_;
  const double force_scale = bar_.area0 * material_.sy0 * h_ / bar_.length;
  const double ulp_u = std::abs(u_end) * 0x1p-52;
  const double floor = material_.E * ulp_u / h_ * bar_.area0 / force_scale;
  NewtonLog log;
  log.tolerance = std::max(tolerance, floor);
  std::vector<double> r;
  std::vector<char> plastic(n_, 0);
  for (int it = 0;; ++it) {
    EvaluateLaw();
    int changes = 0;
    for (int e = 0; e < n_; ++e) {
      const char now = alpha_[e] > alpha_n_[e];
      changes += it > 0 && now != plastic[e];
      plastic[e] = now;
    }
    log.branch_changes.push_back(changes);
    Residual(r);
    double norm = 0;
    for (double v : r) norm = std::max(norm, std::abs(v));
    log.residuals.push_back(norm / force_scale);
    if (log.residuals.back() < log.tolerance) {
      log.converged = true;
      break;
    }
    if (it == max_iterations) break;
    SolveTangent(r);  // r becomes the correction -Δu
    for (int i = 1; i < n_; ++i) u_[i] -= r[i - 1];
  }
  for (int e = 0; e < n_; ++e) log.plastic_points += plastic[e];
  return log;
}

void BarSolver::Commit() {
  u_committed_ = u_;
  ep_n_ = ep_;
  alpha_n_ = alpha_;
}

double BarSolver::Reaction() const {
  return area_[n_ - 1] * sigma_[n_ - 1] - bar_.body_force * h_ / 2;
}

std::array<double, Material::kCount> BarSolver::ReactionGradient() const {
  // Adjoint: K λ = ∂F/∂u; only u_{n-1} enters F (through ε_{n-1}).
  std::vector<double> lambda(n_ - 1, 0.0);
  lambda[n_ - 2] = -area_[n_ - 1] * tangent_[n_ - 1] / h_;
  SolveTangent(lambda);
  // dF/dθ = ∂/∂θ [F - λᵀR] at fixed u = Σ_e w_e ∂σ_e/∂θ.
  std::vector<double> weight(n_);
  for (int e = 0; e < n_; ++e) {
    const double lambda_right = e + 1 <= n_ - 1 ? lambda[e] : 0.0;
    const double lambda_left = e >= 1 ? lambda[e - 1] : 0.0;
    weight[e] = area_[e] * ((e == n_ - 1 ? 1.0 : 0.0) - (lambda_right - lambda_left));
  }
  dualcast::Tape tape;
  std::vector<Array<double>> theta(params_.begin(), params_.end());
  std::vector<Array<double>> outs = dualcast::broadcast_n(
      LawKernel(), In(eps_), In(ep_n_), In(alpha_n_), theta[0], theta[1], theta[2], theta[3],
      theta[4]);
  Array<double> loss = dualcast::sum(outs[0] * In(weight));
  std::vector<Array<double>> grads = tape.gradient(loss, theta);
  std::array<double, Material::kCount> out{};
  for (int i = 0; i < Material::kCount; ++i) out[i] = grads[i].item();
  return out;
}

Sensitivity ReactionSensitivity(const Bar& bar, const Material& material, double u_end,
                                double fd_step) {
  auto solve = [&](const Material& m) {
    BarSolver solver(bar, m);
    NewtonLog log = solver.Step(u_end, 1e-12, 40);
    if (!log.converged) throw std::runtime_error("ReactionSensitivity: Newton did not converge");
    return solver;
  };
  Sensitivity s;
  BarSolver base = solve(material);
  s.reaction = base.Reaction();
  s.tape = base.ReactionGradient();
  const auto theta = material.ToArray();
  for (int i = 0; i < Material::kCount; ++i) {
    auto plus = theta, minus = theta;
    const double step = fd_step * std::abs(theta[i]);
    plus[i] += step;
    minus[i] -= step;
    const double f_plus = solve(Material::FromArray(plus)).Reaction();
    const double f_minus = solve(Material::FromArray(minus)).Reaction();
    s.fd[i] = (f_plus - f_minus) / (plus[i] - minus[i]);
  }
  return s;
}

}  // namespace sim
