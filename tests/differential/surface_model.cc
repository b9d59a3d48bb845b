// The double reference of a surface program and the outcome model (surface_model.h).
#include "differential/surface_model.h"

#include <cmath>

#include <algorithm>
#include <array>
#include <functional>
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

// Index into `in` (right-aligned, size-1 dims broadcast) of the element at `index` of `out`.
int64_t SourceIndex(const Shape& in, const Shape& out, const std::vector<int64_t>& index) {
  int64_t k = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const size_t d = out.size() - in.size() + i;
    k = k * in[i] + (in[i] == 1 ? 0 : index[d]);
  }
  return k;
}

template <class F>
H Map2(const H& a, const H& b, F f) {
  H out{*BroadcastShape(a.shape, b.shape), {}};
  const int64_t n = SizeOf(out.shape);
  std::vector<int64_t> index(out.shape.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    out.v.push_back(f(a.v[SourceIndex(a.shape, out.shape, index)], b.v[SourceIndex(b.shape, out.shape, index)]));
    for (size_t d = out.shape.size(); d-- > 0;) {
      if (++index[d] < out.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

H Transposed(const H& a, const std::vector<int>& perm) {
  H out{Shape(perm.size()), std::vector<double>(a.v.size())};
  for (size_t d = 0; d < perm.size(); ++d) out.shape[d] = a.shape[static_cast<size_t>(perm[d])];
  std::vector<int64_t> index(a.shape.size(), 0);
  for (size_t e = 0; e < a.v.size(); ++e) {
    int64_t k = 0;
    for (size_t d = 0; d < perm.size(); ++d) k = k * out.shape[d] + index[static_cast<size_t>(perm[d])];
    out.v[static_cast<size_t>(k)] = a.v[e];
    for (size_t d = a.shape.size(); d-- > 0;) {
      if (++index[d] < a.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

H Reduced(const H& a, int axis, bool keepdims, bool mean) {
  if (axis < 0) {
    double s = 0;
    for (double x : a.v) s += x;
    return H{{}, {mean ? s / static_cast<double>(a.v.size()) : s}};
  }
  Shape keep = a.shape;
  keep[static_cast<size_t>(axis)] = 1;
  H out{keep, std::vector<double>(static_cast<size_t>(SizeOf(keep)), 0.0)};
  std::vector<int64_t> index(a.shape.size(), 0);
  for (size_t e = 0; e < a.v.size(); ++e) {
    out.v[static_cast<size_t>(SourceIndex(keep, a.shape, index))] += a.v[e];
    for (size_t d = a.shape.size(); d-- > 0;) {
      if (++index[d] < a.shape[d]) break;
      index[d] = 0;
    }
  }
  if (mean) {
    for (double& x : out.v) x /= static_cast<double>(a.shape[static_cast<size_t>(axis)]);
  }
  if (!keepdims) out.shape.erase(out.shape.begin() + axis);
  return out;
}

// max/min/prod/logsumexp/var/norm (Op::which) of each slice along `axis` (all when < 0).
H ReducedBy(const H& a, int axis, bool keepdims, int which) {
  Shape keep = a.shape;
  if (axis >= 0) keep[static_cast<size_t>(axis)] = 1;
  std::vector<std::vector<double>> slices(static_cast<size_t>(axis < 0 ? 1 : SizeOf(keep)));
  std::vector<int64_t> index(a.shape.size(), 0);
  for (size_t e = 0; e < a.v.size(); ++e) {
    slices[static_cast<size_t>(axis < 0 ? 0 : SourceIndex(keep, a.shape, index))].push_back(a.v[e]);
    for (size_t d = a.shape.size(); d-- > 0;) {
      if (++index[d] < a.shape[d]) break;
      index[d] = 0;
    }
  }
  H out{axis < 0 ? Shape{} : keep, {}};
  for (const std::vector<double>& sl : slices) {
    const double n = static_cast<double>(sl.size());
    double r = which == 0 ? -INFINITY : which == 1 ? INFINITY : which == 2 ? 1 : 0;
    if (which == 3) {
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
      }
      if (which == 5) r = std::sqrt(r);
    }
    out.v.push_back(r);
  }
  if (axis >= 0 && !keepdims) out.shape.erase(out.shape.begin() + axis);
  return out;
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

// Every slot's value, with `delta` added to element `k` of slot `perturb`
// right after it is computed; returns the loss.
double HostLoss(const Program& p, std::vector<H>* slots_out, int perturb, int64_t k, double delta) {
  std::vector<H> s;
  for (const Op& op : p.ops) {
    if (!MakesSlot(op)) continue;
    const H* a = op.a >= 0 ? &s[static_cast<size_t>(op.a)] : nullptr;
    const H* b = op.b >= 0 ? &s[static_cast<size_t>(op.b)] : nullptr;
    H r;
    switch (op.kind) {
      case Op::kLeaf:
      case Op::kView: r = H{op.shape, Values(op.seed, SizeOf(op.shape))}; break;
      case Op::kScale:
        r = *a;
        for (double& x : r.v) x = x * op.number + op.number2;
        break;
      case Op::kUnary:
        r = *a;
        for (double& x : r.v) x = kUnaryFn(x);
        break;
      case Op::kAdd: r = Map2(*a, *b, [](double x, double y) { return x + y; }); break;
      case Op::kMul: r = Map2(*a, *b, [](double x, double y) { return x * y; }); break;
      case Op::kBinary: r = Map2(*a, *b, [](double x, double y) { return kBinaryFn(x, y); }); break;
      case Op::kReshape: r = H{op.shape, a->v}; break;
      case Op::kTranspose: r = Transposed(*a, op.perm); break;
      case Op::kCopy: r = *a; break;
      case Op::kSum: r = Reduced(*a, op.axis, op.keepdims, false); break;
      case Op::kMean: r = Reduced(*a, op.axis, op.keepdims, true); break;
      case Op::kMatmul: r = Matmul(*a, *b); break;
      case Op::kReduce: r = ReducedBy(*a, op.axis, op.keepdims, op.which); break;
      case Op::kEval: break;
    }
    if (static_cast<int>(s.size()) == perturb) r.v[static_cast<size_t>(k)] += delta;
    s.push_back(std::move(r));
  }
  double loss = 0;
  for (size_t t = 0; t < p.loss_slots.size(); ++t) {
    const H& x = s[static_cast<size_t>(p.loss_slots[t])];
    std::vector<double> w = Values(WeightSeed(t), SizeOf(x.shape));
    for (size_t e = 0; e < x.v.size(); ++e) loss += x.v[e] * w[e];
  }
  if (slots_out != nullptr) *slots_out = std::move(s);
  return loss;
}

// ---- the model of the documented tape rules --------------------------------


Model BuildModel(const Program& p) {
  Model m;
  std::vector<bool> pending;
  std::vector<int> computed;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (MakesSlot(p.ops[i])) m.op_of_slot.push_back(static_cast<int>(i));
  }
  const size_t n = m.op_of_slot.size();
  pending.assign(n, false);
  computed.assign(n, -1);
  std::function<void(int, int)> force = [&](int s, int t) {
    if (!pending[static_cast<size_t>(s)]) return;
    pending[static_cast<size_t>(s)] = false;
    computed[static_cast<size_t>(s)] = t;
    const Op& op = p.ops[static_cast<size_t>(m.op_of_slot[static_cast<size_t>(s)])];
    if (op.a >= 0) force(op.a, t);
    if (op.b >= 0) force(op.b, t);
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
      case Op::kLeaf:
      case Op::kView: computed[static_cast<size_t>(slot)] = -1; break;
      case Op::kScale:
      case Op::kUnary:
      case Op::kAdd:
      case Op::kMul:
      case Op::kBinary:
        for (int in : {op.a, op.b}) {
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
    const Op::Kind k = p.ops[static_cast<size_t>(m.op_of_slot[s])].kind;
    m.taped[s] = k != Op::kLeaf && k != Op::kView && computed[s] >= p.tape_at;
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
      if (op.a == s || op.b == s) stack.push_back({static_cast<int>(c), dirty || !m.taped[c]});
    }
  }
  return {taped_path, untaped_path};
}


}  // namespace dualcast::surface
