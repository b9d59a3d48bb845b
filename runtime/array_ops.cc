// slice, concat, stack, clip: forward computations and their tape nodes.
//
// (The reductions, argmax/argmin among them, are generated kernels:
// generated_reductions.cc.)
#include "dualcast/array_ops.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dualcast/broadcast.hpp"
#include "dualcast/detail/grad_node.hpp"
#include "dualcast/kernel.hpp"
#include "jit/codegen/broadcast_layout.h"
#include "jit/codegen/element_count.h"
#include "jit/error.h"
#include "runtime/grad_kernels.h"

namespace dualcast {
namespace {

using detail::ArrayImpl;

int NormalizeAxis(const char* what, int axis, int rank, const std::vector<int64_t>& shape) {
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    throw Error(ErrorKind::kShape,
                absl::StrCat(what, ": axis ", axis, " is out of range for an array of shape ",
                             jit::FormatShape(shape), " (valid axes are ", -rank, "..", rank - 1,
                             ")"));
  }
  return a;
}

// ḡ itself, added by the sweep into the slice's region of the input's adjoint.
struct SliceNode final : detail::GradNode {
  Region region;  // the slice within a contiguous array of the input's shape
  std::vector<std::shared_ptr<ArrayImpl>> Backward(
      const std::vector<std::shared_ptr<ArrayImpl>>& outs) override {
    if (outs.empty() || outs[0] == nullptr) return {nullptr};
    return {outs[0]};
  }
  const Region* ContributionRegion(size_t) const override { return &region; }
};

// Each input's adjoint is its region of ḡ: a view, no copy.
struct ConcatNode final : detail::GradNode {
  int axis = 0;
  std::vector<std::vector<int64_t>> in_shapes;  // as concatenated (stack: with the new axis)
  std::vector<std::vector<int64_t>> user_shapes;  // as the user passed them
  std::vector<std::shared_ptr<ArrayImpl>> Backward(
      const std::vector<std::shared_ptr<ArrayImpl>>& outs) override {
    std::vector<std::shared_ptr<ArrayImpl>> adj(in_shapes.size());
    if (outs.empty() || outs[0] == nullptr) return adj;
    const ArrayImpl& g = *outs[0];
    int64_t start = 0;
    for (size_t k = 0; k < in_shapes.size(); ++k) {
      std::shared_ptr<ArrayImpl> region = detail::ViewOf(g, in_shapes[k], g.strides);
      region->offset += start * g.strides[static_cast<size_t>(axis)];
      start += in_shapes[k][static_cast<size_t>(axis)];
      if (in_shapes[k] != user_shapes[k]) {  // stack: drop the new axis of size 1
        std::vector<int64_t> strides = region->strides;
        strides.erase(strides.begin() + axis);
        region = detail::ViewOf(*region, user_shapes[k], std::move(strides));  // keeps the offset
      }
      adj[k] = region;
    }
    return adj;
  }
};

template <ElementType T>
Array<T> Join(const char* what, const std::vector<Array<T>>& arrays, int axis, bool new_axis) {
  if (arrays.empty()) {
    throw Error(ErrorKind::kInvalidArgument, absl::StrCat(what, ": needs at least one array"));
  }
  std::vector<std::shared_ptr<ArrayImpl>> ins;
  std::vector<std::vector<int64_t>> shapes, user_shapes;
  for (size_t k = 0; k < arrays.size(); ++k) {
    if (!arrays[k].valid()) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(what, ": array ", k + 1, " is an empty Array handle"));
    }
    arrays[k].eval();
    ins.push_back(arrays[k].impl());
    if (ins[k]->device != ins[0]->device) {
      throw Error(ErrorKind::kDevice,
                  absl::StrCat(what, ": array ", k + 1, " is on ", ins[k]->device.name(),
                               " but array 1 is on ", ins[0]->device.name(),
                               "; move the arrays to one device with .to(device) first"));
    }
    user_shapes.push_back(ins.back()->shape);
  }
  const int rank = static_cast<int>(user_shapes[0].size()) + (new_axis ? 1 : 0);
  if (rank == 0) {
    throw Error(ErrorKind::kShape, absl::StrCat(what, ": rank-0 arrays have no axis to join along; "
                                                      "use stack"));
  }
  const int a = NormalizeAxis(what, axis, rank, user_shapes[0]);
  for (size_t k = 0; k < ins.size(); ++k) {
    std::vector<int64_t> s = user_shapes[k];
    if (new_axis) s.insert(s.begin() + a, 1);
    bool fits = s.size() == static_cast<size_t>(rank);
    for (int d = 0; fits && k > 0 && d < rank; ++d) {
      if (d != a && s[static_cast<size_t>(d)] != shapes[0][static_cast<size_t>(d)]) fits = false;
    }
    if (!fits) {
      throw Error(ErrorKind::kShape,
                  absl::StrCat(what, ": array ", k + 1, " has shape ", jit::FormatShape(user_shapes[k]),
                               " but array 1 has shape ", jit::FormatShape(user_shapes[0]),
                               new_axis ? "; stack needs equal shapes"
                                        : absl::StrCat("; shapes must match except along axis ", a)));
    }
    if (ins[k]->dtype != ins[0]->dtype) {
      throw Error(ErrorKind::kType, absl::StrCat(what, ": array ", k + 1, " is ",
                                                 detail::DTypeName(ins[k]->dtype), " but array 1 is ",
                                                 detail::DTypeName(ins[0]->dtype)));
    }
    shapes.push_back(std::move(s));
  }
  // The total length along the axis, and the result's element count, must
  // fit in int64: two views of 2^63 - 1 elements (stride 0) would wrap to a
  // small length, and the inputs would be written past the end of the result.
  std::vector<int64_t> out_shape = shapes[0];
  int64_t& length = out_shape[static_cast<size_t>(a)];
  length = 0;
  bool fits = true;
  for (const auto& s : shapes) fits = fits && jit::CheckedAdd(length, s[static_cast<size_t>(a)], &length);
  if (!fits || !jit::ElementCount(out_shape).has_value()) {
    std::vector<std::string> each;
    for (const auto& s : user_shapes) each.push_back(jit::FormatShape(s));
    throw Error(ErrorKind::kShape,
                absl::StrCat(what, ": the result of joining shapes ", absl::StrJoin(each, ", "),
                             " along axis ", a, " would have more than 2^63 - 1 ",
                             fits ? "elements" : "elements along that axis"));
  }
  // Each input copied into its region, which together cover the output: no
  // fill first (adding into a filled output read and wrote it once per input:
  // stack along the last axis ran 5.5x a plain interleaving loop).
  std::shared_ptr<ArrayImpl> out = detail::NewArray(ins[0]->dtype, out_shape, ins[0]->device);
  int64_t start = 0;
  std::vector<std::shared_ptr<ArrayImpl>> regions, srcs;
  for (size_t k = 0; k < ins.size(); ++k) {
    std::shared_ptr<ArrayImpl> region = detail::ViewOf(*out, shapes[k], out->strides);
    region->offset += start * out->strides[static_cast<size_t>(a)];
    start += shapes[k][static_cast<size_t>(a)];
    std::shared_ptr<ArrayImpl> src = detail::ViewOf(*ins[k], shapes[k], ins[k]->strides);
    if (new_axis) {
      std::vector<int64_t> strides = ins[k]->strides;
      strides.insert(strides.begin() + a, 0);
      src = detail::ViewOf(*ins[k], shapes[k], std::move(strides));
    }
    regions.push_back(std::move(region));
    srcs.push_back(std::move(src));
  }
  // Stacked along the last axis, the inputs interleave element by element:
  // one pass writing all of them (stack({x, y}, -1) was 4.5x a plain loop,
  // each copy writing every cache line of the output). Other regions are
  // runs of whole rows, and copied one input at a time.
  if (new_axis && a == rank - 1) {
    detail::CopyEachInto(regions, srcs);
  } else {
    for (size_t k = 0; k < ins.size(); ++k) detail::CopyInto(*regions[k], *srcs[k]);
  }
  detail::NoteOrigin(what, ins, {out});  // for the tape's errors, taped or not
  if (detail::TapeActive()) {
    auto node = std::make_shared<ConcatNode>();
    node->name = what;
    node->inputs = ins;
    node->axis = a;
    node->in_shapes = shapes;
    node->user_shapes = user_shapes;
    detail::Record(node, {out});
  }
  return Array<T>(std::move(out));
}

const Kernel& ClipKernel() {
  // NumPy's np.clip, min(max(x, lo), hi) with NaN from any operand (PyTorch
  // and JAX agree): hi wherever lo > hi. Branches rather than math::max/min,
  // whose NaN second argument loses: the taken one gives the derivative, so
  // d/dx = 1 on [lo, hi] with both ends included when lo < hi. Where lo == hi
  // the result is hi too (the same value): clip is then constant in x, and
  // returning x at x == lo == hi gave d/dx = 1 where the function has 0
  // (found by the public-surface tester: clip(max(a), a, a) for a rank-0 a).
  static const Kernel* k = new Kernel(kernel("clip", [](auto x, auto lo, auto hi) {
    if (x != x) return x;
    if (lo != lo) return lo;
    if (hi != hi) return hi;
    if (lo >= hi) return hi;
    if (x < lo) return lo;
    if (x > hi) return hi;
    return x;
  }));
  return *k;
}

}  // namespace

template <ElementType T>
Array<T> slice(const Array<T>& a, const std::vector<Slice>& dims) {
  if (!a.valid()) throw Error(ErrorKind::kInvalidArgument, "slice: empty Array handle");
  if (dims.size() > static_cast<size_t>(a.rank())) {
    throw Error(ErrorKind::kShape, absl::StrCat("slice: ", dims.size(), " slices for an array of shape ",
                                                jit::FormatShape(a.shape()), " (rank ", a.rank(), ")"));
  }
  a.eval();
  const std::shared_ptr<ArrayImpl>& in = a.impl();
  std::vector<int64_t> shape = in->shape, strides = in->strides;
  int64_t offset = 0;
  std::vector<int64_t> contiguous = detail::ContiguousStrides(in->shape);
  std::vector<int64_t> grad_strides = contiguous;
  int64_t grad_offset = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    const Slice& s = dims[d];
    const int64_t n = in->shape[d];
    if (s.step <= 0) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat("slice: step ", s.step, " at dimension ", d,
                               " must be positive (negative steps are not supported; reverse with a "
                               "positive-step slice and flip the math instead)"));
    }
    auto clamp_index = [n](int64_t i) {
      if (i == Slice::kEnd) return n;
      if (i < 0) i += n;
      return std::clamp<int64_t>(i, 0, n);
    };
    const int64_t start = clamp_index(s.start), stop = clamp_index(s.stop);
    // ceil((stop - start) / step) without forming stop - start + step - 1,
    // which wraps for a step near INT64_MAX (Slice::kEnd as a step).
    const int64_t count = stop > start ? (stop - start - 1) / s.step + 1 : 0;
    // With one element or none the step is never taken: keep the stride
    // from wrapping too (step * stride need not fit otherwise).
    const int64_t step = count > 1 ? s.step : 1;
    shape[d] = count;
    offset += start * in->strides[d];
    strides[d] = in->strides[d] * step;
    grad_offset += start * contiguous[d];
    grad_strides[d] = contiguous[d] * step;
  }
  std::shared_ptr<ArrayImpl> out = detail::ViewOf(*in, shape, strides);
  out->offset += offset;
  detail::NoteOrigin("slice", {in}, {out});  // for the tape's errors, taped or not
  if (detail::TapeActive()) {
    auto node = std::make_shared<SliceNode>();
    node->name = "slice";
    node->inputs = {in};
    node->region = {shape, grad_strides, grad_offset};
    detail::Record(node, {out});
  }
  return Array<T>(std::move(out));
}

template <ElementType T>
Array<T> concat(const std::vector<Array<T>>& arrays, int axis) {
  return Join("concat", arrays, axis, false);
}
template <ElementType T>
Array<T> stack(const std::vector<Array<T>>& arrays, int axis) {
  return Join("stack", arrays, axis, true);
}

template <ElementType T>
Array<T> clip(const Array<T>& a, const Array<T>& lo, const Array<T>& hi) {
  return broadcast(ClipKernel(), a, lo, hi);
}
template <ElementType T>
Array<T> clip(const Array<T>& a, double lo, double hi) {
  return broadcast(ClipKernel(), a, lo, hi);
}

#define DUALCAST_ARRAY_OPS_INSTANTIATE(T)                                          \
  template Array<T> slice(const Array<T>&, const std::vector<Slice>&);             \
  template Array<T> concat(const std::vector<Array<T>>&, int);                     \
  template Array<T> stack(const std::vector<Array<T>>&, int);                      \
  template Array<T> clip(const Array<T>&, const Array<T>&, const Array<T>&);       \
  template Array<T> clip(const Array<T>&, double, double);
DUALCAST_ARRAY_OPS_INSTANTIATE(float)
DUALCAST_ARRAY_OPS_INSTANTIATE(double)
#undef DUALCAST_ARRAY_OPS_INSTANTIATE

}  // namespace dualcast
