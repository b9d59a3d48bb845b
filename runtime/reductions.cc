// sum, mean (forward computations and their tape nodes), and the free reshape/transpose.
#include "dualcast/reductions.hpp"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dualcast/broadcast.hpp"
#include "dualcast/detail/grad_node.hpp"
#include "dualcast/tape.hpp"
#include "jit/codegen/broadcast_layout.h"
#include "jit/error.h"
#include "runtime/array_pool.h"
#include "runtime/grad_kernels.h"
#include "runtime/lazy_reduce.h"

namespace dualcast {
namespace {

using detail::ArrayImpl;

// The adjoint of a sum (times `scale` for a mean) is ḡ broadcast back over
// the summed axes: a stride-0 view, so nothing of the input's size is written.
struct SumNode final : detail::GradNode {
  SumNode() {}  // no zeroing first (allocate_shared value-initialises)
  std::vector<int64_t> in_shape;
  // The reduction's description, shared with the lazy node that computed it
  // (its summed axes, kept shape and scale).
  std::shared_ptr<const detail::PendingReduce> reduce;

  std::vector<std::shared_ptr<ArrayImpl>> Backward(
      const std::vector<std::shared_ptr<ArrayImpl>>& outs) override {
    if (outs.empty() || outs[0] == nullptr) return {nullptr};
    std::shared_ptr<ArrayImpl> kept = detail::KeptView(*outs[0], reduce->keep_shape, reduce->summed);
    if (reduce->divisor != 1) kept = detail::Scaled(*kept, 1.0 / reduce->divisor);
    return {detail::BroadcastView(*kept, in_shape)};
  }
};


template <ElementType T>
Array<T> Reduce(const char* what, const Array<T>& a, const std::vector<int>& axes, bool keepdims,
                bool is_mean) {
  (void)a.rank();  // an empty handle throws here
  const std::shared_ptr<ArrayImpl>& in = a.impl();
  detail::PendingReduce r;
  r.summed = detail::AxisMask(what, in->shape, axes);
  r.keep_shape = in->shape;
  r.keepdims = keepdims;
  int64_t count = 1;
  for (size_t d = 0; d < r.summed.size(); ++d) {
    if (r.summed[d]) {
      count *= in->shape[d];
      r.keep_shape[d] = 1;
    }
  }
  r.divisor = is_mean ? static_cast<double>(count) : 1.0;  // 0 / 0 = NaN for an empty mean
  // A pending operand stays pending: the reduction joins its kernel (on any device).
  if (a.is_pending() && !Unfused::active()) {
    return Array<T>(detail::LazyReduce(what, in, std::move(r)));
  }
  return Array<T>(detail::ReduceNow(what, in, std::move(r)));
}

std::vector<int> AllAxes(int rank) {
  std::vector<int> axes(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) axes[static_cast<size_t>(d)] = d;
  return axes;
}

}  // namespace

namespace detail {

std::vector<bool> AxisMask(const char* what, const std::vector<int64_t>& shape,
                           const std::vector<int>& axes) {
  const int rank = static_cast<int>(shape.size());
  std::vector<bool> mask(shape.size(), false);
  for (int axis : axes) {
    const int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank || mask[static_cast<size_t>(a)]) {
      throw Error(ErrorKind::kShape,
                  absl::StrCat(what, ": axis ", axis,
                               a < 0 || a >= rank ? " is out of range" : " is repeated",
                               " for an array of shape ", jit::FormatShape(shape), " (axes [",
                               absl::StrJoin(axes, ", "), "]; valid axes are ", -rank, "..",
                               rank - 1, ")"));
    }
    mask[static_cast<size_t>(a)] = true;
  }
  return mask;
}

std::shared_ptr<ArrayImpl> KeptView(const ArrayImpl& g, const std::vector<int64_t>& keep_shape,
                                    const std::vector<bool>& reduced) {
  if (g.shape == keep_shape) return ViewOf(g, keep_shape, g.strides);
  std::vector<int64_t> strides(keep_shape.size(), 0);
  size_t k = 0;
  for (size_t d = 0; d < keep_shape.size(); ++d) {
    if (!reduced[d]) strides[d] = g.strides[k++];
  }
  return ViewOf(g, keep_shape, std::move(strides));
}

std::vector<int64_t> ReducedShape(const PendingReduce& r) {
  std::vector<int64_t> shape;
  for (size_t d = 0; d < r.summed.size(); ++d) {
    if (!r.summed[d] || r.keepdims) shape.push_back(r.keep_shape[d]);
  }
  return shape;
}

void NoteReduction(const char* what, const std::shared_ptr<ArrayImpl>& in,
                   const std::shared_ptr<ArrayImpl>& out,
                   const std::shared_ptr<const PendingReduce>& r) {
  NoteOrigin(what, ArraySpan(&in, 1), ArraySpan(&out, 1));
  if (!TapeActive()) return;
  if (r->kind != ReduceKind::kSum) {  // max/min/prod: their reverse rule, never a sum's
    RecordElementReduction(what, in, out, *r);
    return;
  }
  auto node = std::allocate_shared<SumNode>(BlockAllocator<SumNode>{});
  node->name = what;
  node->inputs = {in};
  node->in_shape = in->shape;
  node->reduce = r;
  Record(node, ArraySpan(&out, 1));
}

std::shared_ptr<ArrayImpl> ReduceNow(const char* what, const std::shared_ptr<ArrayImpl>& in,
                                     PendingReduce r) {
  const std::shared_ptr<const PendingReduce> shared = SharedReduce(std::move(r));
  std::shared_ptr<ArrayImpl> out = ComputeReduction(what, in, *shared);
  NoteReduction(what, in, out, shared);
  return out;
}

std::shared_ptr<ArrayImpl> ComputeReduction(const char* what, const std::shared_ptr<ArrayImpl>& in,
                                            const PendingReduce& r) {
  Materialize(*in);
  CheckComputed(*in, what);  // any device: ReduceProducts runs it there
  std::shared_ptr<ArrayImpl> out =
      r.kind != ReduceKind::kSum
          ? ReduceWithKind(in, r.keep_shape, r.kind)
          : ReduceProducts(in->dtype, {ProductTerm{in.get(), nullptr}}, in->shape, r.keep_shape,
                           r.divisor);
  std::vector<int64_t> shape = ReducedShape(r);
  out->strides = ContiguousStrides(shape);
  out->shape = std::move(shape);
  return out;
}

}  // namespace detail

template <ElementType T>
Array<T> sum(const Array<T>& a) {
  return Reduce("sum", a, AllAxes(a.rank()), false, false);
}
template <ElementType T>
Array<T> sum(const Array<T>& a, const std::vector<int>& axes, bool keepdims) {
  return Reduce("sum", a, axes, keepdims, false);
}
template <ElementType T>
Array<T> mean(const Array<T>& a) {
  return Reduce("mean", a, AllAxes(a.rank()), false, true);
}
template <ElementType T>
Array<T> mean(const Array<T>& a, const std::vector<int>& axes, bool keepdims) {
  return Reduce("mean", a, axes, keepdims, true);
}

// The methods record the tape node (runtime/layout_grad.h); these are the
// same operations under their NumPy spelling.
template <ElementType T>
Array<T> reshape(const Array<T>& a, Shape shape) {
  return a.reshape(std::move(shape));
}

template <ElementType T>
Array<T> transpose(const Array<T>& a, std::vector<int> perm) {
  return a.transpose(std::move(perm));
}

#define DUALCAST_REDUCTIONS_INSTANTIATE(T)                                       \
  template Array<T> sum(const Array<T>&);                                        \
  template Array<T> sum(const Array<T>&, const std::vector<int>&, bool);         \
  template Array<T> mean(const Array<T>&);                                       \
  template Array<T> mean(const Array<T>&, const std::vector<int>&, bool);        \
  template Array<T> reshape(const Array<T>&, Shape);                             \
  template Array<T> transpose(const Array<T>&, std::vector<int>);
DUALCAST_REDUCTIONS_INSTANTIATE(float)
DUALCAST_REDUCTIONS_INSTANTIATE(double)
#undef DUALCAST_REDUCTIONS_INSTANTIATE

}  // namespace dualcast
