// Private helpers of the reverse sweep: fused multiply-and-reduce, strided copies and adds (CPU).
//
// The tape's reverse rules need a few array primitives that must not be
// recorded (they run inside the sweep): x̄_j = sum_to(Σ_m ȳ_m ⊙ P[m][j],
// shape(x_j)) as ONE pass that never materialises the full-shape product
// when x_j was broadcast, plus copies, in-place adds, scaling and fills over
// arbitrary strides. Each is a generated kernel run through Execute (a tiny
// IR function, built once): reductions are Execute's reduced outputs, the
// in-place add its accumulating output.
//
// Accumulation: every reduction accumulates in double (float arrays too), in
// an order fixed by the sizes and the operands' strides (Execute loops in
// their memory order), so results do not depend on the thread count.
//
// Example:
//   // x̄ (shape {n, 1}) from ȳ and P (shape {n, n}):
//   auto xbar = ReduceProducts(DType::kF32, {{ybar.get(), p.get()}}, {n, n}, {n, 1});
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dualcast/detail/array_impl.hpp"

namespace dualcast::detail {

// One term of a sum of products: a ⊙ b, or a alone when b is null. Operands
// have the full shape or one that broadcasts to it (NumPy rules), any strides.
struct ProductTerm {
  const ArrayImpl* a = nullptr;
  const ArrayImpl* b = nullptr;
};

// A new contiguous array of `target` = Σ over the axes along which `target`
// broadcasts to `full` of Σ_t a_t ⊙ b_t, divided by `divisor` in double
// before the one rounding (a mean's count). Throws Error(kShape) when `target`
// does not broadcast to `full`. With no terms the result is zeros.
std::shared_ptr<ArrayImpl> ReduceProducts(DType dtype, const std::vector<ProductTerm>& terms,
                                          const std::vector<int64_t>& full,
                                          const std::vector<int64_t>& target, double divisor = 1);

// `a` itself when it is contiguous, owning and has no stride-0 dims of size > 1;
// otherwise a new contiguous copy.
std::shared_ptr<ArrayImpl> Contiguous(const std::shared_ptr<ArrayImpl>& a);

// A new contiguous copy of `a`.
std::shared_ptr<ArrayImpl> CopyArray(const ArrayImpl& a);

// For a tape node that reads `a` again in the reverse sweep: a copy of `a`
// when it is a view of the user's writable memory (Array::view(T*)), else
// null. The user may write that buffer through their own pointer after the
// forward pass (a simulation storing its new state where it viewed the old
// one), which no in-place stamp sees. Memory dualcast owns changes only
// through dualcast, whose writes the sweep checks (in_place.h); a view of
// const memory is the user's word that it does not change while a tape
// that read it lives (array.hpp), so the tape reads it again.
std::shared_ptr<ArrayImpl> CopyIfUserMemory(const std::shared_ptr<ArrayImpl>& a);

// A view of `a` (same storage) with `shape`, no grad_fn. `strides` must fit.
std::shared_ptr<ArrayImpl> ViewOf(const ArrayImpl& a, std::vector<int64_t> shape,
                                  std::vector<int64_t> strides);

// The dims of `shape` that `axes` name (negative counts from the end), or
// Error(kShape) naming `what`, the axis and the shape when one is out of
// range or repeated.
std::vector<bool> AxisMask(const char* what, const std::vector<int64_t>& shape,
                           const std::vector<int>& axes);

// A reduction's output adjoint `g` (the user's shape, any strides: a
// broadcast adjoint has stride 0) as `keep_shape`: the reduced dims (`reduced`)
// put back as size-1 dims when keepdims dropped them.
std::shared_ptr<ArrayImpl> KeptView(const ArrayImpl& g, const std::vector<int64_t>& keep_shape,
                                    const std::vector<bool>& reduced);

// A stride-0 view of `a` broadcast to `shape` (NumPy rules; no copy).
std::shared_ptr<ArrayImpl> BroadcastView(const ArrayImpl& a, const std::vector<int64_t>& shape);

// dst += src elementwise; same shape, dst may be any writable strided layout.
void AddInto(ArrayImpl& dst, const ArrayImpl& src);

// dst = src elementwise; same shape, dst may be any writable strided layout.
void CopyInto(ArrayImpl& dst, const ArrayImpl& src);

// dsts[k] = srcs[k] for every k, in one pass over the shape when all have one
// shape (stack's interleaved regions of one output: a pass per input would
// write every cache line of it), else one copy each. Destinations must not
// overlap, as Execute judges it (element grids that interleave pass; row
// blocks that alternate do not: copy those one at a time).
void CopyEachInto(const std::vector<std::shared_ptr<ArrayImpl>>& dsts,
                  const std::vector<std::shared_ptr<ArrayImpl>>& srcs);

// A new contiguous array a + b (same shapes).
std::shared_ptr<ArrayImpl> AddArrays(const ArrayImpl& a, const ArrayImpl& b);

// A new contiguous array a * factor.
std::shared_ptr<ArrayImpl> Scaled(const ArrayImpl& a, double factor);

// A new contiguous array a / divisor (divisor rounded to a's type first).
std::shared_ptr<ArrayImpl> Divided(const ArrayImpl& a, double divisor);

// A rank-0 array holding `value` on `device` (defined in broadcast.cc).
std::shared_ptr<ArrayImpl> NumberArray(double value, DType dtype, Device device);

// A new contiguous array of `shape` filled with `value`, on `device`.
std::shared_ptr<ArrayImpl> Filled(DType dtype, const std::vector<int64_t>& shape, double value,
                                  Device device = Device::cpu());

// While the tape sweep runs one node's Backward: whether that node's input
// `j` leads to a requested gradient (a node may skip computing the others;
// their adjoints are discarded anyway). True for every j outside a sweep.
bool InputNeeded(size_t j);
class NeededInputsScope {
 public:
  explicit NeededInputsScope(const std::vector<bool>* needed);
  ~NeededInputsScope();
  NeededInputsScope(const NeededInputsScope&) = delete;
  NeededInputsScope& operator=(const NeededInputsScope&) = delete;

 private:
  const std::vector<bool>* saved_;
};

// Throws Error(kInternal) unless `a` is materialised (any device: for the
// helpers above, which run generated kernels where the array lives).
void CheckComputed(const ArrayImpl& a, const char* what);

}  // namespace dualcast::detail
