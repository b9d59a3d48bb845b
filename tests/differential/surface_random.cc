// Random public-surface programs: the draw of operations, shapes, the tape's place, the loss and the requests.
#include <algorithm>
#include <array>
#include <random>

#include "differential/surface.h"
#include "differential/surface_math.h"
#include "differential/surface_model.h"
#include "dualcast/array_ops.hpp"

namespace dualcast::surface {

Program RandomProgram(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  Program p;
  p.seed = seed;
  std::vector<Shape> shapes;  // per slot
  // Per slot: written over by an assign since (its handle holds the assign's
  // slot now, so it is never read again: the reference would read the old
  // values), and sharing memory with another slot (a view, or viewed: never
  // assigned, since the reference does not follow writes through aliases).
  std::vector<bool> retired, aliased;
  int first_write = -1;  // op index of the first assign
  std::vector<std::pair<int, int>> open_pairs;  // kPair slots (and op indices) whose output 1 is not used yet
  auto add = [&](Op op, Shape shape) {
    p.ops.push_back(std::move(op));
    shapes.push_back(std::move(shape));
    retired.push_back(false);
    aliased.push_back(false);
    return static_cast<int>(shapes.size()) - 1;
  };
  auto live = [&] {
    std::vector<int> ok;
    for (size_t s = 0; s < shapes.size(); ++s) {
      if (!retired[s]) ok.push_back(static_cast<int>(s));
    }
    return ok[static_cast<size_t>(pick(static_cast<int>(ok.size())))];
  };
  auto random_shape = [&] {
    Shape s;
    for (int d = pick(4); d > 0; --d) s.push_back(1 + pick(3));
    return s;
  };
  auto leaf = [&](Shape shape) {
    Op op;
    op.kind = pick(3) == 0 ? Op::kView : Op::kLeaf;
    op.shape = shape;
    op.seed = rng();
    return add(op, shape);
  };
  leaf(random_shape());
  const int steps = 2 + pick(6);
  for (int step = 0; step < steps; ++step) {
    const int a = live();
    const Shape sa = shapes[static_cast<size_t>(a)];
    Op op;
    op.a = a;
    // A slot (or a new leaf, one time in three) whose shape broadcasts with `shape`.
    auto partner = [&](const Shape& shape) {
      if (pick(3) == 0) {
        Shape sb;  // a suffix of the shape, some dims 1
        for (size_t d = static_cast<size_t>(pick(static_cast<int>(shape.size()) + 1)); d < shape.size(); ++d) {
          sb.push_back(pick(3) == 0 ? 1 : shape[d]);
        }
        return leaf(sb);
      }
      std::vector<int> fits;
      for (size_t s = 0; s < shapes.size(); ++s) {
        if (!retired[s] && BroadcastShape(shape, shapes[s])) fits.push_back(static_cast<int>(s));
      }
      return fits[static_cast<size_t>(pick(static_cast<int>(fits.size())))];
    };
    // Views share memory with their source.
    auto view_of_a = [&](int made) {
      aliased[static_cast<size_t>(a)] = true;
      aliased[static_cast<size_t>(made)] = true;
    };
    switch (pick(24)) {
      case 0: leaf(random_shape()); break;
      case 1:
        op.kind = Op::kScale;
        op.number = std::array<double, 3>{2.0, -0.5, 1.5}[static_cast<size_t>(pick(3))];
        op.number2 = std::array<double, 3>{0.0, 1.0, -2.0}[static_cast<size_t>(pick(3))];
        add(op, sa);
        break;
      case 2: op.kind = Op::kUnary; add(op, sa); break;
      case 3:
      case 4:
      case 5: {
        op.kind = std::array<Op::Kind, 3>{Op::kAdd, Op::kMul, Op::kBinary}[static_cast<size_t>(pick(3))];
        const int b = partner(sa);
        op.b = b;
        if (pick(2) == 0) std::swap(op.a, op.b);
        add(op, *BroadcastShape(shapes[static_cast<size_t>(op.a)], shapes[static_cast<size_t>(op.b)]));
        break;
      }
      case 6: {
        op.kind = Op::kReshape;
        op.free_fn = pick(2) == 0;
        int64_t n = SizeOf(sa);
        Shape t;
        if (pick(2) == 0) {
          t = {n};
        } else if (n % 2 == 0 && pick(2) == 0) {
          t = {2, n / 2};
        } else if (n % 3 == 0 && pick(2) == 0) {
          t = {n / 3, 1, 3};
        } else {
          t = {1, n};
        }
        op.shape = t;
        view_of_a(add(op, t));
        break;
      }
      case 7: {
        op.kind = Op::kTranspose;
        op.free_fn = pick(2) == 0;
        for (int d = 0; d < static_cast<int>(sa.size()); ++d) op.perm.push_back(d);
        std::shuffle(op.perm.begin(), op.perm.end(), rng);
        Shape t;
        for (int d : op.perm) t.push_back(sa[static_cast<size_t>(d)]);
        view_of_a(add(op, t));
        break;
      }
      case 8: op.kind = Op::kCopy; add(op, sa); break;
      case 9:
      case 10:
      case 12: {
        op.kind = pick(2) == 0 ? Op::kSum : Op::kMean;
        if (step % 3 == 0 || pick(3) == 0) {  // the other reductions, about one op in ten
          op.kind = Op::kReduce;
          op.which = pick(6);
        }
        op.axis = sa.empty() || pick(3) == 0 ? -1 : pick(static_cast<int>(sa.size()));
        op.keepdims = pick(2) == 0;
        if (pick(3) == 0) {  // an axes list: any subset (none too), any order, some spelled negative
          op.axes_list = true;
          const int rank = static_cast<int>(sa.size());
          for (int d = 0; d < rank; ++d) {
            if (pick(2) == 0) op.axes.push_back(pick(2) == 0 ? d - rank : d);
          }
          std::shuffle(op.axes.begin(), op.axes.end(), rng);
        }
        const int made = add(op, ReducedShape(op, sa));
        if (op.axes_list && op.axes.empty()) view_of_a(made);  // over nothing: may share a's memory
        break;
      }
      case 11: {
        if (sa.size() != 2) {
          op.kind = Op::kEval;
          p.ops.push_back(op);
          break;
        }
        op.kind = Op::kMatmul;
        int b = -1;
        for (size_t s = 0; s < shapes.size(); ++s) {
          if (!retired[s] && shapes[s].size() == 2 && shapes[s][0] == sa[1] && pick(2) == 0) b = static_cast<int>(s);
        }
        if (b < 0) b = leaf({sa[1], 1 + pick(3)});
        op.b = b;
        add(op, {sa[0], shapes[static_cast<size_t>(b)][1]});
        break;
      }
      case 13: {
        op.kind = Op::kSlice;
        for (size_t d = 0; d < sa.size() && pick(3) != 0; ++d) {  // leading dims; the rest whole
          const int64_t n = sa[d], step = 1 + pick(2), start = pick(static_cast<int>(n));
          const int64_t stop = start + 1 + pick(static_cast<int>(n - start));  // at least one element
          // NumPy's spellings: negative from the end, past the end, Slice::kEnd.
          const int64_t start_spelled = pick(3) == 0 ? start - n : start;
          int64_t stop_spelled = pick(3) == 0 && stop < n ? stop - n : stop;
          if (stop == n) stop_spelled = std::array<int64_t, 3>{n, n + 5, Slice::kEnd}[static_cast<size_t>(pick(3))];
          op.slices.push_back({start_spelled, stop_spelled, step});
        }
        view_of_a(add(op, SlicedShape(op, sa)));
        break;
      }
      case 14: {
        if (sa.empty()) {  // rank 0: nothing to join along
          op.kind = Op::kEval;
          p.ops.push_back(op);
          break;
        }
        op.kind = pick(2) == 0 ? Op::kConcat : Op::kStack;
        op.free_fn = pick(2) == 0;
        const int rank = static_cast<int>(sa.size()) + (op.kind == Op::kStack ? 1 : 0);
        const int axis = pick(rank);
        Shape sb = sa;
        if (op.kind == Op::kConcat) sb[static_cast<size_t>(axis)] = 1 + pick(3);
        int b = -1;
        for (size_t s = 0; s < shapes.size(); ++s) {
          if (!retired[s] && shapes[s] == sb && pick(2) == 0) b = static_cast<int>(s);
        }
        op.b = b >= 0 ? b : leaf(sb);
        op.axis = pick(2) == 0 ? axis - rank : axis;
        if (pick(3) == 0) std::swap(op.a, op.b);
        Shape t = shapes[static_cast<size_t>(op.a)];
        if (op.kind == Op::kStack) {
          t.insert(t.begin() + axis, 2);
        } else {
          t[static_cast<size_t>(axis)] += shapes[static_cast<size_t>(op.b)][static_cast<size_t>(axis)];
        }
        add(op, t);
        break;
      }
      case 15: {
        op.kind = Op::kClip;
        Shape t = sa;
        if (pick(2) == 0) {  // numbers, lo > hi sometimes (np.clip: hi)
          constexpr std::array<double, 3> kBounds = {-0.5, 0.2, 1.0};
          op.number = kBounds[static_cast<size_t>(pick(3))];
          op.number2 = kBounds[static_cast<size_t>(pick(3))];
        } else {  // arrays that broadcast with a (and each other)
          for (int* bound : {&op.b, &op.c}) {
            *bound = partner(t);
            t = *BroadcastShape(t, shapes[static_cast<size_t>(*bound)]);
          }
        }
        add(op, t);
        break;
      }
      case 16:
      case 17: {
        op.kind = pick(2) == 0 ? Op::kWhere : Op::kSub;
        Shape t = sa;
        if (op.kind == Op::kSub && pick(3) == 0) {
          op.number = 1.5;  // number - a
        } else {
          op.b = partner(t);
          t = *BroadcastShape(t, shapes[static_cast<size_t>(op.b)]);
        }
        if (op.kind == Op::kWhere) {
          op.c = partner(t);
          t = *BroadcastShape(t, shapes[static_cast<size_t>(op.c)]);
        }
        add(op, t);
        break;
      }
      case 19:
        if (aliased[static_cast<size_t>(a)] || step == 0) {  // (the tape may open before op 1)
          op.kind = Op::kEval;
          p.ops.push_back(op);
          break;
        }
        op.kind = Op::kAssign;
        op.free_fn = pick(2) == 0;  // through mutable_data()
        op.seed = rng();
        if (op.seed % 3 == 0) {  // assign(b): a slot that broadcasts to a's shape (a itself, too)
          std::vector<int> fits;
          for (size_t s = 0; s < shapes.size(); ++s) {
            if (!retired[s] && BroadcastShape(sa, shapes[s]) == sa) fits.push_back(static_cast<int>(s));
          }
          op.b = fits[static_cast<size_t>(pick(static_cast<int>(fits.size())))];
          op.free_fn = false;
        }
        if (first_write < 0) first_write = static_cast<int>(p.ops.size());
        retired[static_cast<size_t>(a)] = true;
        add(op, sa);
        break;
      case 18:
        op.kind = Op::kMath;
        op.which = pick(kMathCount);
        add(op, sa);
        break;
      case 23:
        if (!open_pairs.empty() && pick(2) == 0) {  // output 1 of an earlier pair
          const size_t k = static_cast<size_t>(pick(static_cast<int>(open_pairs.size())));
          const Op& first = p.ops[static_cast<size_t>(open_pairs[k].second)];
          op.kind = Op::kPairSecond;
          op.pair = open_pairs[k].first;
          op.a = first.a;
          op.b = first.b;
          add(op, shapes[static_cast<size_t>(op.pair)]);
          open_pairs.erase(open_pairs.begin() + static_cast<std::ptrdiff_t>(k));
        } else {
          op.kind = Op::kPair;
          op.b = partner(sa);
          if (pick(2) == 0) std::swap(op.a, op.b);
          const int made =
              add(op, *BroadcastShape(shapes[static_cast<size_t>(op.a)], shapes[static_cast<size_t>(op.b)]));
          open_pairs.push_back({made, static_cast<int>(p.ops.size()) - 1});
        }
        break;
      case 22:
        if (SizeOf(sa) == 0) {  // argmax of nothing is an Error
          op.kind = Op::kEval;
          p.ops.push_back(op);
          break;
        }
        op.kind = Op::kArgReduce;
        op.which = pick(2);
        op.axis = sa.empty() || pick(3) == 0 ? -1 : pick(static_cast<int>(sa.size()));
        op.keepdims = op.axis >= 0 && pick(2) == 0;
        add(op, ReducedShape(op, sa));
        break;
      case 21: {
        op.kind = Op::kMath2;
        op.which = pick(kMath2Count);
        op.b = partner(sa);
        Shape t = *BroadcastShape(sa, shapes[static_cast<size_t>(op.b)]);
        if (Math2Ternary(op.which)) {
          op.c = partner(t);
          t = *BroadcastShape(t, shapes[static_cast<size_t>(op.c)]);
        }
        add(op, t);
        break;
      }
      default: op.kind = Op::kEval; p.ops.push_back(op); break;
    }
  }
  const int n = static_cast<int>(shapes.size());
  p.tape_at = pick(static_cast<int>(p.ops.size()) + 1);
  if (pick(3) == 0) p.tape_at = 0;  // the usual case: tape first
  // Writes come after the tape opens: which pending results a write computes
  // early (and so before or after the tape) is the runtime's choice.
  if (first_write >= 0) p.tape_at = std::min(p.tape_at, first_write);
  if (pick(3) == 0) {  // a nested tape, opened at or after the first (and before any write)
    const int last = first_write >= 0 ? first_write : static_cast<int>(p.ops.size());
    p.tape2_at = p.tape_at + pick(last - p.tape_at + 1);
  }
  // A clear, before any write: what a write computes first (its target, the
  // pending results reading it) is then on the record whichever way the
  // runtime groups it.
  if (pick(4) == 0) {
    const int last = first_write >= 0 ? first_write : static_cast<int>(p.ops.size());
    p.clear_at = p.tape_at + pick(last - p.tape_at + 1);
  }
  p.mode = pick(3);
  p.f32 = pick(3) == 0;
  p.loss_slots.push_back(n - 1);
  for (int extra = pick(3); extra > 0; --extra) {
    const int s = live();
    if (std::find(p.loss_slots.begin(), p.loss_slots.end(), s) == p.loss_slots.end()) p.loss_slots.push_back(s);
  }
  for (int q = 0; q < 4; ++q) {
    Request r;
    r.allow_unused = pick(3) == 0;
    r.accumulate = pick(4) == 0;
    r.with_value = !r.accumulate && pick(3) == 0;
    r.on_second = p.tape2_at >= 0 && pick(2) == 0;
    for (int k = 1 + pick(3); k > 0; --k) r.slots.push_back(pick(n));
    p.requests.push_back(r);
  }
  return p;
}

}  // namespace dualcast::surface
