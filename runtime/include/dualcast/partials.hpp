// dualcast::partials: every elementwise partial dy_m/dx_j of a kernel as arrays, from one forward-mode kernel.
//
// What a simulation code wants per point: the values and the diagonal
// Jacobian entries of a constitutive law, to assemble its own tangents. One
// kernel computes everything (the jvp'ed function: values and all partials in
// the dual lanes, untaken branches never evaluated, structurally zero
// partials written as exact zeros). Arguments broadcast with NumPy rules;
// every result has the broadcast shape. Results can land directly in the
// caller's memory (`PartialsOptions::value_out` / `partial_out`, arrays or
// strided views); any error — shape, type, aliasing — is raised before
// anything is written, so those buffers are untouched.
//
// Example:
//   dualcast::Partials<double> p = dualcast::partials(law, {eps, ep, alpha, E, sy, H});
//   Array<double> sigma = p.value(0), dsigma_deps = p.d(0, 0);
//   dualcast::PartialsOptions<double> o;
//   o.wrt = {0};                                   // only d/d eps
//   o.partial_out = {Array<double>::view(buf, {n}, {6})};  // law has one output: 1 x 1 arrays
//   dualcast::partials(law, {eps, ep, alpha, E, sy, H}, o);
#pragma once

#include <memory>
#include <vector>

#include "dualcast/array.hpp"
#include "dualcast/kernel.hpp"

namespace dualcast {

template <ElementType T>
struct PartialsOptions {
  // Every member has an initializer, so that `{.wrt = {0}, .value_out = {...}}`
  // compiles without GCC 12's -Wextra warning (missing-field-initializers,
  // for omitted members that have none; tests/runtime/launch_path_test.cc
  // is built with -Werror and spells it so).
  //
  // Input positions (0-based) to differentiate with respect to; empty: all.
  std::vector<int> wrt = {};
  // Whether to return the values too (they are computed either way).
  bool values = true;
  // Optional destinations. value_out: empty, or one per output (an empty
  // handle entry allocates). partial_out: empty, or one per (m, j) at index
  // m * wrt.size() + j, j indexing `wrt` (all inputs when `wrt` is empty).
  std::vector<Array<T>> value_out = {};
  std::vector<Array<T>> partial_out = {};
};

template <ElementType T>
class Partials {
 public:
  Partials() = default;
  Partials(std::vector<std::shared_ptr<detail::ArrayImpl>> values,
           std::vector<std::shared_ptr<detail::ArrayImpl>> partials, std::vector<int> wrt,
           std::vector<bool> structurally_zero, std::string kernel_name);

  int num_outputs() const { return num_outputs_; }
  // Input positions differentiated, in the order of partial_out.
  const std::vector<int>& wrt() const { return wrt_; }
  // Output m (throws when computed with values = false).
  Array<T> value(int m) const;
  // dy_m/dx_j for input position j (which must be in wrt()).
  Array<T> d(int m, int j) const;
  // Whether dy_m/dx_j is zero for every input whatever the data (the kernel
  // never lets x_j reach y_m, or only through comparisons, floor, ...).
  bool structurally_zero(int m, int j) const;

 private:
  size_t Slot(int m, int j) const;
  std::vector<std::shared_ptr<detail::ArrayImpl>> values_;
  std::vector<std::shared_ptr<detail::ArrayImpl>> partials_;
  std::vector<int> wrt_;
  std::vector<bool> zero_;
  std::string name_;
  int num_outputs_ = 0;
};

// Values and partials of `k` applied elementwise to `inputs` (see above).
// One overload per element type, so that `partials(k, {a, b})` deduces it.
Partials<float> partials(const Kernel& k, const std::vector<Array<float>>& inputs,
                         const PartialsOptions<float>& options = {});
Partials<double> partials(const Kernel& k, const std::vector<Array<double>>& inputs,
                          const PartialsOptions<double>& options = {});

extern template class Partials<float>;
extern template class Partials<double>;

}  // namespace dualcast
