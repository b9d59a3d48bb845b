// Origins: which operation computed an array, from which versions of which arrays, for the tape's error messages.
//
// Why: a tape records only what is computed while it is open, so a loss can
// reach a requested array through arrays no tape recorded (computed before
// the tape, on another thread, by partials()). The tape must then refuse,
// not give a gradient that silently misses that path; to see such a path it
// needs every array's provenance, taped or not. NoteOrigin records it on
// nearly every launch, so it is built to be cheap: a flattened ancestry
// (every live array upstream, with the version it was read at: a write in
// place makes an array another variable), and a few recent Origins per
// thread shared by launches that read the same arrays at the same versions.
// The tape reads them (untaped_paths.cc) only when a gradient is asked.
//
// Example (what an op does after computing `out` from `a` and `b`):
//   detail::NoteOrigin("matmul", {a.impl(), b.impl()}, {out});
#include <algorithm>
#include <iterator>

#include "absl/container/inlined_vector.h"
#include "dualcast/detail/grad_node.hpp"
#include "runtime/array_pool.h"
#include "runtime/in_place.h"
#include "runtime/pending_readers.h"

namespace dualcast::detail {
namespace {

bool SameOwner(const auto& a, const auto& b) { return !a.owner_before(b) && !b.owner_before(a); }

// The Origin this thread noted last, with its inputs' own origins then.
struct RecentOrigin {
  std::shared_ptr<const Origin> origin;
  absl::InlinedVector<std::weak_ptr<const Origin>, 3> input_origins;
  uint64_t last_used = 0;  // replaced least recently used first
};

// Whether `recent` is what noting (op, inputs) now would build. A loop that
// computes from the same arrays each step (a simulation's broadcast, eval'd
// at once) notes the same Origin over and over; sharing it (an Origin is
// immutable) saves three allocations per launch. It is equivalent: the
// inputs are the same arrays, their origins unchanged, the tape state the
// same, so the ancestors recorded then are those alive now plus arrays that
// died since (which every reader skips: weak references that no longer
// lock). Compared by owner (control block), which a weak reference keeps
// allocated, so a freed array's address reused by another cannot match.
bool Matches(const RecentOrigin& recent, std::string_view op, ArraySpan inputs, bool taped,
             bool before_write) {
  const Origin* o = recent.origin.get();
  if (o == nullptr || o->constant || o->taped != taped || o->before_write != before_write ||
      o->inputs.size() != inputs.size() ||
      o->op != op) {
    return false;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr || !SameOwner(o->inputs[i], inputs[i]) ||
        !SameOwner(recent.input_origins[i], inputs[i]->origin) ||
        o->input_versions[i] != WriteCount(*inputs[i])) {  // a leaf written since keeps its (null) origin
      return false;
    }
  }
  return true;
}

}  // namespace

void NoteOrigin(std::string op, const std::vector<std::shared_ptr<ArrayImpl>>& inputs,
                const std::vector<std::shared_ptr<ArrayImpl>>& outputs, bool constant) {
  NoteOrigin(std::string_view(op), ArraySpan(inputs), ArraySpan(outputs), constant);
}

void NoteOrigin(std::string_view op, ArraySpan inputs, ArraySpan outputs, bool constant) {
  const bool taped = TapeActive();
  const bool before_write = ComputingReadersBeforeWrite();
  // A few per thread, for a loop that computes several arrays per step.
  // Least recently used goes first: a step also notes origins that never
  // repeat (a loss computed from this step's arrays, the gradients), and
  // they must not push out the one that does (the broadcast of the same
  // leaves), which a round-robin did every other step.
  constexpr size_t kRecent = 4;
  thread_local RecentOrigin recents[kRecent];
  thread_local uint64_t clock = 0;
  ++clock;
  // Values partials() or a sweep wrote into an input's memory (through it or
  // another view, in_place.h) were computed from other arrays: upstream too.
  absl::InlinedVector<std::shared_ptr<const Origin>, 2> writers;
  if (!constant && AnyWrittenValues()) {
    for (const auto& in : inputs) {
      if (in == nullptr || in->storage == nullptr) continue;
      for (auto& w : WrittenValuesAt(in->storage.get(), LastInPlaceWrite(in->storage.get())).writers) {
        if (w != in->origin && !w->constant) writers.push_back(std::move(w));
      }
    }
  }
  if (!constant && writers.empty()) {
    for (RecentOrigin& recent : recents) {
      if (!Matches(recent, op, inputs, taped, before_write)) continue;
      recent.last_used = clock;
      for (const auto& out : outputs) {
        if (out != nullptr) out->origin = recent.origin;
      }
      return;
    }
  }
  // From this thread's free blocks (array_pool.h): a step notes a few.
  auto origin = std::allocate_shared<Origin>(BlockAllocator<Origin>{});
  origin->op = op;
  origin->inputs.assign(inputs.begin(), inputs.end());
  origin->input_versions.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    origin->input_versions[i] = inputs[i] != nullptr ? WriteCount(*inputs[i]) : 0;
  }
  origin->taped = taped;
  origin->before_write = before_write;
  origin->constant = constant;
  if (constant) {
    for (const auto& in : inputs) origin->producers.emplace_back(in->grad_fn, in->grad_output);
  } else {
    // The alive ancestors, flattened (see Origin::ancestors): the inputs and
    // their ancestors still alive, without repeats. Built in place and told
    // apart by owner (an array's control block) rather than through
    // temporary strong references: this runs on every launch.
    auto& ancestors = origin->ancestors;
    size_t bound = 0;
    for (const auto& in : inputs) {
      if (in == nullptr) continue;
      const Origin* up = in->origin.get();  // set once `in` was computed; `in` is held
      bound += 1 + (up == nullptr || up->constant ? 0 : up->ancestors.size());
    }
    for (const auto& w : writers) bound += w->ancestors.size();
    ancestors.reserve(bound);
    for (const auto& w : writers) {
      origin->truncated = origin->truncated || w->truncated;
      for (const auto& up : w->ancestors) {
        if (!up.array.expired()) ancestors.push_back(up);
      }
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto& in = inputs[i];
      if (in == nullptr) continue;
      ancestors.push_back({in, origin->input_versions[i]});
      const Origin* up = in->origin.get();
      if (up == nullptr || up->constant) continue;  // a constant op cuts the dependence
      origin->truncated = origin->truncated || up->truncated;
      for (const auto& w : up->ancestors) {
        if (!w.array.expired()) ancestors.push_back(w);
      }
    }
    // By array, then version: one array read at two versions (before and
    // after a write in place) stays twice, as the two variables it held.
    std::sort(ancestors.begin(), ancestors.end(), [](const Origin::Ancestor& a, const Origin::Ancestor& b) {
      if (a.array.owner_before(b.array)) return true;
      if (b.array.owner_before(a.array)) return false;
      return a.version < b.version;
    });
    ancestors.erase(std::unique(ancestors.begin(), ancestors.end(),
                                [](const Origin::Ancestor& a, const Origin::Ancestor& b) {
                                  return a.version == b.version && SameOwner(a.array, b.array);
                                }),
                    ancestors.end());
    if (ancestors.size() > Origin::kMaxAncestors) {
      ancestors.resize(Origin::kMaxAncestors);
      origin->truncated = true;
    }
    if (ancestors.capacity() > 2 * ancestors.size() + 8) ancestors.shrink_to_fit();  // many had died
  }
  if (!constant && writers.empty()) {
    RecentOrigin& recent = *std::min_element(
        std::begin(recents), std::end(recents),
        [](const RecentOrigin& a, const RecentOrigin& b) { return a.last_used < b.last_used; });
    recent.last_used = clock;
    recent.origin = origin;
    recent.input_origins.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      recent.input_origins[i] = inputs[i] != nullptr ? inputs[i]->origin : nullptr;
    }
  }
  for (const auto& out : outputs) {
    if (out != nullptr) out->origin = origin;
  }
}

}  // namespace dualcast::detail
