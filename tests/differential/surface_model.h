// The double reference of a public-surface program and the model of the tape's documented rules (see surface.h).
//
// Independent of the runtime: plain loops on row-major double arrays for the
// values, and a model of when each operation is computed (a broadcast when
// first forced; everything else at once) for which gradients the tape must
// refuse.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "differential/surface.h"
#include "dualcast/array.hpp"
#include "dualcast/math.hpp"

namespace dualcast::surface {

// The kernels, one definition for the runtime (traced) and the reference (on double).
inline constexpr auto kUnaryFn = [](auto x) {
  using namespace dualcast::math;
  if (x > 0) return tanh(x) * 1.5;
  return x * x * 0.5 + x * 1.5;
};
inline constexpr auto kBinaryFn = [](auto x, auto y) {
  using namespace dualcast::math;
  if (x > y) return sin(x) * y;
  return x * y - cos(y);
};
// Two outputs (broadcast_n): one fused group whose outputs may be used, held,
// forced and differentiated apart.
inline constexpr auto kPairFn = [](auto x, auto y) {
  using namespace dualcast::math;
  if (x > y) return std::tuple{sin(x) * y, x - y * y};
  return std::tuple{x * y, exp(y) * 0.5};
};

// A row-major double array.
struct H {
  Shape shape;
  std::vector<double> v;
};

int64_t SizeOf(const Shape& s);
// NumPy broadcasting of two shapes, nullopt when they do not broadcast.
std::optional<Shape> BroadcastShape(const Shape& a, const Shape& b);
// The values of a leaf (or loss weights) drawn from `seed`, uniform in [-1.5, 1.5).
std::vector<double> Values(uint64_t seed, int64_t n);
// `v` as the program's element type holds it (rounded to float for an f32 program).
std::vector<double> Rounded(const Program& p, std::vector<double> v);
// The seed of loss term `term`'s weights.
uint64_t WeightSeed(size_t term);
bool MakesSlot(const Op& op);
// Which of an input's dims a reduction op sums over, and the shape it leaves (kSum, kMean, kReduce).
std::vector<bool> ReducedDims(const Op& op, size_t rank);
Shape ReducedShape(const Op& op, const Shape& in);
// slice's shape by NumPy's rules for positive steps, written apart from the runtime's.
Shape SlicedShape(const Op& op, const Shape& in);

// Every slot's value (into *slots_out when not null), with `delta` added to
// element `k` of slot `perturb` right after it is computed; returns the loss.
// *ties_out (when not null): whether some branch or reduction was decided by
// a tie, exact or within rounding (1e-9 relative, 1e-5 in a float32 program):
// x == y at a comparison, x == 0 at abs, a repeated max, a clip bound equal
// to x or to the other bound. There the runtime may round to the other side
// (mean(0.2, ..., 0.2) > 0.2 in one summation order and not in another), and
// the function can have a derivative that the chain of each operation's
// documented convention does not give: where(a > b, a, b) at a == b feeding
// clip(x, lo, a) at x == a is constant in b, yet both conventions pass b's
// tangent through.
double HostLoss(const Program& p, std::vector<H>* slots_out = nullptr, int perturb = -1, int64_t k = 0,
                double delta = 0, bool* ties_out = nullptr);

struct Model {
  std::vector<int> op_of_slot;
  std::vector<bool> taped;  // per slot: computed while the tape was open (leaves: false)
  // Per slot: the slot of the variable its handle holds now (its last assign's; itself if none).
  std::vector<int> variable;
  // The program writes in place where the tape documents a refusal: into an
  // array an operation on the tape read first (the sweep may have kept it), or through
  // mutable_data() over an array computed from others (which values are
  // still theirs cannot be told).
  bool write_may_refuse = false;
};
// The model for the tape opened before op `tape_at` (the first tape when -1:
// from its open, or from its clear when it is cleared).
Model BuildModel(const Program& p, int tape_at = -1);
// Whether slot `r` reaches the loss through taped operations only, and
// through some operation computed before the tape.
std::pair<bool, bool> Reach(const Program& p, const Model& m, int r);

}  // namespace dualcast::surface
