// The benchmark's implementations: the hand-written loop and dualcast's three ways (fused, recompute, where).
#include "bench/hmlstm/implementations.h"

#include <optional>

#include <dualcast/dualcast.hpp>

#include "bench/hmlstm/handwritten.h"

namespace dualcast::bench {

namespace {

class Handwritten : public Implementation {
 public:
  Handwritten(Variant v, HandMath math) : variant_(v), math_(math) {}
  std::string name() const override {
    return math_ == HandMath::kFast ? "handwritten" : "handwritten-dcmath";
  }
  void Prepare(const Problem& p) override {
    p_ = &p;
    out_ = Results{};
  }
  void Run() override {
    if (variant_ == Variant::kPaper) HandwrittenPaper(*p_, out_, math_);
    else HandwrittenFull(*p_, out_, math_);
  }
  Results Collect() override { return out_; }

 private:
  Variant variant_;
  HandMath math_;
  const Problem* p_ = nullptr;
  Results out_;
};

namespace dc = dualcast;

Kernel Cell(bool fast = false) { return fast ? HmlstmCellFast() : HmlstmCell(); }

// Zero-copy read-only views of the problem's buffers.
struct Inputs {
  dc::Array<float> z, zb, c, f, i, g, cbar;
  explicit Inputs(const Problem& p) {
    const dc::Shape nn = {p.n, p.n};
    z = dc::Array<float>::view(static_cast<const float*>(p.z.data()), p.flag_shape());
    zb = dc::Array<float>::view(static_cast<const float*>(p.zb.data()), p.flag_shape());
    c = dc::Array<float>::view(static_cast<const float*>(p.c_prev.data()), nn);
    f = dc::Array<float>::view(static_cast<const float*>(p.f.data()), nn);
    i = dc::Array<float>::view(static_cast<const float*>(p.i.data()), nn);
    g = dc::Array<float>::view(static_cast<const float*>(p.g.data()), nn);
    cbar = dc::Array<float>::view(static_cast<const float*>(p.cbar.data()), nn);
  }
  std::vector<dc::Array<float>> all() const { return {z, zb, c, f, i, g}; }
};

// Paper variant, mixed mode: one kernel writing the four partial arrays into
// preallocated outputs (the value is not stored).
class DualcastPartials : public Implementation {
 public:
  explicit DualcastPartials(bool fast = false) : fast_(fast) {}
  std::string name() const override { return fast_ ? "dualcast-fastmath" : "dualcast-fused"; }
  void Prepare(const Problem& p) override {
    in_ = std::make_unique<Inputs>(p);
    options_ = dc::PartialsOptions<float>{};
    options_.wrt = {2, 3, 4, 5};
    options_.values = false;
    for (int k = 0; k < 4; ++k) options_.partial_out.push_back(dc::Array<float>::zeros({p.n, p.n}));
  }
  void Run() override { dc::partials(Cell(fast_), in_->all(), options_); }
  Results Collect() override {
    Results r;
    r.d_cprev = options_.partial_out[0].to_vector();
    r.d_f = options_.partial_out[1].to_vector();
    r.d_i = options_.partial_out[2].to_vector();
    r.d_g = options_.partial_out[3].to_vector();
    return r;
  }

 private:
  bool fast_;
  std::unique_ptr<Inputs> in_;
  dc::PartialsOptions<float> options_;
};

// Full variant through the tape: value c and the gradients of sum(cbar .* c)
// with respect to all six inputs, in cache or recompute mode, or (no mode:
// the `dualcast` row) whatever a default-constructed Tape picks by itself.
class DualcastTape : public Implementation {
 public:
  explicit DualcastTape(std::optional<dc::PartialsMode> mode, bool fast = false)
      : mode_(mode), fast_(fast) {}
  std::string name() const override {
    if (fast_) return "dualcast-fastmath";
    if (!mode_) return "dualcast";
    return *mode_ == dc::PartialsMode::kRecompute ? "dualcast-recompute" : "dualcast-fused";
  }
  void Prepare(const Problem& p) override { in_ = std::make_unique<Inputs>(p); }
  void Run() override {
    Release(c_, grads_);
    std::optional<dc::Tape> tape;
    if (mode_) tape.emplace(*mode_);
    else tape.emplace();
    c_ = dc::broadcast(Cell(fast_), in_->z, in_->zb, in_->c, in_->f, in_->i, in_->g);
    // The loss handed over as a temporary: nobody reads it, so the kernel
    // leaves it out (Tape::gradient(Array&&)), as the hand-written loop does;
    // so is the temporary c * cbar, released by sum (broadcast.hpp).
    grads_ = tape->gradient(dc::sum(c_ * in_->cbar), in_->all());
  }
  Results Collect() override { return Unpack(c_, grads_); }

  // The last call's results go before the next call starts, as in a training
  // step whose gradients live inside the step, and as the hand-written loop
  // overwrites its outputs in place: the new results reuse the same (cache-
  // warm) blocks. Holding them would keep a second set of outputs live (80 MB
  // at n = 2048): measured 1.35-1.4x slower in the rows layout there
  // (2026-11-28, 2-core Xeon with a 480 MB L3).
  static void Release(dc::Array<float>& c, std::vector<dc::Array<float>>& grads) {
    c = dc::Array<float>();
    grads.clear();
  }

  static Results Unpack(const dc::Array<float>& c, const std::vector<dc::Array<float>>& g) {
    Results r;
    r.c = c.to_vector();
    r.d_z = g[0].to_vector();
    r.d_zb = g[1].to_vector();
    r.d_cprev = g[2].to_vector();
    r.d_f = g[3].to_vector();
    r.d_i = g[4].to_vector();
    r.d_g = g[5].to_vector();
    return r;
  }

 private:
  std::optional<dc::PartialsMode> mode_;
  bool fast_;
  std::unique_ptr<Inputs> in_;
  dc::Array<float> c_;
  std::vector<dc::Array<float>> grads_;
};

// The pure reverse-mode comparator (what TF/JAX/PyTorch users write): unfused
// primitives, every branch computed everywhere, `where` to choose, one tape
// node per primitive.
class ReverseWhere : public Implementation {
 public:
  explicit ReverseWhere(Variant v) : variant_(v) {}
  std::string name() const override { return "reverse-where"; }
  void Prepare(const Problem& p) override { in_ = std::make_unique<Inputs>(p); }
  void Run() override {
    DualcastTape::Release(c_, grads_);
    dc::Tape tape;
    dc::Unfused unfused;
    const Inputs& x = *in_;
    dc::Array<float> si = dc::sigmoid(x.i), tg = dc::tanh(x.g), sf = dc::sigmoid(x.f);
    dc::Array<float> flush = si * tg;
    dc::Array<float> update = sf * x.c + flush;
    c_ = dc::where(x.z == 1.0f, flush, dc::where(x.zb == 0.0f, x.c, update));
    dc::Array<float> loss = variant_ == Variant::kFull ? dc::sum(c_ * x.cbar) : dc::sum(c_);
    grads_ = tape.gradient(loss, x.all());
  }
  Results Collect() override {
    if (variant_ == Variant::kFull) return DualcastTape::Unpack(c_, grads_);
    Results r;
    r.d_cprev = grads_[2].to_vector();
    r.d_f = grads_[3].to_vector();
    r.d_i = grads_[4].to_vector();
    r.d_g = grads_[5].to_vector();
    return r;
  }

 private:
  Variant variant_;
  std::unique_ptr<Inputs> in_;
  dc::Array<float> c_;
  std::vector<dc::Array<float>> grads_;
};

}  // namespace

// The cell exactly as HMLSTM.md states it, as a user writes it.
namespace {
const auto kCell = [](auto z, auto zb, auto c, auto f, auto i, auto g) {
  using namespace math;
  if (z == 1) return sigmoid(i) * tanh(g);       // FLUSH
  if (zb == 0) return c;                         // COPY
  return sigmoid(f) * c + sigmoid(i) * tanh(g);  // UPDATE
};
}  // namespace

Kernel HmlstmCell() {
  static const Kernel cell = kernel("hmlstm_cell", kCell);
  return cell;
}

// The same lambda traced with TraceOptions::fast_math: its sigmoid and tanh become
// fast_sigmoid and fast_tanh, the `handwritten` loop's formulas and slopes
// (docs/fast-activations.md), so its ratio to that loop is like for like.
Kernel HmlstmCellFast() {
  static const Kernel cell = [] {
    jit::TraceOptions options;
    options.fast_math = true;
    return kernel("hmlstm_cell_fast", kCell, options);
  }();
  return cell;
}

std::vector<std::unique_ptr<Implementation>> MakeImplementations(Variant variant) {
  std::vector<std::unique_ptr<Implementation>> impls;
  impls.push_back(std::make_unique<Handwritten>(variant, HandMath::kFast));
  impls.push_back(std::make_unique<Handwritten>(variant, HandMath::kDualcast));
  if (variant == Variant::kPaper) {
    impls.push_back(std::make_unique<DualcastPartials>());
    impls.push_back(std::make_unique<DualcastPartials>(/*fast=*/true));
  } else {
    impls.push_back(std::make_unique<DualcastTape>(std::nullopt));
    impls.push_back(std::make_unique<DualcastTape>(std::nullopt, /*fast=*/true));
    impls.push_back(std::make_unique<DualcastTape>(dc::PartialsMode::kCache));
    impls.push_back(std::make_unique<DualcastTape>(dc::PartialsMode::kRecompute));
  }
  impls.push_back(std::make_unique<ReverseWhere>(variant));
  return impls;
}

}  // namespace dualcast::bench
