// GradNode: one recorded operation of the tape, and the hooks the rest of the runtime records with.
//
// Every differentiable array operation (a fused broadcast group, sum, matmul,
// reshape, ...) that runs while a Tape is alive on this thread records one
// GradNode. The reverse sweep visits nodes in reverse recording order and
// asks each for the adjoint contributions of its inputs.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dualcast/detail/array_impl.hpp"

namespace dualcast {

// How a tape keeps what broadcasts need for the reverse sweep.
//   kCache: the forward kernel also writes every partial dy_m/dx_j (fastest
//           backward for costly kernels, most memory).
//   kRecompute: no partials are stored; the backward re-runs the dual kernel
//           with the output adjoints and writes input adjoints directly.
//   kAuto (the default): kRecompute for cheap kernels and past the tape's
//           budget, kCache otherwise (runtime/auto_partials.h).
enum class PartialsMode { kCache, kRecompute, kAuto };

namespace detail {

struct GradNode {
  virtual ~GradNode() = default;
  std::string name;  // kernel or op name, for errors and stats
  // The inputs adjoints flow to (arrays that existed before this op).
  std::vector<std::shared_ptr<ArrayImpl>> inputs;
  // Per output: true when other operations were fused into the same kernel
  // and consumed it in registers. Its adjoint from those consumers is folded
  // into the inputs' partials, so a gradient with respect to this output
  // itself is not available (the tape refuses to give a wrong one).
  std::vector<bool> consumed_inside;
  // reads[m][j]: whether output m depends on input j at all (a fused group's
  // outputs need not read every leaf). Empty: every output reads every input.
  // The tape uses it to tell an unused input from a used one.
  std::vector<std::vector<bool>> reads;
  // Each input as this node read it (in_place.h). Record fills one entry
  // per input once any in-place write has happened in the process; empty:
  // none had, so every input was at version 0 and held what computed it.
  struct InputSeen {
    // The input's write count then, so that a later write, which makes the
    // array a new version, does not cut this node's path to what computed
    // the values it read.
    uint32_t version = 0;
    // Its memory had been written through another view since its producer
    // was recorded: its values were not that producer's result, and the
    // sweep refuses to credit the producer.
    bool stale = false;
    // The epoch of the last write into its memory then, through any view:
    // a leaf's values are a new variable after any write into them.
    uint64_t epoch = 0;
  };
  std::vector<InputSeen> inputs_seen;
  InputSeen seen(size_t j) const { return j < inputs_seen.size() ? inputs_seen[j] : InputSeen{}; }
  // Given the adjoint of each output (null where no gradient reached it),
  // returns each input's adjoint contribution, already reduced to that input's
  // shape (null where it has none).
  virtual std::vector<std::shared_ptr<ArrayImpl>> Backward(
      const std::vector<std::shared_ptr<ArrayImpl>>& output_adjoints) = 0;

  // A contribution that covers only part of its input (a slice's adjoint):
  // where it lies in a contiguous array of the input's shape, the rest of
  // which it leaves alone. The sweep adds it into that region of the adjoint
  // it accumulates, one strided add, instead of the node scattering it into
  // a zero array of the input's shape that the sweep then adds in full.
  struct Region {
    std::vector<int64_t> shape, strides;  // elements; the contribution has `shape`
    int64_t offset = 0;
  };
  // Input j's region, or null when its contribution has the input's shape.
  virtual const Region* ContributionRegion(size_t j) const {
    (void)j;
    return nullptr;
  }

  // One part of a node split for one gradient: `node` computes the original
  // outputs `outputs` (in its own output order).
  struct Part {
    std::shared_ptr<GradNode> node;
    std::vector<int> outputs;
  };
  // Splits this node so that its outputs `cut` (consumed_inside ones a
  // gradient asks for; `arrays` are those outputs' arrays) become inputs of
  // the parts that consume them: the parts, in forward order, compute every
  // output of this node, and the sweep runs them instead of this node. Only
  // fused broadcast groups have consumed_inside outputs; others throw.
  virtual std::vector<Part> Cut(const std::vector<int>& cut,
                                const std::vector<std::shared_ptr<ArrayImpl>>& arrays);
};

// Whether a Tape is recording on this thread.
bool TapeActive();
// The innermost active tape's mode and budget (bytes of partial arrays per broadcast).
PartialsMode ActivePartialsMode(size_t partial_bytes);
// Records `node` on every tape active on this thread and marks `outputs` as
// produced by it (output m gets grad_fn = node, grad_output = m). No-op when
// no tape is active.
void Record(std::shared_ptr<GradNode> node, const std::vector<std::shared_ptr<ArrayImpl>>& outputs);
// Sets every output's Origin (op, inputs, whether a tape records now). Called
// by every operation that computes arrays, taped or not; `constant` for the
// ops without a gradient (see Origin::constant).
void NoteOrigin(std::string op, const std::vector<std::shared_ptr<ArrayImpl>>& inputs,
                const std::vector<std::shared_ptr<ArrayImpl>>& outputs, bool constant = false);

// The same over arrays held elsewhere (a span) or listed in place
// (`Record(node, {out})`, `NoteOrigin(op, {in}, {out})`), which then build no
// vector: a tape step records and notes several times.
using ArraySpan = std::span<const std::shared_ptr<ArrayImpl>>;
void Record(std::shared_ptr<GradNode> node, ArraySpan outputs);
inline void Record(std::shared_ptr<GradNode> node,
                   std::initializer_list<std::shared_ptr<ArrayImpl>> outputs) {
  Record(std::move(node), ArraySpan(outputs.begin(), outputs.size()));
}
void NoteOrigin(std::string_view op, ArraySpan inputs, ArraySpan outputs, bool constant = false);
inline void NoteOrigin(std::string_view op, std::initializer_list<std::shared_ptr<ArrayImpl>> inputs,
                       std::initializer_list<std::shared_ptr<ArrayImpl>> outputs,
                       bool constant = false) {
  NoteOrigin(op, ArraySpan(inputs.begin(), inputs.size()), ArraySpan(outputs.begin(), outputs.size()),
             constant);
}

}  // namespace detail
}  // namespace dualcast
