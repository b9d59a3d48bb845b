// dualcast::Tape: records array operations on this thread and runs the reverse sweep (gradients).
//
// Reverse mode around fused broadcasts: while a Tape is alive, every
// differentiable array operation made on its thread (a fused broadcast group,
// sum, mean, matmul, reshape, transpose, copy) records one node.
// `gradient(loss, inputs)` seeds ∂loss/∂loss = 1 and visits the nodes in
// reverse recording order; a broadcast node turns its output adjoints into
// x̄_j += sum_to(Σ_m ȳ_m ⊙ P[m][j], shape(x_j)) with the elementwise partials
// its forward kernel cached (PartialsMode::kCache) or recomputes them in one
// backward kernel that writes the contributions directly (kRecompute: no
// partial arrays are kept). kAuto (the default) chooses per broadcast: recompute a
// cheap kernel (copying an argument before it is written in place), else cache.
//
// One pass: in kAuto mode, when the loss is still pending and is a sum or
// mean of a pending fused broadcast group, and every input is an array that
// group reads (`loss = sum(c * cbar)` below), gradient() and
// value_and_gradient() (and accumulate_gradient(), which then adds the
// results in) compute the loss, the group's held outputs and every gradient
// in ONE generated kernel, storing no partial arrays. Otherwise
// (inputs inside the group, a loss built from several groups, ...) they run
// the sweep; the results are the same. Use kCache or kRecompute explicitly
// to keep the forward's partials for other uses.
//
// Semantics a user of a reverse-mode library expects:
//  - Tapes nest: a node is recorded on every tape alive on the thread. A tape
//    must be destroyed on the thread that created it.
//  - What a tape sees: the operations *computed* while it is alive. A
//    broadcast is computed when first read, so arrays still pending when the
//    tape opens (`W = normal(...) * 0.02`) are recorded when the loss needs
//    them; arrays computed before it opened are constants to it. Open the
//    Tape before the forward pass.
//  - Identity is the array object: copies of an Array handle are the same
//    variable. Every way of writing a layout change records it: the methods
//    `x.reshape/transpose/copy` and the free dualcast::reshape/transpose.
//  - Inputs may be anything the user holds: leaves (created before or after
//    the tape, owning or views of user memory), arrays that were pending, and
//    intermediates. An intermediate fused into the same kernel as its
//    consumers is cut out of that kernel for this gradient (its consumers are
//    re-run with it as an input), so its gradient is its full adjoint.
//  - An input the loss does not reach on this tape is an Error naming it (by
//    1-based position and shape) and the likely cause (for instance: the
//    array between them was computed before the tape opened). Pass
//    GradientOptions{.allow_unused = true} to get zeros for such inputs. An
//    input that reaches the loss only through operations whose derivative is
//    zero everywhere (comparisons, branch conditions) gets zeros: that is its
//    gradient.
//  - gradient() may be called several times; the recorded nodes (and cached
//    partials) live until the tape is destroyed or cleared. The sweep reads
//    what the tape kept (the arguments it recomputes from in kRecompute mode
//    or when an intermediate is cut out of its kernel; cached partials, some
//    of which are arguments or results themselves): one written in place
//    after it was recorded (Array::assign, mutable_data(), a destination of
//    partials() or accumulate_gradient(), also through a view of its memory)
//    makes gradient() an Error naming it, never a gradient of other values.
//    An array written in place holds a new variable from then on: what was
//    recorded before still leads to what computed the values it read, and a
//    loss that reaches an input as it was before such a write is an Error
//    (which values are meant cannot be told), never a mix of both. Every
//    view of written memory counts as written: values partials() or
//    accumulate_gradient() wrote are untaped through any view of them; a view
//    written in place (or a view() of the same buffer made separately) that
//    the loss reads beside an input over that memory is an Error (the tape
//    takes it for a variable of its own); and mutable_data() on an array
//    computed from others (which elements it changes cannot be known) makes
//    a gradient through that array an Error, where assign() (every element
//    new) makes it a constant.
//  - Your memory: what the sweep reads again of a view of writable memory
//    (Array::view(T*): a recomputed argument, a partial that is the view
//    itself, a matmul or reduction argument) is copied when recorded, so your
//    code may write that buffer through its own pointer afterwards (a
//    simulation storing its new state where it viewed the old one). A view
//    of const memory (Array::view(const T*)) is read again, not copied: it
//    must not change while a tape that read it is alive.
//  - Adjoints are freed as soon as the node that consumed them is done;
//    nodes that cannot reach any requested input are skipped.
//  - Nothing the sweep computes is recorded (no higher-order gradients).
//
// Example:
//   dc::Tape tape;                                   // or dc::Tape(dc::PartialsMode::kRecompute)
//   auto c = dc::broadcast(cell, Z, Zb, C, F, I, G);
//   auto loss = dc::sum(c * Cbar);
//   std::vector<dc::Array<float>> g = tape.gradient(loss, {Z, Zb, C, F, I, G});  // one kernel
//   auto [value, grads] = tape.value_and_gradient(dc::sum(c * Cbar), {C, F});   // loss value too
//   tape.accumulate_gradient(loss, {C}, {grad_c_buffer});   // grad_c_buffer += ∂loss/∂C
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "dualcast/array.hpp"
#include "dualcast/detail/grad_node.hpp"

namespace dualcast {

// What Tape::value_and_gradient returns: the loss (computed) and ∂loss/∂inputs[i].
template <ElementType T>
struct ValueAndGradient {
  Array<T> value;
  std::vector<Array<T>> gradients;
};

// Options of Tape::gradient / accumulate_gradient.
struct GradientOptions {
  // Inputs the loss does not reach get zero gradients instead of an Error
  // (PyTorch's allow_unused).
  bool allow_unused = false;
};

class Tape {
 public:
  static constexpr size_t kDefaultBudgetBytes = size_t{1} << 30;  // 1 GiB

  // Starts recording on this thread. `budget_bytes` is used by kAuto: the
  // largest total size of one broadcast's partial arrays that is cached.
  explicit Tape(PartialsMode mode = PartialsMode::kAuto, size_t budget_bytes = kDefaultBudgetBytes);
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
  // pending. Throws Error(kShape) otherwise, and Error(kInvalidArgument) for
  // an input the loss does not reach on this tape (unless
  // options.allow_unused: then its gradient is zeros).
  template <ElementType T>
  std::vector<Array<T>> gradient(const Array<T>& loss, const std::vector<Array<T>>& inputs,
                                 const GradientOptions& options = {});
  // The same for a loss handed over (a temporary, or std::move(loss): the
  // caller's handle is empty afterwards). When that was its last handle, no
  // one can read the loss, and the one-pass kernel does not compute it (a
  // reduction less: HM-LSTM's columns-layout gradient ran 3-6% faster);
  // otherwise as above.
  //
  // Example:
  //   auto g = tape.gradient(dc::sum(c * Cbar), {C, F});   // the loss value is never formed
  template <ElementType T>
  std::vector<Array<T>> gradient(Array<T>&& loss, const std::vector<Array<T>>& inputs,
                                 const GradientOptions& options = {});

  // gradient(), and the loss itself (computed by the same kernel when the
  // one-pass plan applies). Same rules and errors as gradient().
  //
  // Example:
  //   dc::Tape tape;
  //   auto [loss, g] = tape.value_and_gradient(dc::mean(dc::broadcast(sq_err, y, t)), {y});
  //   float l = loss.item();
  template <ElementType T>
  ValueAndGradient<T> value_and_gradient(const Array<T>& loss, const std::vector<Array<T>>& inputs,
                                         const GradientOptions& options = {});

  // grads[i] += ∂loss/∂inputs[i], written in place (views of user memory
  // and strided views included). Shapes must match; on any error (an unused
  // input included) nothing is written.
  template <ElementType T>
  void accumulate_gradient(const Array<T>& loss, const std::vector<Array<T>>& inputs,
                           const std::vector<Array<T>>& grads, const GradientOptions& options = {});
  // The same for a loss handed over, as gradient(Array&&) says.
  template <ElementType T>
  void accumulate_gradient(Array<T>&& loss, const std::vector<Array<T>>& inputs,
                           const std::vector<Array<T>>& grads, const GradientOptions& options = {});

 private:
  friend void detail::Record(std::shared_ptr<detail::GradNode>, detail::ArraySpan);
  // One adjoint per input (null where its gradient is zero). Throws for an
  // input the loss does not reach unless `allow_unused`; `what` names the
  // caller in errors.
  std::vector<std::shared_ptr<detail::ArrayImpl>> Sweep(
      const std::shared_ptr<detail::ArrayImpl>& loss,
      const std::vector<std::shared_ptr<detail::ArrayImpl>>& inputs, bool allow_unused,
      const char* what);
  // What Record appended: a node and its number of outputs. Inline for a
  // few, since a training step records two or three on a tape it then drops.
  struct Recorded {
    std::shared_ptr<detail::GradNode> node;
    int num_outputs = 0;
  };
  using RecordList = absl::InlinedVector<Recorded, 4>;
  void Release(RecordList recorded);
  // The one-pass gradient when it applies (then true; see one_pass.h).
  bool OnePass(const std::shared_ptr<detail::ArrayImpl>& loss,
               const std::vector<std::shared_ptr<detail::ArrayImpl>>& inputs, bool loss_wanted,
               std::vector<std::shared_ptr<detail::ArrayImpl>>* adjoints);
  template <ElementType T>
  void AccumulateGradient(const Array<T>& loss, bool loss_wanted, const std::vector<Array<T>>& inputs,
                          const std::vector<Array<T>>& grads, const GradientOptions& options);
  // One adjoint per input (null where zero): the one-pass kernel, or the
  // loss computed and the sweep. `loss_wanted` false: nobody can read the
  // loss, so one pass need not compute it.
  std::vector<std::shared_ptr<detail::ArrayImpl>> Adjoints(
      const std::shared_ptr<detail::ArrayImpl>& loss,
      const std::vector<std::shared_ptr<detail::ArrayImpl>>& inputs, bool allow_unused,
      bool loss_wanted, const char* what);

  PartialsMode mode_;
  size_t budget_bytes_;
  RecordList nodes_;
};

namespace detail {
// A GradNode that can drop what it saved for the reverse sweep once no tape
// holds it any more (cached partials, leaves kept for recompute).
struct ReleasableGradNode : GradNode {
  virtual void ReleaseSaved() = 0;
};
}  // namespace detail

extern template std::vector<Array<float>> Tape::gradient(const Array<float>&,
                                                         const std::vector<Array<float>>&,
                                                         const GradientOptions&);
extern template std::vector<Array<double>> Tape::gradient(const Array<double>&,
                                                          const std::vector<Array<double>>&,
                                                          const GradientOptions&);
extern template std::vector<Array<float>> Tape::gradient(Array<float>&&,
                                                         const std::vector<Array<float>>&,
                                                         const GradientOptions&);
extern template std::vector<Array<double>> Tape::gradient(Array<double>&&,
                                                          const std::vector<Array<double>>&,
                                                          const GradientOptions&);
extern template ValueAndGradient<float> Tape::value_and_gradient(const Array<float>&,
                                                                 const std::vector<Array<float>>&,
                                                                 const GradientOptions&);
extern template ValueAndGradient<double> Tape::value_and_gradient(const Array<double>&,
                                                                  const std::vector<Array<double>>&,
                                                                  const GradientOptions&);
extern template void Tape::accumulate_gradient(const Array<float>&, const std::vector<Array<float>>&,
                                               const std::vector<Array<float>>&,
                                               const GradientOptions&);
extern template void Tape::accumulate_gradient(const Array<double>&,
                                               const std::vector<Array<double>>&,
                                               const std::vector<Array<double>>&,
                                               const GradientOptions&);
extern template void Tape::accumulate_gradient(Array<float>&&, const std::vector<Array<float>>&,
                                               const std::vector<Array<float>>&,
                                               const GradientOptions&);
extern template void Tape::accumulate_gradient(Array<double>&&, const std::vector<Array<double>>&,
                                               const std::vector<Array<double>>&,
                                               const GradientOptions&);

}  // namespace dualcast
