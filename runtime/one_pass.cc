// The one-pass gradient kernel of a pending loss (see one_pass.h): planning, the generated function, the run.
#include "runtime/one_pass.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <span>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "dualcast/detail/execute.hpp"
#include "dualcast/detail/grad_node.hpp"
#include "jit/passes/compose.h"
#include "jit/passes/jvp.h"
#include "jit/passes/optimize.h"
#include "runtime/grad_kernels.h"
#include "runtime/in_place.h"
#include "runtime/lazy_group.h"
#include "runtime/lazy_reduce.h"
#include "runtime/origin.h"

namespace dualcast::detail {
namespace {

std::atomic<int64_t> g_one_pass{0};

// Outputs: y_0..y_{M-1}, y_0 again (reduced: the loss; a mean's is divided by
// the count after the sum, as every mean is, so the value has the same bits
// as without a tape), then ā·∂y_0/∂x_wrt[j] for every j that is not
// structurally zero (ā being 1, or 1/count for a mean).
// Inputs: the leaves, then ā for a mean. A sum's ā is 1, and multiplying by 1
// is exact, so its kernel has no ā at all: the same bits, one multiply fewer
// per output and element (a tenth of HM-LSTM's arithmetic outside exp/div).
struct OnePassFunction {
  std::shared_ptr<const jit::Function> function;
  std::vector<int> grad_output;  // per j: its output index, or -1 (zero)
};

OnePassFunction BuildOnePass(const std::shared_ptr<const jit::Function>& primal,
                             std::span<const int> wrt, bool unit_abar) {
  const size_t M = primal->num_outputs(), J = wrt.size();
  std::shared_ptr<const jit::JvpResult> jvp = CachedJvp(primal, wrt);
  jit::Function fn = jit::DerivedFunction(*primal, absl::StrCat(primal->name, "_grad"));
  jit::Builder b(fn);
  std::vector<jit::ValueId> leaves;
  for (size_t i = 0; i < primal->num_inputs(); ++i) leaves.push_back(b.Input(primal->input_type(i)));
  const jit::ValueId abar = unit_abar ? jit::ValueId{} : b.Input(primal->output_type(0));
  auto times_abar = [&](jit::ValueId v) { return unit_abar ? v : b.Mul(abar, v); };
  std::vector<jit::ValueId> values = jit::Inline(b, jvp->function, leaves);
  std::vector<jit::ValueId> outs(values.begin(), values.begin() + static_cast<long>(M));
  outs.push_back(values[0]);
  OnePassFunction result;
  for (size_t j = 0; j < J; ++j) {
    if (jvp->structurally_zero[j]) {  // partial (m = 0, j)
      result.grad_output.push_back(-1);
      continue;
    }
    result.grad_output.push_back(static_cast<int>(outs.size()));
    outs.push_back(times_abar(values[jit::PartialIndex(M, J, 0, j)]));
  }
  b.Return(outs);
  result.function = std::make_shared<const jit::Function>(jit::Optimize(fn));
  return result;
}

// Keyed by the primal's address and the requested leaves: a key that needs
// no heap for up to 4 inputs, and an entry shared rather than copied, since
// this lookup runs on every tape step.
std::shared_ptr<const OnePassFunction> CachedOnePass(const std::shared_ptr<const jit::Function>& primal,
                                                     std::span<const int> wrt, bool unit_abar) {
  using Key = std::tuple<const jit::Function*, absl::InlinedVector<int, 4>, bool>;
  struct Entry {
    std::shared_ptr<const jit::Function> primal;  // keeps the keyed address alive
    std::shared_ptr<const OnePassFunction> fn;
  };
  Key key{primal.get(), absl::InlinedVector<int, 4>(wrt.begin(), wrt.end()), unit_abar};
  // The last answer on this thread first: a training loop asks for the same
  // one every step, and this needs neither the lock nor a hash. Its entry
  // holds the primal, so the keyed address cannot be another function's.
  thread_local std::pair<Key, Entry> last;
  if (last.second.fn != nullptr && last.first == key) return last.second.fn;
  static std::mutex mu;
  static auto* cache = new absl::flat_hash_map<Key, Entry>();
  std::shared_ptr<const OnePassFunction> fn;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache->find(key); it != cache->end()) fn = it->second.fn;
  }
  if (fn == nullptr) {
    auto built = std::make_shared<const OnePassFunction>(BuildOnePass(primal, wrt, unit_abar));
    std::lock_guard<std::mutex> lock(mu);
    if (cache->size() >= 4096) cache->clear();  // bounded; rebuilding is cheap
    fn = cache->try_emplace(key, Entry{primal, std::move(built)}).first->second.fn;
  }
  last = {std::move(key), Entry{primal, fn}};
  return fn;
}

// A set of arrays that stays on the stack while small (a tape step's graph
// is a handful of arrays; this check runs on every step).
class ArraySet {
 public:
  bool Insert(const ArrayImpl* a) {
    if (Contains(a)) return false;
    if (small_.size() < kSmall) {
      small_.push_back(a);
    } else {
      large_.insert(a);
    }
    return true;
  }
  bool Contains(const ArrayImpl* a) const {
    return std::find(small_.begin(), small_.end(), a) != small_.end() || large_.contains(a);
  }

 private:
  static constexpr size_t kSmall = 32;
  absl::InlinedVector<const ArrayImpl*, kSmall> small_;
  absl::flat_hash_set<const ArrayImpl*> large_;
};

// Whether a requested input could reach the loss through a leaf (a path the
// kernel would not see): whether a leaf was computed, on a tape or not, from
// a requested input. Found through the tape nodes' inputs and the arrays'
// Origins, as the sweep's own checks do; a leaf computed from other arrays
// only is a constant to these inputs, so the kernel's answer is exact.
bool PathBehindLeaves(const std::vector<std::shared_ptr<ArrayImpl>>& leaves,
                      const std::vector<std::shared_ptr<ArrayImpl>>& inputs) {
  ArraySet requested;
  for (const auto& in : inputs) requested.Insert(in.get());
  absl::InlinedVector<std::shared_ptr<ArrayImpl>, 8> stack(leaves.begin(), leaves.end());
  ArraySet seen;
  auto visit = [&](std::shared_ptr<ArrayImpl> in) {
    if (in == nullptr || !seen.Insert(in.get())) return false;
    if (requested.Contains(in.get())) return true;
    stack.push_back(std::move(in));
    return false;
  };
  // An untaped array's inputs may be gone (y = transpose(x) + 0 drops the
  // view): its ancestry (origin.h) still holds x. Past its cap the ancestry is
  // partial: the walk through the inputs replaces it (InputsTellAncestry), or,
  // where it cannot, the sweep decides.
  auto visit_origin = [&](const Origin& o) {
    if (o.truncated && !InputsTellAncestry(o)) return true;
    for (const auto& weak : o.inputs) {
      if (visit(weak.lock())) return true;
    }
    // A constant op records no ancestors (no gradient flows); a capped list
    // adds nothing to the inputs' own walk.
    if (o.constant || o.truncated) return false;
    // Any version: conservative (the sweep tells them apart).
    return ForEachAncestor(o, [&](const std::weak_ptr<ArrayImpl>& up, uint32_t) { return visit(up.lock()); });
  };
  for (int budget = 10000; !stack.empty(); --budget) {
    if (budget == 0) return true;  // too deep to tell: let the sweep decide
    std::shared_ptr<ArrayImpl> a = std::move(stack.back());
    stack.pop_back();
    for (std::shared_ptr<GradNode> node = a->grad_fn; node != nullptr;) {
      std::shared_ptr<GradNode> next;
      for (size_t j = 0; j < node->inputs.size(); ++j) {
        if (visit(node->inputs[j])) return true;
        // An input written in place since the node read it: what computed
        // the values the node read (in_place.h) is behind it too.
        if (node->inputs[j] == nullptr || node->seen(j).version == WriteCount(*node->inputs[j])) continue;
        VersionInfo then = InputSeenBy(*node, j);
        if (!then.known || next != nullptr) return true;  // let the sweep decide
        if (then.origin != nullptr && visit_origin(*then.origin)) return true;
        next = std::move(then.node);
      }
      node = std::move(next);
    }
    if (a->origin != nullptr && visit_origin(*a->origin)) return true;
    // Values partials(), a sweep or mutable_data() wrote into its memory
    // through another array (in_place.h).
    if (AnyWrittenValues() && a->storage != nullptr) {
      const WrittenValues written = WrittenValuesAt(a->storage.get(), LastInPlaceWrite(a->storage.get()));
      if (!written.complete) return true;
      for (const auto& w : written.writers) {
        if (w != a->origin && visit_origin(*w)) return true;
      }
    }
  }
  // A leaf over a requested input's memory is, to the kernel, another
  // variable: the sweep refuses that.
  for (const auto& leaf : leaves) {
    for (const auto& in : inputs) {
      if (SharesMemory(*leaf, *in)) return true;
    }
  }
  return false;
}

}  // namespace

int64_t OnePassGradients() { return g_one_pass.load(std::memory_order_relaxed); }

bool OnePassGradient(const std::shared_ptr<ArrayImpl>& loss,
                     const std::vector<std::shared_ptr<ArrayImpl>>& inputs, bool loss_wanted,
                     std::vector<std::shared_ptr<ArrayImpl>>* grads) {
  std::shared_ptr<LazyNode> reduction;
  GroupPlan plan;
  std::shared_ptr<ArrayImpl> operand;
  {
    GraphLock lock;
    if (loss->pending == nullptr || loss->pending->reduce == nullptr) return false;
    if (loss->pending->reduce->kind != ReduceKind::kSum) return false;  // one pass sums only
    reduction = loss->pending;
    const std::shared_ptr<ArrayImpl>& in = reduction->inputs[0];
    if (in->pending == nullptr || in->pending->reduce != nullptr) return false;
    Group g = Gather(in->pending);
    // Another thread runs part of the group without the lock: the sweep
    // (which waits for it) is correct, one pass is only faster.
    if (AnyRunning(g)) return false;
    LiveList live = LiveOutputs(g);
    bool operand_held = false;
    for (const LiveOutput& o : live) {
      if (o.impl == in) {
        operand_held = o.impl.use_count() - 2 - o.internal_refs > 0;
      } else if (o.held_outside && o.impl->shape != in->shape) {
        return false;  // would be cut into its own kernel first
      }
    }
    plan = PlanGroup(g, in, std::move(live));

    // Each requested input must be a differentiated leaf the loss reads (a
    // group of one node reads every leaf: they are that node's inputs).
    std::vector<bool> fused_reads;
    if (plan.nodes.size() != 1) {
      fused_reads = std::move(FusedReads(plan.nodes, {plan.sources[0]}, plan.leaves.size())[0]);
    }
    auto reads = [&](size_t l) { return plan.nodes.size() == 1 || fused_reads[l]; };
    absl::InlinedVector<int, 8> wrt, slot(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      int leaf = -1;
      for (size_t l = 0; l < plan.leaves.size(); ++l) {
        if (plan.leaves[l] == inputs[i] && !plan.leaf_constant[l] && reads(l)) leaf = static_cast<int>(l);
      }
      if (leaf < 0) return false;
      auto it = std::find(wrt.begin(), wrt.end(), leaf);
      slot[i] = static_cast<int>(it - wrt.begin());
      if (it == wrt.end()) wrt.push_back(leaf);
    }
    if (PathBehindLeaves(plan.leaves, inputs)) return false;

    const PendingReduce& r = *reduction->reduce;
    const size_t M = plan.targets.size(), rank = plan.shape.size();
    const bool unit_abar = r.divisor == 1;
    const std::shared_ptr<const OnePassFunction> fn_ptr = CachedOnePass(plan.primal, wrt, unit_abar);
    const OnePassFunction& fn = *fn_ptr;
    // The leaves, then ā (d loss / d sum) for a mean; a sum's kernel has no ā.
    std::vector<std::shared_ptr<ArrayImpl>> with_abar;
    if (!unit_abar) {
      with_abar = plan.leaves;
      with_abar.push_back(NumberArray(1.0 / r.divisor, plan.dtype, in->device));
    }
    const std::vector<std::shared_ptr<ArrayImpl>>& args = unit_abar ? plan.leaves : with_abar;
    // Per-thread scratch: a training loop repeats this every step, and the
    // vectors keep their memory from one step to the next.
    thread_local ExecuteOptions options;
    const size_t outputs = fn.function->num_outputs();
    options.write.assign(outputs, true);
    options.write[0] = operand_held;
    options.write[M] = loss_wanted;
    options.output_shapes.resize(outputs);
    for (std::vector<int64_t>& s : options.output_shapes) s.clear();
    PadShapeInto(options.output_shapes[M], r.keep_shape, rank);
    for (size_t k = 0; k < wrt.size(); ++k) {
      if (fn.grad_output[k] < 0) continue;
      PadShapeInto(options.output_shapes[static_cast<size_t>(fn.grad_output[k])],
                   plan.leaves[static_cast<size_t>(wrt[k])]->shape, rank);
    }
    options.divisors.assign(outputs, 1.0);
    options.divisors[M] = r.divisor;
    options.iteration_shape = plan.shape;
    std::vector<std::shared_ptr<ArrayImpl>> values = Execute(plan.name, fn.function, args, options);

    FillTargets(plan, values);  // reads the first M (the group's outputs)
    if (loss_wanted) FillFrom(*loss, *values[M]);
    grads->assign(inputs.size(), nullptr);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int out = fn.grad_output[static_cast<size_t>(slot[i])];
      if (out < 0) continue;
      std::shared_ptr<ArrayImpl> g = values[static_cast<size_t>(out)];
      // A second request for the same input gets its own copy.
      if (std::find(grads->begin(), grads->end(), g) != grads->end()) g = CopyArray(*g);
      if (g->shape != inputs[i]->shape) {  // stored rank-padded: the input's own shape
        g->shape = inputs[i]->shape;
        g->strides = ContiguousStrides(g->shape);
      }
      (*grads)[i] = std::move(g);
    }
    operand = in;
  }
  // Record what was computed, as a sweep would need it later: the group
  // without cached partials, then the reduction.
  const auto targets = std::move(plan.targets);
  Record(MakeBroadcastGradNode(RecomputeGradInfo(std::move(plan))), ArraySpan(targets));
  NoteReduction(reduction->name.c_str(), operand, loss, reduction->reduce);
  g_one_pass.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace dualcast::detail
