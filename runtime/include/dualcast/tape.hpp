// dualcast::Tape: records array operations on this thread and runs the reverse sweep (gradients).
//
// Reverse mode around fused broadcasts: while a Tape is alive, every
// differentiable array operation made on its thread (a fused broadcast group,
// sum, mean, matmul, dualcast::reshape, dualcast::transpose) records one node.
// `gradient(loss, inputs)` seeds ∂loss/∂loss = 1 and visits the nodes in
// reverse recording order; a broadcast node turns its output adjoints into
// x̄_j += sum_to(Σ_m ȳ_m ⊙ P[m][j], shape(x_j)) with the elementwise partials
// its forward kernel cached (PartialsMode::kCache, the default) or recomputes
// them in one backward kernel that writes the contributions directly
// (kRecompute: no partial arrays are kept). kAuto chooses per broadcast:
// cache unless that broadcast's partial arrays would exceed the budget.
//
// Semantics a user of a reverse-mode library expects:
//  - Tapes nest: a node is recorded on every tape alive on the thread. A tape
//    must be destroyed on the thread that created it.
//  - Identity is the array object: copies of an Array handle are the same
//    variable; `Array::reshape`/`Array::transpose` (the methods) make new,
//    unrecorded arrays, so gradients do not flow through them; use the free
//    functions dualcast::reshape / dualcast::transpose (reductions.hpp).
//  - Inputs the loss does not depend on get zero gradients of their shape.
//    Gradients with respect to an intermediate array are the adjoint of that
//    array as seen by the operations recorded after it (an intermediate fused
//    into the same broadcast group as its consumer is not separately visible).
//  - gradient() may be called several times; the recorded nodes (and cached
//    partials) live until the tape is destroyed or cleared. In kRecompute mode
//    the backward reads the leaf arrays again, so do not overwrite them in
//    place between the forward and gradient().
//  - Adjoints are freed as soon as the node that consumed them is done;
//    nodes that cannot reach any requested input are skipped.
//  - Nothing the sweep computes is recorded (no higher-order gradients).
//
// Example:
//   dc::Tape tape;                                   // or dc::Tape(dc::PartialsMode::kRecompute)
//   auto c = dc::broadcast(cell, Z, Zb, C, F, I, G);
//   auto loss = dc::sum(c * Cbar);
//   std::vector<dc::Array<float>> g = tape.gradient(loss, {Z, Zb, C, F, I, G});
//   tape.accumulate_gradient(loss, {C}, {grad_c_buffer});   // grad_c_buffer += ∂loss/∂C
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "dualcast/array.hpp"
#include "dualcast/detail/grad_node.hpp"

namespace dualcast {

class Tape {
 public:
  static constexpr size_t kDefaultBudgetBytes = size_t{1} << 30;  // 1 GiB

  // Starts recording on this thread. `budget_bytes` is used by kAuto: the
  // largest total size of one broadcast's partial arrays that is cached.
  explicit Tape(PartialsMode mode = PartialsMode::kCache, size_t budget_bytes = kDefaultBudgetBytes);
  ~Tape();
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  PartialsMode mode() const { return mode_; }
  size_t budget_bytes() const { return budget_bytes_; }
  void set_budget_bytes(size_t bytes) { budget_bytes_ = bytes; }
  // Number of recorded operations.
  size_t size() const { return nodes_.size(); }
  // Forgets everything recorded so far (and frees cached partials no other
  // tape holds).
  void clear();

  // ∂loss/∂inputs[i], each with inputs[i]'s shape (contiguous, new arrays).
  // `loss` must have exactly one element (any rank); it is computed first if
  // pending. Throws Error(kShape) otherwise.
  template <ElementType T>
  std::vector<Array<T>> gradient(const Array<T>& loss, const std::vector<Array<T>>& inputs);

  // grads[i] += ∂loss/∂inputs[i], written in place (views of user memory
  // and strided views included). Shapes must match; on any error nothing is
  // written.
  template <ElementType T>
  void accumulate_gradient(const Array<T>& loss, const std::vector<Array<T>>& inputs,
                           const std::vector<Array<T>>& grads);

 private:
  friend void detail::Record(std::shared_ptr<detail::GradNode>,
                             const std::vector<std::shared_ptr<detail::ArrayImpl>>&);
  // One adjoint per input (null where the loss does not depend on it).
  std::vector<std::shared_ptr<detail::ArrayImpl>> Sweep(
      const std::shared_ptr<detail::ArrayImpl>& loss,
      const std::vector<std::shared_ptr<detail::ArrayImpl>>& inputs);
  void Release(std::vector<std::shared_ptr<detail::GradNode>> nodes);

  PartialsMode mode_;
  size_t budget_bytes_;
  std::vector<std::shared_ptr<detail::GradNode>> nodes_;
  std::vector<int> num_outputs_;  // per node
};

namespace detail {
// A GradNode that can drop what it saved for the reverse sweep once no tape
// holds it any more (cached partials, leaves kept for recompute).
struct ReleasableGradNode : GradNode {
  virtual void ReleaseSaved() = 0;
};
}  // namespace detail

extern template std::vector<Array<float>> Tape::gradient(const Array<float>&,
                                                         const std::vector<Array<float>>&);
extern template std::vector<Array<double>> Tape::gradient(const Array<double>&,
                                                          const std::vector<Array<double>>&);
extern template void Tape::accumulate_gradient(const Array<float>&, const std::vector<Array<float>>&,
                                               const std::vector<Array<float>>&);
extern template void Tape::accumulate_gradient(const Array<double>&,
                                               const std::vector<Array<double>>&,
                                               const std::vector<Array<double>>&);

}  // namespace dualcast
