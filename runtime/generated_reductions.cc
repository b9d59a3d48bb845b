// max, min, prod, logsumexp, var, norm, argmax, argmin: forward and reverse as generated kernels (Execute), on any device.
//
// Each reduction is a few broadcast kernels whose outputs are reduced over
// the axes by the backend (sum, product, max or min: ExecuteOptions::
// reduce_ops), never a host loop over elements, so the same code runs on the
// CPU and on a GPU, deterministic for any thread count. max, min and prod
// of a pending CPU operand join the kernel that produces it, like sum
// (lazy_reduce.cc). The composites' first pass joins it too, off the tape
// (logsumexp's max, var's mean, norm's max|x|, argmax's max: the producer
// writes the operand and reduces it in one pass, and only the second pass
// reads it back). Conventions (NumPy's and PyTorch's):
//   max/min   NaN propagates; an empty slice is an error; ties share the
//             adjoint equally (d max / d x_k = [x_k = max] / #ties).
//   prod      the plain product (IEEE: 0 * inf and NaN give NaN, as NumPy);
//             empty = 1; the adjoint is the product of the others, in IEEE
//             arithmetic, also where a slot holds 0, +-inf or NaN (those are
//             counted in the reverse pass, ProdAdjoint).
//   logsumexp m + log(sum(exp(x - m))), m = max (stable); all -inf gives
//             -inf, any +inf gives +inf; adjoint softmax(x) = exp(x - m) / sum
//             (NaN where the result is not finite).
//   var       sum((x - mean)^2) / (n - ddof), NaN when n - ddof <= 0;
//             adjoint 2 (x - mean) / (n - ddof), NaN when n - ddof <= 0.
//   norm      Euclidean, scaled by max|x| (no overflow for large x); the
//             adjoint x / norm, and 0 at norm = 0 (the subgradient PyTorch
//             gives); (x / max|x|) / sqrt(sum) where the norm overflowed or is
//             subnormal; with an infinite element (norm inf) sign(x) for the
//             infinite ones and 0 for the rest (hypot's rule).
//   argmax    the first position of the extreme in the reduced axes (row-
//   argmin    major), a NaN counting as the extreme; an empty slice is an
//             error; no gradient. Positions are a min-reduction over a
//             small input holding 0..count-1 (count = the reduced extent),
//             so float32 refuses slices of more than 2^24 elements.
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dualcast/array_ops.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/detail/execute.hpp"
#include "dualcast/detail/grad_node.hpp"
#include "dualcast/operators.hpp"
#include "jit/codegen/broadcast_layout.h"
#include "jit/error.h"
#include "jit/ir/ir.h"
#include "runtime/grad_kernels.h"
#include "runtime/in_place.h"
#include "runtime/lazy_reduce.h"

namespace dualcast {
namespace {

using detail::ArrayImpl;
using detail::ReduceKind;
using Arr = std::shared_ptr<ArrayImpl>;
using Fn = std::shared_ptr<const jit::Function>;
using jit::Op;
using jit::ValueId;

// The reduced axes of one call: the input's shape, the kept shape (1 on the
// reduced axes, what kernels reduce to), the user's shape (keepdims or not)
// and the number of elements each result combines.
struct Axes {
  std::vector<int64_t> in_shape, keep_shape, out_shape;
  std::vector<bool> reduced;  // per input dim
  int64_t count = 1;
};

Axes ReduceAxes(const char* what, const std::vector<int64_t>& shape, const std::vector<int>& axes,
                bool keepdims) {
  Axes l;
  l.in_shape = shape;
  l.reduced = detail::AxisMask(what, shape, axes);  // none for {}: NumPy's axis=()
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool r = l.reduced[d];
    l.keep_shape.push_back(r ? 1 : shape[d]);
    if (r) l.count *= shape[d];
    if (!r || keepdims) l.out_shape.push_back(r ? 1 : shape[d]);
  }
  return l;
}

// Every axis of `a`: what the calls without axes reduce over (NumPy's None).
template <ElementType T>
std::vector<int> AllAxes(const Array<T>& a) {
  std::vector<int> axes(static_cast<size_t>(a.rank()));  // an empty handle throws here
  for (size_t d = 0; d < axes.size(); ++d) axes[d] = static_cast<int>(d);
  return axes;
}

// Small kernels built once per element type and cached (the kernel cache
// keys them by structure, so equal ones share compiled code).
template <class Build>
Fn Cached(jit::Type t, const char* name, Build build) {
  auto make = [&](jit::Type type) {
    auto f = std::make_shared<jit::Function>(name);
    jit::Builder b(*f);
    build(b, type);
    return Fn(std::move(f));
  };
  static const Fn f32 = make(jit::Type::kF32);
  static const Fn f64 = make(jit::Type::kF64);
  return t == jit::Type::kF32 ? f32 : f64;
}

jit::Type JType(const ArrayImpl& a) {
  return a.dtype == detail::DType::kF32 ? jit::Type::kF32 : jit::Type::kF64;
}

// f(x) = x (or |x|), reduced with `op` to `keep`: the elements themselves combined.
Arr ReduceElements(const Arr& x, const std::vector<int64_t>& keep, ReduceKind op, bool abs = false,
                   double divisor = 1) {
  const Fn f = abs ? Cached(JType(*x), "abs_reduce", [](jit::Builder& b, jit::Type t) {
    b.Return({b.Emit(Op::kAbs, {b.Input(t)})});
  })
                   : Cached(JType(*x), "reduce", [](jit::Builder& b, jit::Type t) {
                       b.Return({b.Input(t)});
                     });
  detail::ExecuteOptions o;
  o.output_shapes = {keep};
  o.reduce_ops = {op};
  if (divisor != 1) o.divisors = {divisor};
  o.iteration_shape = x->shape;
  return detail::Execute(f->name, f, {x}, o)[0];
}

// Runs `f` over `inputs` broadcast to `shape`: elementwise, or reduced to
// `keep` with `ops` (one per output) when given.
// A sum divided by `divisor` (a single output) is divided in double before its rounding.
std::vector<Arr> Run(const Fn& f, const std::vector<Arr>& inputs, const std::vector<int64_t>& shape,
                     const std::vector<int64_t>& keep = {}, std::vector<ReduceKind> ops = {},
                     double divisor = 1) {
  detail::ExecuteOptions o;
  o.iteration_shape = shape;
  if (!ops.empty()) {
    o.output_shapes.assign(ops.size(), keep);
    o.reduce_ops = std::move(ops);
    if (divisor != 1) o.divisors.assign(o.reduce_ops.size(), divisor);
  }
  return detail::Execute(f->name, f, inputs, o);
}

Arr UserShaped(const Arr& keep_shaped, const Axes& l) {
  return detail::ViewOf(*keep_shaped, l.out_shape, detail::ContiguousStrides(l.out_shape));
}

Arr KeepShaped(const Arr& g, const Axes& l) { return detail::KeptView(*g, l.keep_shape, l.reduced); }

Arr Number(double v, const ArrayImpl& like) { return detail::NumberArray(v, like.dtype, like.device); }

// A reverse rule: the input's adjoint from the output adjoint (kept shape).
struct GeneratedReduceNode final : detail::GradNode {
  Axes axes;
  std::vector<Arr> saved;  // what the rule reads besides the input
  // A copy of the input taken when recorded where it is a view of the user's
  // writable memory (CopyIfUserMemory), else null (it is read again).
  Arr kept;
  std::function<Arr(const Arr& x, const std::vector<Arr>& saved, const Arr& g)> rule;
  std::vector<Arr> Backward(const std::vector<Arr>& outs) override {
    if (outs.empty() || outs[0] == nullptr) return {nullptr};
    const uint64_t epoch = detail::SweptNodeEpoch();
    if (kept == nullptr) {
      detail::CheckNotWrittenSince(epoch, *inputs[0], absl::StrCat("the argument of '", name, "'"), name);
    }
    for (const Arr& a : saved) {
      if (a != nullptr) {
        detail::CheckNotWrittenSince(epoch, *a, absl::StrCat("an array '", name, "' kept for its gradient"),
                                     name);
      }
    }
    return {rule(kept != nullptr ? kept : inputs[0], saved, KeepShaped(outs[0], axes))};
  }
};

template <ElementType T>
Array<T> Finish(const char* what, const Arr& in, const Axes& l, const Arr& keep_result,
                std::vector<Arr> saved,
                std::function<Arr(const Arr&, const std::vector<Arr>&, const Arr&)> rule) {
  Arr out = UserShaped(keep_result, l);
  // Taped or not: a tape opened later then sees that `out` came from `in`
  // (a gradient through it would miss this path: the tape's Error says so).
  detail::NoteOrigin(what, {in}, {out});
  if (detail::TapeActive()) {
    auto node = std::make_shared<GeneratedReduceNode>();
    node->name = what;
    node->inputs = {in};
    node->kept = detail::CopyIfUserMemory(in);
    node->axes = l;
    node->saved = std::move(saved);
    node->rule = std::move(rule);
    detail::Record(node, {out});
  }
  return Array<T>(std::move(out));
}

template <ElementType T>
Arr Evaluated(const Array<T>& a, const char* what) {
  a.eval();
  detail::CheckComputed(*a.impl(), what);
  return a.impl();
}

// A composite's first pass: `a` reduced with `kind` (of |a| when `abs`),
// divided by `divisor` (ExecuteOptions::divisors), to l.keep_shape, and `a` itself computed for the passes after it.
// A pending CPU operand (off the tape, no Unfused scope) is reduced inside the
// kernel that produces it, which writes `a` in the same pass (it is held
// here); otherwise `a` is evaluated (under a tape: recorded) and reduced.
struct FirstPass {
  Arr x;        // a, computed
  Arr reduced;  // in the kept shape
};
template <ElementType T>
FirstPass ReduceFirst(const Array<T>& a, const Axes& l, ReduceKind kind, double divisor, bool abs,
                      const char* what) {
  Arr fused;
  if (a.is_pending() && !Unfused::active() && !detail::TapeActive()) {
    const Array<T> operand = abs ? dualcast::abs(a) : a;  // pending too: joins a's group
    detail::PendingReduce r;
    r.summed = l.reduced;
    r.keep_shape = l.keep_shape;
    r.keepdims = true;
    r.divisor = divisor;
    r.kind = kind;
    Array<T> reduced(detail::LazyReduce(what, operand.impl(), std::move(r)));
    reduced.eval();
    fused = reduced.impl();
  }
  const Arr x = Evaluated(a, what);
  if (fused != nullptr) return {x, fused};
  return {x, ReduceElements(x, l.keep_shape, kind, abs, divisor)};
}

// The result of a reduction over empty slices (or too few elements): `value`
// in every slot, in the user's shape.
Arr FilledResult(const Arr& in, const Axes& l, double value) {
  return UserShaped(detail::Filled(in->dtype, l.keep_shape, value, in->device), l);
}

// FilledResult recorded like any other result, with `adjoint` in every slot
// of the input's adjoint: a loss reading it gets a gradient (an empty one
// over an empty input; var's NaN where N - ddof <= 0), never "does not reach
// the loss" nor a gradient that silently leaves this path out.
template <ElementType T>
Array<T> FilledReduction(const char* what, const Array<T>& a, const Axes& l, double value,
                         double adjoint) {
  const Arr x = Evaluated(a, what);
  return Finish<T>(what, x, l, detail::Filled(x->dtype, l.keep_shape, value, x->device), {},
                   [adjoint](const Arr& x, const std::vector<Arr>&, const Arr&) {
                     return detail::Filled(x->dtype, x->shape, adjoint, x->device);
                   });
}

// max/min's reverse rule: the adjoint shared equally among the elements equal
// to the result (`r`, kept shape); NaN adjoints where the result is NaN.
Arr ExtremeAdjoint(const Arr& x, const std::vector<Arr>& saved, const Arr& g) {
  const Arr& r = saved[0];
  const Fn ties = Cached(JType(*x), "extreme_ties", [](jit::Builder& b, jit::Type t) {
    ValueId xv = b.Input(t), rv = b.Input(t);
    b.Return({b.Select(b.Emit(Op::kEq, {xv, rv}), b.Const(t, 1), b.Const(t, 0))});
  });
  const Arr count = Run(ties, {x, r}, x->shape, r->shape, {ReduceKind::kSum})[0];
  const Fn share = Cached(JType(*x), "extreme_adjoint", [](jit::Builder& b, jit::Type t) {
    ValueId xv = b.Input(t), rv = b.Input(t), gv = b.Input(t), cv = b.Input(t);
    ValueId mine = b.Select(b.Emit(Op::kEq, {xv, rv}), b.Div(gv, cv), b.Const(t, 0));
    b.Return({b.Select(b.Emit(Op::kIsnan, {rv}), rv, mine)});  // a NaN result: NaN adjoints
  });
  return Run(share, {x, r, g, count}, x->shape)[0];
}

// prod's reverse rule: g times the product of the others, Π_{k≠i} x_k. P / x_i
// gives it for a finite nonzero x_i (the other elements' zeros, infinities and
// NaNs are in P), but not where x_i is itself 0, ±inf or NaN: there 0 / 0,
// inf / inf or NaN would replace the others' product. So the special elements
// are counted in one pass (only a gradient needs them): zeros, infinities,
// NaNs, the product F of the finite nonzero ones and the product of all signs.
// A special slot then gets F times the others' specials, known from the counts
// less its own: a NaN among them, or a zero with an infinity, gives NaN; else
// zeros give 0, infinities inf, none 1; the sign is that of all over its own.
Arr ProdAdjoint(const Arr& x, const std::vector<Arr>& saved, const Arr& g) {
  const Fn parts = Cached(JType(*x), "prod_parts", [](jit::Builder& b, jit::Type t) {
    ValueId xv = b.Input(t);
    ValueId one = b.Const(t, 1), zero = b.Const(t, 0);
    ValueId is_zero = b.Emit(Op::kEq, {xv, zero}), is_inf = b.Emit(Op::kIsinf, {xv});
    ValueId is_nan = b.Emit(Op::kIsnan, {xv});
    ValueId special = b.Emit(Op::kOr, {b.Emit(Op::kOr, {is_zero, is_inf}), is_nan});
    b.Return({b.Select(is_zero, one, zero), b.Select(is_inf, one, zero), b.Select(is_nan, one, zero),
              b.Select(special, one, xv), b.Emit(Op::kCopysign, {one, xv})});
  });
  const std::vector<Arr> counts =
      Run(parts, {x}, x->shape, saved[0]->shape,
          {ReduceKind::kSum, ReduceKind::kSum, ReduceKind::kSum, ReduceKind::kProd, ReduceKind::kProd});
  const Fn adjoint = Cached(JType(*x), "prod_adjoint", [](jit::Builder& b, jit::Type t) {
    ValueId xv = b.Input(t), gv = b.Input(t), pv = b.Input(t);
    ValueId zeros = b.Input(t), infs = b.Input(t), nans = b.Input(t), finite = b.Input(t), signs = b.Input(t);
    ValueId one = b.Const(t, 1), zero = b.Const(t, 0);
    ValueId is_zero = b.Emit(Op::kEq, {xv, zero}), is_inf = b.Emit(Op::kIsinf, {xv});
    ValueId is_nan = b.Emit(Op::kIsnan, {xv});
    ValueId special = b.Emit(Op::kOr, {b.Emit(Op::kOr, {is_zero, is_inf}), is_nan});
    // The others' counts: the slice's less this slot's own.
    ValueId other_zero = b.Emit(Op::kGt, {b.Sub(zeros, b.Select(is_zero, one, zero)), zero});
    ValueId other_inf = b.Emit(Op::kGt, {b.Sub(infs, b.Select(is_inf, one, zero)), zero});
    ValueId other_nan = b.Emit(Op::kGt, {b.Sub(nans, b.Select(is_nan, one, zero)), zero});
    ValueId undefined = b.Emit(Op::kOr, {other_nan, b.Emit(Op::kAnd, {other_zero, other_inf})});
    ValueId magnitude =
        b.Select(undefined, b.Const(t, std::numeric_limits<double>::quiet_NaN()),
                 b.Select(other_zero, zero,
                          b.Select(other_inf, b.Const(t, std::numeric_limits<double>::infinity()), one)));
    ValueId sign = b.Mul(signs, b.Emit(Op::kCopysign, {one, xv}));
    ValueId of_special = b.Emit(Op::kCopysign, {b.Mul(b.Emit(Op::kAbs, {finite}), magnitude), sign});
    ValueId others = b.Select(special, of_special, b.Div(pv, xv));
    b.Return({b.Mul(gv, others)});
  });
  return Run(adjoint, {x, g, saved[0], counts[0], counts[1], counts[2], counts[3], counts[4]}, x->shape)[0];
}

// The reverse rule of a max, min or prod (saved[0]: the result, kept shape).
Arr ElementReductionAdjoint(ReduceKind kind, const Arr& x, const std::vector<Arr>& saved, const Arr& g) {
  return kind == ReduceKind::kProd ? ProdAdjoint(x, saved, g) : ExtremeAdjoint(x, saved, g);
}

// max, min, prod: the elements themselves combined with `op`.
template <ElementType T>
Array<T> ElementReduction(const char* what, const Array<T>& a, const std::vector<int>& axes,
                          bool keepdims, ReduceKind op) {
  (void)a.rank();  // an empty handle throws here
  const Arr& in = a.impl();
  const Axes l = ReduceAxes(what, in->shape, axes, keepdims);
  int64_t results = 1;
  for (int64_t n : l.keep_shape) results *= n;
  if (l.count == 0 && results > 0) {
    if (op == ReduceKind::kProd) return FilledReduction<T>(what, a, l, 1.0, 0.0);  // the empty product
    throw Error(ErrorKind::kShape,
                absl::StrCat(what, " of an empty slice has no value (NumPy raises too); reduce ",
                             "over non-empty axes (shape ", jit::FormatShape(in->shape), ")"));
  }
  // A pending operand: the reduction joins the kernel that produces it
  // (lazy_reduce.cc, on any device), the operand is stored only if something
  // else holds it. Materialised under a tape (opened since), it records the
  // rule below (RecordElementReduction).
  if (a.is_pending() && !Unfused::active()) {
    detail::PendingReduce r;
    r.summed = l.reduced;
    r.keep_shape = l.keep_shape;
    r.keepdims = keepdims;
    r.kind = op;
    return Array<T>(detail::LazyReduce(what, in, std::move(r)));
  }
  const Arr x = Evaluated(a, what);
  const Arr r = ReduceElements(x, l.keep_shape, op);
  return Finish<T>(what, x, l, r, {r}, [op](const Arr& x, const std::vector<Arr>& saved, const Arr& g) {
    return ElementReductionAdjoint(op, x, saved, g);
  });
}

// argmax (kMax) / argmin (kMin): the extreme of each slice, then the least
// position holding it (a NaN extreme matches the NaNs: max/min propagate it).
template <ElementType T>
Array<T> ArgExtreme(const char* what, const Array<T>& a, const std::vector<int>& axes, bool keepdims,
                    ReduceKind op) {
  (void)a.rank();  // an empty handle throws here
  const Axes l = ReduceAxes(what, a.impl()->shape, axes, keepdims);
  int64_t results = 1;
  for (int64_t n : l.keep_shape) results *= n;
  if (l.count == 0 && results > 0) {
    throw Error(ErrorKind::kShape, absl::StrCat(what, ": an empty slice (shape ",
                                                jit::FormatShape(l.in_shape),
                                                ") has no extreme element"));
  }
  if (std::is_same_v<T, float> && l.count > (int64_t{1} << 24)) {
    throw Error(ErrorKind::kShape,
                absl::StrCat(what, ": positions up to ", l.count - 1,
                             " are not exact in float32; use a float64 array"));
  }
  if (results == 0) {
    const Arr x = Evaluated(a, what);
    const Arr r = FilledResult(x, l, 0.0);
    detail::NoteOrigin(what, {x}, {r}, /*constant=*/true);  // as below: no gradient
    return Array<T>(r);
  }
  const auto [x, extreme] = ReduceFirst(a, l, op, 1, false, what);
  // 0..count-1 over the reduced dims (row-major), size 1 on the others.
  std::vector<int64_t> position_shape;
  for (size_t d = 0; d < l.in_shape.size(); ++d) position_shape.push_back(l.reduced[d] ? l.in_shape[d] : 1);
  std::vector<T> positions(static_cast<size_t>(l.count));
  for (size_t k = 0; k < positions.size(); ++k) positions[k] = static_cast<T>(k);
  const Array<T> position = Array<T>::from(positions, position_shape, x->device);
  const Fn first = Cached(JType(*x), "arg_extreme", [](jit::Builder& b, jit::Type t) {
    ValueId xv = b.Input(t), mv = b.Input(t), pv = b.Input(t);
    ValueId match = b.Emit(Op::kOr, {b.Emit(Op::kEq, {xv, mv}), b.Emit(Op::kIsnan, {xv})});
    b.Return({b.Select(match, pv, b.Const(t, std::numeric_limits<double>::infinity()))});
  });
  const Arr r = UserShaped(
      Run(first, {x, extreme, position.impl()}, x->shape, l.keep_shape, {ReduceKind::kMin})[0], l);
  detail::NoteOrigin(what, {x}, {r}, /*constant=*/true);  // no gradient: the tape's errors say so
  return Array<T>(r);
}

}  // namespace

namespace detail {

std::shared_ptr<ArrayImpl> ReduceWithKind(const std::shared_ptr<ArrayImpl>& in,
                                          const std::vector<int64_t>& keep, ReduceKind kind) {
  return ReduceElements(in, keep, kind);
}

void RecordElementReduction(const char* what, const std::shared_ptr<ArrayImpl>& in,
                            const std::shared_ptr<ArrayImpl>& out, const PendingReduce& r) {
  auto node = std::make_shared<GeneratedReduceNode>();
  node->name = what;
  node->inputs = {in};
  node->axes.in_shape = in->shape;
  node->axes.keep_shape = r.keep_shape;
  node->axes.out_shape = out->shape;
  node->axes.reduced = r.summed;
  // The result in the kept shape: `out` is contiguous, so 1-dims can be put back.
  node->saved = {ViewOf(*out, r.keep_shape, ContiguousStrides(r.keep_shape))};
  const ReduceKind kind = r.kind;
  node->rule = [kind](const Arr& x, const std::vector<Arr>& saved, const Arr& g) {
    return ElementReductionAdjoint(kind, x, saved, g);
  };
  Record(node, {out});
}

}  // namespace detail

template <ElementType T>
Array<T> max(const Array<T>& a) {
  return max(a, AllAxes(a));
}
template <ElementType T>
Array<T> min(const Array<T>& a) {
  return min(a, AllAxes(a));
}
template <ElementType T>
Array<T> prod(const Array<T>& a) {
  return prod(a, AllAxes(a));
}
template <ElementType T>
Array<T> logsumexp(const Array<T>& a) {
  return logsumexp(a, AllAxes(a));
}
template <ElementType T>
Array<T> var(const Array<T>& a) {
  return var(a, AllAxes(a));
}
template <ElementType T>
Array<T> norm(const Array<T>& a) {
  return norm(a, AllAxes(a));
}

template <ElementType T>
Array<T> max(const Array<T>& a, const std::vector<int>& axes, bool keepdims) {
  return ElementReduction("max", a, axes, keepdims, ReduceKind::kMax);
}
template <ElementType T>
Array<T> min(const Array<T>& a, const std::vector<int>& axes, bool keepdims) {
  return ElementReduction("min", a, axes, keepdims, ReduceKind::kMin);
}

template <ElementType T>
Array<T> prod(const Array<T>& a, const std::vector<int>& axes, bool keepdims) {
  return ElementReduction("prod", a, axes, keepdims, ReduceKind::kProd);
}

template <ElementType T>
Array<T> argmax(const Array<T>& a) {
  return ArgExtreme("argmax", a, AllAxes(a), false, ReduceKind::kMax);
}
template <ElementType T>
Array<T> argmax(const Array<T>& a, int axis, bool keepdims) {
  return ArgExtreme("argmax", a, {axis}, keepdims, ReduceKind::kMax);
}
template <ElementType T>
Array<T> argmin(const Array<T>& a) {
  return ArgExtreme("argmin", a, AllAxes(a), false, ReduceKind::kMin);
}
template <ElementType T>
Array<T> argmin(const Array<T>& a, int axis, bool keepdims) {
  return ArgExtreme("argmin", a, {axis}, keepdims, ReduceKind::kMin);
}

template <ElementType T>
Array<T> logsumexp(const Array<T>& a, const std::vector<int>& axes, bool keepdims) {
  (void)a.rank();  // an empty handle throws here
  const Axes l = ReduceAxes("logsumexp", a.impl()->shape, axes, keepdims);
  if (l.count == 0) {  // log(0)
    return FilledReduction<T>("logsumexp", a, l, -std::numeric_limits<double>::infinity(), 0.0);
  }
  const auto [x, m] = ReduceFirst(a, l, ReduceKind::kMax, 1, false, "logsumexp");
  const Fn shifted = Cached(JType(*x), "lse_terms", [](jit::Builder& b, jit::Type t) {
    ValueId xv = b.Input(t), mv = b.Input(t);
    // A non-finite max: the terms do not matter (the result is the max).
    ValueId finite = b.Emit(Op::kIsfinite, {mv});
    b.Return({b.Select(finite, b.Emit(Op::kExp, {b.Sub(xv, mv)}), b.Const(t, 1))});
  });
  const Arr s = Run(shifted, {x, m}, x->shape, l.keep_shape, {ReduceKind::kSum})[0];
  const Fn finish = Cached(JType(*x), "lse_value", [](jit::Builder& b, jit::Type t) {
    ValueId mv = b.Input(t), sv = b.Input(t);
    b.Return({b.Select(b.Emit(Op::kIsfinite, {mv}), b.Add(mv, b.Emit(Op::kLog, {sv})), mv)});
  });
  const Arr r = Run(finish, {m, s}, l.keep_shape)[0];
  // The softmax from the max and the sum, exp(x - m) / s: exp(x - r) would cancel in x - r,
  // r rounded to the type, losing |x| eps (f32 logsumexp([1e5, 1e5]) gave weights 0.4989).
  return Finish<T>("logsumexp", x, l, r, {r, m, s},
                   [](const Arr& x, const std::vector<Arr>& saved, const Arr& g) {
    const Fn softmax = Cached(JType(*x), "lse_adjoint", [](jit::Builder& b, jit::Type t) {
      ValueId xv = b.Input(t), rv = b.Input(t), mv = b.Input(t), sv = b.Input(t), gv = b.Input(t);
      ValueId nan = b.Const(t, std::numeric_limits<double>::quiet_NaN());
      ValueId weight = b.Div(b.Emit(Op::kExp, {b.Sub(xv, mv)}), sv);
      b.Return({b.Select(b.Emit(Op::kIsfinite, {rv}), b.Mul(gv, weight), nan)});
    });
    return Run(softmax, {x, saved[0], saved[1], saved[2], g}, x->shape)[0];
  });
}

template <ElementType T>
Array<T> var(const Array<T>& a, const std::vector<int>& axes, bool keepdims, int ddof) {
  (void)a.rank();  // an empty handle throws here
  const Axes l = ReduceAxes("var", a.impl()->shape, axes, keepdims);
  const double dof = static_cast<double>(l.count - ddof);
  if (dof <= 0) {  // NumPy: NaN (with a warning)
    // The adjoint 2 (a - mean) / (N - ddof) is 0 / 0 at N - ddof = 0 but a
    // number for N - ddof < 0: NaN throughout instead (PyTorch and JAX give
    // NaN), so no loss through a NaN variance gets a finite gradient.
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return FilledReduction<T>("var", a, l, nan, nan);
  }
  const auto [x, mu] = ReduceFirst(a, l, ReduceKind::kSum, static_cast<double>(l.count), false, "var");
  const Fn squares = Cached(JType(*x), "var_terms", [](jit::Builder& b, jit::Type t) {
    ValueId xv = b.Input(t), mv = b.Input(t);
    ValueId d = b.Sub(xv, mv);
    b.Return({b.Mul(d, d)});
  });
  const Arr r = Run(squares, {x, mu}, x->shape, l.keep_shape, {ReduceKind::kSum}, dof)[0];
  return Finish<T>("var", x, l, r, {mu, Number(2.0 / dof, *x)},
                   [](const Arr& x, const std::vector<Arr>& saved, const Arr& g) {
                     const Fn adjoint = Cached(JType(*x), "var_adjoint", [](jit::Builder& b, jit::Type t) {
                       ValueId xv = b.Input(t), mv = b.Input(t), gv = b.Input(t), k = b.Input(t);
                       b.Return({b.Mul(b.Mul(gv, b.Sub(xv, mv)), k)});
                     });
                     return Run(adjoint, {x, saved[0], g, saved[1]}, x->shape)[0];
                   });
}

template <ElementType T>
Array<T> norm(const Array<T>& a, const std::vector<int>& axes, bool keepdims) {
  (void)a.rank();  // an empty handle throws here
  const Axes l = ReduceAxes("norm", a.impl()->shape, axes, keepdims);
  if (l.count == 0) return FilledReduction<T>("norm", a, l, 0.0, 0.0);
  const auto [x, scale] = ReduceFirst(a, l, ReduceKind::kMax, 1, /*abs=*/true, "norm");
  const Fn squares = Cached(JType(*x), "norm_terms", [](jit::Builder& b, jit::Type t) {
    ValueId xv = b.Input(t), sv = b.Input(t);
    ValueId usable = b.Emit(Op::kAnd, {b.Emit(Op::kIsfinite, {sv}), b.Emit(Op::kGt, {sv, b.Const(t, 0)})});
    ValueId q = b.Div(xv, sv);
    b.Return({b.Select(usable, b.Mul(q, q), b.Const(t, 0))});
  });
  const Arr s = Run(squares, {x, scale}, x->shape, l.keep_shape, {ReduceKind::kSum})[0];
  const Fn finish = Cached(JType(*x), "norm_value", [](jit::Builder& b, jit::Type t) {
    ValueId sv = b.Input(t), ssum = b.Input(t);
    ValueId usable = b.Emit(Op::kAnd, {b.Emit(Op::kIsfinite, {sv}), b.Emit(Op::kGt, {sv, b.Const(t, 0)})});
    b.Return({b.Select(usable, b.Mul(sv, b.Emit(Op::kSqrt, {ssum})), sv)});
  });
  const Arr r = Run(finish, {scale, s}, l.keep_shape)[0];
  // x / r wherever r is a normal number. Where it is not, x / r is no use though the adjoint is an
  // ordinary number (norm([1.5e308, 1.5e308]) = inf gave 0, norm([5e-324, 5e-324]) gave 1 for
  // 0.7071): (x / scale) / sqrt(sum) takes the scaled terms of the forward pass instead. An
  // infinite element: sign(x) for it, 0 for the finite ones, as hypot (x / r was NaN there).
  return Finish<T>("norm", x, l, r, {r, scale, s},
                   [](const Arr& x, const std::vector<Arr>& saved, const Arr& g) {
    const Fn adjoint = Cached(JType(*x), "norm_adjoint", [](jit::Builder& b, jit::Type t) {
      ValueId xv = b.Input(t), rv = b.Input(t), sv = b.Input(t), ssum = b.Input(t), gv = b.Input(t);
      const double least = t == jit::Type::kF32 ? std::numeric_limits<float>::min()
                                                : std::numeric_limits<double>::min();
      const ValueId inf = b.Const(t, std::numeric_limits<double>::infinity());
      ValueId normal =
          b.Emit(Op::kAnd, {b.Emit(Op::kIsfinite, {rv}), b.Emit(Op::kGe, {rv, b.Const(t, least)})});
      ValueId scaled = b.Div(b.Div(xv, sv), b.Emit(Op::kSqrt, {ssum}));
      ValueId at_inf = b.Select(b.Emit(Op::kEq, {b.Emit(Op::kAbs, {xv}), inf}),
                                b.Emit(Op::kCopysign, {b.Const(t, 1), xv}), b.Const(t, 0));
      ValueId d = b.Select(normal, b.Div(xv, rv), b.Select(b.Emit(Op::kEq, {sv, inf}), at_inf, scaled));
      b.Return({b.Select(b.Emit(Op::kEq, {rv, b.Const(t, 0)}), b.Const(t, 0), b.Mul(gv, d))});
    });
    return Run(adjoint, {x, saved[0], saved[1], saved[2], g}, x->shape)[0];
  });
}

#define DUALCAST_GENERATED_REDUCTIONS(T)                                             \
  template Array<T> max(const Array<T>&);                                            \
  template Array<T> max(const Array<T>&, const std::vector<int>&, bool);             \
  template Array<T> min(const Array<T>&);                                            \
  template Array<T> min(const Array<T>&, const std::vector<int>&, bool);             \
  template Array<T> prod(const Array<T>&);                                           \
  template Array<T> prod(const Array<T>&, const std::vector<int>&, bool);            \
  template Array<T> logsumexp(const Array<T>&);                                      \
  template Array<T> logsumexp(const Array<T>&, const std::vector<int>&, bool);       \
  template Array<T> var(const Array<T>&);                                            \
  template Array<T> var(const Array<T>&, const std::vector<int>&, bool, int);        \
  template Array<T> norm(const Array<T>&);                                           \
  template Array<T> norm(const Array<T>&, const std::vector<int>&, bool);            \
  template Array<T> argmax(const Array<T>&);                                         \
  template Array<T> argmax(const Array<T>&, int, bool);                              \
  template Array<T> argmin(const Array<T>&);                                         \
  template Array<T> argmin(const Array<T>&, int, bool);
DUALCAST_GENERATED_REDUCTIONS(float)
DUALCAST_GENERATED_REDUCTIONS(double)
#undef DUALCAST_GENERATED_REDUCTIONS

}  // namespace dualcast
