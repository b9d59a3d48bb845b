// The double reference of a surface program and the outcome model (surface_model.h).
#include "differential/surface_model.h"
#include "differential/surface_math.h"

#include <cmath>

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <random>

namespace dualcast::surface {

// ---- the double reference ------------------------------------------------


int64_t SizeOf(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::optional<Shape> BroadcastShape(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = std::max(da, db);
  }
  return out;
}

namespace {

// The next row-major index of `shape` (wrapping to all zeros after the last).
void Advance(std::vector<int64_t>& index, const Shape& shape) {
  for (size_t d = shape.size(); d-- > 0;) {
    if (++index[d] < shape[d]) return;
    index[d] = 0;
  }
}

// Index into `in` (right-aligned, size-1 dims broadcast) of the element at `index` of `out`.
int64_t SourceIndex(const Shape& in, const Shape& out, const std::vector<int64_t>& index) {
  int64_t k = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const size_t d = out.size() - in.size() + i;
    k = k * in[i] + (in[i] == 1 ? 0 : index[d]);
  }
  return k;
}

// f(a, b, c) elementwise over the three broadcast together.
template <class F>
H Map3(const H& a, const H& b, const H& c, F f) {
  H out{*BroadcastShape(*BroadcastShape(a.shape, b.shape), c.shape), {}};
  std::vector<int64_t> index(out.shape.size(), 0);
  for (int64_t e = 0; e < SizeOf(out.shape); ++e) {
    out.v.push_back(f(a.v[static_cast<size_t>(SourceIndex(a.shape, out.shape, index))],
                      b.v[static_cast<size_t>(SourceIndex(b.shape, out.shape, index))],
                      c.v[static_cast<size_t>(SourceIndex(c.shape, out.shape, index))]));
    Advance(index, out.shape);
  }
  return out;
}
template <class F>
H Map2(const H& a, const H& b, F f) {
  return Map3(a, b, H{{}, {0.0}}, [&](double x, double y, double) { return f(x, y); });
}

H Transposed(const H& a, const std::vector<int>& perm) {
  H out{Shape(perm.size()), std::vector<double>(a.v.size())};
  for (size_t d = 0; d < perm.size(); ++d) out.shape[d] = a.shape[static_cast<size_t>(perm[d])];
  std::vector<int64_t> index(a.shape.size(), 0);
  for (size_t e = 0; e < a.v.size(); ++e) {
    int64_t k = 0;
    for (size_t d = 0; d < perm.size(); ++d) k = k * out.shape[d] + index[static_cast<size_t>(perm[d])];
    out.v[static_cast<size_t>(k)] = a.v[e];
    Advance(index, a.shape);
  }
  return out;
}

// Whether some branch or reduction was decided by a tie, up to the rounding
// by which the runtime's value may differ from this reference's (a sum in
// another order, float arithmetic): there the runtime may take the other
// side, or sit on a kink (see HostLoss).
struct TieWatch {
  double tol;  // relative
  bool seen = false;
  bool Near(double x, double y) const { return std::abs(x - y) <= tol * (1 + std::abs(x) + std::abs(y)); }
  void Note(double x, double y) { seen = seen || Near(x, y); }
};

// Each slice over the reduced dims of `a`, one result per slice, the reduced
// dims kept with size 1: `which` is kReduce's 0..5, or kSumOf / kMeanOf.
// Ties: a repeated extreme, a zero norm.
constexpr int kSumOf = -1, kMeanOf = -2, kArgmaxOf = 6, kArgminOf = 7;
H ReducedBy(const H& a, const std::vector<bool>& dims, int which, TieWatch& tie) {
  Shape keep = a.shape;
  for (size_t d = 0; d < keep.size(); ++d) {
    if (dims[d]) keep[d] = 1;
  }
  std::vector<std::vector<double>> slices(static_cast<size_t>(SizeOf(keep)));
  std::vector<int64_t> index(a.shape.size(), 0);
  for (size_t e = 0; e < a.v.size(); ++e) {
    slices[static_cast<size_t>(SourceIndex(keep, a.shape, index))].push_back(a.v[e]);
    Advance(index, a.shape);
  }
  H out{keep, {}};
  for (const std::vector<double>& sl : slices) {
    const double n = static_cast<double>(sl.size());
    double r = which == 0 ? -INFINITY : which == 1 ? INFINITY : which == 2 ? 1 : 0;
    if (which == kArgmaxOf || which == kArgminOf) {  // the first extreme's place in the slice
      size_t best = 0;
      for (size_t e = 1; e < sl.size(); ++e) {
        if (which == kArgmaxOf ? sl[e] > sl[best] : sl[e] < sl[best]) best = e;
      }
      tie.seen = tie.seen || std::count_if(sl.begin(), sl.end(), [&](double x) { return tie.Near(x, sl[best]); }) > 1;
      r = static_cast<double>(best);
    } else if (which == 3) {
      double m = -INFINITY, total = 0;
      for (double x : sl) m = std::max(m, x);
      for (double x : sl) total += std::exp(x - m);
      r = m + std::log(total);
    } else if (which == 4) {
      double mu = 0;
      for (double x : sl) mu += x / n;
      for (double x : sl) r += (x - mu) * (x - mu) / n;
    } else {
      for (double x : sl) {
        if (which == 0) r = std::max(r, x);
        if (which == 1) r = std::min(r, x);
        if (which == 2) r *= x;
        if (which == 5) r += x * x;
        if (which == kSumOf || which == kMeanOf) r += x;
      }
      if (which == 5) r = std::sqrt(r);
      if (which == kMeanOf) r /= n;
      if (which <= 1) {
        tie.seen = tie.seen || std::count_if(sl.begin(), sl.end(), [&](double x) { return tie.Near(x, r); }) > 1;
      }
      if (which == 5) tie.Note(r, 0);
    }
    out.v.push_back(r);
  }
  return out;
}

// Row-major strides of `shape`.
std::vector<int64_t> Strides(const Shape& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) st[d - 1] = st[d] * shape[d];
  return st;
}

// NumPy's start and element count of one positive-step slice of a dim of size n.
std::pair<int64_t, int64_t> SliceStartCount(const std::array<int64_t, 3>& s, int64_t n) {
  auto norm = [n](int64_t i) {
    if (i == std::numeric_limits<int64_t>::max()) return n;
    if (i < 0) i += n;
    return i < 0 ? 0 : i > n ? n : i;
  };
  const int64_t start = norm(s[0]), stop = norm(s[1]);
  return {start, stop > start ? (stop - start + s[2] - 1) / s[2] : 0};
}

H Sliced(const H& a, const Op& op) {
  H out{SlicedShape(op, a.shape), {}};
  const std::vector<int64_t> in_strides = Strides(a.shape);
  std::vector<int64_t> start(a.shape.size(), 0), step(a.shape.size(), 1);
  for (size_t d = 0; d < op.slices.size(); ++d) {
    start[d] = SliceStartCount(op.slices[d], a.shape[d]).first;
    step[d] = op.slices[d][2];
  }
  std::vector<int64_t> index(out.shape.size(), 0);
  for (int64_t e = 0; e < SizeOf(out.shape); ++e) {
    int64_t k = 0;
    for (size_t d = 0; d < index.size(); ++d) k += (start[d] + index[d] * step[d]) * in_strides[d];
    out.v.push_back(a.v[static_cast<size_t>(k)]);
    Advance(index, out.shape);
  }
  return out;
}

// concat({a, b}, axis) or, with `stack`, stack({a, b}, axis).
H Joined(const H& a, const H& b, int axis, bool stack) {
  const int rank = static_cast<int>(a.shape.size()) + (stack ? 1 : 0);
  const size_t ax = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  H out{a.shape, {}};
  if (stack) {
    out.shape.insert(out.shape.begin() + static_cast<long>(ax), 2);
  } else {
    out.shape[ax] += b.shape[ax];
  }
  std::vector<int64_t> index(out.shape.size(), 0);
  for (int64_t e = 0; e < SizeOf(out.shape); ++e) {
    std::vector<int64_t> src = index;
    const bool second = stack ? index[ax] == 1 : index[ax] >= a.shape[ax];
    if (stack) {
      src.erase(src.begin() + static_cast<long>(ax));
    } else if (second) {
      src[ax] -= a.shape[ax];
    }
    const H& from = second ? b : a;
    const std::vector<int64_t> st = Strides(from.shape);
    int64_t k = 0;
    for (size_t d = 0; d < src.size(); ++d) k += src[d] * st[d];
    out.v.push_back(from.v[static_cast<size_t>(k)]);
    Advance(index, out.shape);
  }
  return out;
}

// np.clip for numbers without NaN: hi where lo > hi, else min(max(x, lo), hi).
double Clip(double x, double lo, double hi) {
  if (lo > hi) return hi;
  return x < lo ? lo : x > hi ? hi : x;
}

H Clipped(const H& x, const H& lo, const H& hi, TieWatch& tie) {
  return Map3(x, lo, hi, [&](double xv, double lv, double hv) {
    tie.Note(xv, lv);
    tie.Note(xv, hv);
    tie.Note(lv, hv);
    return Clip(xv, lv, hv);
  });
}

H Matmul(const H& a, const H& b) {
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  H out{{m, n}, std::vector<double>(static_cast<size_t>(m * n), 0.0)};
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t t = 0; t < k; ++t) s += a.v[static_cast<size_t>(i * k + t)] * b.v[static_cast<size_t>(t * n + j)];
      out.v[static_cast<size_t>(i * n + j)] = s;
    }
  }
  return out;
}

}  // namespace

std::vector<double> Values(uint64_t seed, int64_t n) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.5, 1.5);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = u(rng);
  return v;
}

uint64_t WeightSeed(size_t term) { return 0x5eed0000 + term; }

bool MakesSlot(const Op& op) { return op.kind != Op::kEval; }

std::vector<double> Rounded(const Program& p, std::vector<double> v) {
  if (p.f32) {
    for (double& x : v) x = static_cast<float>(x);
  }
  return v;
}

std::vector<bool> ReducedDims(const Op& op, size_t rank) {
  std::vector<bool> dims(rank, !op.axes_list && op.axis < 0);
  if (op.axes_list) {
    for (int a : op.axes) dims[static_cast<size_t>(a < 0 ? a + static_cast<int>(rank) : a)] = true;
  } else if (op.axis >= 0) {
    dims[static_cast<size_t>(op.axis)] = true;
  }
  return dims;
}

Shape ReducedShape(const Op& op, const Shape& in) {
  const std::vector<bool> dims = ReducedDims(op, in.size());
  const bool keepdims = op.keepdims && (op.axes_list || op.axis >= 0);  // the all-axes call has none
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!dims[d]) out.push_back(in[d]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

Shape SlicedShape(const Op& op, const Shape& in) {
  Shape out = in;
  for (size_t d = 0; d < op.slices.size(); ++d) out[d] = SliceStartCount(op.slices[d], in[d]).second;
  return out;
}

// Every slot's value, with `delta` added to element `k` of slot `perturb`
// right after it is computed; returns the loss.
double HostLoss(const Program& p, std::vector<H>* slots_out, int perturb, int64_t k, double delta,
                bool* ties_out) {
  std::vector<H> s;
  TieWatch tie{p.f32 ? 1e-5 : 1e-9};
  for (const Op& op : p.ops) {
    if (!MakesSlot(op)) continue;
    const H* a = op.a >= 0 ? &s[static_cast<size_t>(op.a)] : nullptr;
    const H* b = op.b >= 0 ? &s[static_cast<size_t>(op.b)] : nullptr;
    H r;
    switch (op.kind) {
      case Op::kLeaf:
      case Op::kView: r = H{op.shape, Rounded(p, Values(op.seed, SizeOf(op.shape)))}; break;
      case Op::kAssign:
        r = b != nullptr ? Map2(*a, *b, [](double, double y) { return y; })  // b broadcast to a's shape
                         : H{a->shape, Rounded(p, Values(op.seed, SizeOf(a->shape)))};
        break;
      case Op::kScale:
        r = *a;
        for (double& x : r.v) x = x * op.number + op.number2;
        break;
      case Op::kUnary:
        r = *a;
        for (double& x : r.v) {
          tie.Note(x, 0);
          x = kUnaryFn(x);
        }
        break;
      case Op::kAdd: r = Map2(*a, *b, [](double x, double y) { return x + y; }); break;
      case Op::kMul: r = Map2(*a, *b, [](double x, double y) { return x * y; }); break;
      case Op::kBinary:
        r = Map2(*a, *b, [&](double x, double y) {
          tie.Note(x, y);
          return kBinaryFn(x, y);
        });
        break;
      case Op::kPair:
      case Op::kPairSecond:
        r = Map2(*a, *b, [&](double x, double y) {
          tie.Note(x, y);
          const auto [first, second] = kPairFn(x, y);
          return op.kind == Op::kPair ? first : second;
        });
        break;
      case Op::kReshape: r = H{op.shape, a->v}; break;
      case Op::kTranspose: r = Transposed(*a, op.perm); break;
      case Op::kCopy: r = *a; break;
      case Op::kSum:
      case Op::kMean:
      case Op::kReduce:
        r = ReducedBy(*a, ReducedDims(op, a->shape.size()),
                      op.kind == Op::kSum ? kSumOf : op.kind == Op::kMean ? kMeanOf : op.which, tie);
        r.shape = ReducedShape(op, a->shape);
        break;
      case Op::kMatmul: r = Matmul(*a, *b); break;
      case Op::kArgReduce:
        r = ReducedBy(*a, ReducedDims(op, a->shape.size()), op.which == 0 ? kArgmaxOf : kArgminOf, tie);
        r.shape = ReducedShape(op, a->shape);
        break;
      case Op::kSlice: r = Sliced(*a, op); break;
      case Op::kConcat:
      case Op::kStack: r = Joined(*a, *b, op.axis, op.kind == Op::kStack); break;
      case Op::kSub:
        if (op.b >= 0) {
          r = Map2(*a, *b, [](double x, double y) { return x - y; });
        } else {
          r = *a;
          for (double& x : r.v) x = op.number - x;
        }
        break;
      case Op::kWhere:  // where(a > b, a, c)
        r = Map3(*a, *b, s[static_cast<size_t>(op.c)], [&](double x, double y, double z) {
          tie.Note(x, y);
          return x > y ? x : z;
        });
        break;
      case Op::kMath:
        r = *a;
        for (double& x : r.v) {
          MathTies(op.which, x, [&](double u, double v) { tie.Note(u, v); });
          x = MathOf(op.which, x);
        }
        break;
      case Op::kMath2: {
        const H& c = op.c >= 0 ? s[static_cast<size_t>(op.c)] : H{{}, {0.0}};
        r = Map3(*a, *b, c, [&](double x, double y, double z) {
          Math2Ties(op.which, x, y, [&](double u, double v) { tie.Note(u, v); });
          return Math2Of(op.which, x, y, z);
        });
        break;
      }
      case Op::kClip:
        r = op.b >= 0 ? Clipped(*a, *b, s[static_cast<size_t>(op.c)], tie)
                      : Clipped(*a, H{{}, {op.number}}, H{{}, {op.number2}}, tie);
        break;
      case Op::kEval: break;
    }
    if (static_cast<int>(s.size()) == perturb) r.v[static_cast<size_t>(k)] += delta;
    s.push_back(std::move(r));
  }
  double loss = 0;
  for (size_t t = 0; t < p.loss_slots.size(); ++t) {
    const H& x = s[static_cast<size_t>(p.loss_slots[t])];
    std::vector<double> w = Rounded(p, Values(WeightSeed(t), SizeOf(x.shape)));
    for (size_t e = 0; e < x.v.size(); ++e) loss += x.v[e] * w[e];
  }
  if (slots_out != nullptr) *slots_out = std::move(s);
  if (ties_out != nullptr) *ties_out = tie.seen;
  return loss;
}

// ---- the model of the documented tape rules --------------------------------


Model BuildModel(const Program& p, int tape_at) {
  if (tape_at < 0) tape_at = std::max(p.tape_at, p.clear_at);  // a clear starts the record anew
  Model m;
  std::vector<bool> pending;
  std::vector<int> computed;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (MakesSlot(p.ops[i])) m.op_of_slot.push_back(static_cast<int>(i));
  }
  const size_t n = m.op_of_slot.size();
  pending.assign(n, false);
  computed.assign(n, -1);
  // The two outputs of one broadcast_n (kPair, kPairSecond) are one fused
  // group: forcing either computes both.
  std::vector<int> partner(n, -1);
  std::function<void(int, int)> force = [&](int s, int t) {
    if (!pending[static_cast<size_t>(s)]) return;
    pending[static_cast<size_t>(s)] = false;
    computed[static_cast<size_t>(s)] = t;
    const Op& op = p.ops[static_cast<size_t>(m.op_of_slot[static_cast<size_t>(s)])];
    for (int in : {op.a, op.b, op.c, partner[static_cast<size_t>(s)]}) {
      if (in >= 0) force(in, t);
    }
  };
  // A sum/mean of a pending array is pending too; a broadcast reading a
  // pending reduction computes it first (the fused group is cut there).
  auto is_reduction = [&](int s) {
    const Op& op = p.ops[static_cast<size_t>(m.op_of_slot[static_cast<size_t>(s)])];
    return op.kind == Op::kSum || op.kind == Op::kMean || (op.kind == Op::kReduce && PendingReduce(op.which));
  };
  int slot = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    const int t = static_cast<int>(i);
    switch (op.kind) {
      case Op::kAssign: {
        // The write first computes its target and the pending results that
        // read the memory (runtime/pending_readers.h): those whose fused
        // group reads the written slot, directly or through a pending slot.
        std::function<bool(int)> reads_written = [&](int c) {
          const Op& r = p.ops[static_cast<size_t>(m.op_of_slot[static_cast<size_t>(c)])];
          for (int in : {r.a, r.b, r.c}) {
            if (in == op.a || (in >= 0 && pending[static_cast<size_t>(in)] && reads_written(in))) return true;
          }
          return false;
        };
        if (op.b >= 0) force(op.b, t);  // assign(b) computes its source first
        force(op.a, t);  // the target itself, if pending (assign and mutable_data() compute it)
        for (int c = 0; c < slot; ++c) {
          if (pending[static_cast<size_t>(c)] && reads_written(c)) force(c, t);
        }
        // A new variable: of no values (user values), or computed from b now.
        computed[static_cast<size_t>(slot)] = op.b >= 0 ? t : -1;
        break;
      }
      case Op::kLeaf:
      case Op::kView: computed[static_cast<size_t>(slot)] = -1; break;  // a new variable
      case Op::kPairSecond:
        if (!pending[static_cast<size_t>(op.pair)]) {  // computed with output 0, which it was held beside
          computed[static_cast<size_t>(slot)] = computed[static_cast<size_t>(op.pair)];
          break;
        }
        partner[static_cast<size_t>(slot)] = op.pair;
        partner[static_cast<size_t>(op.pair)] = slot;
        pending[static_cast<size_t>(slot)] = true;
        break;
      case Op::kScale:
      case Op::kUnary:
      case Op::kAdd:
      case Op::kMul:
      case Op::kBinary:
      case Op::kSub:
      case Op::kWhere:
      case Op::kPair:
      case Op::kMath:
      case Op::kMath2:
      case Op::kClip:  // fused broadcasts
        for (int in : {op.a, op.b, op.c}) {
          if (in >= 0 && is_reduction(in)) force(in, t);
        }
        pending[static_cast<size_t>(slot)] = true;
        break;
      case Op::kReduce:
        if (!PendingReduce(op.which)) {  // computed now, its operand forced
          force(op.a, t);
          computed[static_cast<size_t>(slot)] = t;
          break;
        }
        [[fallthrough]];
      case Op::kSum:
      case Op::kMean:
        if (pending[static_cast<size_t>(op.a)]) {
          pending[static_cast<size_t>(slot)] = true;
        } else {
          computed[static_cast<size_t>(slot)] = t;
        }
        break;
      case Op::kEval: force(op.a, t); break;
      default:  // eager: forces its arguments, computed now
        force(op.a, t);
        if (op.b >= 0) force(op.b, t);
        computed[static_cast<size_t>(slot)] = t;
    }
    if (MakesSlot(op)) ++slot;
  }
  const int loss_time = static_cast<int>(p.ops.size());
  for (int s : p.loss_slots) force(s, loss_time);
  m.taped.assign(n, false);
  for (size_t s = 0; s < n; ++s) {
    const Op& op = p.ops[static_cast<size_t>(m.op_of_slot[s])];
    const bool user_values = op.kind == Op::kLeaf || op.kind == Op::kView || (op.kind == Op::kAssign && op.b < 0);
    m.taped[s] = !user_values && computed[s] >= tape_at;
  }
  m.variable.resize(n);
  for (size_t s = 0; s < n; ++s) {
    m.variable[s] = static_cast<int>(s);
    const Op& w = p.ops[static_cast<size_t>(m.op_of_slot[s])];
    if (w.kind != Op::kAssign) continue;
    for (size_t t = 0; t < s; ++t) {
      if (m.variable[t] == w.a) m.variable[t] = static_cast<int>(s);  // the handle's older slots
    }
    const Op::Kind target = p.ops[static_cast<size_t>(m.op_of_slot[static_cast<size_t>(w.a)])].kind;
    m.write_may_refuse = m.write_may_refuse ||
                         (w.free_fn && target != Op::kLeaf && target != Op::kView && target != Op::kAssign);
    // A reader of the values overwritten that the tape recorded (what it
    // read is kept, or the loss may reach both variables); one computed
    // before the tape read another variable, a constant to it (the ancestry
    // records versions).
    // assign(b) reads only its source: a.assign(a) under the tape makes the
    // loss reach both of a's variables (the documented Error for a request of a).
    for (size_t c = 0; c < n; ++c) {
      const Op& op = p.ops[static_cast<size_t>(m.op_of_slot[c])];
      const bool reads = op.kind == Op::kAssign ? op.b == w.a : op.a == w.a || op.b == w.a || op.c == w.a;
      m.write_may_refuse = m.write_may_refuse || (reads && m.taped[c]);
    }
  }
  return m;
}

// Whether `r` reaches the loss through taped operations only, and through
// some operation computed before the tape.
std::pair<bool, bool> Reach(const Program& p, const Model& m, int r) {
  bool taped_path = false, untaped_path = false;
  std::vector<std::array<bool, 2>> seen(m.op_of_slot.size(), {false, false});
  std::vector<std::pair<int, bool>> stack = {{r, false}};
  while (!stack.empty()) {
    auto [s, dirty] = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(s)][dirty]) continue;
    seen[static_cast<size_t>(s)][dirty] = true;
    if (std::find(p.loss_slots.begin(), p.loss_slots.end(), s) != p.loss_slots.end()) {
      (dirty ? untaped_path : taped_path) = true;
    }
    for (size_t c = 0; c < m.op_of_slot.size(); ++c) {
      const Op& op = p.ops[static_cast<size_t>(m.op_of_slot[c])];
      if (op.kind == Op::kAssign) {  // a new variable: of no values, or computed from its source b
        if (op.b == s) stack.push_back({static_cast<int>(c), dirty || !m.taped[c]});
        continue;
      }
      // argmax/argmin, on the tape or not: no gradient flows, and no path is missed.
      if (op.kind == Op::kArgReduce) continue;
      if (op.a == s || op.b == s || op.c == s) stack.push_back({static_cast<int>(c), dirty || !m.taped[c]});
    }
  }
  return {taped_path, untaped_path};
}


}  // namespace dualcast::surface
