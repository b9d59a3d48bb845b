// Simulation example tests: the law's dualcast partials vs Dual<double> and finite differences, Newton's quadratic phase, the reaction sensitivity vs FD.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "bar.hpp"
#include "elastoplastic_law.hpp"

namespace {

using dualcast::Array;
using D = dualcast::Dual<double, 1>;

const sim::Material kMat;

// States covering the three branches: elastic, plastic in tension and in
// compression, with and without previous hardening.
struct Point {
  double eps, ep_n, alpha_n;
};
const std::vector<Point> kPoints = {
    {5e-4, 0, 0},       {2e-3, 0, 0},          {-3e-3, 0, 0},    {4e-3, 1e-3, 1e-3},
    {-1e-3, 1e-3, 2e-3}, {1.2e-3, 1e-3, 1e-3}, {1e-2, 2e-3, 5e-3}};

template <class T>
auto Law(T eps, T ep_n, T alpha_n, T E, T sy0, T H, T sinf, T delta) {
  return sim::kReturnMapping(eps, ep_n, alpha_n, E, sy0, H, sinf, delta);
}

}  // namespace

TEST_CASE("consistent tangent from dualcast::partials matches Dual<double> and central differences") {
  const size_t n = kPoints.size();
  std::vector<double> eps(n), ep(n), alpha(n);
  for (size_t i = 0; i < n; ++i) {
    eps[i] = kPoints[i].eps;
    ep[i] = kPoints[i].ep_n;
    alpha[i] = kPoints[i].alpha_n;
  }
  const auto v = [&](const std::vector<double>& x) {
    return Array<double>::view(x.data(), {static_cast<int64_t>(n)});
  };
  std::vector<Array<double>> inputs = {v(eps), v(ep), v(alpha)};
  for (double p : kMat.ToArray()) inputs.push_back(Array<double>::scalar(p));
  dualcast::PartialsOptions<double> opt;
  opt.wrt = {0, 3, 7};  // d/d eps, d/dE, d/d delta
  dualcast::Partials<double> p = dualcast::partials(sim::LawKernel(), inputs, opt);
  const std::vector<double> sigma = p.value(0).to_vector();
  const std::vector<double> dsig_deps = p.d(0, 0).to_vector();
  const std::vector<double> dalpha_deps = p.d(2, 0).to_vector();
  const std::vector<double> dsig_dE = p.d(0, 3).to_vector();
  const std::vector<double> dsig_ddelta = p.d(0, 7).to_vector();

  for (size_t i = 0; i < n; ++i) {
    CAPTURE(i);
    const Point& q = kPoints[i];
    auto [s, e, a] = Law<double>(q.eps, q.ep_n, q.alpha_n, kMat.E, kMat.sy0, kMat.H, kMat.sinf,
                                 kMat.delta);
    CHECK(sigma[i] == doctest::Approx(s).epsilon(1e-13));
    // Reference 1: the same lambda on Dual<double, 1>, seeded in eps.
    auto [sd, ed, ad] = Law<D>(D::variable(q.eps, 0), q.ep_n, q.alpha_n, kMat.E, kMat.sy0,
                               kMat.H, kMat.sinf, kMat.delta);
    CHECK(dsig_deps[i] == doctest::Approx(sd.partial(0)).epsilon(1e-12));
    CHECK(dalpha_deps[i] == doctest::Approx(ad.partial(0)).epsilon(1e-12));
    // Reference 2: central differences of the double law (the tangent is
    // smooth within a branch; no point is within h of a branch boundary).
    const double h = 1e-9;
    auto sp = std::get<0>(Law<double>(q.eps + h, q.ep_n, q.alpha_n, kMat.E, kMat.sy0, kMat.H,
                                      kMat.sinf, kMat.delta));
    auto sm = std::get<0>(Law<double>(q.eps - h, q.ep_n, q.alpha_n, kMat.E, kMat.sy0, kMat.H,
                                      kMat.sinf, kMat.delta));
    CHECK(dsig_deps[i] == doctest::Approx((sp - sm) / (2 * h)).epsilon(1e-5));
    const double hE = 1e-3;
    auto sEp = std::get<0>(Law<double>(q.eps, q.ep_n, q.alpha_n, kMat.E + hE, kMat.sy0, kMat.H,
                                       kMat.sinf, kMat.delta));
    auto sEm = std::get<0>(Law<double>(q.eps, q.ep_n, q.alpha_n, kMat.E - hE, kMat.sy0, kMat.H,
                                       kMat.sinf, kMat.delta));
    CHECK(dsig_dE[i] == doctest::Approx((sEp - sEm) / (2 * hE)).epsilon(1e-6));
    const double hd = 0.1;  // δ = 1000: small relative step, numerator well above rounding
    auto sdp = std::get<0>(Law<double>(q.eps, q.ep_n, q.alpha_n, kMat.E, kMat.sy0, kMat.H,
                                       kMat.sinf, kMat.delta + hd));
    auto sdm = std::get<0>(Law<double>(q.eps, q.ep_n, q.alpha_n, kMat.E, kMat.sy0, kMat.H,
                                       kMat.sinf, kMat.delta - hd));
    CHECK(dsig_ddelta[i] == doctest::Approx((sdp - sdm) / (2 * hd)).epsilon(1e-6));
  }
  // Elastic point: the tangent is E exactly; plastic ones are softer.
  CHECK(dsig_deps[0] == kMat.E);
  for (size_t i = 1; i < 3; ++i) CHECK(dsig_deps[i] < kMat.E);
}

TEST_CASE("global Newton converges quadratically once the branch set settles") {
  sim::BarSolver solver(sim::Bar{.elements = 2000}, kMat);
  double best_order = 0;
  int pairs = 0;
  for (int step = 1; step <= 4; ++step) {
    sim::NewtonLog log = solver.Step(1e-3 * step);
    CAPTURE(step);
    REQUIRE(log.converged);
    sim::QuadraticCheck q = sim::CheckQuadratic(log);
    CHECK(q.max_ratio <= 10);
    pairs += q.pairs;
    best_order = std::max(best_order, q.order);
    solver.Commit();
  }
  CHECK(pairs >= 3);
  CHECK(best_order >= 1.8);
  // Equilibrium: away from the ends, the axial force N = A σ changes by -q
  // per unit length; at x = L it is the reaction (+ q h/2).
  const auto& s = solver.stress();
  const double h = 1.0 / 2000;
  const double area_last = 1.0 * (1 - 0.5 * (1999.5 * h));
  CHECK(solver.Reaction() == doctest::Approx(area_last * s[1999] - 20.0 * h / 2).epsilon(1e-14));
}

TEST_CASE("reaction sensitivity through the tape matches central differences of the full solve") {
  sim::Sensitivity s = sim::ReactionSensitivity(sim::Bar{.elements = 500}, kMat, 3e-3);
  for (int i = 0; i < sim::Material::kCount; ++i) {
    CAPTURE(sim::Material::Names()[i]);
    CHECK(s.tape[i] == doctest::Approx(s.fd[i]).epsilon(1e-5));
    CHECK(s.tape[i] != 0);
  }
}
