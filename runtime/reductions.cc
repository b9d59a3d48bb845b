// sum, mean (forward computations and their tape nodes), and the free reshape/transpose.
#include "dualcast/reductions.hpp"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dualcast/detail/grad_node.hpp"
#include "dualcast/tape.hpp"
#include "jit/broadcast_layout.h"
#include "jit/error.h"
#include "runtime/grad_kernels.h"

namespace dualcast {
namespace {

using detail::ArrayImpl;

// The adjoint of a sum (times `scale` for a mean) is ḡ broadcast back over
// the summed axes: a stride-0 view, so nothing of the input's size is written.
struct SumNode final : detail::GradNode {
  std::vector<int64_t> in_shape, keep_shape;
  std::vector<bool> summed;  // per input dim
  double scale = 1;

  std::vector<std::shared_ptr<ArrayImpl>> Backward(
      const std::vector<std::shared_ptr<ArrayImpl>>& outs) override {
    if (outs.empty() || outs[0] == nullptr) return {nullptr};
    const ArrayImpl& g = *outs[0];
    // ḡ with the summed axes reinserted as size-1 dims.
    std::vector<int64_t> strides(keep_shape.size(), 0);
    if (g.shape == keep_shape) {
      strides = g.strides;
    } else {  // keepdims = false: the summed axes were dropped
      size_t k = 0;
      for (size_t d = 0; d < keep_shape.size(); ++d) {
        if (!summed[d]) strides[d] = g.strides[k++];
      }
    }
    std::shared_ptr<ArrayImpl> kept = detail::ViewOf(g, keep_shape, std::move(strides));
    if (scale != 1) kept = detail::Scaled(*kept, scale);
    return {detail::BroadcastView(*kept, in_shape)};
  }
};

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

template <ElementType T>
Array<T> Reduce(const char* what, const Array<T>& a, const std::vector<int>& axes, bool keepdims,
                bool is_mean) {
  a.eval();
  const std::shared_ptr<ArrayImpl>& in = a.impl();
  detail::CheckComputed(*in, what);  // [CUDA path] any device: ReduceProducts runs it there
  std::vector<bool> mask = AxisMask(what, in->shape, axes);
  std::vector<int64_t> keep_shape = in->shape, out_shape;
  int64_t count = 1;
  for (size_t d = 0; d < mask.size(); ++d) {
    if (mask[d]) {
      count *= in->shape[d];
      keep_shape[d] = 1;
      if (keepdims) out_shape.push_back(1);
    } else {
      out_shape.push_back(in->shape[d]);
    }
  }
  std::shared_ptr<ArrayImpl> out =
      detail::ReduceProducts(in->dtype, {detail::ProductTerm{in.get(), nullptr}}, in->shape, keep_shape);
  const double scale = is_mean ? 1.0 / static_cast<double>(count) : 1.0;
  if (is_mean) out = detail::Scaled(*out, scale);  // 0 / 0 = NaN for an empty mean
  out->strides = detail::ContiguousStrides(out_shape);
  out->shape = std::move(out_shape);
  detail::NoteOrigin(what, {in}, {out});
  if (detail::TapeActive()) {
    auto node = std::make_shared<SumNode>();
    node->name = what;
    node->inputs = {in};
    node->in_shape = in->shape;
    node->keep_shape = std::move(keep_shape);
    node->summed = std::move(mask);
    node->scale = scale;
    detail::Record(node, {out});
  }
  return Array<T>(std::move(out));
}

std::vector<int> AllAxes(int rank) {
  std::vector<int> axes(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) axes[static_cast<size_t>(d)] = d;
  return axes;
}

}  // namespace

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
