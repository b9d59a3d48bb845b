// The runtime run of a random public-surface program, its check against the reference, minimisation and reproducers.
#include "differential/surface.h"
#include "differential/surface_math.h"
#include "differential/surface_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dualcast/dualcast.hpp"

namespace dualcast::surface {
namespace {

// Leaf and weight values as the program's element type holds them.
template <class T>
std::vector<T> ValuesAs(uint64_t seed, int64_t n) {
  const std::vector<double> v = Values(seed, n);
  return std::vector<T>(v.begin(), v.end());
}
template <class T>
std::vector<double> ToDouble(const Array<T>& a) {
  const std::vector<T> v = a.to_vector();
  return std::vector<double>(v.begin(), v.end());
}

const Kernel& UnaryKernel() {
  static const Kernel k = kernel("surface_u", kUnaryFn);
  return k;
}
const Kernel& BinaryKernel() {
  static const Kernel k = kernel("surface_b", kBinaryFn);
  return k;
}
const Kernel& PairKernel() {
  static const Kernel k = kernel("surface_pair", kPairFn);
  return k;
}

// ---- the runtime run --------------------------------------------------------

struct Outcome {
  bool threw = false;
  std::string message;
  bool documented = false;  // the error is one the tape documents for unreachable inputs
  bool in_place = false;    // the error names a write in place (assign or mutable_data)
  std::vector<std::vector<double>> grads;
  double value = NAN;  // value_and_gradient's loss
};

struct RuntimeRun {
  double loss = 0;
  std::vector<Outcome> outcomes;  // per request
};

template <class T>
RuntimeRun RunRuntimeAs(const Program& p) {
  using D = Array<T>;
  const Device device = p.cuda ? Device::cuda() : Device::cpu();
  std::vector<D> s;
  std::vector<std::unique_ptr<std::vector<T>>> buffers;
  std::map<int, D> second_outputs;  // kPair slot -> its output 1
  std::optional<Tape> tape, tape2;  // tape2 is destroyed first
  for (size_t i = 0; i <= p.ops.size(); ++i) {
    if (static_cast<int>(i) == p.tape_at) {
      tape.emplace(std::array{PartialsMode::kCache, PartialsMode::kRecompute,
                              PartialsMode::kAuto}[static_cast<size_t>(p.mode)],
                   64);
    }
    if (static_cast<int>(i) == p.tape2_at) tape2.emplace();
    if (static_cast<int>(i) == p.clear_at) tape->clear();
    if (i == p.ops.size()) break;
    const Op& op = p.ops[i];
    const D* a = op.a >= 0 ? &s[static_cast<size_t>(op.a)] : nullptr;
    const D* b = op.b >= 0 ? &s[static_cast<size_t>(op.b)] : nullptr;
    std::vector<int> axes = op.axes;
    if (!op.axes_list && op.axis >= 0) axes = {op.axis};
    const bool all_axes = !op.axes_list && op.axis < 0;  // the call without axes
    switch (op.kind) {
      case Op::kLeaf: s.push_back(D::from(ValuesAs<T>(op.seed, SizeOf(op.shape)), op.shape, device)); break;
      case Op::kView:
        if (p.cuda) {  // device memory cannot view the host's
          s.push_back(D::from(ValuesAs<T>(op.seed, SizeOf(op.shape)), op.shape, device));
          break;
        }
        buffers.push_back(std::make_unique<std::vector<T>>(ValuesAs<T>(op.seed, SizeOf(op.shape))));
        s.push_back(D::view(buffers.back()->data(), op.shape));
        break;
      case Op::kScale: s.push_back(*a * op.number + op.number2); break;
      case Op::kUnary: s.push_back(broadcast(UnaryKernel(), *a)); break;
      case Op::kAdd: s.push_back(*a + *b); break;
      case Op::kMul: s.push_back(*a * *b); break;
      case Op::kBinary: s.push_back(broadcast(BinaryKernel(), *a, *b)); break;
      case Op::kPair: {
        std::vector<D> outs = broadcast_n(PairKernel(), *a, *b);
        second_outputs[static_cast<int>(s.size())] = outs[1];  // held from the start, as a user's would be
        s.push_back(outs[0]);
        break;
      }
      case Op::kPairSecond: s.push_back(second_outputs.at(op.pair)); break;
      case Op::kReshape: s.push_back(op.free_fn ? reshape(*a, op.shape) : a->reshape(op.shape)); break;
      case Op::kTranspose: s.push_back(op.free_fn ? transpose(*a, op.perm) : a->transpose(op.perm)); break;
      case Op::kCopy: s.push_back(a->copy()); break;
      case Op::kSum: s.push_back(all_axes ? sum(*a) : sum(*a, axes, op.keepdims)); break;
      case Op::kMean: s.push_back(all_axes ? mean(*a) : mean(*a, axes, op.keepdims)); break;
      case Op::kMatmul: s.push_back(matmul(*a, *b)); break;
      case Op::kReduce: {
        // No axis: the call without axes (every axis); an empty list would reduce over none.
        using Fn = D (*)(const D&, const std::vector<int>*, bool);
        static constexpr Fn kFns[] = {
            [](const D& x, const std::vector<int>* ax, bool k) { return ax ? max(x, *ax, k) : max(x); },
            [](const D& x, const std::vector<int>* ax, bool k) { return ax ? min(x, *ax, k) : min(x); },
            [](const D& x, const std::vector<int>* ax, bool k) { return ax ? prod(x, *ax, k) : prod(x); },
            [](const D& x, const std::vector<int>* ax, bool k) {
              return ax ? logsumexp(x, *ax, k) : logsumexp(x);
            },
            [](const D& x, const std::vector<int>* ax, bool k) { return ax ? var(x, *ax, k) : var(x); },
            [](const D& x, const std::vector<int>* ax, bool k) { return ax ? norm(x, *ax, k) : norm(x); }};
        s.push_back(kFns[op.which](*a, all_axes ? nullptr : &axes, !all_axes && op.keepdims));
        break;
      }
      case Op::kSlice: {
        std::vector<Slice> dims;
        for (const auto& [start, stop, step] : op.slices) dims.push_back(Slice{start, stop, step});
        s.push_back(slice(*a, dims));
        break;
      }
      case Op::kConcat:
        s.push_back(op.free_fn ? concat(std::vector<D>{*a, *b}, op.axis) : concat({*a, *b}, op.axis));
        break;
      case Op::kStack:
        s.push_back(op.free_fn ? stack(std::vector<D>{*a, *b}, op.axis) : stack({*a, *b}, op.axis));
        break;
      case Op::kSub: s.push_back(b ? *a - *b : op.number - *a); break;
      case Op::kWhere: s.push_back(where(*a > *b, *a, s[static_cast<size_t>(op.c)])); break;
      case Op::kMath: s.push_back(MathOf(op.which, *a)); break;
      case Op::kArgReduce:
        if (op.axis < 0) {
          s.push_back(op.which == 0 ? argmax(*a) : argmin(*a));
        } else {
          s.push_back(op.which == 0 ? argmax(*a, op.axis, op.keepdims) : argmin(*a, op.axis, op.keepdims));
        }
        break;
      case Op::kMath2:
        s.push_back(Math2Of(op.which, *a, *b, op.c >= 0 ? s[static_cast<size_t>(op.c)] : *a));
        break;
      case Op::kClip:
        s.push_back(b ? clip(*a, *b, s[static_cast<size_t>(op.c)]) : clip(*a, op.number, op.number2));
        break;
      case Op::kAssign: {
        D target = s[static_cast<size_t>(op.a)];
        const std::vector<T> values = ValuesAs<T>(op.seed, target.size());
        if (b != nullptr) {
          target.assign(*b);
        } else if (op.free_fn && !p.cuda) {  // a device pointer cannot be written from here
          T* data = target.mutable_data();
          std::copy(values.begin(), values.end(), data);
        } else {
          target.assign(values);
        }
        s.push_back(target);  // the same handle
        break;
      }
      case Op::kEval: a->eval(); break;
    }
  }
  D loss;
  for (size_t t = 0; t < p.loss_slots.size(); ++t) {
    const D& x = s[static_cast<size_t>(p.loss_slots[t])];
    D term = sum(x * D::from(ValuesAs<T>(WeightSeed(t), x.size()), x.shape(), device));
    loss = t == 0 ? term : loss + term;
  }
  RuntimeRun run;
  for (const Request& r : p.requests) {
    Outcome o;
    std::vector<D> wrt;
    for (int slot : r.slots) wrt.push_back(s[static_cast<size_t>(slot)]);
    std::vector<D> buffers;
    for (const D& w : wrt) buffers.push_back(D::ones(w.shape(), device));
    Tape& on = r.on_second ? *tape2 : *tape;
    try {
      if (r.accumulate) {
        on.accumulate_gradient(loss, wrt, buffers, {.allow_unused = r.allow_unused});
        for (const D& b : buffers) {
          std::vector<double> g = ToDouble(b);
          for (double& x : g) x -= 1;
          o.grads.push_back(g);
        }
      } else if (r.with_value) {
        ValueAndGradient<T> vg = on.value_and_gradient(loss, wrt, {.allow_unused = r.allow_unused});
        o.value = vg.value.item();
        for (const D& g : vg.gradients) o.grads.push_back(ToDouble(g));
      } else {
        for (const D& g : on.gradient(loss, wrt, {.allow_unused = r.allow_unused})) {
          o.grads.push_back(ToDouble(g));
        }
      }
    } catch (const Error& e) {
      o.threw = true;
      o.message = e.what();
      o.in_place = o.message.find("in place") != std::string::npos ||
                   o.message.find("mutable_data") != std::string::npos;
      o.documented = e.kind() == ErrorKind::kInvalidArgument &&
                     (o.message.find("does not reach the loss") != std::string::npos ||
                      o.message.find("but also through") != std::string::npos ||
                      o.message.find("reaches the loss only through '") != std::string::npos);
      for (const D& b : buffers) {  // on an error nothing is written
        for (double x : ToDouble(b)) {
          if (x != 1.0) {
            o.documented = false;
            o.message += " [and accumulate_gradient wrote into a buffer before failing]";
          }
        }
      }
    }
    run.outcomes.push_back(std::move(o));
  }
  run.loss = loss.item();
  return run;
}

RuntimeRun RunRuntime(const Program& p) { return p.f32 ? RunRuntimeAs<float>(p) : RunRuntimeAs<double>(p); }

// ---- checking one program ----------------------------------------------------

// The first disagreement of request `q` (empty when it matches), counting into `stats`.
std::string CheckRequest(const Program& p, const Model& first, const Model& second, const RuntimeRun& run,
                         size_t q, const std::vector<H>& slots, bool ties, Stats* stats) {
  const Request& r = p.requests[q];
  const Model& m = r.on_second ? second : first;
  const Outcome& o = run.outcomes[q];
  // A write in place may make the sweep refuse what it kept (documented, and
  // the implementation decides what it keeps): accepted as long as it says so.
  if (m.write_may_refuse && o.threw && o.in_place) {
    if (stats) ++stats->in_place_errors;
    return "";
  }
  auto variable = [&](int slot) { return m.variable[static_cast<size_t>(slot)]; };
  bool expect_error = false;
  std::string why;
  for (size_t i = 0; i < r.slots.size(); ++i) {
    auto [taped, untaped] = Reach(p, m, variable(r.slots[i]));
    if (untaped) {
      expect_error = true;
      why = absl::StrCat("slot ", r.slots[i], " reaches the loss through an op computed before the tape");
    } else if (!taped && !r.allow_unused) {
      expect_error = true;
      why = absl::StrCat("slot ", r.slots[i], " does not reach the loss");
    }
  }
  if (expect_error) {
    if (stats) ++stats->errors_expected;
    if (!o.threw) return absl::StrCat("expected an Error (", why, ") but got a gradient");
    if (!o.documented) return absl::StrCat("expected the documented Error (", why, "), got: ", o.message);
    return "";
  }
  if (o.threw) return absl::StrCat("expected a gradient, got Error: ", o.message);
  if (r.with_value && !(std::abs(o.value - run.loss) <= (p.f32 ? 1e-6 : 1e-14) * (1 + std::abs(run.loss)))) {
    return absl::StrCat("value_and_gradient's value ", o.value, ", the loss ", run.loss);
  }
  for (size_t i = 0; i < r.slots.size(); ++i) {
    const int slot = variable(r.slots[i]);
    const H& x = slots[static_cast<size_t>(slot)];
    if (o.grads[i].size() != x.v.size()) return absl::StrCat("gradient ", i + 1, " has the wrong size");
    const double h = 1e-6, base = HostLoss(p);
    for (size_t k = 0; k < x.v.size(); ++k) {
      auto at = [&](double delta) { return HostLoss(p, nullptr, slot, static_cast<int64_t>(k), delta); };
      const double up = at(h), down = at(-h), up2 = at(2 * h), down2 = at(-2 * h);
      if (stats) ++stats->elements;
      // Central differences at h and 2h (they differ where the loss jumps
      // within +-2h), and second-order one-sided ones (they differ at a kink,
      // also one whose jump in slope is far below 1e-3). Their errors are
      // O(h^2) plus the roundoff of a large loss, `noise`.
      const double fd = (up - down) / (2 * h), fd2 = (up2 - down2) / (4 * h);
      const double fwd = (4 * up - up2 - 3 * base) / (2 * h), bwd = (3 * base - 4 * down + down2) / (2 * h);
      const double noise =
          16 * 0x1p-52 * std::max({std::abs(base), std::abs(up), std::abs(down), std::abs(up2), std::abs(down2)}) / h;
      if (std::abs(fd - fd2) > 1e-6 * (1 + std::abs(fd)) + noise ||
          std::abs(fwd - bwd) > 1e-6 * (1 + std::abs(fwd) + std::abs(bwd)) + noise) {
        if (stats) ++stats->skipped;  // a branch boundary within +-2h
        continue;
      }
      const double g = o.grads[i][k];
      if (!(std::abs(g - fd) <= (p.f32 ? 2e-3 : 1e-5) * (1 + std::abs(fd)) + noise)) {
        if (ties) {  // the data sit on a kink that finite differences do not see (HostLoss)
          if (stats) ++stats->tie_excused;
          continue;
        }
        return absl::StrCat("d loss / d slot ", slot, " [", k, "]: tape ", g, ", finite differences ", fd);
      }
    }
  }
  return "";
}

// Every failing request's message (empty when all match).
std::vector<std::string> Failures(const Program& p, Stats* stats) {
  std::vector<std::string> out;
  RuntimeRun run;
  try {
    run = RunRuntime(p);
  } catch (const std::exception& e) {
    return {absl::StrCat("the program threw: ", e.what())};
  }
  std::vector<H> slots;
  bool ties = false;
  const double host = HostLoss(p, &slots, -1, 0, 0, &ties);
  if (!(std::abs(run.loss - host) <= (p.f32 ? 1e-4 : 1e-12) * (1 + std::abs(host)))) {
    if (!ties) {
      out.push_back(absl::StrCat("loss ", run.loss, ", reference ", host));
    } else if (stats) {
      ++stats->tie_excused;  // a branch the runtime's rounding may decide the other way
    }
  }
  const Model m = BuildModel(p);
  const Model m2 = p.tape2_at >= 0 ? BuildModel(p, p.tape2_at) : m;  // the nested tape's record
  for (size_t q = 0; q < p.requests.size(); ++q) {
    if (stats) ++stats->cases;
    std::string f = CheckRequest(p, m, m2, run, q, slots, ties, stats);
    if (f.empty()) {
      if (stats) ++stats->matched;
    } else {
      out.push_back(absl::StrCat("request ", q, ": ", f));
    }
  }
  return out;
}

// Drops op `i` (and everything that reads what it made), remapping slots.
std::optional<Program> Without(const Program& p, size_t i) {
  Program q;
  std::vector<int> remap;  // old slot -> new slot or -1
  int old_slot = 0, kept_before_tape = 0, kept_before_tape2 = 0, kept_before_clear = 0;
  for (size_t j = 0; j < p.ops.size(); ++j) {
    Op op = p.ops[j];
    bool drop = j == i;
    if (op.a >= 0 && remap[static_cast<size_t>(op.a)] < 0) drop = true;
    if (op.b >= 0 && remap[static_cast<size_t>(op.b)] < 0) drop = true;
    if (op.c >= 0 && remap[static_cast<size_t>(op.c)] < 0) drop = true;
    if (op.pair >= 0 && remap[static_cast<size_t>(op.pair)] < 0) drop = true;
    if (MakesSlot(op)) {
      remap.push_back(drop ? -1 : static_cast<int>(std::count_if(q.ops.begin(), q.ops.end(), MakesSlot)));
      ++old_slot;
    }
    if (drop) continue;
    if (static_cast<int>(j) < p.tape_at) ++kept_before_tape;
    if (static_cast<int>(j) < p.tape2_at) ++kept_before_tape2;
    if (static_cast<int>(j) < p.clear_at) ++kept_before_clear;
    if (op.a >= 0) op.a = remap[static_cast<size_t>(op.a)];
    if (op.b >= 0) op.b = remap[static_cast<size_t>(op.b)];
    if (op.c >= 0) op.c = remap[static_cast<size_t>(op.c)];
    if (op.pair >= 0) op.pair = remap[static_cast<size_t>(op.pair)];
    q.ops.push_back(op);
  }
  q.tape_at = kept_before_tape;
  q.tape2_at = p.tape2_at < 0 ? -1 : kept_before_tape2;
  q.clear_at = p.clear_at < 0 ? -1 : kept_before_clear;
  q.mode = p.mode;
  q.f32 = p.f32;
  q.cuda = p.cuda;
  for (int s : p.loss_slots) {
    if (remap[static_cast<size_t>(s)] >= 0) q.loss_slots.push_back(remap[static_cast<size_t>(s)]);
  }
  for (const Request& r : p.requests) {
    Request nr = r;
    nr.slots.clear();
    for (int s : r.slots) {
      if (remap[static_cast<size_t>(s)] >= 0) nr.slots.push_back(remap[static_cast<size_t>(s)]);
    }
    if (nr.slots.empty()) return std::nullopt;
    q.requests.push_back(nr);
  }
  if (q.loss_slots.empty()) return std::nullopt;
  return q;
}

Program Minimise(Program p) {
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = p.ops.size(); i-- > 0;) {
      std::optional<Program> q = Without(p, i);
      if (q && !Failures(*q, nullptr).empty()) {
        p = std::move(*q);
        progress = true;
      }
    }
    for (size_t t = 0; t < p.loss_slots.size() && p.loss_slots.size() > 1; ++t) {
      Program q = p;
      q.loss_slots.erase(q.loss_slots.begin() + static_cast<long>(t));
      if (!Failures(q, nullptr).empty()) {
        p = std::move(q);
        progress = true;
      }
    }
    for (size_t s = 0; s < p.requests[0].slots.size() && p.requests[0].slots.size() > 1; ++s) {
      Program q = p;
      q.requests[0].slots.erase(q.requests[0].slots.begin() + static_cast<long>(s));
      if (!Failures(q, nullptr).empty()) {
        p = std::move(q);
        progress = true;
      }
    }
  }
  return p;
}

std::string ShapeText(const Shape& s) { return absl::StrCat("{", absl::StrJoin(s, ", "), "}"); }

}  // namespace

std::string Stats::Summary() const {
  return absl::StrCat(programs, " programs, ", cases, " gradient cases (", errors_expected,
                      " expected to raise the documented Error), ", elements, " gradient elements vs "
                      "finite differences (", skipped, " skipped at branch boundaries, ", tie_excused,
                      " mismatches excused: the data tie at a branch or kink), ", in_place_errors,
                      " Errors naming a write in place, ", failures, " failures");
}

std::string Describe(const Program& p) {
  std::string out = p.f32 ? "  using D = dc::Array<float>;  // Values() rounded to float\n" : "";
  if (p.cuda) out += "  // every array on Device::cuda() (D::view: a copy there)\n";
  int slot = 0;
  for (size_t i = 0; i <= p.ops.size(); ++i) {
    if (static_cast<int>(i) == p.tape_at) {
      out += std::array<const char*, 3>{"  dc::Tape tape;\n", "  dc::Tape tape(dc::PartialsMode::kRecompute);\n",
                                        "  dc::Tape tape(dc::PartialsMode::kAuto, 64);\n"}[static_cast<size_t>(p.mode)];
    }
    if (static_cast<int>(i) == p.tape2_at) out += "  dc::Tape tape2;  // nested\n";
    if (static_cast<int>(i) == p.clear_at) out += "  tape.clear();\n";
    if (i == p.ops.size()) break;
    const Op& op = p.ops[i];
    const std::string a = absl::StrCat("s", op.a), b = absl::StrCat("s", op.b), c = absl::StrCat("s", op.c);
    const std::string axes =
        op.axes_list ? absl::StrCat(", {", absl::StrJoin(op.axes, ", "), "}, ", op.keepdims ? "true" : "false")
        : op.axis < 0 ? ""
                      : absl::StrCat(", {", op.axis, "}, ", op.keepdims ? "true" : "false");
    std::string e;
    switch (op.kind) {
      case Op::kLeaf: e = absl::StrCat("D::from(Values(", op.seed, "), ", ShapeText(op.shape), ")"); break;
      case Op::kView: e = absl::StrCat("D::view(buffer(Values(", op.seed, ")), ", ShapeText(op.shape), ")"); break;
      case Op::kScale: e = absl::StrCat(a, " * ", op.number, " + ", op.number2); break;
      case Op::kUnary: e = absl::StrCat("broadcast(u, ", a, ")"); break;
      case Op::kAdd: e = absl::StrCat(a, " + ", b); break;
      case Op::kMul: e = absl::StrCat(a, " * ", b); break;
      case Op::kBinary: e = absl::StrCat("broadcast(k2, ", a, ", ", b, ")"); break;
      case Op::kPair:
        out += absl::StrCat("  std::vector<D> p", slot, " = broadcast_n(k2n, ", a, ", ", b, ");\n");
        e = absl::StrCat("p", slot, "[0]");
        break;
      case Op::kPairSecond: e = absl::StrCat("p", op.pair, "[1]"); break;
      case Op::kReshape:
        e = op.free_fn ? absl::StrCat("reshape(", a, ", ", ShapeText(op.shape), ")")
                       : absl::StrCat(a, ".reshape(", ShapeText(op.shape), ")");
        break;
      case Op::kTranspose:
        e = op.free_fn ? absl::StrCat("transpose(", a, ", {", absl::StrJoin(op.perm, ", "), "})")
                       : absl::StrCat(a, ".transpose({", absl::StrJoin(op.perm, ", "), "})");
        break;
      case Op::kCopy: e = absl::StrCat(a, ".copy()"); break;
      case Op::kSum:
      case Op::kMean:
        e = absl::StrCat(op.kind == Op::kSum ? "sum(" : "mean(", a, axes, ")");
        break;
      case Op::kMatmul: e = absl::StrCat("matmul(", a, ", ", b, ")"); break;
      case Op::kReduce:
        e = absl::StrCat(kReduceNames[op.which], "(", a, axes, ")");
        break;
      case Op::kSlice: {
        std::vector<std::string> dims;
        for (const auto& [start, stop, step] : op.slices) {
          dims.push_back(absl::StrCat("{", start, ", ", stop == Slice::kEnd ? "Slice::kEnd" : absl::StrCat(stop),
                                      ", ", step, "}"));
        }
        e = absl::StrCat("slice(", a, ", {", absl::StrJoin(dims, ", "), "})");
        break;
      }
      case Op::kConcat:
      case Op::kStack:
        e = absl::StrCat(op.kind == Op::kConcat ? "concat(" : "stack(",
                         op.free_fn ? "std::vector<D>{" : "{", a, ", ", b, "}, ", op.axis, ")");
        break;
      case Op::kSub: e = op.b >= 0 ? absl::StrCat(a, " - ", b) : absl::StrCat(op.number, " - ", a); break;
      case Op::kWhere: e = absl::StrCat("where(", a, " > ", b, ", ", a, ", ", c, ")"); break;
      case Op::kMath: e = MathText(MathPattern(op.which), a); break;
      case Op::kMath2: e = MathText(Math2Pattern(op.which), a, b, c); break;
      case Op::kArgReduce:
        e = absl::StrCat(op.which == 0 ? "argmax(" : "argmin(", a,
                         op.axis < 0 ? "" : absl::StrCat(", ", op.axis, ", ", op.keepdims ? "true" : "false"), ")");
        break;
      case Op::kClip:
        e = op.b >= 0 ? absl::StrCat("clip(", a, ", ", b, ", ", c, ")")
                      : absl::StrCat("clip(", a, ", ", op.number, ", ", op.number2, ")");
        break;
      case Op::kEval: e = absl::StrCat(a, ".eval()"); break;
      case Op::kAssign:
        out += op.b >= 0    ? absl::StrCat("  ", a, ".assign(", b, ");\n")
               : op.free_fn ? absl::StrCat("  std::ranges::copy(Values(", op.seed, "), ", a, ".mutable_data());\n")
                            : absl::StrCat("  ", a, ".assign(Values(", op.seed, "));\n");
        e = a;  // the same handle
        break;
    }
    out += MakesSlot(op) ? absl::StrCat("  D s", slot++, " = ", e, ";\n") : absl::StrCat("  ", e, ";\n");
  }
  std::vector<std::string> terms;
  for (size_t t = 0; t < p.loss_slots.size(); ++t) {
    terms.push_back(absl::StrCat("sum(s", p.loss_slots[t], " * W", t, ")"));
  }
  absl::StrAppend(&out, "  D loss = ", absl::StrJoin(terms, " + "), ";\n");
  for (const Request& r : p.requests) {
    std::vector<std::string> names;
    for (int s : r.slots) names.push_back(absl::StrCat("s", s));
    absl::StrAppend(&out,
                    r.on_second ? "  tape2." : "  tape.",
                    r.accumulate   ? "accumulate_gradient(loss, {"
                    : r.with_value ? "value_and_gradient(loss, {"
                                   : "gradient(loss, {",
                    absl::StrJoin(names, ", "), "}", r.accumulate ? ", buffers_of_ones" : "",
                    r.allow_unused ? ", {.allow_unused = true}" : "", ");\n");
  }
  return out;
}

void Check(const Program& p, Stats& stats) {
  ++stats.programs;
  std::vector<std::string> failures = Failures(p, &stats);
  if (failures.empty()) return;
  ++stats.failures;
  // Minimise the first failing request alone.
  Program one = p;
  size_t q = 0;
  for (size_t i = 0; i < p.requests.size(); ++i) {
    Program t = p;
    t.requests = {p.requests[i]};
    if (!Failures(t, nullptr).empty()) {
      one = t;
      q = i;
      break;
    }
  }
  one = Minimise(one);
  std::vector<std::string> why = Failures(one, nullptr);
  stats.reports.push_back(absl::StrCat("program seed ", p.seed, ": ", failures[0],
                                       "\nminimised reproducer (request ", q, "):\n", Describe(one),
                                       "  // ", why.empty() ? "(does not fail alone)" : why[0], "\n"));
}

}  // namespace dualcast::surface
