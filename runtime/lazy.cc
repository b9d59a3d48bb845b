// The lazy broadcast graph: Materialize gathers, composes and runs a group of pending broadcasts as one kernel.
//
// The group of a requested array is every pending node it depends on through
// pending inputs. Its leaves are the materialised arrays those nodes read
// (each distinct array once). Its outputs are the requested array plus every
// other pending output of the group still held from outside the group (by a
// user's handle or by a pending node not in the group): the same kernel
// writes them, so reading them later costs nothing. "Held from outside" is
// use_count minus the group's own references (node inputs), which is exact
// because the lazy graph keeps outputs only weakly.
//
// Held outputs whose shape differs from the requested one are cut out instead
// (computed first, as their own group, so that they become leaves): the fused
// kernel runs over the requested shape. While a tape records, a held output
// that other nodes of the group consume stays fused (one kernel, as in the
// benchmark's `c = cell.(...); loss = sum(c .* cbar)`); its adjoint through
// those consumers travels in registers into the leaves' partials, so the tape
// node keeps the group's wiring and, when a gradient asks for such an output,
// cuts the group there for that sweep (GradNode::Cut).
//
// A pending sum/mean (lazy_reduce.cc) is not a group node: Materialize hands
// it to MaterializeReduction, which runs its operand's group with the planning
// here (lazy_group.h) plus a reduced output; the one-pass gradient does the same.
//
// Example:
//   y = f.(x, a); z = g.(y, b); w = h.(z, y); w read while y is held:
//   one kernel over leaves {x, a, b} with outputs {w, y}; z is never stored.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include <mutex>
#include "dualcast/detail/array_impl.hpp"
#include "dualcast/detail/broadcast_grad.hpp"
#include "dualcast/detail/execute.hpp"
#include "dualcast/detail/grad_node.hpp"
#include "dualcast/detail/lazy.hpp"
#include "dualcast/kernel.hpp"
#include "jit/compose.h"
#include "jit/error.h"
#include "jit/optimize.h"
#include "runtime/lazy_group.h"

namespace dualcast::detail {
namespace {

// One lock for the whole lazy graph: gathering, running and filling a group
// must not interleave with another thread doing the same to shared nodes.
std::mutex& GraphMutex() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}

// Set while this thread holds GraphMutex(): Execute, run inside a group,
// materialises its (already computed) leaves and must not lock again.
thread_local bool t_graph_locked = false;

}  // namespace

GraphLock::GraphLock() {
  GraphMutex().lock();
  t_graph_locked = true;
}
GraphLock::~GraphLock() {
  t_graph_locked = false;
  GraphMutex().unlock();
}

Group Gather(const std::shared_ptr<LazyNode>& root) {
  Group g;
  // Iterative post-order DFS (graphs can be long chains).
  std::vector<std::pair<std::shared_ptr<LazyNode>, size_t>> stack;
  absl::flat_hash_map<const LazyNode*, bool> visiting;
  stack.push_back({root, 0});
  visiting[root.get()] = true;
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      const std::shared_ptr<ArrayImpl>& in = node->inputs[next++];
      std::shared_ptr<LazyNode> dep = in->pending;
      if (dep != nullptr && !visiting.contains(dep.get())) {
        visiting[dep.get()] = true;
        stack.push_back({std::move(dep), 0});
      }
      continue;
    }
    g.index[node.get()] = static_cast<int>(g.nodes.size());
    g.nodes.push_back(std::move(node));
    stack.pop_back();
  }
  return g;
}

std::vector<LiveOutput> LiveOutputs(const Group& g) {
  absl::flat_hash_map<const ArrayImpl*, long> refs;
  for (const auto& node : g.nodes) {
    for (const auto& in : node->inputs) {
      if (in->pending != nullptr) ++refs[in.get()];
    }
  }
  std::vector<LiveOutput> live;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const auto& node = *g.nodes[n];
    for (size_t m = 0; m < node.outputs.size(); ++m) {
      LiveOutput o;
      o.impl = node.outputs[m].lock();
      if (o.impl == nullptr || o.impl->pending == nullptr) continue;
      o.node = static_cast<int>(n);
      o.output = static_cast<int>(m);
      auto it = refs.find(o.impl.get());
      o.internal_refs = it == refs.end() ? 0 : it->second;
      // Minus our own `o.impl`.
      o.held_outside = o.impl.use_count() - 1 - o.internal_refs > 0;
      live.push_back(std::move(o));
    }
  }
  return live;
}

namespace {

// The composed function of a group, cached by the group's wiring so that a
// loop that builds the same graph every iteration composes it once.
struct Composed {
  std::shared_ptr<const jit::Function> primal;
  // Keep the node functions alive: the cache key holds their addresses.
  std::vector<std::shared_ptr<const jit::Function>> parts;
};

std::shared_ptr<const Composed> ComposeCached(const std::string& name,
                                              const std::vector<jit::Type>& leaf_types,
                                              const std::vector<jit::FusionNode>& nodes,
                                              const std::vector<jit::FusionSource>& outputs) {
  // Runs under GraphMutex, so the map needs no lock of its own.
  static auto* cache = new absl::flat_hash_map<std::string, std::shared_ptr<const Composed>>();
  std::string key = absl::StrCat(leaf_types.size(), ":", static_cast<int>(leaf_types[0]), "|");
  for (const jit::FusionNode& n : nodes) {
    absl::StrAppend(&key, reinterpret_cast<uintptr_t>(n.function.get()), "(");
    for (const jit::FusionSource& s : n.inputs) {
      absl::StrAppend(&key, static_cast<int>(s.kind), ".", s.index, ".", s.output, ",");
    }
    absl::StrAppend(&key, ")");
  }
  absl::StrAppend(&key, "->");
  for (const jit::FusionSource& s : outputs) {
    absl::StrAppend(&key, static_cast<int>(s.kind), ".", s.index, ".", s.output, ",");
  }
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  auto c = std::make_shared<Composed>();
  for (const jit::FusionNode& n : nodes) c->parts.push_back(n.function);
  c->primal = std::make_shared<const jit::Function>(
      jit::Optimize(jit::Compose(name, leaf_types, nodes, outputs)));
  cache->emplace(std::move(key), c);
  return c;
}

std::string GroupName(const Group& g) {
  if (g.nodes.size() == 1) return g.nodes[0]->name;
  std::vector<std::string> names;
  for (const auto& n : g.nodes) {
    if (std::find(names.begin(), names.end(), n->name) == names.end()) names.push_back(n->name);
  }
  return absl::StrCat("fused(", absl::StrJoin(names, ","), ")");
}

// Each output's Origin: the leaves it reads and the group's other outputs it
// reads (held intermediates computed in the same kernel), so that the tape's
// "computed before the Tape" check sees through the group to them.
void NoteGroupOrigins(const std::string& name, const std::vector<jit::FusionNode>& nodes,
                      const std::vector<jit::FusionSource>& sources,
                      const std::vector<std::shared_ptr<ArrayImpl>>& leaves,
                      const std::vector<std::shared_ptr<ArrayImpl>>& targets) {
  for (size_t m = 0; m < targets.size(); ++m) {
    std::vector<bool> node_seen(nodes.size(), false), leaf_seen(leaves.size(), false);
    std::vector<int> stack;
    auto visit_inputs = [&](int n) {
      for (const jit::FusionSource& in : nodes[static_cast<size_t>(n)].inputs) {
        if (in.kind == jit::FusionSource::kLeaf) {
          leaf_seen[static_cast<size_t>(in.index)] = true;
        } else if (!node_seen[static_cast<size_t>(in.index)]) {
          node_seen[static_cast<size_t>(in.index)] = true;
          stack.push_back(in.index);
        }
      }
    };
    visit_inputs(sources[m].index);
    while (!stack.empty()) {
      const int n = stack.back();
      stack.pop_back();
      visit_inputs(n);
    }
    std::vector<std::shared_ptr<ArrayImpl>> inputs;
    for (size_t l = 0; l < leaves.size(); ++l) {
      if (leaf_seen[l]) inputs.push_back(leaves[l]);
    }
    for (size_t m2 = 0; m2 < targets.size(); ++m2) {
      if (m2 != m && node_seen[static_cast<size_t>(sources[m2].index)]) inputs.push_back(targets[m2]);
    }
    NoteOrigin(name, inputs, {targets[m]});
  }
}

}  // namespace

GroupPlan PlanGroup(const Group& g, const std::shared_ptr<ArrayImpl>& root,
                    std::vector<LiveOutput> live) {
  const LazyNode& root_node = *g.nodes.back();

  // Leaves, each distinct array once.
  std::vector<std::shared_ptr<ArrayImpl>> leaves;
  std::vector<bool> leaf_constant;
  absl::flat_hash_map<const ArrayImpl*, int> leaf_index;
  std::vector<jit::FusionNode> nodes;
  for (const auto& node : g.nodes) {
    jit::FusionNode fn{node->function, {}};
    for (size_t k = 0; k < node->inputs.size(); ++k) {
      const std::shared_ptr<ArrayImpl>& in = node->inputs[k];
      if (in->pending != nullptr) {
        fn.inputs.push_back({jit::FusionSource::kNode, g.index.at(in->pending.get()),
                             in->pending_output});
        continue;
      }
      auto [it, added] = leaf_index.try_emplace(in.get(), static_cast<int>(leaves.size()));
      if (added) {
        leaves.push_back(in);
        leaf_constant.push_back(node->constant[k]);
      } else {
        leaf_constant[it->second] = leaf_constant[it->second] && node->constant[k];
      }
      fn.inputs.push_back({jit::FusionSource::kLeaf, it->second, 0});
    }
    nodes.push_back(std::move(fn));
  }

  // Outputs: the root, then every other live output held from outside.
  std::vector<jit::FusionSource> sources = {
      {jit::FusionSource::kNode, static_cast<int>(g.nodes.size()) - 1, root->pending_output}};
  std::vector<std::shared_ptr<ArrayImpl>> targets = {root};
  std::vector<bool> consumed_inside = {false};
  for (LiveOutput& o : live) {
    if (o.impl == root || !o.held_outside) continue;
    sources.push_back({jit::FusionSource::kNode, o.node, o.output});
    targets.push_back(o.impl);
    consumed_inside.push_back(o.internal_refs > 0);
  }
  live.clear();  // drop our references before anything else looks at use counts

  GroupPlan plan;
  plan.name = GroupName(g);
  std::vector<jit::Type> leaf_types(leaves.size(), JitType(root_node.dtype));
  plan.primal = ComposeCached(plan.name, leaf_types, nodes, sources)->primal;
  plan.leaves = std::move(leaves);
  plan.leaf_constant = std::move(leaf_constant);
  plan.nodes = std::move(nodes);
  plan.sources = std::move(sources);
  plan.targets = std::move(targets);
  plan.consumed_inside = std::move(consumed_inside);
  plan.shape = root_node.shape;
  plan.dtype = root_node.dtype;
  return plan;
}

BroadcastGradInfo RecomputeGradInfo(const GroupPlan& plan) {
  BroadcastGradInfo info;
  info.name = plan.name;
  info.primal = plan.primal;
  info.leaves = plan.leaves;
  info.out_shape = plan.shape;
  info.consumed_inside = plan.consumed_inside;
  const auto& ci = plan.consumed_inside;
  if (std::find(ci.begin(), ci.end(), true) != ci.end()) {
    info.fusion = plan.nodes;
    info.fusion_outputs = plan.sources;
  }
  if (plan.sources.size() > 1) info.reads = FusedReads(plan.nodes, plan.sources, plan.leaves.size());
  for (size_t j = 0; j < plan.leaves.size(); ++j) {
    if (!plan.leaf_constant[j]) info.wrt.push_back(static_cast<int>(j));
  }
  return info;
}

void FillTargets(const GroupPlan& plan, const std::vector<std::shared_ptr<ArrayImpl>>& values) {
  for (size_t m = 0; m < plan.targets.size(); ++m) {
    if (values[m] == nullptr) continue;
    ArrayImpl& t = *plan.targets[m];
    t.storage = values[m]->storage;
    t.strides = values[m]->strides;
    t.offset = values[m]->offset;
    t.pending.reset();
    t.pending_output = 0;
  }
  NoteGroupOrigins(plan.name, plan.nodes, plan.sources, plan.leaves, plan.targets);
}

namespace {

void Run(const Group& g, const std::shared_ptr<ArrayImpl>& root, std::vector<LiveOutput> live,
         std::vector<PendingRecord>* records) {
  const LazyNode& root_node = *g.nodes.back();
  GroupPlan plan = PlanGroup(g, root, std::move(live));
  const std::string& name = plan.name;
  const std::vector<std::shared_ptr<ArrayImpl>>& leaves = plan.leaves;
  const size_t M = plan.targets.size();

  std::vector<std::shared_ptr<ArrayImpl>> values;
  PendingRecord record;
  const bool taped = TapeActive();
  if (!taped) {
    values = Execute(name, plan.primal, leaves);
  } else {
    BroadcastGradInfo& info = record.info;
    info = RecomputeGradInfo(plan);
    const size_t J = info.wrt.size();
    std::shared_ptr<const jit::JvpResult> jvp = CachedJvp(plan.primal, info.wrt);
    size_t nonzero = 0;
    for (bool zero : jvp->structurally_zero) nonzero += zero ? 0 : 1;
    int64_t elements = 1;
    for (int64_t s : root_node.shape) elements *= s;
    const size_t bytes = nonzero * static_cast<size_t>(elements) * SizeOf(root_node.dtype);
    if (ActivePartialsMode(bytes) == PartialsMode::kRecompute) {
      values = Execute(name, plan.primal, leaves);
    } else {
      // Store only the requested result's partials (extra outputs recompute
      // if an adjoint ever reaches them), and none that is literally a value
      // the kernel already has: a primal output (d(c*w)/dw = c) or a leaf of
      // the output's shape (d(x*y)/dx = y) is referenced, not copied.
      const jit::Function& dual_fn = jvp->function;
      std::vector<std::shared_ptr<ArrayImpl>> alias(M * J);
      std::vector<int> alias_output(M * J, -1);
      ExecuteOptions options;
      options.write.assign(M, true);
      for (size_t m = 0; m < M; ++m) {
        for (size_t j = 0; j < J; ++j) {
          const size_t k = m * J + j;
          const jit::ValueId v = dual_fn.outputs()[jit::PartialIndex(M, J, m, j)];
          bool stored = m == 0 && !jvp->structurally_zero[k];
          if (stored) {
            for (size_t m2 = 0; m2 < M; ++m2) {
              if (dual_fn.outputs()[m2] == v) alias_output[k] = static_cast<int>(m2);
            }
            const jit::Inst& inst = dual_fn.inst(v);
            if (alias_output[k] < 0 && inst.op == jit::Op::kInput &&
                leaves[inst.index]->shape == root_node.shape) {
              alias[k] = leaves[inst.index];
            }
            stored = alias_output[k] < 0 && alias[k] == nullptr;
          }
          options.write.push_back(stored);
        }
      }
      auto fn = std::shared_ptr<const jit::Function>(jvp, &jvp->function);
      std::vector<std::shared_ptr<ArrayImpl>> all = Execute(name, fn, leaves, options);
      values.assign(all.begin(), all.begin() + M);
      info.partials.resize(M * J);
      info.cached_outputs.assign(M, false);
      info.cached_outputs[0] = true;
      for (size_t j = 0; j < J; ++j) {
        std::shared_ptr<ArrayImpl> p = all[jit::PartialIndex(M, J, 0, j)];
        if (alias_output[j] >= 0) p = values[static_cast<size_t>(alias_output[j])];
        if (alias[j] != nullptr) p = alias[j];
        info.partials[j] = std::move(p);
      }
    }
  }

  FillTargets(plan, values);
  if (taped) {
    record.outputs = std::move(plan.targets);
    records->push_back(std::move(record));
  }
}

}  // namespace

// Requires GraphMutex() held.
void MaterializeLocked(const std::shared_ptr<ArrayImpl>& root,
                       std::vector<PendingRecord>* records) {
  while (root->pending != nullptr) {
    Group g = Gather(root->pending);
    std::vector<LiveOutput> live = LiveOutputs(g);
    std::vector<std::shared_ptr<ArrayImpl>> cuts;
    for (const LiveOutput& o : live) {
      if (o.impl == root || !o.held_outside) continue;
      if (o.impl->shape != root->shape) cuts.push_back(o.impl);
    }
    if (cuts.empty()) {
      Run(g, root, std::move(live), records);
      return;
    }
    live.clear();
    g = Group();
    for (const auto& cut : cuts) MaterializeLocked(cut, records);
  }
}

std::shared_ptr<const jit::JvpResult> CachedJvp(const std::shared_ptr<const jit::Function>& fn,
                                                std::span<const int> wrt) {
  struct Entry {
    std::shared_ptr<const jit::Function> fn;  // keeps the keyed address alive
    std::shared_ptr<const jit::JvpResult> jvp;
  };
  static std::mutex mu;
  static auto* cache = new absl::flat_hash_map<std::string, Entry>();
  std::string key = absl::StrCat(reinterpret_cast<uintptr_t>(fn.get()), ":",
                                 absl::StrJoin(wrt.begin(), wrt.end(), ","));
  {
    std::unique_lock<std::mutex> lock(mu);
    auto it = cache->find(key);
    if (it != cache->end()) return it->second.jvp;
  }
  auto jvp = std::make_shared<jit::JvpResult>(jit::Jvp(*fn, wrt));
  jvp->function = jit::Optimize(jvp->function);
  std::unique_lock<std::mutex> lock(mu);
  auto [it, added] = cache->try_emplace(std::move(key), Entry{fn, std::move(jvp)});
  return it->second.jvp;
}

void Materialize(ArrayImpl& impl) {
  if (t_graph_locked) {
    if (impl.pending != nullptr) {
      throw Error(ErrorKind::kInternal, "a fused group read a pending array it does not own");
    }
    return;
  }
  std::vector<PendingRecord> records;
  std::shared_ptr<ArrayImpl> reduction;
  {
    // Always under the lock: `pending` and `storage` change when another
    // thread computes a shared pending array, and reading them without the
    // lock would race (an uncontended lock costs tens of nanoseconds).
    GraphLock lock;
    if (impl.pending == nullptr) return;
    // A shared_ptr to `impl` from its node (it is alive, so the weak one locks).
    std::shared_ptr<ArrayImpl> root = impl.pending->outputs[impl.pending_output].lock();
    if (root.get() != &impl) {
      throw Error(ErrorKind::kInternal, "a pending array is not owned by its lazy node");
    }
    if (root->pending->reduce != nullptr) {
      reduction = std::move(root);  // takes the lock itself (lazy_reduce.cc)
    } else {
      MaterializeLocked(root, &records);
    }
  }
  if (reduction != nullptr) {
    MaterializeReduction(reduction);
    return;
  }
  for (PendingRecord& r : records) {
    Record(MakeBroadcastGradNode(std::move(r.info)), r.outputs);
  }
}

}  // namespace dualcast::detail
