// The reverse rule of a fused broadcast group: x̄_j += sum_to(Σ_m ȳ_m ⊙ P[m][j], shape(x_j)), cached or recomputed.
//
// Cache mode reads the partial arrays the forward kernel wrote and makes one
// fused multiply-reduce pass per differentiated leaf (ReduceProducts): for a
// full-shape leaf and one output it is one multiply per element; for a
// broadcast leaf the product is summed over the broadcast axes as it is
// formed, never stored at full size.
//
// Recompute mode stores nothing at forward time. The backward builds (once
// per primal function, wrt set and set of outputs that received an adjoint)
// a function over the leaves and the output adjoints whose output j is
// Σ_m ȳ_m · ∂y_m/∂x_j — the jvp of the primal inlined, multiplied by the
// adjoints in registers, optimised — runs it with Execute, then sums each
// result down to its leaf's shape. Structurally zero partials produce no
// term in either mode, so an untaken branch contributes nothing (not 0·NaN).
// Outputs that received no adjoint contribute nothing either.
#include <algorithm>
#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include <mutex>
#include "dualcast/detail/broadcast_grad.hpp"
#include "dualcast/detail/execute.hpp"
#include "dualcast/tape.hpp"
#include "jit/passes/compose.h"
#include "dualcast/detail/lazy.hpp"
#include "jit/error.h"
#include "jit/ir/hash.h"
#include "jit/passes/jvp.h"
#include "jit/codegen/lru_map.h"
#include "jit/passes/optimize.h"
#include "runtime/array_pool.h"
#include "runtime/auto_partials.h"
#include "runtime/grad_kernels.h"
#include "runtime/in_place.h"
#include "runtime/storage_aliases.h"

namespace dualcast::detail {
namespace {

// The recompute-mode backward function of one (primal, wrt, outputs with an
// adjoint, wrt positions whose adjoint is wanted).
struct BackwardFunction {
  std::shared_ptr<const jit::Function> function;  // inputs: leaves, then present adjoints
  std::vector<int> outputs_wrt;                   // output k is the adjoint of wrt[outputs_wrt[k]]
  uint64_t hash = 0;                              // StructuralHash(*function), for Execute
};

BackwardFunction BuildBackward(const jit::Function& primal, const std::vector<int>& wrt,
                               const std::vector<bool>& present, const std::vector<bool>& wanted) {
  const size_t M = primal.num_outputs(), J = wrt.size();
  jit::JvpResult jvp = jit::Jvp(primal, wrt);
  jit::Function fn = jit::DerivedFunction(primal, absl::StrCat(primal.name, "_vjp"));
  jit::Builder b(fn);
  std::vector<jit::ValueId> leaves, adjoints(M, jit::kNoValue);
  for (size_t i = 0; i < primal.num_inputs(); ++i) leaves.push_back(b.Input(primal.input_type(i)));
  for (size_t m = 0; m < M; ++m) {
    if (present[m]) adjoints[m] = b.Input(primal.output_type(m));
  }
  std::vector<jit::ValueId> values = jit::Inline(b, jvp.function, leaves);
  BackwardFunction result;
  std::vector<jit::ValueId> outs;
  for (size_t j = 0; j < J; ++j) {
    if (!wanted[j]) continue;
    jit::ValueId sum = jit::kNoValue;
    for (size_t m = 0; m < M; ++m) {
      if (!present[m] || jvp.structurally_zero[m * J + j]) continue;
      jit::ValueId term = b.Mul(adjoints[m], values[jit::PartialIndex(M, J, m, j)]);
      sum = sum == jit::kNoValue ? term : b.Add(sum, term);
    }
    if (sum == jit::kNoValue) continue;
    outs.push_back(sum);
    result.outputs_wrt.push_back(static_cast<int>(j));
  }
  b.Return(outs);
  result.function = std::make_shared<const jit::Function>(jit::Optimize(fn));
  result.hash = jit::StructuralHash(*result.function);
  return result;
}

// Backward functions shared by every node of the same primal function (a
// training loop records the same fused group again and again); LRU-bounded
// like the lazy graph's IR caches (IrCacheCapacity()).
class BackwardCache {
 public:
  static BackwardCache& Global() {
    static BackwardCache* cache = new BackwardCache;
    return *cache;
  }
  BackwardCache() : map_(jit::Cache::kBackward, IrCacheCapacity()) {}

  BackwardFunction Get(const std::shared_ptr<const jit::Function>& primal, const std::vector<int>& wrt,
                       const std::vector<bool>& present, const std::vector<bool>& wanted) {
    Key key{primal.get(), wrt, present, wanted};
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (Entry* hit = map_.Find(key)) return hit->backward;
    }
    BackwardFunction built = BuildBackward(*primal, wrt, present, wanted);
    std::unique_lock<std::mutex> lock(mu_);
    map_.Insert(key, Entry{primal, built});
    return built;
  }

 private:
  struct Key {
    const jit::Function* primal;
    std::vector<int> wrt;
    std::vector<bool> present;
    std::vector<bool> wanted;
    bool operator==(const Key&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.primal, k.wrt, k.present, k.wanted);
    }
  };
  struct Entry {
    std::shared_ptr<const jit::Function> primal;  // keeps the key's pointer from being reused
    BackwardFunction backward;
  };
  std::mutex mu_;
  jit::LruMap<Key, Entry> map_;  // guarded by mu_
};

class BroadcastGradNode final : public ReleasableGradNode, public KeepsArgumentsOnWrite {
 public:
  explicit BroadcastGradNode(BroadcastGradInfo info) : info_(std::move(info)) {
    if (info_.primal == nullptr) {
      throw Error(ErrorKind::kInternal, "broadcast tape node without a primal function");
    }
    const size_t expected = info_.primal->num_outputs() * info_.wrt.size();
    if (!info_.partials.empty() && info_.partials.size() != expected) {
      throw Error(ErrorKind::kInternal,
                  absl::StrCat(info_.name, ": ", info_.partials.size(), " partial arrays for ",
                               info_.primal->num_outputs(), " outputs x ", info_.wrt.size(), " inputs"));
    }
    cached_ = !info_.partials.empty() || expected == 0;
    name = info_.name;
    // The leaves are this node's inputs: one list, moved rather than
    // copied (a taped step records a node per broadcast); info_.leaves and
    // the other two moved-from fields stay empty.
    inputs = std::move(info_.leaves);
    consumed_inside = std::move(info_.consumed_inside);
    reads = std::move(info_.reads);
    dtype_ = info_.primal->num_outputs() > 0 && info_.primal->output_type(0) == jit::Type::kF32
                 ? DType::kF32
                 : DType::kF64;
    const bool rereads_arguments =
        !cached_ || !info_.fusion.empty() ||
        std::find(info_.cached_outputs.begin(), info_.cached_outputs.end(), false) != info_.cached_outputs.end();
    if (info_.copy_user_memory && rereads_arguments) KeepUserMemory();
  }

  std::vector<std::shared_ptr<ArrayImpl>> Backward(
      const std::vector<std::shared_ptr<ArrayImpl>>& output_adjoints) override {
    if (inputs.empty() && !info_.wrt.empty()) {
      throw Error(ErrorKind::kInternal, absl::StrCat(info_.name, ": backward after release"));
    }
    std::vector<std::shared_ptr<ArrayImpl>> contributions(inputs.size());
    auto add = [&](int leaf, std::shared_ptr<ArrayImpl> c) {
      auto& slot = contributions[static_cast<size_t>(leaf)];
      slot = slot == nullptr ? std::move(c) : AddArrays(*slot, *c);  // wrt may repeat a leaf
    };
    bool uncached_adjoint = false;
    for (size_t m = 0; m < output_adjoints.size() && m < info_.cached_outputs.size(); ++m) {
      uncached_adjoint = uncached_adjoint || (output_adjoints[m] != nullptr && !info_.cached_outputs[m]);
    }
    // What this sweep reads must still hold what the forward pass saw: the
    // cached partials it multiplies (some are arguments or results
    // themselves), or the arguments the partials are recomputed from.
    const bool use_cached = cached_ && !uncached_adjoint;
    const uint64_t epoch = SweptNodeEpoch();
    const bool written_since = InPlaceWriteEpoch() > epoch;
    if (use_cached) {
      BackwardCached(output_adjoints, add, written_since ? &epoch : nullptr);
    } else {
      if (written_since) {
        for (size_t j = 0; j < inputs.size(); ++j) {
          if (inputs[j] != nullptr && (j >= kept_.size() || kept_[j] == nullptr)) {
            CheckNotWrittenSince(epoch, *inputs[j], absl::StrCat("argument ", j + 1, " of '", name, "'"),
                                 name);
          }
        }
      }
      BackwardRecompute(output_adjoints, add);
    }
    return contributions;
  }

  // The group recomposed with the cut outputs as extra leaves (after the
  // original ones): one part per cut output, computing it from the leaves
  // and earlier cut outputs, then one part for every other output. Parts run
  // in recompute mode: the cached partials fold the cut outputs' uses in.
  std::vector<Part> Cut(const std::vector<int>& cut,
                        const std::vector<std::shared_ptr<ArrayImpl>>& arrays) override {
    if (info_.fusion.empty() || (inputs.empty() && !info_.wrt.empty())) {
      throw Error(ErrorKind::kInternal, absl::StrCat(info_.name, ": cut without the group's wiring"));
    }
    const int L = static_cast<int>(inputs.size());
    const size_t M = info_.fusion_outputs.size();
    std::vector<jit::FusionNode> nodes = info_.fusion;
    auto cut_leaf = [&](const jit::FusionSource& src) {
      for (size_t c = 0; c < cut.size(); ++c) {
        const jit::FusionSource& o = info_.fusion_outputs[static_cast<size_t>(cut[c])];
        if (src.kind == jit::FusionSource::kNode && src.index == o.index && src.output == o.output) {
          return L + static_cast<int>(c);
        }
      }
      return -1;
    };
    for (jit::FusionNode& n : nodes) {
      for (jit::FusionSource& src : n.inputs) {
        if (int leaf = cut_leaf(src); leaf >= 0) src = {jit::FusionSource::kLeaf, leaf, 0};
      }
    }
    std::vector<jit::Type> types;
    for (size_t i = 0; i < info_.primal->num_inputs(); ++i) types.push_back(info_.primal->input_type(i));
    std::vector<std::shared_ptr<ArrayImpl>> leaves = inputs;
    std::vector<int> wrt = info_.wrt;
    for (size_t c = 0; c < cut.size(); ++c) {
      types.push_back(info_.primal->output_type(static_cast<size_t>(cut[c])));
      leaves.push_back(arrays[c]);
      wrt.push_back(L + static_cast<int>(c));
    }
    auto part = [&](const std::vector<int>& outputs) {
      std::vector<jit::FusionSource> sources;
      for (int m : outputs) sources.push_back(info_.fusion_outputs[static_cast<size_t>(m)]);
      BroadcastGradInfo p;
      p.name = info_.name;
      p.primal = std::make_shared<const jit::Function>(
          jit::Optimize(jit::Compose(info_.name, types, nodes, sources)));
      p.leaves = leaves;
      p.out_shape = info_.out_shape;
      p.wrt = wrt;
      p.consumed_inside.assign(outputs.size(), false);
      p.reads = FusedReads(nodes, sources, leaves.size());
      std::shared_ptr<GradNode> node = MakeBroadcastGradNode(std::move(p));
      // The parts recompute from the values this node read: its copies where it made them.
      static_cast<BroadcastGradNode&>(*node).kept_ = kept_;
      return Part{std::move(node), outputs};
    };
    std::vector<int> order = cut;  // a cut output depends only on cuts of earlier fused nodes
    std::sort(order.begin(), order.end(), [&](int x, int y) {
      return info_.fusion_outputs[static_cast<size_t>(x)].index <
             info_.fusion_outputs[static_cast<size_t>(y)].index;
    });
    std::vector<Part> parts;
    for (int m : order) parts.push_back(part({m}));
    std::vector<int> rest;
    for (size_t m = 0; m < M; ++m) {
      if (std::find(cut.begin(), cut.end(), static_cast<int>(m)) == cut.end()) {
        rest.push_back(static_cast<int>(m));
      }
    }
    if (!rest.empty()) parts.push_back(part(rest));
    return parts;
  }

  void KeepArgumentsBeforeWrite(const StorageList& storages, uint64_t recorded_epoch,
                                ArgumentCopies& copies) noexcept override {
    if (cached_ || inputs.empty()) return;
    for (size_t j = 0; j < inputs.size(); ++j) {
      const std::shared_ptr<ArrayImpl>& in = inputs[j];
      if (in == nullptr || (j < kept_.size() && kept_[j] != nullptr)) continue;
      // Any element of the storage, not only those the write may reach: the
      // stamp a write leaves is per storage (in_place.h), so an argument
      // beside it would be refused by the sweep all the same.
      if (std::find(storages.begin(), storages.end(), in->storage.get()) == storages.end()) continue;
      if (LastInPlaceWrite(in->storage.get()) > recorded_epoch) continue;  // too late
      try {
        std::shared_ptr<ArrayImpl>& copy = copies[in.get()];
        if (copy == nullptr) copy = CopyArray(*in);
        kept_.resize(inputs.size());
        kept_[j] = copy;
      } catch (...) {
        copies.erase(in.get());  // the sweep's Error names the write
      }
    }
  }

  // This node may recompute from its arguments in the sweep: the views of
  // the user's writable memory among them are copied now, as the forward
  // pass read them (caching their partials would have kept as much or more).
  void KeepUserMemory() {
    for (size_t j = 0; j < inputs.size(); ++j) {
      std::shared_ptr<ArrayImpl> copy = CopyIfUserMemory(inputs[j]);  // shared when unchanged
      if (copy == nullptr) continue;
      kept_.resize(inputs.size());
      kept_[j] = std::move(copy);
    }
  }

  void ReleaseSaved() override {
    info_.partials.clear();
    kept_.clear();
    inputs.clear();
    info_.fusion.clear();
  }

 private:
  // With `check_epoch` (the epoch this node was recorded at, when some write
  // in place came later), every partial multiplied is checked first,
  // before anything is computed; the partials no requested gradient needs
  // are not (d(x*b)/db = x written later does not stop d/dx).
  template <class Add>
  void BackwardCached(const std::vector<std::shared_ptr<ArrayImpl>>& ybar, Add& add,
                      const uint64_t* check_epoch) {
    const size_t M = info_.primal->num_outputs(), J = info_.wrt.size();
    std::vector<std::vector<ProductTerm>> terms(J);
    for (size_t j = 0; j < J; ++j) {
      if (!InputNeeded(static_cast<size_t>(info_.wrt[j]))) continue;
      for (size_t m = 0; m < M && m < ybar.size(); ++m) {
        const auto& p = info_.partials[m * J + j];
        if (ybar[m] == nullptr || p == nullptr) continue;
        if (check_epoch != nullptr) {
          CheckNotWrittenSince(*check_epoch, *p,
                               absl::StrCat("an argument or result of '", name,
                                            "' kept as a partial derivative"),
                               name);
        }
        terms[j].push_back(ProductTerm{ybar[m].get(), p.get()});
      }
    }
    for (size_t j = 0; j < J; ++j) {
      if (terms[j].empty()) continue;
      const ArrayImpl& leaf = *inputs[static_cast<size_t>(info_.wrt[j])];
      add(info_.wrt[j], ReduceProducts(dtype_, terms[j], info_.out_shape, leaf.shape));
    }
  }

  template <class Add>
  void BackwardRecompute(const std::vector<std::shared_ptr<ArrayImpl>>& ybar, Add& add) {
    const size_t M = info_.primal->num_outputs();
    std::vector<bool> present(M, false);
    std::vector<std::shared_ptr<ArrayImpl>> args = inputs;
    for (size_t j = 0; j < kept_.size(); ++j) {
      if (kept_[j] != nullptr) args[j] = kept_[j];  // the values read, copied before a write
    }
    for (size_t m = 0; m < M && m < ybar.size(); ++m) {
      if (ybar[m] == nullptr) continue;
      present[m] = true;
      args.push_back(ybar[m]);
    }
    std::vector<bool> wanted(info_.wrt.size());
    for (size_t j = 0; j < wanted.size(); ++j) wanted[j] = InputNeeded(static_cast<size_t>(info_.wrt[j]));
    BackwardFunction fn = BackwardCache::Global().Get(info_.primal, info_.wrt, present, wanted);
    if (fn.outputs_wrt.empty()) return;
    ExecuteOptions options;
    options.function_hash = fn.hash;
    std::vector<std::shared_ptr<ArrayImpl>> full =
        Execute(absl::StrCat(info_.name, " (backward)"), fn.function, args, options);
    for (size_t k = 0; k < fn.outputs_wrt.size(); ++k) {
      const int leaf = info_.wrt[static_cast<size_t>(fn.outputs_wrt[k])];
      add(leaf, SumTo(*full[k], inputs[static_cast<size_t>(leaf)]->shape));
      full[k].reset();  // free the full-shape contribution as soon as it is reduced
    }
  }

  BroadcastGradInfo info_;
  // Per input, recompute mode: a copy of its values taken before a write in
  // place (auto_partials.h); null while it still holds them. Identity
  // (adjoint keys, versions) stays with `inputs`.
  std::vector<std::shared_ptr<ArrayImpl>> kept_;
  bool cached_ = true;
  DType dtype_ = DType::kF32;
};

}  // namespace

std::vector<std::vector<bool>> FusedReads(const std::vector<jit::FusionNode>& nodes,
                                          const std::vector<jit::FusionSource>& sources,
                                          size_t num_leaves) {
  std::vector<std::vector<bool>> reads;
  reads.reserve(sources.size());
  const bool one_node =
      nodes.size() == 1 && std::all_of(sources.begin(), sources.end(), [](const jit::FusionSource& s) {
        return s.kind == jit::FusionSource::kNode;
      });
  if (one_node) {  // the common group of one: every output reads the node's inputs (all leaves)
    std::vector<bool> leaf(num_leaves, false);
    for (const jit::FusionSource& in : nodes[0].inputs) leaf[static_cast<size_t>(in.index)] = true;
    reads.assign(sources.size(), leaf);
    return reads;
  }
  for (const jit::FusionSource& out : sources) {
    std::vector<bool> leaf(num_leaves, false), node(nodes.size(), false);
    std::vector<jit::FusionSource> stack = {out};
    while (!stack.empty()) {
      const jit::FusionSource src = stack.back();
      stack.pop_back();
      if (src.kind == jit::FusionSource::kLeaf) {
        leaf[static_cast<size_t>(src.index)] = true;
      } else if (!node[static_cast<size_t>(src.index)]) {
        node[static_cast<size_t>(src.index)] = true;
        for (const jit::FusionSource& in : nodes[static_cast<size_t>(src.index)].inputs) stack.push_back(in);
      }
    }
    reads.push_back(std::move(leaf));
  }
  return reads;
}

std::shared_ptr<GradNode> MakeBroadcastGradNode(BroadcastGradInfo info) {
  const bool register_node = info.keep_arguments_on_write && info.partials.empty();
  auto node = std::allocate_shared<BroadcastGradNode>(BlockAllocator<BroadcastGradNode>{}, std::move(info));
  if (register_node) NoteRecomputingNode(node, node->inputs);
  return node;
}

}  // namespace dualcast::detail
