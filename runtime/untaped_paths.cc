// The walk from a loss to the arrays behind untaped ones, and the words of the tape's refusals (see untaped_paths.h).
#include "runtime/untaped_paths.h"

#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "jit/codegen/broadcast_layout.h"
#include "runtime/in_place.h"
#include "runtime/origin.h"

namespace dualcast::detail {
namespace {

// Whether `a` (holding Origin `origin`, the version the walk met) is a view
// (slice, reshape, transpose, ...) of an array whose own values `writer`
// computed. For Array::assign, which is recorded, the view's taped chain
// leads there, so that memory hides no path. A view whose memory was
// written again since is stale, and the sweep refuses it.
bool ViewOfWritten(const detail::ArrayImpl& a, const detail::Origin* origin, const detail::Origin* writer) {
  std::shared_ptr<const detail::Origin> held;
  for (int k = 0; origin != nullptr && k < 64; ++k) {
    if (origin == writer) return true;
    if (origin->inputs.size() != 1) return false;
    const std::shared_ptr<detail::ArrayImpl> base = origin->inputs[0].lock();
    if (base == nullptr || base->storage != a.storage) return false;
    held = detail::VersionOf(*base, origin->input_versions[0]).origin;
    origin = held.get();
  }
  return false;
}

}  // namespace

Behind BehindUntaped(const std::shared_ptr<detail::ArrayImpl>& loss, const NodeIndex& on_tape) {
  static constexpr uint32_t kNow = UINT32_MAX;
  struct Item {
    std::shared_ptr<detail::ArrayImpl> array;
    Via via;                  // the first array on the path the tape did not record
    Via constant;             // the first result of an op without a gradient
    uint32_t version = kNow;  // the version a taped node read (in_place.h)
    // When a taped node read it: the epoch of the last write into its memory
    // then (kNow: now, for the loss).
    uint64_t epoch = 0;
    bool read_now = false;
  };
  Behind behind;
  std::vector<Item> stack = {{loss, {}, {}, kNow, 0, true}};
  absl::flat_hash_set<std::tuple<const detail::ArrayImpl*, uint32_t, uint64_t>> seen_taped;
  // Older versions met behind an untaped array (or a constant op): what
  // computed them is behind it too, but the array as it is now is not.
  absl::flat_hash_set<std::tuple<const detail::ArrayImpl*, uint32_t, bool>> seen_older;
  for (int budget = 100000; !stack.empty() && budget > 0; --budget) {
    Item item = std::move(stack.back());
    stack.pop_back();
    const detail::ArrayImpl& a = *item.array;
    const bool current = item.version == kNow || item.version == detail::WriteCount(a);
    if (item.via.array != nullptr || item.constant.array != nullptr) {
      const bool via = item.via.array != nullptr;
      UntapedMap& map = via ? behind.untaped : behind.through_constant;
      if (current ? !map.try_emplace(&a, via ? item.via : item.constant).second
                  : !seen_older.insert({&a, item.version, via}).second) {
        continue;
      }
    } else if (!seen_taped.insert({&a, item.version, item.epoch}).second) {
      continue;
    }
    // The inputs that output m of a taped node reads (a fused group's outputs differ).
    auto push_inputs = [&](const detail::GradNode& node, size_t m, const Item& marks) {
      for (size_t j = 0; j < node.inputs.size(); ++j) {
        const bool read = node.reads.empty() || (m < node.reads.size() && j < node.reads[m].size() &&
                                                 node.reads[m][j]);
        if (node.inputs[j] == nullptr || !read) continue;
        const detail::GradNode::InputSeen seen = node.seen(j);
        stack.push_back({node.inputs[j], marks.via, marks.constant, seen.version, seen.epoch});
      }
    };
    // What computed the values met: the array's own node and Origin, or, when
    // it was written in place since a taped node read it, the older version's.
    std::shared_ptr<detail::GradNode> producer = a.grad_fn;
    int output = a.grad_output;
    const detail::Origin* origin = a.origin.get();
    if (item.version != kNow && item.version != detail::WriteCount(a)) {
      detail::VersionInfo then = detail::VersionOf(a, item.version);
      if (!then.known && behind.forgotten == nullptr) behind.forgotten = &a;
      producer = std::move(then.node);
      output = then.output;
      origin = then.origin.get();
      if (then.origin != nullptr) behind.origins.push_back(std::move(then.origin));
    }
    // The untaped Origin `o` computed the values met (all or some of them).
    auto behind_origin = [&](const detail::Origin& o, bool memory) {
      const Via self{&a, &o, memory};
      // Past an op without a gradient (argmax), taped or not, no derivative
      // flows: an untaped array there hides no path, and what is behind it
      // is reached only through that op.
      const bool after_constant = item.via.array == nullptr && item.constant.array != nullptr;
      const bool constant = (o.constant && item.via.array == nullptr) || after_constant;
      if (!o.constant) {
        // Everything upstream of an untaped array is behind it (or, past a
        // constant op, reached only through that op): its ancestry
        // (origin.h), which temporaries dropped on the way do not cut. Past its
        // cap the ancestry is partial, and the walk through the inputs
        // (below) replaces it where it can (InputsTellAncestry).
        UntapedMap& into = after_constant ? behind.through_constant : behind.untaped;
        const Via via = after_constant ? item.constant : item.via.array ? item.via : self;
        if (!o.truncated || !detail::InputsTellAncestry(o)) {
          detail::ForEachAncestor(o, [&](const std::weak_ptr<detail::ArrayImpl>& w, uint32_t version) {
            // Only the variables the arrays hold now: one written in place
            // since it was read is another variable, not behind `via`.
            auto up = w.lock();
            if (up != nullptr && version == detail::WriteCount(*up)) into.try_emplace(up.get(), via);
            return false;
          });
          if (!after_constant && o.truncated && behind.unverified.array == nullptr) behind.unverified = via;
        }
      }
      const Item marks = constant ? Item{nullptr, {}, item.constant.array ? item.constant : self}
                                  : Item{nullptr, item.via.array ? item.via : self, {}};
      for (size_t k = 0; k < o.inputs.size(); ++k) {
        if (auto in = o.inputs[k].lock()) {
          stack.push_back({std::move(in), marks.via, marks.constant, o.input_versions[k]});
        } else if (constant && k < o.producers.size()) {  // the input is gone: follow its node
          const auto node = o.producers[k].first.lock();
          if (node != nullptr && on_tape.contains(node.get())) {
            push_inputs(*node, static_cast<size_t>(o.producers[k].second), marks);
          }
        }
      }
    };
    if (producer != nullptr && on_tape.contains(producer.get())) {
      push_inputs(*producer, static_cast<size_t>(output), item);
    } else if (origin != nullptr) {
      behind_origin(*origin, false);
    }
    // Values written into its memory by partials() or a sweep, through this
    // array or another view of the memory (in_place.h), as it was read.
    const uint64_t epoch = item.read_now ? detail::LastInPlaceWrite(a.storage.get()) : item.epoch;
    detail::WrittenValues written = detail::WrittenValuesAt(a.storage.get(), epoch);
    if (!written.complete && behind.forgotten == nullptr) behind.forgotten = &a;
    for (auto& writer : written.writers) {
      // Values assign() wrote into this array, or into the array it views:
      // that write covered all of it (and the tape recorded it), so the
      // older ones, listed after, do not show in it either.
      if (writer->op == kAssignOp && (writer.get() == origin || ViewOfWritten(a, origin, writer.get()))) break;
      if (writer.get() == origin) continue;
      behind_origin(*writer, true);
      behind.origins.push_back(std::move(writer));  // kept for the Via that names it
    }
  }
  return behind;
}

bool IsSweepResult(const detail::Origin* origin) {
  return origin != nullptr && (origin->op == kGradientOp || origin->op == kAccumulateOp);
}

std::string UntapedText(const Via& v) {
  const detail::ArrayImpl& via = *v.array;
  const detail::Origin& o = *v.origin;
  const std::string array = absl::StrCat("an array of shape ", jit::FormatShape(via.shape));
  if (IsSweepResult(v.origin)) {
    return absl::StrCat(array, v.memory ? " whose memory holds values written by " : " computed by ", o.op,
                        " (a reverse sweep, which no tape records: dualcast has no gradient of a "
                        "gradient), which this tape sees as a constant");
  }
  if (o.pointer_written) {
    return absl::StrCat(array,
                        v.memory ? absl::StrCat(" whose memory was written through mutable_data() of an "
                                                "array over it computed by '", o.op, "'")
                                 : absl::StrCat(" computed by '", o.op, "' and then written through mutable_data()"),
                        ", which hands out a pointer to all of it: dualcast cannot tell which of its "
                        "elements were overwritten and which still hold values computed from this "
                        "input, so the tape sees the array as a constant");
  }
  if (v.memory && o.op == kAssignOp) {
    return absl::StrCat(array, " whose memory holds values written there by Array::assign through "
                               "another view of the same memory (a tape credits those values only "
                               "to the array assign() was called on: read them through it), which "
                               "this tape sees as a constant");
  }
  if (v.memory) {
    return absl::StrCat(array, " whose memory holds values written there by '", o.op,
                        "' (as a partials() destination, through another view of the same memory; "
                        "partials() is not recorded by any tape), which this tape sees as a constant");
  }
  if (o.before_write && !o.taped) {
    // The user made it under the tape; a write elsewhere computed it first.
    return absl::StrCat(array, " computed by '", o.op,
                        "' while still pending, by a write in place (Array::assign, mutable_data(), "
                        "or a destination of partials() or accumulate_gradient()) into memory its "
                        "inputs may share: such a write computes the pending arrays that read that "
                        "memory first, so that they keep the values of before it, on the thread that "
                        "writes, where no tape recorded it (a write through another view of the same "
                        "buffer, likely by another thread: views whose elements interleave count as "
                        "sharing memory even where no element is shared), which this tape sees as a "
                        "constant");
  }
  return absl::StrCat(array, " computed by '", o.op, "' ",
                      o.taped ? "outside this tape's record (before it was opened or cleared, while "
                                "another tape recorded)"
                              : "before this Tape was opened (or while no tape was recording, or "
                                "on another thread: a Tape records its own thread's operations)",
                      ", which this tape sees as a constant");
}

namespace {

// An array computed from an input before the input itself was written in
// place read another variable (the ancestry records versions), so it is not
// behind the input as it is now. A write through another view of the same
// memory leaves the input's own version as it was: an array computed before
// that write holds the old values, which the tape cannot tell from the new
// ones, so the path is refused like any untaped one; opening the Tape
// earlier would not help, so say what would.
bool WrittenThroughAnotherView(const detail::ArrayImpl& input) {
  return detail::WriteCount(input) == 0 && detail::LastInPlaceWrite(input.storage.get()) != 0;
}
constexpr char kComputedFromOldValues[] =
    ". The input's memory was written in place through another view of it (Array::assign, "
    "mutable_data()): if that array was computed from its values before the write, it holds the "
    "old values, which the tape cannot tell from the new ones (it tells versions apart per array, "
    "not per memory). Write through the input itself, use a fresh copy of that array as the "
    "constant (Array::from(v.to_vector(), v.shape())), or take the gradient before writing";

// What to do about a path through `via`, an array the tape did not record (before UserMemoryAdvice).
std::string UntapedAdviceFor(const Via& via, bool used) {
  if (via.origin->pointer_written) {
    return ". To give it new values that depend on nothing, assign() them all (Array::assign); "
           "to write some elements of a constant, write into a fresh array of its values "
           "(Array::from(v.to_vector(), v.shape())); to keep the dependence on the rest, compute the "
           "new array with dualcast (e.g. a kernel that selects the new values) rather than in place";
  }
  if (via.memory && via.origin->op == kAssignOp) {
    return ". Read the assigned values through the array assign() wrote (or a slice or reshape "
           "of it); if they are meant as a constant, use a fresh copy (Array::from(v.to_vector(), "
           "v.shape()))";
  }
  if (via.memory && !IsSweepResult(via.origin)) {
    return ". No tape records partials(): to differentiate through those values, compute them "
           "with broadcast() under the tape; if they are meant as a constant, use a fresh copy "
           "(Array::from(v.to_vector(), v.shape()))";
  }
  if (via.origin->before_write && !via.origin->taped) {
    return ". Evaluate it (eval()) under the tape before anything may write that buffer, or give "
           "each thread its own buffer (or parts of one whose elements do not interleave with "
           "others': a column each, blocks of rows)";
  }
  if (IsSweepResult(via.origin)) {
    return ". dualcast differentiates once: for a second derivative, write the first derivative "
           "into a kernel (for x*x*x, a kernel returning 3*x*x) and take that kernel's gradient; "
           "if the gradient is meant as a constant here, use a fresh copy of its values "
           "(Array::from(g.to_vector(), g.shape()))";
  }
  return absl::StrCat(". Open the Tape before the forward computation (arrays still pending when it "
                      "opens are fine)",
                      used ? "; if that array is meant as a constant, use a fresh copy of its values "
                             "(Array::from(v.to_vector(), v.shape()))"
                           : "");
}

// Written values in user memory may be remembered from a view that is gone
// (in_place.h), which the memory's owner may since have refilled or freed.
std::string UserMemoryAdvice(const Via& via) {
  if (!via.memory || via.array->storage == nullptr || via.array->storage->owning) return "";
  return ". If that memory holds values of your own now (dualcast keeps what it wrote into a user "
         "buffer after the buffer's views are gone, and cannot see the memory freed and allocated "
         "again, or refilled through a plain pointer), call dualcast::forget_written_values(data, "
         "bytes) for it";
}

}  // namespace

std::string UntapedAdvice(const ArrayImpl& input, const Via& via, bool used) {
  if (WrittenThroughAnotherView(input) && !IsSweepResult(via.origin) && !via.origin->before_write &&
      !via.origin->pointer_written) {
    return kComputedFromOldValues;
  }
  return absl::StrCat(UntapedAdviceFor(via, used), UserMemoryAdvice(via));
}

}  // namespace dualcast::detail
