// Origins: which operation computed an array, from which versions of which arrays, for the tape's error messages.
//
// Why: a tape records only what is computed while it is open, so a loss can
// reach a requested array through arrays no tape recorded (computed before
// the tape, on another thread, by partials()). The tape must then refuse,
// not give a gradient that silently misses that path; to see such a path it
// needs every array's provenance, taped or not. NoteOrigin records it on
// nearly every launch, so it is built to be cheap: the inputs with the
// versions read (a write in place makes an array another variable) and the
// inputs' own Origins as parents, flattened into the arrays still alive once
// the chain grows deep (Origin::parents); and a few recent Origins per thread
// shared by launches that read the same arrays at the same versions. The tape
// reads them (untaped_paths.cc, through origin.h) only when a gradient is asked.
//
// Example (what an op does after computing `out` from `a` and `b`):
//   detail::NoteOrigin("matmul", {a.impl(), b.impl()}, {out});
#include <algorithm>
#include <iterator>

#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "dualcast/detail/grad_node.hpp"
#include "runtime/array_pool.h"
#include "runtime/in_place.h"
#include "runtime/origin.h"
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

// The walk behind ForEachAncestor and Flatten: every Origin reached from
// `o` through parents once (a diamond, x * x + x, meets one twice), its
// inputs and ancestors visited until `visit` returns true (then true);
// a parent for which `enter` is false is left out, with what is behind it.
bool WalkAncestry(const Origin& o, absl::FunctionRef<bool(const std::weak_ptr<ArrayImpl>&, uint32_t)> visit,
                  absl::FunctionRef<bool(const std::shared_ptr<const Origin>&)> enter) {
  absl::InlinedVector<const Origin*, 16> stack = {&o};
  absl::flat_hash_set<const Origin*> seen;
  while (!stack.empty()) {
    const Origin* q = stack.back();
    stack.pop_back();
    for (size_t i = 0; i < q->inputs.size(); ++i) {
      if (visit(q->inputs[i], q->input_versions[i])) return true;
    }
    for (const auto& a : q->ancestors) {
      if (visit(a.array, a.version)) return true;
    }
    for (const auto& p : q->parents) {
      if (seen.insert(p.get()).second && enter(p)) stack.push_back(p.get());
    }
  }
  return false;
}

// Replaces the parents by the arrays upstream still alive: what they would
// name later, less what has died (which every reader skips anyway). By
// array, then version: one array read at two versions (before and after a
// write in place) stays twice, as the two variables it held. A taped
// Origin keeps Origins flattened before as parents instead of copying their
// ancestry (see Origin::parents), while they are less than kMaxDepth / 2
// deep; an untaped one (a tape-less loop, where few arrays stay alive)
// flattens all the way, so it holds no chain of dead arrays' entries.
void Flatten(Origin& o) {
  absl::InlinedVector<Origin::Ancestor, 2> ancestors;
  absl::InlinedVector<std::shared_ptr<const Origin>, 3> kept;
  uint32_t kept_depth = 0;
  // One walk from `o` (its inputs too), so parents sharing an ancestry are read once.
  WalkAncestry(
      o,
      [&](const std::weak_ptr<ArrayImpl>& a, uint32_t version) {
        if (!a.expired()) ancestors.push_back({a, version});
        return false;
      },
      [&](const std::shared_ptr<const Origin>& p) {
        if (!o.taped || !p->flat || p->depth >= Origin::kMaxDepth / 2) return true;
        kept.push_back(p);
        kept_depth = std::max(kept_depth, p->depth + 1);
        return false;
      });
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
    o.truncated = true;
  }
  ancestors.shrink_to_fit();
  o.ancestors = std::move(ancestors);
  o.parents = std::move(kept);
  o.depth = kept_depth;
  o.flat = true;
}

}  // namespace

bool ForEachAncestor(const Origin& o,
                     absl::FunctionRef<bool(const std::weak_ptr<ArrayImpl>&, uint32_t)> visit) {
  if (o.constant) return false;
  return WalkAncestry(o, visit, [](const std::shared_ptr<const Origin>&) { return true; });
}

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
    // The parents (see Origin::parents): O(inputs), however much is upstream.
    for (const auto& w : writers) origin->parents.push_back(w);
    for (const auto& in : inputs) {
      if (in == nullptr || in->origin == nullptr || in->origin->constant) continue;  // a constant op cuts
      origin->parents.push_back(in->origin);
    }
    for (const auto& p : origin->parents) {
      origin->depth = std::max(origin->depth, p->depth + 1);
      origin->truncated = origin->truncated || p->truncated;
    }
    if (origin->depth > Origin::kMaxDepth) Flatten(*origin);
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
