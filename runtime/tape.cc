// The tape: per-thread recording of GradNodes and the reverse sweep that turns them into gradients.
#include "dualcast/tape.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "jit/codegen/broadcast_layout.h"
#include "jit/error.h"
#include "runtime/auto_partials.h"
#include "runtime/grad_kernels.h"
#include "runtime/in_place.h"
#include "runtime/one_pass.h"
#include "runtime/origin.h"
#include "runtime/pending_readers.h"
#include "runtime/untaped_paths.h"

namespace dualcast {
namespace {

using detail::Behind, detail::BehindUntaped, detail::Via, detail::IsSweepResult, detail::kAccumulateOp, detail::kGradientOp,
    detail::UntapedAdvice, detail::UntapedText;

// Tapes alive on this thread, outermost first, and whether recording is
// suspended (while a sweep runs, so its own array work is not recorded).
thread_local std::vector<Tape*> t_tapes;
thread_local int t_paused = 0;
thread_local const std::vector<bool>* t_needed = nullptr;
// The in-place write epoch at which each node was recorded, for nodes
// recorded once some in-place write had happened (absent: 0). See in_place.h.
thread_local absl::flat_hash_map<const detail::GradNode*, uint64_t> t_record_epochs;

// Set once this thread's lists above are destroyed: at exit, glibc destroys
// the main thread's thread_locals before the static objects, so a static or
// global Tape outlives them (it read the freed list, and crashed the process
// before stdio was flushed). Trivially destructible, so readable then.
thread_local bool t_lists_gone = false;
struct ListsGuard {
  ~ListsGuard() { t_lists_gone = true; }
};
// Made after t_tapes (Tape::Tape uses both), so destroyed before it.
thread_local ListsGuard t_lists_guard;

// The in-place write epoch at which `node` was recorded (0: none had happened).
uint64_t RecordEpoch(const detail::GradNode* node) {
  if (t_record_epochs.empty()) return 0;
  auto it = t_record_epochs.find(node);
  return it == t_record_epochs.end() ? 0 : it->second;
}

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
  uint64_t version = 0;  // a leaf's: the epoch of the last write into its memory (in_place.h)
  bool operator==(const Key&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const Key& k) {
    return H::combine(std::move(h), k.ptr, k.output, k.version);
  }
};

using detail::NodeIndex;
using AdjointMap = absl::flat_hash_map<Key, std::shared_ptr<detail::ArrayImpl>>;

// The variable `a` stands for now.
Key KeyOf(const detail::ArrayImpl& a, const NodeIndex& on_tape) {
  if (a.grad_fn != nullptr && on_tape.contains(a.grad_fn.get())) {
    return Key{a.grad_fn.get(), a.grad_output};
  }
  return Key{&a, -1, detail::LastInPlaceWrite(a.storage.get())};
}

// The variable input j of `node` stood for when the node read it: the same
// unless the input was written in place since.
Key InputKey(const detail::GradNode& node, size_t j, const NodeIndex& on_tape) {
  const detail::ArrayImpl& a = *node.inputs[j];
  const detail::GradNode::InputSeen seen = node.seen(j);
  // Not written since: its node now, without VersionOf's refcounts.
  detail::VersionInfo then;
  const bool current = seen.version == detail::WriteCount(a);
  if (!current) then = detail::VersionOf(a, seen.version);
  const detail::GradNode* producer = current ? a.grad_fn.get() : then.node.get();
  if (producer != nullptr && on_tape.contains(producer)) {
    return Key{producer, current ? a.grad_output : then.output};
  }
  return Key{&a, -1, seen.epoch};
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

// `contribution` added into `region` of the adjoint of `input` (a slice's):
// one strided add into the adjoint accumulated so far (a copy first when
// something else shares it), into zeros when it is the first.
void AccumulateRegion(AdjointMap& adjoints, const Key& key, const detail::ArrayImpl& input,
                      const detail::GradNode::Region& region, const detail::ArrayImpl& contribution) {
  auto [it, inserted] = adjoints.try_emplace(key, nullptr);
  std::shared_ptr<detail::ArrayImpl>& adjoint = it->second;
  if (inserted) {
    adjoint = detail::Filled(input.dtype, input.shape, 0.0, contribution.device);
  } else if (!Exclusive(adjoint)) {
    adjoint = detail::CopyArray(*adjoint);
  }
  std::shared_ptr<detail::ArrayImpl> target = detail::ViewOf(*adjoint, region.shape, region.strides);
  target->offset += region.offset;
  detail::AddInto(*target, contribution);
}

std::string ShapeText(const std::vector<int64_t>& s) { return jit::FormatShape(s); }

}  // namespace

namespace detail {

bool InputNeeded(size_t j) { return t_needed == nullptr || j >= t_needed->size() || (*t_needed)[j]; }
NeededInputsScope::NeededInputsScope(const std::vector<bool>* needed) : saved_(t_needed) {
  t_needed = needed;
}
NeededInputsScope::~NeededInputsScope() { t_needed = saved_; }

bool TapeActive() { return !t_lists_gone && !t_tapes.empty() && t_paused == 0; }

PartialsMode ActivePartialsMode(size_t partial_bytes) {
  if (t_tapes.empty()) return PartialsMode::kCache;
  const Tape& tape = *t_tapes.back();
  if (tape.mode() != PartialsMode::kAuto) return tape.mode();
  return partial_bytes > tape.budget_bytes() ? PartialsMode::kRecompute : PartialsMode::kCache;
}

PartialsMode InnermostTapeMode() { return t_tapes.empty() ? PartialsMode::kCache : t_tapes.back()->mode(); }

void Record(std::shared_ptr<GradNode> node, const std::vector<std::shared_ptr<ArrayImpl>>& outputs) {
  Record(std::move(node), ArraySpan(outputs));
}

namespace {

// Fills node.inputs_seen (grad_node.hpp) as the node
// reads its inputs: pending ones are computed later, unwritten (a write
// first computes the pending results reading that memory), so the write
// count they have now is the one the node reads.
void NoteInputVersions(GradNode& node) {
  node.inputs_seen.assign(node.inputs.size(), {});
  for (size_t j = 0; j < node.inputs.size(); ++j) {
    const ArrayImpl* a = node.inputs[j].get();
    if (a == nullptr) continue;
    GradNode::InputSeen& seen = node.inputs_seen[j];
    seen.version = WriteCount(*a);
    seen.epoch = LastInPlaceWrite(a->storage.get());
    seen.stale = a->grad_fn != nullptr && seen.epoch > RecordEpoch(a->grad_fn.get());
  }
}

}  // namespace

void Record(std::shared_ptr<GradNode> node, ArraySpan outputs) {
  if (!TapeActive() || node == nullptr) return;
  if (const uint64_t epoch = InPlaceWriteEpoch(); epoch > 0) {
    t_record_epochs[node.get()] = epoch;
    NoteInputVersions(*node);
  }
  for (Tape* tape : t_tapes) tape->nodes_.push_back({node, static_cast<int>(outputs.size())});
  for (size_t m = 0; m < outputs.size(); ++m) {
    if (outputs[m] == nullptr) continue;
    outputs[m]->grad_fn = node;
    outputs[m]->grad_output = static_cast<int>(m);
  }
}

std::vector<GradNode::Part> GradNode::Cut(const std::vector<int>& /*cut*/,
                                          const std::vector<std::shared_ptr<ArrayImpl>>& /*arrays*/) {
  throw Error(ErrorKind::kInternal,
              absl::StrCat("tape: '", name, "' has an output consumed inside it but cannot be cut"));
}

}  // namespace detail

Tape::Tape(PartialsMode mode, size_t budget_bytes) : mode_(mode), budget_bytes_(budget_bytes) {
  // Refused before it records anything (a value outside the enum, from a cast).
  if (mode != PartialsMode::kCache && mode != PartialsMode::kRecompute && mode != PartialsMode::kAuto) {
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrCat("Tape: PartialsMode ", static_cast<int>(mode),
                             " is not one of kCache, kRecompute, kAuto"));
  }
  t_tapes.push_back(this);
  (void)&t_lists_guard;  // constructs it, after t_tapes
}

Tape::~Tape() {
  if (t_lists_gone) return;  // a static Tape at exit: nothing records any more
  auto it = std::find(t_tapes.begin(), t_tapes.end(), this);
  if (it == t_tapes.end()) {
    // Its thread would go on recording into freed memory: stop here, not far
    // from the cause in a heap corruption.
    std::fputs("dualcast: a Tape was destroyed on a thread other than the one that created it; "
               "a Tape records the operations of its own thread and must be destroyed there "
               "(docs/embedding.md, threads). Aborting.\n",
               stderr);
    std::abort();
  }
  t_tapes.erase(it);
  Release(std::move(nodes_));
  if (t_tapes.empty()) detail::ForgetRecomputingNodes();
}

void Tape::clear() { Release(std::exchange(nodes_, {})); }

// Nodes no other tape of this thread holds can never be swept again: drop
// what they saved (partials, leaves) even if arrays still point at them.
void Tape::Release(RecordList recorded) {
  absl::flat_hash_set<const detail::GradNode*> held;
  for (const Tape* other : t_tapes) {
    if (other == this) continue;
    for (const Recorded& r : other->nodes_) held.insert(r.node.get());
  }
  for (const Recorded& rec : recorded) {
    const std::shared_ptr<detail::GradNode>& n = rec.node;
    if (held.contains(n.get())) continue;
    if (auto* r = dynamic_cast<detail::ReleasableGradNode*>(n.get())) r->ReleaseSaved();
    n->inputs.clear();
    if (!t_record_epochs.empty()) t_record_epochs.erase(n.get());
  }
}

namespace {

// One node the sweep runs: a recorded node, or a part of one cut for this
// sweep. `outputs` are the keys of its outputs (a part's are its original
// node's, so that arrays keep their keys).
struct Step {
  detail::GradNode* node = nullptr;
  std::shared_ptr<detail::GradNode> owned;
  std::vector<Key> outputs;
};

// A part reads the node's inputs as the node read them; the node's outputs
// it reads (the cut arrays) are computed by the parts before it.
void InheritInputVersions(const detail::GradNode& node, detail::GradNode& part) {
  part.inputs_seen.assign(part.inputs.size(), {});
  for (size_t k = 0; k < part.inputs.size(); ++k) {
    const detail::ArrayImpl* a = part.inputs[k].get();
    if (a == nullptr) continue;
    auto original = std::find_if(node.inputs.begin(), node.inputs.end(), [&](const auto& in) { return in.get() == a; });
    part.inputs_seen[k] = original != node.inputs.end()
                              ? node.seen(static_cast<size_t>(original - node.inputs.begin()))
                              : detail::GradNode::InputSeen{detail::WriteCount(*a), false,
                                                            detail::LastInPlaceWrite(a->storage.get())};
  }
}

// The variables older versions of `a` stood for, where a node read them.
absl::flat_hash_set<Key> OlderVersionKeys(const std::vector<Step>& steps, const detail::ArrayImpl& a,
                                          const Key& now, const NodeIndex& on_tape) {
  absl::flat_hash_set<Key> keys;
  if (detail::InPlaceWriteEpoch() == 0) return keys;
  for (const Step& step : steps) {
    const detail::GradNode& node = *step.node;
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      if (node.inputs[j].get() != &a) continue;
      if (const Key then = InputKey(node, j, on_tape); then != now) keys.insert(then);
    }
  }
  return keys;
}

// Whether `a` and `b` were computed one from the other or both from a third
// array (views made before the tape opened): their Origins link them, and
// the untaped walk judges them as the arrays they are.
bool ComputedOneFromOther(const detail::ArrayImpl& a, const detail::ArrayImpl& b) {
  absl::flat_hash_set<const detail::ArrayImpl*> upstream = {&a};
  if (a.origin != nullptr) {
    detail::ForEachAncestor(*a.origin, [&](const std::weak_ptr<detail::ArrayImpl>& w, uint32_t) {
      upstream.insert(w.lock().get());
      return false;
    });
  }
  if (upstream.contains(&b)) return true;
  if (b.origin == nullptr) return false;
  return detail::ForEachAncestor(*b.origin, [&](const std::weak_ptr<detail::ArrayImpl>& w, uint32_t) {
    const std::shared_ptr<detail::ArrayImpl> up = w.lock();
    return up != nullptr && upstream.contains(up.get());
  });
}

std::string Described(size_t i, const detail::ArrayImpl& a) {
  return absl::StrCat("input ", i + 1, " (shape ", ShapeText(a.shape), ")");
}


}  // namespace

std::vector<std::shared_ptr<detail::ArrayImpl>> Tape::Sweep(
    const std::shared_ptr<detail::ArrayImpl>& loss,
    const std::vector<std::shared_ptr<detail::ArrayImpl>>& inputs, bool allow_unused,
    const char* what) {
  PauseRecording pause;
  NodeIndex on_tape;
  for (size_t i = 0; i < nodes_.size(); ++i) on_tape.try_emplace(nodes_[i].node.get(), i);

  // Requested outputs that were consumed inside their fused kernel: their
  // node is cut there for this sweep.
  absl::flat_hash_map<const detail::GradNode*, std::vector<std::pair<int, std::shared_ptr<detail::ArrayImpl>>>>
      cuts;
  for (const auto& in : inputs) {
    const detail::GradNode* node = in->grad_fn.get();
    if (node == nullptr || !on_tape.contains(node)) continue;
    const int m = in->grad_output;
    if (m >= static_cast<int>(node->consumed_inside.size()) || !node->consumed_inside[m]) continue;
    auto& list = cuts[node];
    bool listed = false;
    for (const auto& [out, array] : list) listed = listed || out == m;
    if (!listed) list.push_back({m, in});
  }
  std::vector<Step> steps;
  steps.reserve(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    detail::GradNode* node = nodes_[i].node.get();
    auto it = cuts.find(node);
    if (it == cuts.end()) {
      Step step{node, nullptr, {}};
      for (int m = 0; m < nodes_[i].num_outputs; ++m) step.outputs.push_back(Key{node, m});
      steps.push_back(std::move(step));
      continue;
    }
    std::sort(it->second.begin(), it->second.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<int> outs;
    std::vector<std::shared_ptr<detail::ArrayImpl>> arrays;
    for (const auto& [m, array] : it->second) {
      outs.push_back(m);
      arrays.push_back(array);
    }
    for (detail::GradNode::Part& part : node->Cut(outs, arrays)) {
      InheritInputVersions(*node, *part.node);
      Step step{part.node.get(), part.node, {}};
      for (int m : part.outputs) step.outputs.push_back(Key{node, m});
      steps.push_back(std::move(step));
    }
  }

  // Each input's variable, taken once: a leaf's key holds the epoch of the
  // last write into its memory, which another thread's write through an
  // overlapping view may move on at any moment. Taken again later, the
  // checks passed for one key and the result was looked up under another:
  // missed, the gradient came back all zeros.
  std::vector<Key> input_keys;
  input_keys.reserve(inputs.size());
  for (const auto& in : inputs) input_keys.push_back(KeyOf(*in, on_tape));
  const absl::flat_hash_set<Key> wanted(input_keys.begin(), input_keys.end());
  // Forward pass from `from`: which steps read (transitively) one of those
  // keys, and every key that does.
  auto reach = [&](const absl::flat_hash_set<Key>& from, std::vector<bool>* relevant) {
    absl::flat_hash_set<Key> reaches = from;
    for (size_t i = 0; i < steps.size(); ++i) {
      const detail::GradNode& node = *steps[i].node;
      std::vector<bool> from_input(node.inputs.size(), false);
      bool reads = false;
      for (size_t j = 0; j < node.inputs.size(); ++j) {
        from_input[j] = node.inputs[j] != nullptr && reaches.contains(InputKey(node, j, on_tape));
        reads = reads || from_input[j];
      }
      if (relevant != nullptr) (*relevant)[i] = reads;
      if (!reads) continue;
      for (size_t m = 0; m < steps[i].outputs.size(); ++m) {
        bool depends = node.reads.empty();
        for (size_t j = 0; !depends && j < from_input.size(); ++j) {
          depends = from_input[j] && m < node.reads.size() && j < node.reads[m].size() && node.reads[m][j];
        }
        if (depends) reaches.insert(steps[i].outputs[m]);
      }
    }
    return reaches;
  };
  std::vector<bool> relevant(steps.size(), false);
  const absl::flat_hash_set<Key> reaches = reach(wanted, &relevant);
  const Key loss_key = KeyOf(*loss, on_tape);

  // Inputs the loss reaches (also) through an array this tape did not
  // record: their gradient would miss that path, so it is an error. Inputs
  // that do not reach the loss: an error that names them and says why,
  // unless the caller asked for zeros.
  const Behind behind = BehindUntaped(loss, on_tape);
  // Which inputs reach the loss: with up to 64 inputs, one forward pass
  // carrying a bit per input (the same propagation as reach()), not one
  // pass per input.
  std::vector<bool> reaches_loss(inputs.size(), false);
  if (reaches.contains(loss_key) && inputs.size() <= 64) {
    absl::flat_hash_map<Key, uint64_t> bits;
    for (size_t i = 0; i < inputs.size(); ++i) bits[input_keys[i]] |= uint64_t{1} << i;
    for (size_t s = 0; s < steps.size(); ++s) {
      if (!relevant[s]) continue;  // reads none of the inputs' keys
      const detail::GradNode& node = *steps[s].node;
      std::vector<uint64_t> from_input(node.inputs.size(), 0);
      for (size_t j = 0; j < node.inputs.size(); ++j) {
        if (node.inputs[j] == nullptr) continue;
        auto it = bits.find(InputKey(node, j, on_tape));
        if (it != bits.end()) from_input[j] = it->second;
      }
      for (size_t m = 0; m < steps[s].outputs.size(); ++m) {
        uint64_t mask = 0;
        for (size_t j = 0; j < from_input.size(); ++j) {
          const bool depends = node.reads.empty() ||
                               (m < node.reads.size() && j < node.reads[m].size() && node.reads[m][j]);
          if (depends) mask |= from_input[j];
        }
        if (mask != 0) bits[steps[s].outputs[m]] |= mask;
      }
    }
    const uint64_t at_loss = bits.contains(loss_key) ? bits[loss_key] : 0;
    for (size_t i = 0; i < inputs.size(); ++i) reaches_loss[i] = (at_loss >> i & 1) != 0;
  }
  std::vector<bool> used_inputs(inputs.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Key& key = input_keys[i];
    const bool used =
        key == loss_key ||
        (reaches.contains(loss_key) &&
         (inputs.size() <= 64 ? reaches_loss[i] : reach({key}, nullptr).contains(loss_key)));
    if (auto it = behind.untaped.find(inputs[i].get()); it != behind.untaped.end()) {
      throw Error(
          ErrorKind::kInvalidArgument,
          absl::StrCat(what, ": ", Described(i, *inputs[i]),
                       used ? " reaches the loss on this tape, but also through "
                            : " does not reach the loss on this tape: the loss depends on it only through ",
                       UntapedText(it->second), used ? "; the gradient would miss that path" : "",
                       UntapedAdvice(*inputs[i], it->second, used)));
    }
    if (behind.forgotten != nullptr) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(what, ": cannot check whether ", Described(i, *inputs[i]),
                               " also reaches the loss through an array of shape ",
                               ShapeText(behind.forgotten->shape), " as it was before it was written "
                               "in place more than ", detail::ArrayImpl::WriteHistory::kMaxPast,
                               " times since the tape recorded a use of it. Write into a fresh array "
                               "(copy()) rather than in place while a tape holds its uses"));
    }
    if (behind.unverified.array != nullptr) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(what, ": cannot check whether ", Described(i, *inputs[i]),
                               " also reaches the loss through ", UntapedText(behind.unverified),
                               ": more than ", detail::Origin::kMaxAncestors,
                               " arrays still alive were computed into it. Open the Tape before the "
                               "forward computation, or use a fresh copy of its values "
                               "(Array::from(v.to_vector(), v.shape())) as the constant"));
    }
    // Another array over its memory that the tape takes for a variable of
    // its own (a view written in place since it was made, a view() of the
    // same buffer made separately) carries part of the loss's dependence on
    // these values, which a gradient with respect to this array would miss
    // (`s = slice(x); s.assign(...); sum(x * w) + sum(s * v)` gave d/dx = w).
    if (key.output < 0 && inputs[i]->storage != nullptr &&
        (detail::InPlaceWriteEpoch() > 0 || inputs[i]->storage->aliasable.load(std::memory_order_acquire))) {
      absl::flat_hash_set<Key> others;
      const detail::ArrayImpl* other = nullptr;
      for (const Step& step : steps) {
        const detail::GradNode& node = *step.node;
        for (size_t j = 0; j < node.inputs.size(); ++j) {
          const detail::ArrayImpl* b = node.inputs[j].get();
          if (b == nullptr || b == inputs[i].get()) continue;
          const Key k = InputKey(node, j, on_tape);
          if (k.output >= 0 || !detail::SharesMemory(*b, *inputs[i]) || ComputedOneFromOther(*b, *inputs[i])) {
            continue;  // a view made from the other before the tape is judged by its Origin
          }
          others.insert(k);
          other = b;
        }
      }
      if (!others.empty() && reach(others, nullptr).contains(loss_key)) {
        throw Error(ErrorKind::kInvalidArgument,
                    absl::StrCat(what, ": the loss reads the memory of ", Described(i, *inputs[i]),
                                 " also through another array (shape ", ShapeText(other->shape),
                                 ") that the tape takes for a variable of its own: a view of that memory "
                                 "written in place since it was made (Array::assign, mutable_data(), a "
                                 "destination of partials() or accumulate_gradient()), which made it a "
                                 "new leaf, or a view() of the same buffer made separately. A gradient "
                                 "with respect to input ", i + 1, " would miss that path. Make the view "
                                 "again from input ", i + 1, " after writing (slice, transpose or "
                                 "reshape it then: the tape records that), or request the gradient "
                                 "with respect to that array too and combine them"));
      }
    }
    // Its values before an in-place write are another variable (in_place.h):
    // which one the caller means cannot be told.
    if (const absl::flat_hash_set<Key> older = OlderVersionKeys(steps, *inputs[i], key, on_tape);
        !older.empty()) {
      const absl::flat_hash_set<Key> from_older = reach(older, nullptr);
      if (from_older.contains(loss_key)) {
        // A view made before the write shows the new values, though the
        // tape recorded it from the old ones: the reason is that view.
        for (const Step& step : steps) {
          const detail::GradNode& node = *step.node;
          for (size_t j = 0; j < node.inputs_seen.size(); ++j) {
            if (!node.inputs_seen[j].stale || node.inputs[j] == nullptr ||
                !from_older.contains(InputKey(node, j, on_tape)) ||
                !detail::SharesMemory(*node.inputs[j], *inputs[i])) {
              continue;
            }
            const std::shared_ptr<detail::GradNode> producer = detail::InputSeenBy(node, j).node;
            throw Error(ErrorKind::kInvalidArgument,
                        absl::StrCat(what, ": the loss reads ", Described(i, *inputs[i]),
                                     " through an array of shape ", ShapeText(node.inputs[j]->shape),
                                     " computed by '", producer != nullptr ? producer->name : "?",
                                     "' from it before it was written in place (Array::assign, "
                                     "mutable_data(), or as a destination of partials() or "
                                     "accumulate_gradient()): a view of its memory, that array shows "
                                     "the new values, but the tape recorded it as computed from the old "
                                     "ones, so it cannot carry a gradient to either. Make the view again "
                                     "after writing (slice, transpose or reshape the written array "
                                     "then), or take the gradient before writing"));
          }
        }
        throw Error(ErrorKind::kInvalidArgument,
                    absl::StrCat(what, ": the loss reaches ", Described(i, *inputs[i]),
                                 used ? " both as it is now and" : " only",
                                 " as it was before it was written in place (Array::assign, "
                                 "mutable_data(), or as a destination of partials() or "
                                 "accumulate_gradient()",
                                 detail::WriteCount(*inputs[i]) == 0
                                     ? ", not through this array but through another view of its "
                                       "memory, perhaps on another thread; views of one buffer whose "
                                       "elements interleave, such as 2-column blocks of a 4-column "
                                       "table, count as sharing memory even where they share no element"
                                     : "",
                                 "); its values then and now are different "
                                 "variables, and a gradient with respect to the array cannot tell which "
                                 "one is meant. Take the gradient before writing, or write the new "
                                 "values into a fresh array (copy()) instead of in place",
                                 detail::WriteCount(*inputs[i]) == 0
                                     ? " (or into a separate buffer, or parts of this one that do not "
                                       "interleave with this array: a column each, blocks of rows)"
                                     : ""));
      }
    }
    used_inputs[i] = used;
    if (used || allow_unused) continue;
    if (auto it = behind.through_constant.find(inputs[i].get()); it != behind.through_constant.end()) {
      const Via& via = it->second;
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(what, ": ", Described(i, *inputs[i]), " reaches the loss only through '",
                               via.origin->op, "' (its result of shape ", ShapeText(via.array->shape),
                               "), which has no gradient: its value is piecewise constant in its "
                               "input, so d loss / d input is 0 wherever it exists. Pass "
                               "GradientOptions{.allow_unused = true} to get those zeros, or "
                               "differentiate a smooth surrogate (e.g. softmax weights instead of "
                               "argmax)"));
    }
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrCat(what, ": ", Described(i, *inputs[i]),
                             " does not reach the loss: nothing recorded on this tape connects them. "
                             "Likely causes: the loss does not use this array (a copy or another array "
                             "of the same shape?); the array it uses was computed from this one before "
                             "the Tape was opened (open the Tape before the forward pass); or it was "
                             "computed by an operation the tape does not record. To get zeros for "
                             "inputs the loss does not use, pass GradientOptions{.allow_unused = true}"));
  }

  std::vector<std::shared_ptr<detail::ArrayImpl>> result(inputs.size());
  if (!reaches.contains(loss_key)) return result;

  AdjointMap adjoints;
  adjoints.emplace(loss_key, detail::Filled(loss->dtype, loss->shape, 1.0, loss->device));
  // The requested inputs' keys some step read, adjoint or not: a used input
  // the sweep never met was looked for under another key than the checks used.
  absl::flat_hash_set<Key> met;
  for (size_t i = steps.size(); i-- > 0;) {
    if (!relevant[i]) continue;
    const Step& step = steps[i];
    detail::GradNode& node = *step.node;
    std::vector<bool> needed(node.inputs.size(), false);
    // Each input's key, once: what decides whether it is needed also files its adjoint.
    absl::InlinedVector<Key, 4> arg_keys(node.inputs.size(), Key{nullptr, 0});
    for (size_t j = 0; j < needed.size(); ++j) {
      if (node.inputs[j] == nullptr) continue;
      arg_keys[j] = InputKey(node, j, on_tape);
      needed[j] = reaches.contains(arg_keys[j]);
      if (needed[j] && wanted.contains(arg_keys[j])) met.insert(arg_keys[j]);
    }
    std::vector<std::shared_ptr<detail::ArrayImpl>> outs(step.outputs.size());
    bool any = false;
    for (size_t m = 0; m < step.outputs.size(); ++m) {
      const Key& key = step.outputs[m];
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
    // An argument must have held its producer's result when this node read
    // it, or its adjoint would be credited to values it did not hold: one
    // written in place through itself was a new leaf (InputKey), one written
    // through a view of its memory is refused here.
    for (size_t j = 0; j < node.inputs_seen.size(); ++j) {
      if (!needed[j] || !node.inputs_seen[j].stale) continue;
      const std::shared_ptr<detail::GradNode> producer = detail::InputSeenBy(node, j).node;
      if (producer == nullptr || !on_tape.contains(producer.get())) continue;
      detail::ThrowWrittenInPlace(*node.inputs[j],
                                  absl::StrCat("argument ", j + 1, " of '", node.name, "', computed by '",
                                               producer->name, "',"),
                                  producer->name);
    }
    std::vector<std::shared_ptr<detail::ArrayImpl>> contributions;
    {
      detail::NeededInputsScope scope(&needed);
      // A part cut out of a node reads what the node kept: the node's epoch.
      detail::SweptNodeEpochScope epoch(RecordEpoch(static_cast<const detail::GradNode*>(step.outputs[0].ptr)));
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
      const detail::GradNode::Region* region = node.ContributionRegion(j);
      const std::vector<int64_t>& expected = region != nullptr ? region->shape : in.shape;
      if (contributions[j]->shape != expected || contributions[j]->dtype != in.dtype) {
        throw Error(ErrorKind::kInternal,
                    absl::StrCat("tape: the reverse rule of '", node.name, "' gave input ", j + 1,
                                 " an adjoint of shape ", ShapeText(contributions[j]->shape), "; ",
                                 region != nullptr ? "its region of the input" : "the input",
                                 " has shape ", ShapeText(expected)));
      }
      if (!needed[j]) continue;  // leads to no requested input
      if (region != nullptr) {
        AccumulateRegion(adjoints, arg_keys[j], in, *region, *contributions[j]);
      } else {
        Accumulate(adjoints, arg_keys[j], std::move(contributions[j]));
      }
    }
  }

  for (size_t i = 0; i < inputs.size(); ++i) {
    auto it = adjoints.find(input_keys[i]);
    if (it == adjoints.end()) {
      // Nothing credited: unused (allow_unused), or every path's partial is
      // structurally zero (a reverse rule then returns no adjoint): zeros.
      if (!used_inputs[i] || met.contains(input_keys[i])) continue;
      // Used, yet no step read it: zeros would be silently wrong.
      throw Error(ErrorKind::kInternal,
                  absl::StrCat(what, ": ", Described(i, *inputs[i]),
                               " reaches the loss on this tape, but the reverse sweep met no step "
                               "that reads it (its key changed during the call?); refusing to return "
                               "zeros. Please report this with the code that computed the loss"));
    }
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
  return loss.impl();  // still pending: the one-pass plan may take it as it is
}

template <ElementType T>
std::vector<std::shared_ptr<detail::ArrayImpl>> CheckedInputs(const std::vector<Array<T>>& inputs,
                                                              const char* what) {
  std::vector<std::shared_ptr<detail::ArrayImpl>> impls;
  impls.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid()) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(what, ": input ", i + 1, " is an empty Array handle"));
    }
    impls.push_back(inputs[i].impl());
  }
  return impls;
}

// Marks what a sweep hands out as computed from the loss and the inputs (see
// IsSweepResult): a tape that later meets them on the way from its loss to one
// of those inputs refuses, instead of treating a gradient as a constant.
void NoteSweepOrigin(const char* what, const std::shared_ptr<detail::ArrayImpl>& loss,
                     const std::vector<std::shared_ptr<detail::ArrayImpl>>& inputs,
                     const std::vector<std::shared_ptr<detail::ArrayImpl>>& results) {
  if (std::all_of(results.begin(), results.end(), [](const auto& r) { return r == nullptr; })) return;
  // The loss and the inputs side by side, on the stack for a few inputs.
  absl::InlinedVector<std::shared_ptr<detail::ArrayImpl>, 8> sources;
  sources.reserve(inputs.size() + 1);
  sources.push_back(loss);
  sources.insert(sources.end(), inputs.begin(), inputs.end());
  detail::NoteOrigin(what, detail::ArraySpan(sources.data(), sources.size()),
                     detail::ArraySpan(results), /*constant=*/false);  // skips the null results
}

// The gradients as arrays (zeros where the adjoint is), marked as computed
// from the loss and the inputs.
template <ElementType T>
std::vector<Array<T>> GradientArrays(const char* what, const std::shared_ptr<detail::ArrayImpl>& loss,
                                     const std::vector<Array<T>>& inputs,
                                     const std::vector<std::shared_ptr<detail::ArrayImpl>>& impls,
                                     std::vector<std::shared_ptr<detail::ArrayImpl>> adjoints) {
  NoteSweepOrigin(what, loss, impls, adjoints);
  std::vector<Array<T>> grads;
  grads.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    grads.push_back(adjoints[i] != nullptr ? Array<T>(std::move(adjoints[i]))
                                           : Array<T>::zeros(inputs[i].shape(), inputs[i].device()));
  }
  return grads;
}

}  // namespace

// The one-pass plan (one_pass.h), in kAuto mode (the partials are not kept
// for other uses) while this tape records: the group it computes is then
// recorded on every tape alive here.
bool Tape::OnePass(const std::shared_ptr<detail::ArrayImpl>& loss,
                   const std::vector<std::shared_ptr<detail::ArrayImpl>>& inputs, bool loss_wanted,
                   std::vector<std::shared_ptr<detail::ArrayImpl>>* adjoints) {
  if (mode_ != PartialsMode::kAuto || !detail::TapeActive()) return false;
  if (std::find(t_tapes.begin(), t_tapes.end(), this) == t_tapes.end()) return false;
  return detail::OnePassGradient(loss, inputs, loss_wanted, adjoints);
}

std::vector<std::shared_ptr<detail::ArrayImpl>> Tape::Adjoints(
    const std::shared_ptr<detail::ArrayImpl>& loss,
    const std::vector<std::shared_ptr<detail::ArrayImpl>>& inputs, bool allow_unused,
    bool loss_wanted, const char* what) {
  std::vector<std::shared_ptr<detail::ArrayImpl>> adjoints;
  if (!OnePass(loss, inputs, loss_wanted, &adjoints)) {
    detail::Materialize(*loss);  // a pending loss is computed (and recorded) now
    adjoints = Sweep(loss, inputs, allow_unused, what);
  }
  return adjoints;
}

namespace {

// Whether anyone but the handle `loss` (handed over to the tape) can read
// the loss: another handle, or a pending array computed from it. Arrays
// computed from it would have computed it first (it would not be pending).
template <ElementType T>
bool LossReadable(const Array<T>& loss) {
  return !loss.valid() || loss.impl().use_count() > 1;
}

}  // namespace

template <ElementType T>
std::vector<Array<T>> Tape::gradient(const Array<T>& loss, const std::vector<Array<T>>& inputs,
                                     const GradientOptions& options) {
  return value_and_gradient(loss, inputs, options).gradients;
}

template <ElementType T>
std::vector<Array<T>> Tape::gradient(Array<T>&& loss, const std::vector<Array<T>>& inputs,
                                     const GradientOptions& options) {
  const Array<T> owned = std::move(loss);  // the caller's handle is empty from here on
  const bool loss_wanted = LossReadable(owned);
  const char* what = kGradientOp;
  auto loss_impl = CheckedLoss(owned, what);
  auto impls = CheckedInputs(inputs, what);
  auto adjoints = Adjoints(loss_impl, impls, options.allow_unused, loss_wanted, what);
  return GradientArrays(what, loss_impl, inputs, impls, std::move(adjoints));
}

template <ElementType T>
ValueAndGradient<T> Tape::value_and_gradient(const Array<T>& loss, const std::vector<Array<T>>& inputs,
                                             const GradientOptions& options) {
  const char* what = kGradientOp;
  auto loss_impl = CheckedLoss(loss, what);
  auto impls = CheckedInputs(inputs, what);
  auto adjoints = Adjoints(loss_impl, impls, options.allow_unused, /*loss_wanted=*/true, what);
  return ValueAndGradient<T>{loss, GradientArrays(what, loss_impl, inputs, impls, std::move(adjoints))};
}

template <ElementType T>
void Tape::accumulate_gradient(const Array<T>& loss, const std::vector<Array<T>>& inputs,
                               const std::vector<Array<T>>& grads, const GradientOptions& options) {
  AccumulateGradient(loss, /*loss_wanted=*/true, inputs, grads, options);
}

template <ElementType T>
void Tape::accumulate_gradient(Array<T>&& loss, const std::vector<Array<T>>& inputs,
                               const std::vector<Array<T>>& grads, const GradientOptions& options) {
  const Array<T> owned = std::move(loss);  // the caller's handle is empty from here on
  AccumulateGradient(owned, LossReadable(owned), inputs, grads, options);
}

template <ElementType T>
void Tape::AccumulateGradient(const Array<T>& loss, bool loss_wanted, const std::vector<Array<T>>& inputs,
                              const std::vector<Array<T>>& grads, const GradientOptions& options) {
  const char* what = kAccumulateOp;
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
    if (grads[i].device() != inputs[i].device()) {
      throw Error(ErrorKind::kDevice,
                  absl::StrCat(what, ": gradient buffer ", i + 1, " (grads[", i, "]) is on ",
                               grads[i].device().name(), " but input ", i + 1, " is on ",
                               inputs[i].device().name(), "; pass a buffer on the input's device ",
                               "(Array::zeros(shape, input.device())) and copy it with .to() afterwards"));
    }
    grads[i].eval();
    detail::CheckComputed(*grads[i].impl(), what);  // AddInto runs on any device
    if (detail::SelfOverlapping(*grads[i].impl())) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(what, ": gradient buffer ", i + 1, " has shape ", ShapeText(grads[i].shape()),
                               " and strides ", ShapeText(grads[i].strides()),
                               ", under which several elements share memory (their gradients would "
                               "be added into one place); pass a buffer with one element per address"));
    }
  }
  auto loss_impl = CheckedLoss(loss, what);
  auto adjoints = Adjoints(loss_impl, impls, options.allow_unused, loss_wanted, what);
  std::vector<std::shared_ptr<detail::ArrayImpl>> written;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (adjoints[i] == nullptr) continue;
    detail::ComputeReadersBeforeWrite(*grads[i].impl());  // they keep the buffer's values before +=
    detail::AddInto(*grads[i].impl(), *adjoints[i]);
    // A tape that kept this memory must not use it; the old values stay in the sum.
    detail::NoteInPlaceWrite(*grads[i].impl(), /*whole=*/false);
    written.push_back(grads[i].impl());
  }
  NoteSweepOrigin(what, loss_impl, impls, written);
  // Views of a buffer made before hold the gradient too (in_place.h).
  for (const auto& buffer : written) detail::NoteInPlaceWriter(*buffer, /*whole=*/false);
}

template std::vector<Array<float>> Tape::gradient(const Array<float>&, const std::vector<Array<float>>&,
                                                  const GradientOptions&);
template std::vector<Array<double>> Tape::gradient(const Array<double>&,
                                                   const std::vector<Array<double>>&,
                                                   const GradientOptions&);
template std::vector<Array<float>> Tape::gradient(Array<float>&&, const std::vector<Array<float>>&,
                                                  const GradientOptions&);
template std::vector<Array<double>> Tape::gradient(Array<double>&&, const std::vector<Array<double>>&,
                                                   const GradientOptions&);
template ValueAndGradient<float> Tape::value_and_gradient(const Array<float>&,
                                                          const std::vector<Array<float>>&,
                                                          const GradientOptions&);
template ValueAndGradient<double> Tape::value_and_gradient(const Array<double>&,
                                                           const std::vector<Array<double>>&,
                                                           const GradientOptions&);
template void Tape::accumulate_gradient(const Array<float>&, const std::vector<Array<float>>&,
                                        const std::vector<Array<float>>&, const GradientOptions&);
template void Tape::accumulate_gradient(const Array<double>&, const std::vector<Array<double>>&,
                                        const std::vector<Array<double>>&, const GradientOptions&);
template void Tape::accumulate_gradient(Array<float>&&, const std::vector<Array<float>>&,
                                        const std::vector<Array<float>>&, const GradientOptions&);
template void Tape::accumulate_gradient(Array<double>&&, const std::vector<Array<double>>&,
                                        const std::vector<Array<double>>&, const GradientOptions&);

}  // namespace dualcast
