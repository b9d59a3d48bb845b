// The tape: per-thread recording of GradNodes and the reverse sweep that turns them into gradients.
#include "dualcast/tape.hpp"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "jit/broadcast_layout.h"
#include "jit/error.h"
#include "runtime/grad_kernels.h"

namespace dualcast {
namespace {

// Tapes alive on this thread, outermost first, and whether recording is
// suspended (while a sweep runs, so its own array work is not recorded).
thread_local std::vector<Tape*> t_tapes;
thread_local int t_paused = 0;
thread_local const std::vector<bool>* t_needed = nullptr;

struct PauseRecording {
  PauseRecording() { ++t_paused; }
  ~PauseRecording() { --t_paused; }
  PauseRecording(const PauseRecording&) = delete;
  PauseRecording& operator=(const PauseRecording&) = delete;
};

// The variable an array stands for in one sweep: output m of a node on this
// tape, or (a leaf for this tape) the array object itself.
struct Key {
  const void* ptr;
  int output;
  bool operator==(const Key&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const Key& k) {
    return H::combine(std::move(h), k.ptr, k.output);
  }
};

using NodeIndex = absl::flat_hash_map<const detail::GradNode*, size_t>;
using AdjointMap = absl::flat_hash_map<Key, std::shared_ptr<detail::ArrayImpl>>;

Key KeyOf(const detail::ArrayImpl& a, const NodeIndex& on_tape) {
  if (a.grad_fn != nullptr && on_tape.contains(a.grad_fn.get())) {
    return Key{a.grad_fn.get(), a.grad_output};
  }
  return Key{&a, -1};
}

// Whether nothing but `p` refers to this array or its memory, so adding into
// it in place is invisible to everyone else.
bool Exclusive(const std::shared_ptr<detail::ArrayImpl>& p) {
  return p.use_count() == 1 && p->storage != nullptr && p->storage.use_count() == 1 &&
         p->storage->owning && !p->read_only && p->contiguous();
}

void Accumulate(AdjointMap& adjoints, const Key& key, std::shared_ptr<detail::ArrayImpl> contribution) {
  auto [it, inserted] = adjoints.try_emplace(key, contribution);
  if (inserted) return;
  std::shared_ptr<detail::ArrayImpl>& existing = it->second;
  if (Exclusive(existing)) {
    detail::AddInto(*existing, *contribution);
  } else if (contribution.use_count() == 1 && Exclusive(contribution)) {
    detail::AddInto(*contribution, *existing);
    existing = std::move(contribution);
  } else {
    existing = detail::AddArrays(*existing, *contribution);
  }
}

std::string ShapeText(const std::vector<int64_t>& s) { return jit::FormatShape(s); }

}  // namespace

namespace detail {

bool InputNeeded(size_t j) { return t_needed == nullptr || j >= t_needed->size() || (*t_needed)[j]; }
NeededInputsScope::NeededInputsScope(const std::vector<bool>* needed) : saved_(t_needed) {
  t_needed = needed;
}
NeededInputsScope::~NeededInputsScope() { t_needed = saved_; }

bool TapeActive() { return !t_tapes.empty() && t_paused == 0; }

PartialsMode ActivePartialsMode(size_t partial_bytes) {
  if (t_tapes.empty()) return PartialsMode::kCache;
  const Tape& tape = *t_tapes.back();
  if (tape.mode() != PartialsMode::kAuto) return tape.mode();
  return partial_bytes > tape.budget_bytes() ? PartialsMode::kRecompute : PartialsMode::kCache;
}

void Record(std::shared_ptr<GradNode> node, const std::vector<std::shared_ptr<ArrayImpl>>& outputs) {
  if (!TapeActive() || node == nullptr) return;
  for (Tape* tape : t_tapes) {
    tape->nodes_.push_back(node);
    tape->num_outputs_.push_back(static_cast<int>(outputs.size()));
  }
  for (size_t m = 0; m < outputs.size(); ++m) {
    if (outputs[m] == nullptr) continue;
    outputs[m]->grad_fn = node;
    outputs[m]->grad_output = static_cast<int>(m);
  }
}

}  // namespace detail

Tape::Tape(PartialsMode mode, size_t budget_bytes) : mode_(mode), budget_bytes_(budget_bytes) {
  t_tapes.push_back(this);
}

Tape::~Tape() {
  if (auto it = std::find(t_tapes.begin(), t_tapes.end(), this); it != t_tapes.end()) {
    t_tapes.erase(it);
  }
  Release(std::move(nodes_));
}

void Tape::clear() {
  std::vector<std::shared_ptr<detail::GradNode>> nodes = std::move(nodes_);
  nodes_.clear();
  num_outputs_.clear();
  Release(std::move(nodes));
}

// Nodes no other tape of this thread holds can never be swept again: drop
// what they saved (partials, leaves) even if arrays still point at them.
void Tape::Release(std::vector<std::shared_ptr<detail::GradNode>> nodes) {
  absl::flat_hash_set<const detail::GradNode*> held;
  for (const Tape* other : t_tapes) {
    if (other == this) continue;
    for (const auto& n : other->nodes_) held.insert(n.get());
  }
  for (const auto& n : nodes) {
    if (held.contains(n.get())) continue;
    if (auto* r = dynamic_cast<detail::ReleasableGradNode*>(n.get())) r->ReleaseSaved();
    n->inputs.clear();
  }
}

std::vector<std::shared_ptr<detail::ArrayImpl>> Tape::Sweep(
    const std::shared_ptr<detail::ArrayImpl>& loss,
    const std::vector<std::shared_ptr<detail::ArrayImpl>>& inputs) {
  PauseRecording pause;
  NodeIndex on_tape;
  for (size_t i = 0; i < nodes_.size(); ++i) on_tape.try_emplace(nodes_[i].get(), i);

  absl::flat_hash_set<Key> wanted;
  for (const auto& in : inputs) wanted.insert(KeyOf(*in, on_tape));
  // Forward pass: which nodes read (transitively) a requested input.
  absl::flat_hash_set<Key> reaches = wanted;
  std::vector<bool> relevant(nodes_.size(), false);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const auto& node = *nodes_[i];
    for (const auto& in : node.inputs) {
      if (in != nullptr && reaches.contains(KeyOf(*in, on_tape))) {
        relevant[i] = true;
        break;
      }
    }
    if (!relevant[i]) continue;
    for (int m = 0; m < num_outputs_[i]; ++m) reaches.insert(Key{nodes_[i].get(), m});
  }

  std::vector<std::shared_ptr<detail::ArrayImpl>> result(inputs.size());
  const Key loss_key = KeyOf(*loss, on_tape);
  if (!reaches.contains(loss_key)) return result;

  AdjointMap adjoints;
  adjoints.emplace(loss_key, detail::Filled(loss->dtype, loss->shape, 1.0));
  for (size_t i = nodes_.size(); i-- > 0;) {
    if (!relevant[i]) continue;
    detail::GradNode& node = *nodes_[i];
    std::vector<std::shared_ptr<detail::ArrayImpl>> outs(static_cast<size_t>(num_outputs_[i]));
    bool any = false;
    for (int m = 0; m < num_outputs_[i]; ++m) {
      const Key key{&node, m};
      auto it = adjoints.find(key);
      if (it == adjoints.end()) continue;
      any = true;
      if (wanted.contains(key)) {
        outs[m] = it->second;
      } else {
        outs[m] = std::move(it->second);  // consumed: freed when this node is done
        adjoints.erase(it);
      }
    }
    if (!any) continue;
    std::vector<bool> needed(node.inputs.size(), false);
    for (size_t j = 0; j < needed.size(); ++j) {
      needed[j] = node.inputs[j] != nullptr && reaches.contains(KeyOf(*node.inputs[j], on_tape));
    }
    std::vector<std::shared_ptr<detail::ArrayImpl>> contributions;
    {
      detail::NeededInputsScope scope(&needed);
      contributions = node.Backward(outs);
    }
    outs.clear();
    if (contributions.size() != node.inputs.size()) {
      throw Error(ErrorKind::kInternal,
                  absl::StrCat("tape: the reverse rule of '", node.name, "' returned ",
                               contributions.size(), " adjoints for ", node.inputs.size(), " inputs"));
    }
    for (size_t j = 0; j < contributions.size(); ++j) {
      if (contributions[j] == nullptr || node.inputs[j] == nullptr) continue;
      const detail::ArrayImpl& in = *node.inputs[j];
      if (contributions[j]->shape != in.shape || contributions[j]->dtype != in.dtype) {
        throw Error(ErrorKind::kInternal,
                    absl::StrCat("tape: the reverse rule of '", node.name, "' gave input ", j + 1,
                                 " an adjoint of shape ", ShapeText(contributions[j]->shape),
                                 "; the input has shape ", ShapeText(in.shape)));
      }
      const Key key = KeyOf(in, on_tape);
      if (!reaches.contains(key)) continue;  // leads to no requested input
      Accumulate(adjoints, key, std::move(contributions[j]));
    }
  }

  for (size_t i = 0; i < inputs.size(); ++i) {
    auto it = adjoints.find(KeyOf(*inputs[i], on_tape));
    if (it == adjoints.end()) continue;
    // Hand out memory no other result and nothing else shares (a second
    // request for the same variable finds it shared and gets a copy).
    result[i] = Exclusive(it->second) ? it->second : detail::CopyArray(*it->second);
  }
  return result;
}

namespace {

template <ElementType T>
std::shared_ptr<detail::ArrayImpl> CheckedLoss(const Array<T>& loss, const char* what) {
  if (!loss.valid()) {
    throw Error(ErrorKind::kInvalidArgument, absl::StrCat(what, ": the loss is an empty Array handle"));
  }
  if (loss.size() != 1) {
    throw Error(ErrorKind::kShape,
                absl::StrCat(what, ": the loss must have exactly one element, but it has shape ",
                             ShapeText(loss.shape()), " (", loss.size(),
                             " elements); reduce it first, e.g. with dualcast::sum"));
  }
  loss.eval();  // a pending loss is computed (and recorded) now
  return loss.impl();
}

template <ElementType T>
std::vector<std::shared_ptr<detail::ArrayImpl>> CheckedInputs(const std::vector<Array<T>>& inputs,
                                                              const char* what) {
  std::vector<std::shared_ptr<detail::ArrayImpl>> impls;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid()) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(what, ": input ", i + 1, " is an empty Array handle"));
    }
    const detail::ArrayImpl& in = *inputs[i].impl();
    if (in.grad_fn != nullptr && in.grad_output < static_cast<int>(in.grad_fn->consumed_inside.size()) &&
        in.grad_fn->consumed_inside[in.grad_output]) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(what, ": input ", i + 1, " was computed by the fused kernel '",
                               in.grad_fn->name,
                               "' together with the operations that consume it, so its own "
                               "gradient was never formed; call .eval() on it before using it in "
                               "further broadcasts to differentiate with respect to it"));
    }
    impls.push_back(inputs[i].impl());
  }
  return impls;
}

}  // namespace

template <ElementType T>
std::vector<Array<T>> Tape::gradient(const Array<T>& loss, const std::vector<Array<T>>& inputs) {
  auto loss_impl = CheckedLoss(loss, "Tape::gradient");
  auto impls = CheckedInputs(inputs, "Tape::gradient");
  std::vector<std::shared_ptr<detail::ArrayImpl>> adjoints = Sweep(loss_impl, impls);
  std::vector<Array<T>> grads;
  grads.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    grads.push_back(adjoints[i] != nullptr ? Array<T>(std::move(adjoints[i]))
                                           : Array<T>::zeros(inputs[i].shape(), inputs[i].device()));
  }
  return grads;
}

template <ElementType T>
void Tape::accumulate_gradient(const Array<T>& loss, const std::vector<Array<T>>& inputs,
                               const std::vector<Array<T>>& grads) {
  const char* what = "Tape::accumulate_gradient";
  if (grads.size() != inputs.size()) {
    throw Error(ErrorKind::kArity, absl::StrCat(what, ": ", inputs.size(), " inputs but ",
                                                grads.size(), " gradient buffers; pass one per input"));
  }
  auto impls = CheckedInputs(inputs, what);
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].valid()) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(what, ": gradient buffer ", i + 1, " is an empty Array handle"));
    }
    if (grads[i].shape() != inputs[i].shape()) {
      throw Error(ErrorKind::kShape,
                  absl::StrCat(what, ": gradient buffer ", i + 1, " has shape ",
                               ShapeText(grads[i].shape()), " but input ", i + 1, " has shape ",
                               ShapeText(inputs[i].shape()), "; they must match"));
    }
    if (grads[i].is_read_only()) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(what, ": gradient buffer ", i + 1,
                               " is a read-only view of const memory; pass a writable array"));
    }
    grads[i].eval();
    detail::CheckHostArray(*grads[i].impl(), what);
  }
  auto loss_impl = CheckedLoss(loss, what);
  std::vector<std::shared_ptr<detail::ArrayImpl>> adjoints = Sweep(loss_impl, impls);
  for (size_t i = 0; i < grads.size(); ++i) {
    if (adjoints[i] != nullptr) detail::AddInto(*grads[i].impl(), *adjoints[i]);
  }
}

template std::vector<Array<float>> Tape::gradient(const Array<float>&, const std::vector<Array<float>>&);
template std::vector<Array<double>> Tape::gradient(const Array<double>&,
                                                   const std::vector<Array<double>>&);
template void Tape::accumulate_gradient(const Array<float>&, const std::vector<Array<float>>&,
                                        const std::vector<Array<float>>&);
template void Tape::accumulate_gradient(const Array<double>&, const std::vector<Array<double>>&,
                                        const std::vector<Array<double>>&);

}  // namespace dualcast
