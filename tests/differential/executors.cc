// The differential tester's executors and their comparison with the Dual<double> reference (see executors.h).
#include "differential/executors.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <span>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dualcast/dualcast.hpp"
#include "jit/codegen/broadcast_layout.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/cpu/cpu_backend.h"
#include "jit/cpu/launch.h"
#include "jit/ir/interpret.h"
#include "jit/passes/jvp.h"
#include "jit/passes/optimize.h"
#include "jit/trace/trace.h"

namespace dualcast::difftest {

using testing::EvalTree;
using testing::Trail;
using testing::Tree;
using testing::TreeKernel;

const char* ExecutorName(Executor e) {
  switch (e) {
    case Executor::kInterpreter: return "interpreter";
    case Executor::kCpuDirect: return "cpu-direct";
    case Executor::kRuntimePartials: return "runtime-partials";
    case Executor::kRuntimeBroadcast: return "runtime-broadcast";
    case Executor::kTape: return "tape";
    case Executor::kTapeFd: return "tape-fd";
    case Executor::kGpu: return "gpu";
  }
  return "?";
}

namespace {

constexpr int kMaxInputs = 4;
using D = Dual<double, kMaxInputs>;

template <int N, int M>
KernelUnderTest Make(const Tree& tree, const std::string& name) {
  TreeKernel<N, M> fn{std::make_shared<const Tree>(tree)};
  KernelUnderTest k;
  k.tree = tree;
  k.name = name;
  k.num_inputs = N;
  k.num_outputs = M;
  // The tree is immutable state, so the Kernel is built from a trace function
  // directly (dualcast::kernel refuses callables with state).
  k.kernel = dualcast::Kernel(name, [fn](const std::string& n, std::span<const jit::Type> types) mutable {
    return jit::TraceDynamic(n, fn, types);
  });
  const std::vector<jit::Type> types(N, jit::Type::kF64);
  k.primal = std::make_shared<const jit::Function>(jit::Optimize(jit::Trace(name, fn, types)));
  std::vector<int> wrt(N);
  std::iota(wrt.begin(), wrt.end(), 0);
  k.jvp = std::make_shared<const jit::Function>(jit::Optimize(jit::Jvp(*k.primal, wrt).function));
  return k;
}

std::vector<double> InputsAt(const ShapeCase& c, int64_t e) {
  std::vector<double> x(c.inputs.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = c.Value(static_cast<int>(i), e);
  return x;
}

bool AllFinite(std::span<const double> x) {
  return std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); });
}

bool CaseHasSpecials(const ShapeCase& c) {
  for (int64_t e = 0; e < c.num_elements(); ++e) {
    if (!AllFinite(InputsAt(c, e))) return true;
  }
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    for (int64_t k = 0; k < c.InputSize(static_cast<int>(i)); ++k) {
      if (std::abs(c.InputValue(static_cast<int>(i), k)) > 1e100) return true;
    }
  }
  return false;
}

bool Close(double got, double want, double tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= tol * std::max(1.0, std::abs(want));
}

std::string Fmt(double v) { return absl::StrFormat("%.17g", v); }

// A branch condition (or kink) at x is a near tie when a relative nudge of
// one input flips it: executors whose math differs by an ulp may then
// legitimately take different paths.
bool NearTie(const Tree& tree, std::span<const double> x) {
  Trail base;
  EvalTree<double>(tree, x, &base);
  std::vector<double> y(x.begin(), x.end());
  for (size_t j = 0; j < y.size(); ++j) {
    for (double s : {-1e-9, 1e-9}) {
      y[j] = x[j] * (1 + s) + s * 1e-9;
      Trail t;
      EvalTree<double>(tree, std::span<const double>(y), &t);
      y[j] = x[j];
      if (t.facts != base.facts) return true;
    }
  }
  return false;
}

// Whether some copysign at x takes its sign from a NaN.
bool CopysignOfNan(const Tree& tree, std::span<const double> x) {
  for (const testing::Node& node : tree.nodes) {
    if (node.kind == testing::Node::kBinary && node.op == 9 &&
        std::isnan(testing::EvalNode<double>(tree, node.b, x))) {
      return true;
    }
  }
  return false;
}

// The kernel on Dual<double> at x, input j seeding lane j: the reference's values and partials.
std::vector<D> DualAt(const KernelUnderTest& k, std::span<const double> x) {
  std::array<D, kMaxInputs> d{};
  for (int j = 0; j < k.num_inputs; ++j) d[j] = D::variable(x[j], j);
  return EvalTree<D>(k.tree, std::span<const D>(d.data(), k.num_inputs));
}

// Dual<double>'s result in slot `slot` (values, then partials by input) at x.
double ReferenceSlot(const KernelUnderTest& k, std::span<const double> x, int slot) {
  const int N = k.num_inputs, M = k.num_outputs;
  const std::vector<D> y = DualAt(k, x);
  return slot < M ? y[slot].value() : y[(slot - M) / N].partial((slot - M) % N);
}

// Whether an ulp in one finite input moves the reference result in `slot` beyond the
// tolerance (see Verdict::ill_conditioned).
bool IllConditioned(const KernelUnderTest& k, std::span<const double> x, int slot, double want, double tol) {
  std::vector<double> y(x.begin(), x.end());
  for (size_t j = 0; j < y.size(); ++j) {
    if (!std::isfinite(x[j])) continue;  // an ulp from inf is DBL_MAX: not a small move
    for (double toward : {-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()}) {
      y[j] = std::nextafter(x[j], toward);
      const double moved = ReferenceSlot(k, std::span<const double>(y), slot);
      y[j] = x[j];
      if (!Close(moved, want, tol)) return true;
    }
  }
  return false;
}

// Whether the jvp'ed IR gives a non-finite partial with respect to input j
// anywhere in the case (the strong-zero mismatch, see Verdict).
bool JvpNonFinite(const KernelUnderTest& k, const ShapeCase& c, int j) {
  const int M = k.num_outputs, N = k.num_inputs;
  for (int64_t e = 0; e < c.num_elements(); ++e) {
    std::vector<double> y = jit::Interpret(*k.jvp, InputsAt(c, e));
    for (int m = 0; m < M; ++m) {
      if (!std::isfinite(y[M + m * N + j])) return true;
    }
  }
  return false;
}

// Compares got[slot][e] with want[slot][e] for every slot `check` allows.
// Slot s is output `first_slot + s` of the all-inputs jvp (values, then
// partials by input position) unless `canonical` maps it explicitly.
Verdict Compare(const KernelUnderTest& k, const ShapeCase& c, const char* what,
                const std::vector<std::vector<double>>& want,
                const std::vector<std::vector<double>>& got, const std::vector<bool>& check,
                double tol, int first_slot, const std::vector<int>* canonical = nullptr) {
  const int N = k.num_inputs;
  for (size_t s = 0; s < want.size(); ++s) {
    if (!check[s]) continue;
    if (got[s].size() != want[s].size()) {
      return {Verdict::kDisagree,
              absl::StrCat(what, " ", s, ": ", got[s].size(), " elements, want ", want[s].size()), 0};
    }
    for (size_t e = 0; e < want[s].size(); ++e) {
      if (Close(got[s][e], want[s][e], tol)) continue;
      const std::vector<double> x = InputsAt(c, static_cast<int64_t>(e));
      // Dual's 0 * inf = NaN in a lane the jvp pass proves zero is not a bug.
      if (!AllFinite(x) && !std::isfinite(want[s][e])) continue;
      // IEEE 754 leaves the sign of an arithmetic NaN result unspecified, so
      // copysign(a, <a NaN computed from an input NaN>) may differ in sign
      // between libms (seed 2006: expm1(-NaN * NaN)), and so may
      // copysign(a, <a NaN computed from finite inputs>) between vector and
      // scalar code (seed 7200014: sigmoid(inf / inf)).
      if ((std::any_of(x.begin(), x.end(), [](double v) { return std::isnan(v); }) ||
           CopysignOfNan(k.tree, x)) &&
          Close(-got[s][e], want[s][e], tol)) {
        continue;
      }
      Verdict v{Verdict::kDisagree, "", static_cast<int64_t>(e)};
      const int slot = canonical != nullptr ? (*canonical)[s] : first_slot + static_cast<int>(s);
      const int M = k.num_outputs;
      std::string name = slot < M ? absl::StrCat("value y", slot)
                                  : absl::StrCat("partial dy", (slot - M) / N, "/dx", (slot - M) % N);
      std::vector<std::string> xs;
      for (double xi : x) xs.push_back(Fmt(xi));
      v.detail = absl::StrCat(what, ": ", name, " at result element ", e, " (inputs ",
                              absl::StrJoin(xs, ", "), "): got ", Fmt(got[s][e]), ", Dual<double> says ",
                              Fmt(want[s][e]));
      if (AllFinite(x) && NearTie(k.tree, x)) {
        v.kind = Verdict::kSkipped;
        v.near_tie = true;
      } else if (slot >= M &&
                 ((std::isfinite(want[s][e]) && !std::isfinite(got[s][e])) ||
                  (std::isinf(want[s][e]) && std::isnan(got[s][e]))) &&
                 !std::isfinite(jit::Interpret(*k.jvp, x)[slot])) {
        // A zero tangent times an infinite coefficient: NaN here, Dual's strong zero drops
        // the term (docs/DESIGN.md, "Forward mode drops structural zeros only").
        v.kind = Verdict::kSkipped;
        v.strong_zero = true;
      } else if (slot >= M && std::isnan(want[s][e]) && got[s][e] == 0 &&
                 std::isnan(jit::Interpret(*k.jvp, x)[static_cast<size_t>((slot - M) / N)])) {
        // floor & co. of a NaN: the jvp's structural zero where Dual gives NaN (the documented
        // departure from "NaN value => NaN partials", jit/passes/jvp.cc).
        v.kind = Verdict::kSkipped;
        v.strong_zero = true;
      } else if (IllConditioned(k, x, slot, want[s][e], tol)) {
        v.kind = Verdict::kSkipped;
        v.ill_conditioned = true;
      }
      return v;
    }
  }
  return {};
}

// The reference's values followed by its partials, as the jvp'ed function orders outputs.
std::vector<std::vector<double>> AllSlots(const Reference& ref) {
  std::vector<std::vector<double>> all = ref.values;
  all.insert(all.end(), ref.partials.begin(), ref.partials.end());
  return all;
}

Verdict RunInterpreter(const KernelUnderTest& k, const ShapeCase& c, const Reference& ref) {
  const std::vector<std::vector<double>> want = AllSlots(ref);
  std::vector<std::vector<double>> got(want.size());
  for (int64_t e = 0; e < c.num_elements(); ++e) {
    std::vector<double> y = jit::Interpret(*k.jvp, InputsAt(c, e));
    for (size_t s = 0; s < got.size(); ++s) got[s].push_back(y[s]);
  }
  return Compare(k, c, "interpreter", want, got, std::vector<bool>(want.size(), true), 1e-12, 0);
}

// A NaN payload no kernel produces: marks bytes that must stay unwritten.
constexpr uint64_t kCanaryBits = 0x7ff4dead0000beefULL;
double Canary() { return std::bit_cast<double>(kCanaryBits); }
bool IsCanary(double v) { return std::bit_cast<uint64_t>(v) == kCanaryBits; }

Verdict RunCpuDirect(const KernelUnderTest& k, const ShapeCase& c, const Reference& ref,
                     uint64_t variant) {
  std::vector<std::vector<int64_t>> shapes, strides;
  for (const Operand& op : c.inputs) {
    shapes.push_back(op.shape);
    strides.push_back(op.strides);
  }
  absl::StatusOr<jit::BroadcastLayout> layout = jit::MergeBroadcast(shapes, strides, k.name);
  if (!layout.ok()) {
    return {Verdict::kDisagree, absl::StrCat("cpu-direct: MergeBroadcast failed: ", layout.status().ToString())};
  }
  jit::KernelSpec spec = jit::KernelSpec::For(k.jvp, jit::Type::kF64, jit::Target::kCpu, *layout);
  const size_t slots = spec.write.size();
  // Write masks: everything, values only, partials only, or a random subset.
  std::mt19937_64 rng(variant);
  for (size_t s = 0; s < slots; ++s) {
    switch (variant % 4) {
      case 0: spec.write[s] = true; break;
      case 1: spec.write[s] = s < static_cast<size_t>(k.num_outputs); break;
      case 2: spec.write[s] = s >= static_cast<size_t>(k.num_outputs); break;
      default: spec.write[s] = rng() % 2 == 0; break;
    }
  }
  if (std::none_of(spec.write.begin(), spec.write.end(), [](bool b) { return b; })) spec.write[0] = true;
  absl::StatusOr<jit::CompiledCpuKernel> compiled = jit::CompileCpuKernel(spec, nullptr);
  if (!compiled.ok()) {
    return {Verdict::kDisagree, absl::StrCat("cpu-direct: compile failed: ", compiled.status().ToString())};
  }
  const int64_t E = c.num_elements();
  constexpr int64_t kGuard = 8;  // canaries past the end catch overruns
  std::vector<std::vector<double>> out(slots, std::vector<double>(E + kGuard, Canary()));
  std::vector<void*> out_ptrs(slots, nullptr);
  for (size_t s = 0; s < slots; ++s) {
    if (spec.write[s]) out_ptrs[s] = out[s].data();
  }
  const int R = layout->rank();
  std::vector<int64_t> out_strides, in_strides;
  const std::vector<int64_t> contiguous = jit::ContiguousStrides(layout->out_shape);
  for (size_t s = 0; s < slots; ++s) out_strides.insert(out_strides.end(), contiguous.begin(), contiguous.end());
  std::vector<const void*> in_ptrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    in_ptrs.push_back(c.inputs[i].buffer.data() + c.inputs[i].offset);
    in_strides.insert(in_strides.end(), layout->in_strides[i].begin(), layout->in_strides[i].end());
  }
  jit::KernelArgs args{layout->out_shape.data(), in_ptrs.data(), in_strides.data(), out_ptrs.data(),
                       out_strides.data(), 0, 0};
  jit::LaunchCpu(compiled->entry, args, R, jit::LaunchOperands::For(spec));

  std::vector<std::vector<double>> got(slots);
  for (size_t s = 0; s < slots; ++s) {
    const int64_t first_untouched = spec.write[s] ? E : 0;
    for (int64_t e = first_untouched; e < E + kGuard; ++e) {
      if (!IsCanary(out[s][e])) {
        return {Verdict::kDisagree,
                absl::StrCat("cpu-direct: output slot ", s, (spec.write[s] ? " (written)" : " (masked off)"),
                             " has a write at element ", e, " of ", E, "; spec ", spec.Describe()),
                e};
      }
    }
    got[s].assign(out[s].begin(), out[s].begin() + E);
  }
  Verdict v = Compare(k, c, "cpu-direct", AllSlots(ref), got, spec.write, 1e-9, 0);
  if (v.kind == Verdict::kDisagree) absl::StrAppend(&v.detail, "; spec ", spec.Describe());
  return v;
}

std::vector<Array<double>> Views(const ShapeCase& c) {
  std::vector<Array<double>> views;
  for (const Operand& op : c.inputs) {
    const double* data = op.buffer.data() + op.offset;
    views.push_back(Array<double>::view(data, op.shape, op.strides));
  }
  return views;
}

// A destination view with gaps between rows (padded strides), filled with canaries.
struct Destination {
  std::vector<double> buffer;
  Array<double> view;
  std::vector<int64_t> strides;
};
Destination PaddedDestination(const std::vector<int64_t>& shape) {
  Destination d;
  std::vector<int64_t> padded = shape;
  for (int64_t& s : padded) s += 1;
  d.strides = dualcast::detail::ContiguousStrides(padded);
  int64_t extent = 1;
  for (size_t i = 0; i < shape.size(); ++i) extent += std::max<int64_t>(shape[i] - 1, 0) * d.strides[i];
  d.buffer.assign(extent + 4, Canary());
  d.view = Array<double>::view(d.buffer.data(), shape, d.strides);
  return d;
}

Verdict RunRuntimePartials(const KernelUnderTest& k, const ShapeCase& c, const Reference& ref,
                           uint64_t variant) {
  const int N = k.num_inputs, M = k.num_outputs;
  PartialsOptions<double> options;
  if (variant % 3 == 1) options.wrt = {N - 1, 0};  // a subset, out of order
  std::vector<int> wrt = options.wrt;
  if (wrt.empty()) {
    wrt.resize(N);
    std::iota(wrt.begin(), wrt.end(), 0);
  }
  const int J = static_cast<int>(wrt.size());
  // Every third call writes into strided destinations in caller memory.
  std::vector<Destination> dests;
  if (variant % 3 == 2) {
    for (int s = 0; s < M + M * J; ++s) dests.push_back(PaddedDestination(c.out_shape));
    for (int m = 0; m < M; ++m) options.value_out.push_back(dests[m].view);
    for (int p = 0; p < M * J; ++p) options.partial_out.push_back(dests[M + p].view);
  }
  Partials<double> p = partials(k.kernel, Views(c), options);
  std::vector<std::vector<double>> want, got;
  std::vector<int> canonical;  // each slot's output index in the all-inputs jvp
  for (int m = 0; m < M; ++m) {
    want.push_back(ref.values[m]);
    got.push_back(p.value(m).to_vector());
    canonical.push_back(m);
    if (p.value(m).shape() != c.out_shape) {
      return {Verdict::kDisagree, absl::StrCat("runtime-partials: value ", m, " has shape ",
                                               jit::FormatShape(p.value(m).shape()))};
    }
  }
  for (int m = 0; m < M; ++m) {
    for (int jj = 0; jj < J; ++jj) {
      want.push_back(ref.partials[m * N + wrt[jj]]);
      got.push_back(p.d(m, wrt[jj]).to_vector());
      canonical.push_back(M + m * N + wrt[jj]);
    }
  }
  for (Destination& d : dests) {  // the gaps between destination elements stay untouched
    std::vector<bool> inside(d.buffer.size(), false);
    const int64_t E = c.num_elements();
    for (int64_t e = 0; e < E; ++e) {
      int64_t rest = e, addr = 0;
      for (size_t dim = c.out_shape.size(); dim-- > 0;) {
        addr += (rest % c.out_shape[dim]) * d.strides[dim];
        rest /= c.out_shape[dim];
      }
      inside[addr] = true;
    }
    for (size_t a = 0; a < d.buffer.size(); ++a) {
      if (!inside[a] && !IsCanary(d.buffer[a])) {
        return {Verdict::kDisagree,
                absl::StrCat("runtime-partials: a destination view's gap at offset ", a, " was written")};
      }
    }
  }
  Verdict v = Compare(k, c, "runtime-partials", want, got, std::vector<bool>(want.size(), true),
                      1e-9, 0, &canonical);
  if (v.kind != Verdict::kAgree && !options.wrt.empty()) absl::StrAppend(&v.detail, " (wrt {N-1, 0})");
  return v;
}

Verdict RunRuntimeBroadcast(const KernelUnderTest& k, const ShapeCase& c, const Reference& ref,
                            uint64_t variant) {
  std::vector<std::vector<double>> got;
  std::vector<Array<double>> views = Views(c);
  // Every other case: writable copies of the inputs, overwritten with NaN
  // through mutable_data() once the results are made (still pending, unless
  // unfused): the results must keep the values from before the write
  // (runtime/pending_readers.h).
  const bool write_after = (variant / 3) % 2 == 1;
  std::vector<std::vector<double>> buffers;
  if (write_after) {
    buffers.reserve(c.inputs.size());
    views.clear();
    for (const Operand& op : c.inputs) {
      buffers.push_back(op.buffer);
      views.push_back(Array<double>::view(buffers.back().data() + op.offset, op.shape, op.strides));
    }
  }
  std::vector<Array<double>> outs;
  if (variant % 3 == 0) {
    Unfused unfused;  // computed at once, alone
    outs = broadcast_n(k.kernel, views);
  } else {
    outs = broadcast_n(k.kernel, views);
    if (variant % 3 == 2) {
      // Fused with a consumer: + 0.0 is not an identity (-0 + 0 = +0), so it stays a real op.
      for (Array<double>& o : outs) o = o + 0.0;
    }
  }
  if (write_after) {
    for (size_t i = 0; i < views.size(); ++i) {
      views[i].mutable_data();  // the write's notice; then the whole buffer is overwritten
      std::fill(buffers[i].begin(), buffers[i].end(), std::numeric_limits<double>::quiet_NaN());
    }
  }
  for (const Array<double>& o : outs) {
    if (o.shape() != c.out_shape) {
      return {Verdict::kDisagree,
              absl::StrCat("runtime-broadcast: result shape ", jit::FormatShape(o.shape()))};
    }
    got.push_back(o.to_vector());
  }
  return Compare(k, c, write_after ? "runtime-broadcast (inputs written after)" : "runtime-broadcast",
                 ref.values, got, std::vector<bool>(got.size(), true), 1e-9, 0);
}

// Weights W_m (one array of the result shape per output) for the tape's loss.
std::vector<std::vector<double>> LossWeights(const KernelUnderTest& k, const ShapeCase& c,
                                             uint64_t variant) {
  std::mt19937_64 rng(variant * 7919 + 1);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<std::vector<double>> w(k.num_outputs, std::vector<double>(c.num_elements()));
  for (auto& wm : w) {
    for (double& v : wm) v = u(rng);
  }
  return w;
}

// Tape::gradient of sum(Σ_m W_m * y_m) with respect to every input view.
std::vector<std::vector<double>> TapeGradient(const KernelUnderTest& k, const ShapeCase& c,
                                              const std::vector<std::vector<double>>& w,
                                              uint64_t variant) {
  Tape tape(variant % 2 ? PartialsMode::kRecompute : PartialsMode::kCache);
  std::vector<Array<double>> views = Views(c);
  std::vector<Array<double>> outs = broadcast_n(k.kernel, views);
  Array<double> acc;
  for (int m = 0; m < k.num_outputs; ++m) {
    Array<double> term = outs[m] * Array<double>::from(w[m], c.out_shape);
    acc = m == 0 ? term : acc + term;
  }
  Array<double> loss = sum(acc);
  std::vector<Array<double>> grads = tape.gradient(loss, views);
  std::vector<std::vector<double>> g;
  for (const Array<double>& a : grads) g.push_back(a.to_vector());
  return g;
}

Verdict RunTape(const KernelUnderTest& k, const ShapeCase& c, const Reference& ref, uint64_t variant) {
  const int N = k.num_inputs;
  const std::vector<std::vector<double>> w = LossWeights(k, c, variant);
  const std::vector<std::vector<double>> g = TapeGradient(k, c, w, variant);
  for (int j = 0; j < N; ++j) {
    const int64_t n = c.InputSize(j);
    std::vector<double> want(n, 0), scale(n, 0);
    for (int64_t e = 0; e < c.num_elements(); ++e) {
      const int64_t idx = c.InputElement(j, e);
      for (int m = 0; m < k.num_outputs; ++m) {
        const double term = w[m][e] * ref.partials[m * N + j][e];
        want[idx] += term;
        scale[idx] += std::abs(term);
      }
    }
    if (static_cast<int64_t>(g[j].size()) != n) {
      return {Verdict::kDisagree, absl::StrCat("tape: gradient ", j, " has ", g[j].size(),
                                               " elements, input has ", n)};
    }
    for (int64_t idx = 0; idx < n; ++idx) {
      if (std::abs(g[j][idx] - want[idx]) <= 1e-9 * (1 + scale[idx])) continue;
      if (std::isnan(want[idx]) && std::isnan(g[j][idx])) continue;
      if (!std::isfinite(g[j][idx]) && JvpNonFinite(k, c, j)) {
        Verdict v{Verdict::kSkipped, absl::StrCat("tape: d loss / d x", j, "[", idx, "] = ",
                                                  Fmt(g[j][idx]), ", Dual sums say ", Fmt(want[idx]))};
        v.strong_zero = true;
        return v;
      }
      return {Verdict::kDisagree,
              absl::StrCat("tape (", variant % 2 ? "recompute" : "cache", "): d loss / d x", j, "[",
                           idx, "] = ", Fmt(g[j][idx]), ", sum of Dual partials says ", Fmt(want[idx]))};
    }
  }
  return {};
}

double Loss(const KernelUnderTest& k, const ShapeCase& c, const std::vector<std::vector<double>>& w,
            int j, int64_t idx, double value, Trail* trail) {
  double loss = 0;
  for (int64_t e = 0; e < c.num_elements(); ++e) {
    std::vector<double> x = InputsAt(c, e);
    if (c.InputElement(j, e) == idx) x[j] = value;
    std::vector<double> y = EvalTree<double>(k.tree, std::span<const double>(x), trail);
    for (int m = 0; m < k.num_outputs; ++m) loss += w[m][e] * y[m];
  }
  return loss;
}

Verdict RunTapeFd(const KernelUnderTest& k, const ShapeCase& c, uint64_t variant) {
  const std::vector<std::vector<double>> w = LossWeights(k, c, variant);
  const std::vector<std::vector<double>> g = TapeGradient(k, c, w, variant);
  int checked = 0;
  for (int j = 0; j < k.num_inputs; ++j) {
    for (int64_t idx = 0; idx < c.InputSize(j); ++idx) {
      const double v = c.InputValue(j, idx);
      const double h = 1e-6 * std::max(1.0, std::abs(v));
      Trail at, plus, minus;
      Loss(k, c, w, j, idx, v, &at);
      const double lp = Loss(k, c, w, j, idx, v + h, &plus);
      const double lm = Loss(k, c, w, j, idx, v - h, &minus);
      if (plus.facts != at.facts || minus.facts != at.facts) continue;  // a kink within h
      ++checked;
      const double fd = (lp - lm) / (2 * h);
      double scale = 0;
      for (const auto& wm : w) {
        for (double x : wm) scale += std::abs(x);
      }
      if (std::abs(fd - g[j][idx]) <= 1e-5 * (1 + std::abs(g[j][idx])) + 1e-9 * scale) continue;
      if (!std::isfinite(g[j][idx]) && JvpNonFinite(k, c, j)) {
        Verdict v{Verdict::kSkipped, absl::StrCat("tape-fd: d loss / d x", j, "[", idx, "] = ",
                                                  Fmt(g[j][idx]), ", central difference says ", Fmt(fd))};
        v.strong_zero = true;
        return v;
      }
      return {Verdict::kDisagree,
              absl::StrCat("tape-fd (", variant % 2 ? "recompute" : "cache", "): d loss / d x", j, "[",
                           idx, "] = ", Fmt(g[j][idx]), ", central difference (h = ", Fmt(h),
                           ") says ", Fmt(fd))};
    }
  }
  if (checked == 0) return {Verdict::kSkipped, "tape-fd: every element sits within h of a kink"};
  return {};
}

Verdict RunGpu(const KernelUnderTest& k, const ShapeCase& c, const Reference& ref) {
  const std::string reason = GpuSkipReason();
  if (!reason.empty()) return {Verdict::kSkipped, reason};
  // A device exists: run partials on device copies. Until the CUDA backend
  // lands, the runtime refuses device memory with kDevice; that is a skip.
  try {
    std::vector<Array<double>> on_gpu;
    for (const Array<double>& v : Views(c)) on_gpu.push_back(v.copy().to(Device::cuda()));
    Partials<double> p = partials(k.kernel, on_gpu);
    std::vector<std::vector<double>> got;
    for (int m = 0; m < k.num_outputs; ++m) got.push_back(p.value(m).to(Device::cpu()).to_vector());
    for (int m = 0; m < k.num_outputs; ++m) {
      for (int j = 0; j < k.num_inputs; ++j) got.push_back(p.d(m, j).to(Device::cpu()).to_vector());
    }
    return Compare(k, c, "gpu", AllSlots(ref), got, std::vector<bool>(got.size(), true), 1e-9, 0);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kDevice) {
      return {Verdict::kSkipped, absl::StrCat("CUDA device present but not usable yet: ", e.what())};
    }
    throw;
  }
}

}  // namespace

KernelUnderTest MakeKernel(const Tree& tree, const std::string& name) {
  const int M = static_cast<int>(tree.roots.size());
  switch (tree.num_inputs * 10 + M) {
    case 11: return Make<1, 1>(tree, name);
    case 12: return Make<1, 2>(tree, name);
    case 21: return Make<2, 1>(tree, name);
    case 22: return Make<2, 2>(tree, name);
    case 31: return Make<3, 1>(tree, name);
    case 32: return Make<3, 2>(tree, name);
    case 41: return Make<4, 1>(tree, name);
    case 42: return Make<4, 2>(tree, name);
    default:
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat("difftest: unsupported kernel shape ", tree.num_inputs, " inputs x ", M,
                               " outputs"));
  }
}

Reference ComputeReference(const KernelUnderTest& k, const ShapeCase& c) {
  const int N = k.num_inputs, M = k.num_outputs;
  const int64_t E = c.num_elements();
  Reference ref;
  ref.values.assign(M, std::vector<double>(E));
  ref.partials.assign(M * N, std::vector<double>(E));
  for (int64_t e = 0; e < E; ++e) {
    const std::vector<D> y = DualAt(k, InputsAt(c, e));
    for (int m = 0; m < M; ++m) {
      ref.values[m][e] = y[m].value();
      for (int j = 0; j < N; ++j) ref.partials[m * N + j][e] = y[m].partial(j);
    }
  }
  return ref;
}

std::string GpuSkipReason() {
  static const std::string reason = [] {
    Device cuda = Device::cuda();
    if (cuda.available()) return std::string();
    std::string why = cuda.unavailable_reason();
    if (why.rfind("no CUDA device", 0) != 0) why = "no CUDA device: " + why;
    return why;
  }();
  return reason;
}

Verdict RunExecutor(Executor e, const KernelUnderTest& k, const ShapeCase& c, const Reference& ref,
                    uint64_t variant) {
  const bool specials = CaseHasSpecials(c);
  try {
    switch (e) {
      case Executor::kInterpreter: return RunInterpreter(k, c, ref);
      case Executor::kCpuDirect: return RunCpuDirect(k, c, ref, variant);
      case Executor::kRuntimePartials: return RunRuntimePartials(k, c, ref, variant);
      case Executor::kRuntimeBroadcast: return RunRuntimeBroadcast(k, c, ref, variant);
      case Executor::kTape:
        if (specials) return {Verdict::kSkipped, "tape: non-finite or huge inputs"};
        return RunTape(k, c, ref, variant);
      case Executor::kTapeFd:
        if (specials) return {Verdict::kSkipped, "tape-fd: non-finite or huge inputs"};
        return RunTapeFd(k, c, variant);
      case Executor::kGpu: return RunGpu(k, c, ref);
    }
  } catch (const Error& err) {
    return {Verdict::kDisagree,
            absl::StrCat(ExecutorName(e), ": threw Error(", ErrorKindName(err.kind()), "): ", err.what())};
  }
  return {};
}

}  // namespace dualcast::difftest
