// Differential tester of the public array surface: random programs through the runtime and the tape vs float64 finite differences.
//
// A program is a few operations over small arrays, written the ways a user
// writes them: methods and free functions (reshape, transpose, copy, slice,
// concat, stack), operators and scalar arithmetic, where, clip, every Array
// math function (surface_math.h), broadcasts of branchy kernels (one output,
// or two through broadcast_n), sum/mean/max/min/prod/
// logsumexp/var/norm (all axes, one, or a list: any subset, negative
// spellings, none), argmax/argmin, matmul, eval(); leaves are owning arrays or views of user
// memory; a third of the programs are float32. A Tape opens at a random point
// of it (and is sometimes cleared at a later one); the loss is a weighted sum of some of the arrays; gradients are then
// requested with respect to random sets of arrays (leaves, still-pending
// ones, intermediates, views) through gradient, value_and_gradient or
// accumulate_gradient.
//
// Each request is one case. The expected outcome comes from a model of the
// documented rules, independent of the runtime: an operation is on the tape
// when it is *computed* while the tape is open (a broadcast is computed when
// something first forces it: an eager operation, eval(), the loss); an array
// the loss reaches through an operation computed before the tape is an Error,
// as is one it does not reach at all (zeros when allow_unused). Otherwise the
// gradient must equal central differences of a plain double re-implementation
// of the program (perturbing the requested array's value, downstream only),
// except where those see a kink or a jump within +-2h (skipped) or the data
// tie at a branch (a mismatch there is counted apart: HostLoss).
//
// Writes in place (Array::assign of values or of another array, or every element through mutable_data())
// come after the tape opens, into arrays no other slot shares memory with;
// the handle then holds a new variable. An Error that names the write is
// accepted for any request of a program where an operation on the tape read
// the written array first, or where mutable_data() wrote over an array
// computed from others: the tape refuses what it kept when that memory was
// written, and a path through a pointer-written array (which elements
// changed it cannot know). An array computed before the tape from the old
// values is a constant computed from another variable: no Error there (the
// ancestry records versions). Every gradient it does give must still match.
// A failing case is minimised (operations, loss terms and requested arrays
// dropped while it still fails) and printed as a reproducer.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dualcast::surface {

struct Op {
  enum Kind {
    kLeaf,        // Array::from(values)            (shape)
    kView,        // Array::view(user buffer)       (shape)
    kScale,       // a * number + number2 (operators with numbers: a pending broadcast)
    kUnary,       // broadcast(kernel u, a)
    kAdd,         // a + b (broadcasting)
    kMul,         // a * b
    kBinary,      // broadcast(kernel k2, a, b)
    kReshape,     // a.reshape(shape) or dualcast::reshape(a, shape)  (free)
    kTranspose,   // a.transpose(perm) or dualcast::transpose(a, perm) (free)
    kCopy,        // a.copy()
    kSum,         // sum(a) or sum(a, {axis}, keepdims)               (axis < 0: all)
    kMean,        // mean(a) or mean(a, {axis}, keepdims)
    kMatmul,      // matmul(a, b)
    kReduce,      // max/min/prod/logsumexp/var/norm (which 0..5) of a, all or {axis}, keepdims
    kSlice,       // slice(a, slices): a strided view
    kConcat,      // concat({a, b}, axis)
    kStack,       // stack({a, b}, axis)
    kClip,        // clip(a, number, number2), or clip(a, b, c) with arrays
    kSub,         // a - b (broadcasting), or number - a when b < 0
    kWhere,       // where(a > b, a, c): a fused broadcast of a comparison and a choice
    kMath,        // an Array math function of a (which: kMathFns in surface_math.h)
    kMath2,       // a binary one of a and b, or fma(a, b, c) (which: kMath2Fns)
    kPair,        // broadcast_n(kernel with two outputs, a, b): its output 0 (output 1 is held)
    kPairSecond,  // output 1 of the kPair at slot `pair` (a, b: that op's, for the model)
    kArgReduce,   // argmax (which 0) or argmin (1) of a, all or along `axis`, keepdims:
                  // indices, piecewise constant in a (no gradient flows through them)
    kAssign,      // a.assign(Values(seed)), or with free_fn every element written through
                  // a.mutable_data(), or a.assign(b) when b >= 0 (b broadcast to a's shape,
                  // recorded like a copy; b may be a itself): new values in a's memory; the
                  // slot made is the same handle (a new variable), and `a` is not read
                  // again (see RandomProgram)
    kEval,        // a.eval() (no new array)
  } kind = kLeaf;
  int a = -1, b = -1, c = -1;  // argument slots
  int pair = -1;               // kPairSecond: the kPair's slot
  std::vector<int64_t> shape;  // leaf / reshape target
  std::vector<int> perm;
  int axis = -1;
  // kSum, kMean, kReduce: with `axes_list`, reduce over `axes` instead (any
  // subset, negative spellings, the empty list: over nothing).
  bool axes_list = false;
  std::vector<int> axes;
  std::vector<std::array<int64_t, 3>> slices;  // kSlice: start, stop, step per leading dim
  bool keepdims = false;
  bool free_fn = false;  // the free-function spelling
  double number = 0, number2 = 0;
  uint64_t seed = 0;  // leaf values
  int which = 0;      // kReduce: 0 max, 1 min, 2 prod, 3 logsumexp, 4 var, 5 norm; kMath, kMath2: surface_math.h
};

inline constexpr const char* kReduceNames[] = {"max", "min", "prod", "logsumexp", "var", "norm"};
// max, min and prod of a pending array are pending (like sum); the others compute at once.
inline bool PendingReduce(int which) { return which < 3; }

struct Request {
  std::vector<int> slots;  // arrays to differentiate with respect to
  bool allow_unused = false;
  bool accumulate = false;  // through accumulate_gradient into buffers of ones
  bool with_value = false;  // through value_and_gradient (not with accumulate): its value is checked too
  bool on_second = false;   // asked of the second tape
};

struct Program {
  std::vector<Op> ops;
  int tape_at = 0;                     // ops [0, tape_at) run before the Tape opens
  // A second Tape, nested in the first (opened at or after it, gone before
  // it), opens before op tape2_at; -1: none. Tapes nest: an operation is
  // recorded on every tape alive when it is computed.
  int tape2_at = -1;
  // The first tape is cleared (Tape::clear) before op clear_at (>= tape_at;
  // -1: never): what it recorded before is outside its record from then on.
  int clear_at = -1;
  int mode = 0;                        // 0 kCache, 1 kRecompute, 2 kAuto with a 64-byte budget
  // Array<float> (leaves and weights rounded to float; looser tolerances) instead of Array<double>.
  bool f32 = false;
  // Every array on Device::cuda() (views of user memory become copies there).
  // RandomProgram leaves it off; a harness sets it (the emulated GPU's ctest).
  bool cuda = false;
  uint64_t seed = 0;  // RandomProgram's; a report names it (replay: DUALCAST_SURFACE_SEED=<seed>)
  std::vector<int> loss_slots;         // loss = sum over these of sum(slot * weights)
  std::vector<Request> requests;
};

struct Stats {
  int64_t programs = 0, cases = 0, matched = 0, errors_expected = 0, elements = 0, skipped = 0;
  int64_t in_place_errors = 0;  // Errors naming a write in place, accepted where the program writes one
  int64_t tie_excused = 0;  // mismatches in programs whose data tie at a branch or kink (HostLoss)
  int64_t failures = 0;
  std::vector<std::string> reports;  // minimised reproducers
  std::string Summary() const;
};

Program RandomProgram(uint64_t seed);
// Runs every request of `p` (one case each); failures go to `stats` with a
// minimised reproducer.
void Check(const Program& p, Stats& stats);
std::string Describe(const Program& p);

}  // namespace dualcast::surface
