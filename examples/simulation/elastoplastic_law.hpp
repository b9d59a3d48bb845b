// The constitutive law of the simulation example: 1-D rate-independent plasticity with Voce hardening, by return mapping.
//
// One integration point: given the total strain and the converged history
// (plastic strain, hardening variable) of the previous load step, return the
// stress and the updated history. The elastic trial state is accepted when
// it lies inside the yield surface; otherwise the plastic multiplier dγ
// solves the scalar consistency equation
//   g(dγ) = f_trial - (E + H) dγ - S (exp(-δ α_n) - exp(-δ (α_n + dγ))) = 0,
// S = σ∞ - σy0, with a fixed number of Newton iterations unrolled into the
// kernel (g is convex and decreasing, and the first iterate, from the
// tangent at 0, lies left of the root, so the iterates rise monotonically
// and converge quadratically: eight reach the root to rounding for any
// state this example meets). The yield stress is
//   σy(α) = σy0 + H α + S (1 - exp(-δ α)).
//
// Written once as a generic lambda: dualcast traces it into a kernel with a
// real `if` per branch (elastic, plastic in tension, plastic in compression:
// only the taken one runs per point), and the same lambda runs on double and
// on dualcast::Dual in the tests. Forward mode through the unrolled local
// Newton gives the *consistent* (algorithmic) tangent dσ/dε of exactly the
// stress the law returns, which is what makes the global Newton quadratic.
//
// Example:
//   dualcast::Kernel law = dualcast::kernel("voce_plasticity", sim::kReturnMapping);
//   auto [sigma, ep, alpha] = sim::kReturnMapping(1e-3, 0.0, 0.0, 2e5, 250.0, 2e3, 450.0, 200.0);
#pragma once

#include <tuple>

#include <dualcast/math.hpp>

namespace sim {

// Iterations of the local (per-point) Newton solve for dγ.
inline constexpr int kLocalNewtonIterations = 8;

// Inputs, in kernel argument order; outputs: (stress, plastic strain, hardening variable).
inline constexpr auto kReturnMapping = [](auto eps, auto ep_n, auto alpha_n, auto E, auto sy0,
                                          auto H, auto sinf, auto delta) {
  using namespace dualcast::math;
  auto sig_trial = E * (eps - ep_n);
  auto S = sinf - sy0;
  auto decay_n = exp(-delta * alpha_n);
  auto f_trial = abs(sig_trial) - (sy0 + H * alpha_n + S * (1 - decay_n));
  if (f_trial <= 0) return std::tuple{sig_trial, ep_n, alpha_n};  // elastic

  auto dgamma = f_trial / (E + H + S * delta * decay_n);
  for (int it = 0; it < kLocalNewtonIterations; ++it) {
    auto decay = exp(-delta * (alpha_n + dgamma));
    auto g = f_trial - (E + H) * dgamma - S * (decay_n - decay);
    auto dg = -(E + H) - S * delta * decay;
    dgamma = dgamma - g / dg;
  }
  if (sig_trial > 0) return std::tuple{sig_trial - E * dgamma, ep_n + dgamma, alpha_n + dgamma};
  return std::tuple{sig_trial + E * dgamma, ep_n - dgamma, alpha_n + dgamma};
};

}  // namespace sim
