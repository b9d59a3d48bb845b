// Gradient check of random fused broadcast chains through the tape, against float64 central finite differences.
//
// Each case draws a chain of 1-4 broadcasts of branchy kernels over 1-4 leaf
// arrays of random broadcastable shapes (size-1 dims and rank-0 leaves
// included; sometimes a plain number argument, which is a constant), builds
// loss = sum(w ⊙ out) (+ sum(v ⊙ intermediate) when an intermediate is also
// held, which makes it an extra output of the fused group), and compares
// the tape's gradients with respect to every leaf, in cache and in recompute
// mode, with central differences of the same chain evaluated by plain
// double loops on the host (the lambdas run on double: an independent path
// with no JIT, no fusion and no tape).
//
// Tolerance. With h = 1e-6 the central difference has truncation error
// h²/6·|f'''| (< 1e-10 here: the kernels are built from tanh, exp, sin, log1p
// and low-degree polynomials over inputs in [-1.5, 1.5]) and rounding error
// about ε·S/h where S = Σ|terms of the loss| (≈ 2.2e-10·S). We accept
// |g - fd| <= 1e-6·(1 + |fd|) + 1e-9·S. An element whose perturbation
// crosses a branch boundary (the function jumps or kinks within ±h) is
// detected by its one-sided differences disagreeing and is skipped; the
// test asserts that such skips stay rare. Cache and recompute mode compute
// the same products in a different order: they must agree to 1e-12.
//
// Compile time: the 540 cases reuse 60 random structures (9 data draws each,
// which also take different branches), so the kernel cache keeps the number
// of JIT compilations near 60 x 4.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>

#include "dualcast/array.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/kernel.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"

namespace dualcast {
namespace {

using D = Array<double>;

struct KernelDef {
  Kernel kernel;
  int arity;
  std::function<double(const double*)> host;
};

template <int N, class F>
KernelDef Define(const char* name, F f) {
  KernelDef d{kernel(name, f), N, nullptr};
  d.host = [f](const double* a) -> double {
    if constexpr (N == 1) {
      return f(a[0]);
    } else if constexpr (N == 2) {
      return f(a[0], a[1]);
    } else {
      return f(a[0], a[1], a[2]);
    }
  };
  return d;
}

// std:: math for double; jit::Var finds the traced versions by ADL.
#define DUALCAST_TEST_MATH using std::exp, std::tanh, std::sin, std::log1p, std::sqrt

const std::vector<KernelDef>& Kernels() {
  static const std::vector<KernelDef> kernels = {
      Define<2>("swing", [](auto x, auto y) {
        DUALCAST_TEST_MATH;
        if (x > y) return x * sin(y) + 1.0;
        return tanh(x) - 0.5 * y;
      }),
      Define<1>("soft", [](auto x) {
        DUALCAST_TEST_MATH;
        if (x > 0.3) return tanh(x) * x;
        return 1.0 / (1.0 + exp(-x)) - 0.2;
      }),
      Define<3>("nest", [](auto x, auto y, auto z) {
        DUALCAST_TEST_MATH;
        if (x < 0.0) {
          if (y > 0.0) return x * y + z;
          return z * exp(-x * x);
        }
        return log1p(x * x + y * y) * z;
      }),
      // c only steers: its partial is structurally zero.
      Define<2>("gate", [](auto x, auto c) {
        DUALCAST_TEST_MATH;
        if (c > 0.5) return x * tanh(x);
        return -x;
      }),
      Define<2>("clipdiv", [](auto x, auto y) {
        if (x * x > 1.0) return 1.0 / x + y;
        return 0.5 * x + 0.25 * x * x * x * y;
      }),
      Define<2>("plain", [](auto x, auto y) {
        DUALCAST_TEST_MATH;
        return x * sin(y) - sqrt(x * x + 1.0);
      }),
  };
  return kernels;
}

const KernelDef& Weighted() {
  static const KernelDef k = Define<2>("weighted", [](auto w, auto y) { return w * y; });
  return k;
}
const KernelDef& Plus() {
  static const KernelDef k = Define<2>("plus", [](auto a, auto b) { return a + b; });
  return k;
}

// A host array: plain doubles, row-major.
struct Host {
  Shape shape;
  std::vector<double> v;
};

Shape BroadcastShapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      if (s[i] != 1) o = s[i];
    }
  }
  return out;
}

// Elementwise f over NumPy-broadcast host arrays.
Host HostApply(const KernelDef& k, const std::vector<const Host*>& args) {
  std::vector<Shape> shapes;
  for (const Host* a : args) shapes.push_back(a->shape);
  Host out{BroadcastShapes(shapes), {}};
  int64_t n = 1;
  for (int64_t s : out.shape) n *= s;
  std::vector<int64_t> index(out.shape.size(), 0);
  std::vector<double> vals(args.size());
  for (int64_t e = 0; e < n; ++e) {
    for (size_t a = 0; a < args.size(); ++a) {
      const Shape& s = args[a]->shape;
      int64_t off = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        off = off * s[i] + (s[i] == 1 ? 0 : index[out.shape.size() - s.size() + i]);
      }
      vals[a] = args[a]->v[static_cast<size_t>(off)];
    }
    out.v.push_back(k.host(vals.data()));
    for (size_t d = out.shape.size(); d-- > 0;) {
      if (++index[d] < out.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// One argument of a step: leaf i, step i, or a number.
struct Source {
  enum Kind { kLeaf, kStep, kNumber } kind;
  int index;
  double number;
};

struct Structure {
  std::vector<Shape> leaf_shapes;
  std::vector<int> kernels;                // per step
  std::vector<std::vector<Source>> args;   // per step
  int held = -1;                           // an intermediate step also in the loss
};

Structure RandomStructure(std::mt19937& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  Structure s;
  const int rank = pick(4);
  Shape full;
  for (int d = 0; d < rank; ++d) full.push_back(rank == 3 ? 1 + pick(3) : 1 + pick(5));
  const int num_leaves = 1 + pick(4);
  for (int l = 0; l < num_leaves; ++l) {
    const int lrank = pick(rank + 1);
    Shape shape;
    for (int d = rank - lrank; d < rank; ++d) shape.push_back(pick(3) == 0 ? 1 : full[d]);
    s.leaf_shapes.push_back(shape);
  }
  const int steps = 1 + pick(4);
  for (int st = 0; st < steps; ++st) {
    const int k = pick(static_cast<int>(Kernels().size()));
    s.kernels.push_back(k);
    std::vector<Source> args;
    for (int a = 0; a < Kernels()[k].arity; ++a) {
      if (a == 0 && st > 0 && pick(10) < 7) {
        args.push_back({Source::kStep, st - 1, 0});
      } else if (pick(10) == 0) {
        args.push_back({Source::kNumber, 0, 0.2 + 0.1 * pick(12)});
      } else if (st > 0 && pick(3) == 0) {
        args.push_back({Source::kStep, pick(st), 0});
      } else {
        args.push_back({Source::kLeaf, pick(num_leaves), 0});
      }
    }
    s.args.push_back(args);
  }
  if (steps > 1 && pick(10) < 3) s.held = pick(steps - 1);
  return s;
}

// The case's data: leaves and the loss weights.
struct Data {
  std::vector<Host> leaves;
  Host w, v;  // weights of the output and of the held intermediate
};

Host RandomHost(const Shape& shape, std::mt19937& rng, double lo, double hi) {
  Host h{shape, {}};
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < n; ++i) h.v.push_back(u(rng));
  return h;
}

// Evaluates every step on the host; returns the step arrays.
std::vector<Host> HostSteps(const Structure& s, const std::vector<Host>& leaves) {
  std::vector<Host> steps;
  std::vector<Host> numbers;
  numbers.reserve(16);
  for (size_t st = 0; st < s.kernels.size(); ++st) {
    std::vector<const Host*> args;
    for (const Source& src : s.args[st]) {
      if (src.kind == Source::kLeaf) {
        args.push_back(&leaves[static_cast<size_t>(src.index)]);
      } else if (src.kind == Source::kStep) {
        args.push_back(&steps[static_cast<size_t>(src.index)]);
      } else {
        numbers.push_back(Host{{}, {src.number}});
        args.push_back(&numbers.back());
      }
    }
    Host r = HostApply(Kernels()[static_cast<size_t>(s.kernels[st])], args);
    steps.push_back(std::move(r));
  }
  return steps;
}

// loss and S = Σ|terms|.
std::pair<double, double> HostLoss(const Structure& s, const Data& d, const std::vector<Host>& leaves) {
  std::vector<Host> steps = HostSteps(s, leaves);
  double loss = 0, mag = 0;
  auto add = [&](const Host& w, const Host& y) {
    Host p = HostApply(Weighted(), {&w, &y});
    for (double t : p.v) {
      loss += t;
      mag += std::abs(t);
    }
  };
  add(d.w, steps.back());
  if (s.held >= 0) add(d.v, steps[static_cast<size_t>(s.held)]);
  return {loss, mag};
}

// Shapes of each step (for the weights).
Shape StepShape(const Structure& s, int step) {
  std::vector<Shape> shapes;
  for (const Source& src : s.args[static_cast<size_t>(step)]) {
    if (src.kind == Source::kLeaf) shapes.push_back(s.leaf_shapes[static_cast<size_t>(src.index)]);
    if (src.kind == Source::kStep) shapes.push_back(StepShape(s, src.index));
  }
  return BroadcastShapes(shapes);
}

// The chain through the runtime (fused), loss as an Array.
D DeviceLoss(const Structure& s, const std::vector<D>& leaves, const D& w, const D& v) {
  std::vector<D> steps;
  for (size_t st = 0; st < s.kernels.size(); ++st) {
    std::vector<detail::Operand> ops;
    for (const Source& src : s.args[st]) {
      if (src.kind == Source::kNumber) {
        ops.push_back(detail::Operand{detail::Operand::kNumber, nullptr, src.number});
      } else {
        const D& a = src.kind == Source::kLeaf ? leaves[static_cast<size_t>(src.index)]
                                               : steps[static_cast<size_t>(src.index)];
        ops.push_back(detail::Operand{detail::Operand::kArray, a.impl(), 0});
      }
    }
    if (std::none_of(ops.begin(), ops.end(),
                     [](const detail::Operand& o) { return o.kind == detail::Operand::kArray; })) {
      // All numbers: the runtime needs an array; use a rank-0 constant leaf.
      ops[0] = detail::Operand{detail::Operand::kArray, D::scalar(ops[0].number).impl(), 0};
    }
    steps.emplace_back(
        detail::Broadcast(Kernels()[static_cast<size_t>(s.kernels[st])].kernel, ops, detail::DType::kF64,
                          true)[0]);
  }
  D out = steps.back();
  D held = s.held >= 0 ? steps[static_cast<size_t>(s.held)] : D();
  steps.clear();  // only `out` (and `held`) are held outside: the rest fuses away
  D loss = sum(broadcast(Weighted().kernel, w, out));
  if (s.held >= 0) loss = broadcast(Plus().kernel, loss, sum(broadcast(Weighted().kernel, v, held)));
  return loss;
}

D ToArray(const Host& h) { return D::from(h.v, h.shape); }

TEST_CASE("random fused chains: tape gradients (cache and recompute) vs central differences") {
  std::mt19937 rng(20240611);
  int cases = 0, elements = 0, skipped = 0, nonzero = 0;
  for (int structure_index = 0; structure_index < 60; ++structure_index) {
    Structure s = RandomStructure(rng);
    // A chain that never reads some all-number step still works; a step with
    // only numbers reads a rank-0 leaf on the device side, so mirror that.
    bool all_numbers_step = false;
    for (const auto& args : s.args) {
      all_numbers_step |= std::all_of(args.begin(), args.end(),
                                      [](const Source& a) { return a.kind == Source::kNumber; });
    }
    if (all_numbers_step) {
      --structure_index;
      continue;
    }
    const Shape out_shape = StepShape(s, static_cast<int>(s.kernels.size()) - 1);
    for (int draw = 0; draw < 9; ++draw, ++cases) {
      Data d;
      for (const Shape& shape : s.leaf_shapes) d.leaves.push_back(RandomHost(shape, rng, -1.5, 1.5));
      d.w = RandomHost(out_shape, rng, -1, 1);
      if (s.held >= 0) d.v = RandomHost(StepShape(s, s.held), rng, -1, 1);
      CAPTURE(structure_index);
      CAPTURE(draw);

      std::vector<D> leaves;
      for (const Host& h : d.leaves) leaves.push_back(ToArray(h));
      const D w = ToArray(d.w), v = s.held >= 0 ? ToArray(d.v) : D();
      std::vector<std::vector<double>> grads[2];
      for (int mode = 0; mode < 2; ++mode) {
        Tape tape(mode == 0 ? PartialsMode::kCache : PartialsMode::kRecompute);
        D loss = DeviceLoss(s, leaves, w, v);
        const auto [host_loss, host_mag] = HostLoss(s, d, d.leaves);
        CHECK(std::abs(loss.item() - host_loss) <= 1e-13 * (1 + host_mag));
        // Some leaves are drawn but never read: their gradient is zero (checked
        // against the finite differences below), asked for explicitly.
        for (const D& g : tape.gradient(loss, leaves, GradientOptions{.allow_unused = true})) {
          grads[mode].push_back(g.to_vector());
        }
      }
      for (size_t l = 0; l < leaves.size(); ++l) {
        REQUIRE(grads[0][l].size() == d.leaves[l].v.size());
        const auto [base, mag] = HostLoss(s, d, d.leaves);
        for (size_t k = 0; k < grads[0][l].size(); ++k) {
          const double gc = grads[0][l][k], gr = grads[1][l][k];
          CHECK(std::abs(gc - gr) <= 1e-12 * (1 + std::abs(gc)));
          const double h = 1e-6;
          std::vector<Host> p = d.leaves;
          p[l].v[k] = d.leaves[l].v[k] + h;
          const double up = HostLoss(s, d, p).first;
          p[l].v[k] = d.leaves[l].v[k] - h;
          const double down = HostLoss(s, d, p).first;
          const double fwd = (up - base) / h, bwd = (base - down) / h, fd = (up - down) / (2 * h);
          ++elements;
          nonzero += gc != 0;
          if (std::abs(fwd - bwd) > 1e-3 * (1 + std::abs(fwd) + std::abs(bwd)) + 1e-8 * mag) {
            ++skipped;  // a branch boundary within ±h
            continue;
          }
          INFO("leaf " << l << " element " << k << ": tape " << gc << ", finite difference " << fd);
          CHECK(std::abs(gc - fd) <= 1e-6 * (1 + std::abs(fd)) + 1e-9 * mag);
        }
      }
    }
  }
  MESSAGE("gradient check: " << cases << " cases, " << elements << " gradient elements ("
                             << nonzero << " non-zero), " << skipped << " skipped at branch boundaries");
  CHECK(cases >= 500);
  CHECK(nonzero * 3 >= elements);
  CHECK(skipped * 100 <= elements);
}

}  // namespace
}  // namespace dualcast
