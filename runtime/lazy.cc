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
// Threads: one graph lock (graph_lock.h) covers gathering a group and
// filling its results; planning (for a group of one ready node), composing,
// compiling and launching run outside it while the group's nodes are marked
// `running` (see Run). The common case, a ready node whose inputs are
// computed and whose one output nobody else is computing, takes only a read
// section of that lock (lazy_ready.cc), so threads evaluating their own
// broadcasts share no cache line written on every eval. The composed, jvp
// and backward functions are LRU-bounded caches (IrCacheCapacity()), each
// function kept with its structural hash so a launch never rehashes IR.
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

#include <iterator>
#include <mutex>
#include <optional>
#include <span>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dualcast/detail/array_impl.hpp"
#include "dualcast/detail/broadcast_grad.hpp"
#include "dualcast/detail/execute.hpp"
#include "dualcast/detail/grad_node.hpp"
#include "dualcast/detail/lazy.hpp"
#include "dualcast/kernel.hpp"
#include "jit/codegen/lru_map.h"
#include "jit/error.h"
#include "jit/ir/hash.h"
#include "jit/passes/compose.h"
#include "jit/passes/optimize.h"
#include "runtime/auto_partials.h"
#include "runtime/grad_kernels.h"
#include "runtime/graph_lock.h"
#include "runtime/launch_plan.h"
#include "runtime/lazy_group.h"
#include "runtime/lazy_ready.h"

namespace dualcast::detail {
namespace {

// One lock for the whole lazy graph (graph_lock.h): gathering a group and
// filling its results must not interleave with another thread doing the
// same to shared nodes. Composing, compiling and launching run outside it:
// the group's nodes are marked `running` meanwhile, and a thread whose group
// meets a running node waits on GraphCv() for it to finish. So broadcasts on
// different threads over graphs that share no pending node run concurrently.
using GraphUniqueLock = std::unique_lock<GraphMutex>;

// Waits on GraphCv() (the lock released meanwhile) for some running group to end.
void WaitForRunning(GraphUniqueLock& lock) {
  GraphWaiters().fetch_add(1, std::memory_order_seq_cst);
  GraphCv().wait(lock);
  GraphWaiters().fetch_sub(1, std::memory_order_relaxed);
}

// Set while this thread launches a group without the lock, or holds the lock
// through a GraphLock: Execute then "materialises" the group's leaves, which
// are computed already (an array never becomes pending again once computed),
// and must not lock.
thread_local bool t_launching_group = false;

}  // namespace

LaunchingGroup::LaunchingGroup() : was_(t_launching_group) { t_launching_group = true; }
LaunchingGroup::~LaunchingGroup() { t_launching_group = was_; }

GraphLock::GraphLock() : lock_(LazyGraphMutex()) {}

void Publish(ArrayImpl& t, std::shared_ptr<Storage> storage, std::vector<int64_t> strides,
             int64_t offset) {
  t.storage = std::move(storage);
  // A pending array's layout (contiguous) is read without the lock by the
  // thread that made it (broadcast.cc), so it is written only if it changes.
  if (t.strides != strides) t.strides = std::move(strides);
  if (t.offset != offset) t.offset = offset;
  t.pending.reset();
  t.pending_output = 0;
  t.computed.store(true, std::memory_order_release);
}

void GraphLock::Wait() { WaitForRunning(lock_); }

bool AnyRunning(const Group& g) {
  return std::any_of(g.nodes.begin(), g.nodes.end(),
                     [](const std::shared_ptr<LazyNode>& n) { return n->running; });
}

// Requires the graph lock held. Each node's group_index is its position in
// `nodes` until the next Gather.
Group Gather(const std::shared_ptr<LazyNode>& root) {
  static uint64_t walks = 0;  // guarded by the graph lock: marks nodes this walk reached
  const uint64_t walk = ++walks;
  Group g;
  // Iterative post-order DFS (graphs can be long chains).
  static auto* stack = new std::vector<std::pair<std::shared_ptr<LazyNode>, size_t>>();
  stack->clear();  // in case a walk ever ended by an exception
  stack->push_back({root, 0});
  root->visit = walk;
  while (!stack->empty()) {
    auto& [node, next] = stack->back();
    if (next < node->inputs.size()) {
      const std::shared_ptr<ArrayImpl>& in = node->inputs[next++];
      LazyNode* dep = in->pending.get();
      if (dep != nullptr && dep->visit != walk) {
        dep->visit = walk;
        stack->push_back({in->pending, 0});
      }
      continue;
    }
    node->group_index = static_cast<int>(g.nodes.size());
    g.nodes.push_back(std::move(node));
    stack->pop_back();
  }
  return g;
}

// Requires the graph lock held, right after Gather(g).
LiveList LiveOutputs(const Group& g) {
  // Internal references per (node, output), at first[node] + output (none
  // in a group of one: a node never reads its own outputs).
  const bool one = g.nodes.size() == 1;
  std::vector<long> first(one ? 0 : g.nodes.size() + 1, 0);
  for (size_t n = 0; n + 1 < first.size(); ++n) {
    first[n + 1] = first[n] + static_cast<long>(g.nodes[n]->outputs.size());
  }
  std::vector<long> refs(one ? 0 : static_cast<size_t>(first.back()), 0);
  for (const auto& node : g.nodes) {
    if (one) break;
    for (const auto& in : node->inputs) {
      if (in->pending != nullptr) ++refs[static_cast<size_t>(first[in->pending->group_index] + in->pending_output)];
    }
  }
  LiveList live;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const auto& node = *g.nodes[n];
    for (size_t m = 0; m < node.outputs.size(); ++m) {
      LiveOutput o;
      o.impl = node.outputs[m].lock();
      if (o.impl == nullptr || o.impl->pending == nullptr) continue;
      o.node = static_cast<int>(n);
      o.output = static_cast<int>(m);
      o.internal_refs = one ? 0 : refs[static_cast<size_t>(first[n]) + m];
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
  uint64_t primal_hash = 0;  // StructuralHash(*primal): launches need not rehash
  // Keep the node functions alive: the cache key holds their addresses.
  std::vector<std::shared_ptr<const jit::Function>> parts;
};

std::shared_ptr<const Composed> ComposeCached(const std::string& name,
                                              const std::vector<jit::Type>& leaf_types,
                                              const std::vector<jit::FusionNode>& nodes,
                                              const std::vector<jit::FusionSource>& outputs) {
  // The key: leaf count and type, then each node's function (by address,
  // kept alive by the entry) and wiring, then the outputs. Words, not a
  // formatted string: this runs on every launch.
  std::vector<uint64_t> key;
  key.reserve(2 + nodes.size() * 4 + outputs.size());
  key.push_back(leaf_types.size());
  key.push_back(static_cast<uint64_t>(leaf_types[0]));
  auto word = [](const jit::FusionSource& s) {
    return static_cast<uint64_t>(s.kind) | static_cast<uint64_t>(static_cast<uint32_t>(s.index)) << 8 |
           static_cast<uint64_t>(static_cast<uint32_t>(s.output)) << 40;
  };
  for (const jit::FusionNode& n : nodes) {
    key.push_back(reinterpret_cast<uintptr_t>(n.function.get()));
    key.push_back(n.inputs.size());
    for (const jit::FusionSource& s : n.inputs) key.push_back(word(s));
  }
  key.push_back(~uint64_t{0});
  for (const jit::FusionSource& s : outputs) key.push_back(word(s));

  static std::mutex mu;
  static auto* cache = new jit::LruMap<std::vector<uint64_t>, std::shared_ptr<const Composed>>(
      jit::Cache::kCompose, IrCacheCapacity());
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto* hit = cache->Find(key)) return *hit;
  }
  // Composed outside the lock; two threads composing the same group at once
  // both build it, and the second insert wins (both are equal).
  auto c = std::make_shared<Composed>();
  for (const jit::FusionNode& n : nodes) c->parts.push_back(n.function);
  c->primal = std::make_shared<const jit::Function>(
      jit::Optimize(jit::Compose(name, leaf_types, nodes, outputs)));
  c->primal_hash = jit::StructuralHash(*c->primal);
  std::lock_guard<std::mutex> lock(mu);
  return cache->Insert(key, std::move(c));
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
                      std::span<const std::shared_ptr<ArrayImpl>> targets) {
  if (nodes.size() == 1) {  // every output reads every leaf, and no other output
    for (const auto& t : targets) NoteOrigin(name, leaves, ArraySpan(&t, 1));
    return;
  }
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
    NoteOrigin(name, inputs, targets.subspan(m, 1));
  }
}

// A group ready to run: everything Execute needs, taken from the graph under
// the lock, so that composing, compiling and launching need no lock.
struct Plan {
  std::string name;
  std::vector<std::shared_ptr<ArrayImpl>> leaves;
  // Inline storage where nothing needs a std::vector: a launch allocates
  // little beyond its results.
  absl::InlinedVector<bool, 8> leaf_constant;
  std::vector<jit::FusionNode> nodes;
  std::vector<jit::FusionSource> sources;                          // per output: the root first
  absl::InlinedVector<std::shared_ptr<ArrayImpl>, 2> targets;      // per output
  absl::InlinedVector<bool, 2> consumed_inside;                    // per output
  const std::vector<int64_t>* shape = nullptr;  // the root node's (kept alive by the group)
  DType dtype = DType::kF32;
};

// Requires the graph lock held, right after Gather(g).
Plan MakePlan(const Group& g, const std::shared_ptr<ArrayImpl>& root, LiveList live) {
  Plan p;
  const LazyNode& root_node = *g.nodes.back();
  p.shape = &root_node.shape;
  p.dtype = root_node.dtype;

  // Leaves, each distinct array once.
  constexpr size_t kScannedLeaves = 16;
  absl::flat_hash_map<const ArrayImpl*, int> leaf_index;  // once there are more
  p.nodes.reserve(g.nodes.size());
  p.leaves.reserve(g.nodes.front()->inputs.size());  // the first node's: one block, not 1 then 2
  for (const auto& node : g.nodes) {
    jit::FusionNode fn{node->function, {}};
    fn.inputs.reserve(node->inputs.size());
    for (size_t k = 0; k < node->inputs.size(); ++k) {
      const std::shared_ptr<ArrayImpl>& in = node->inputs[k];
      if (in->pending != nullptr) {
        fn.inputs.push_back({jit::FusionSource::kNode, in->pending->group_index,
                             in->pending_output});
        continue;
      }
      // Few leaves are found by a scan; many through a map.
      int index = -1;
      if (p.leaves.size() <= kScannedLeaves) {
        for (size_t l = 0; l < p.leaves.size() && index < 0; ++l) {
          if (p.leaves[l] == in) index = static_cast<int>(l);
        }
        if (index < 0 && p.leaves.size() == kScannedLeaves) {
          for (size_t l = 0; l < p.leaves.size(); ++l) leaf_index.emplace(p.leaves[l].get(), l);
        }
      } else if (auto it = leaf_index.find(in.get()); it != leaf_index.end()) {
        index = it->second;
      }
      if (index < 0) {
        index = static_cast<int>(p.leaves.size());
        if (p.leaves.size() >= kScannedLeaves) leaf_index.emplace(in.get(), index);
        p.leaves.push_back(in);
        p.leaf_constant.push_back(node->constant[k]);
      } else {
        p.leaf_constant[index] = p.leaf_constant[index] && node->constant[k];
      }
      fn.inputs.push_back({jit::FusionSource::kLeaf, index, 0});
    }
    p.nodes.push_back(std::move(fn));
  }

  // Outputs: the root, then every other live output held from outside.
  p.sources = {{jit::FusionSource::kNode, static_cast<int>(g.nodes.size()) - 1, root->pending_output}};
  p.targets = {root};
  p.consumed_inside = {false};
  for (LiveOutput& o : live) {
    if (o.impl == root || !o.held_outside) continue;
    p.sources.push_back({jit::FusionSource::kNode, o.node, o.output});
    p.targets.push_back(o.impl);
    p.consumed_inside.push_back(o.internal_refs > 0);
  }
  p.name = GroupName(g);
  return p;
}

// Whether the plan's group is exactly its one node's function: each leaf read
// once, in order, and every output of the node in order (or its only one).
// Composing it would give that function back, so it is used as it is.
bool IsWholeNode(const Plan& p) {
  if (p.nodes.size() != 1) return false;
  const jit::FusionNode& n = p.nodes[0];
  if (n.inputs.size() != p.leaves.size() || p.sources.size() != n.function->num_outputs()) {
    return false;
  }
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i].kind != jit::FusionSource::kLeaf || n.inputs[i].index != static_cast<int>(i)) {
      return false;
    }
  }
  for (size_t m = 0; m < p.sources.size(); ++m) {
    if (p.sources[m].output != static_cast<int>(m)) return false;
  }
  return true;
}

// Composes, compiles (through the caches) and launches the plan's group; no
// lock held. Returns one value per target; fills `record` when taped.
std::vector<std::shared_ptr<ArrayImpl>> Launch(const Plan& p, PendingRecord* record, bool taped) {
  const std::string& name = p.name;
  const std::vector<std::shared_ptr<ArrayImpl>>& leaves = p.leaves;
  // The node's own function when the group is just it (its hash is computed
  // only if Execute has no launch plan for it), else the composed one.
  std::shared_ptr<const Composed> composed;
  if (!IsWholeNode(p)) {
    std::vector<jit::Type> leaf_types(leaves.size(), JitType(p.dtype));
    composed = ComposeCached(name, leaf_types, p.nodes, p.sources);
  }
  const std::shared_ptr<const jit::Function>& primal =
      composed != nullptr ? composed->primal : p.nodes[0].function;
  ExecuteOptions primal_options;
  if (composed != nullptr) primal_options.function_hash = composed->primal_hash;
  const size_t M = p.targets.size();
  if (!taped) return Execute(name, primal, leaves, primal_options);

  std::vector<std::shared_ptr<ArrayImpl>> values;
  BroadcastGradInfo& info = record->info;
  info.copy_user_memory = true;
  info.name = name;
  info.primal = primal;
  info.leaves = leaves;
  info.out_shape = *p.shape;
  info.consumed_inside.assign(p.consumed_inside.begin(), p.consumed_inside.end());
  if (std::find(p.consumed_inside.begin(), p.consumed_inside.end(), true) !=
      p.consumed_inside.end()) {
    info.fusion = p.nodes;
    info.fusion_outputs = p.sources;
  }
  if (p.sources.size() > 1) info.reads = FusedReads(p.nodes, p.sources, leaves.size());
  info.wrt.reserve(leaves.size());
  for (size_t j = 0; j < leaves.size(); ++j) {
    if (!p.leaf_constant[j]) info.wrt.push_back(static_cast<int>(j));
  }
  const size_t J = info.wrt.size();
  uint64_t jvp_hash = 0;
  std::shared_ptr<const jit::JvpResult> jvp = CachedJvp(primal, info.wrt, &jvp_hash);
  size_t nonzero = 0;
  for (bool zero : jvp->structurally_zero) nonzero += zero ? 0 : 1;
  int64_t elements = 1;
  for (int64_t s : *p.shape) elements *= s;
  const size_t bytes = nonzero * static_cast<size_t>(elements) * SizeOf(p.dtype);
  if (const PartialsPlan plan = PlanPartials(*primal, nonzero, bytes, p.targets.front()->device);
      !plan.cache) {
    info.keep_arguments_on_write = plan.keep_arguments_on_write;
    return Execute(name, primal, leaves, primal_options);
  }
  // Store only the requested result's partials (extra outputs recompute
  // if an adjoint ever reaches them), and none that is literally a value
  // the kernel already has: a primal output (d(c*w)/dw = c) or a leaf of
  // the output's shape (d(x*y)/dx = y) is referenced, not written again; a
  // leaf that is a view of the user's writable memory by its copy
  // (grad_kernels.h, CopyIfUserMemory: the user may write that buffer before
  // the sweep).
  const jit::Function& dual_fn = jvp->function;
  std::vector<std::shared_ptr<ArrayImpl>> alias(M * J);
  std::vector<int> alias_output(M * J, -1);
  ExecuteOptions options;
  options.function_hash = jvp_hash;
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
            leaves[inst.index]->shape == *p.shape) {
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
    std::shared_ptr<ArrayImpl> part = all[jit::PartialIndex(M, J, 0, j)];
    if (alias_output[j] >= 0) part = values[static_cast<size_t>(alias_output[j])];
    if (alias[j] != nullptr) {
      part = CopyIfUserMemory(alias[j]);
      if (part == nullptr) part = alias[j];
    }
    info.partials[j] = std::move(part);
  }
  return values;
}

// What a run leaves behind, freed once the graph lock is released (freeing
// is most of what would otherwise happen under it): the nodes run, the plan
// and the launch's own result handles.
struct Leftovers {
  NodeList nodes;
  Plan plan;
  std::vector<std::shared_ptr<ArrayImpl>> values;
};

// Runs group `g` (no running node in it) for `root`: plans it, launches it
// with `lock` released (its nodes marked running), and fills the targets
// under the lock again. On return `lock` is held. A group of one node whose
// inputs are all computed (`ready`) is planned without the lock too: nothing
// it reads changes while it is marked running (its inputs stay computed, its
// outputs are only written here), which keeps the critical sections of
// independent threads' broadcasts to a few flags.
// The span of a group run without the graph lock: marks its nodes running
// and releases the lock; on leaving (normally or by an exception) takes the
// lock again, clears the marks and wakes the threads waiting for them.
class Unlocked {
 public:
  Unlocked(GraphUniqueLock& lock, std::span<const std::shared_ptr<LazyNode>> nodes)
      : lock_(lock), nodes_(nodes) {
    for (const auto& node : nodes_) node->running = true;
    lock_.unlock();
    launching_.emplace();
  }
  ~Unlocked() {
    launching_.reset();
    lock_.lock();
    for (const auto& node : nodes_) node->running = false;
    NotifyGraphWaiters();
  }
  Unlocked(const Unlocked&) = delete;
  Unlocked& operator=(const Unlocked&) = delete;

 private:
  GraphUniqueLock& lock_;
  std::span<const std::shared_ptr<LazyNode>> nodes_;
  std::optional<LaunchingGroup> launching_;
};

// The lean launch under the graph lock (a tape-less ready node met there).
// False, with nothing done, when the node is not LeanEligible. Requires
// `lock` held; holds it on return.
bool RunReadyNode(const std::shared_ptr<ArrayImpl>& root, GraphUniqueLock& lock, Leftovers* left) {
  // Kept alive by `root->pending`, which only this thread resets (below).
  const LazyNode* node = root->pending.get();
  if (!LeanEligible(*node)) return false;
  LeanResult r;
  {
    Unlocked unlocked(lock, std::span(&root->pending, 1));
    r = LaunchLean(*node, root);
  }
  FillLean(std::move(r), root, &left->nodes);
  return true;
}

void Run(const Group& g, const std::shared_ptr<ArrayImpl>& root, LiveList live,
         bool ready, GraphUniqueLock& lock, std::vector<PendingRecord>* records,
         Leftovers* left) {
  Plan p;
  if (!ready) p = MakePlan(g, root, std::move(live));  // drops `live`: use counts are read no more
  const bool taped = TapeActive();
  PendingRecord record;
  std::vector<std::shared_ptr<ArrayImpl>> values;
  {
    Unlocked unlocked(lock, std::span(g.nodes.data(), g.nodes.size()));
    if (ready) p = MakePlan(g, root, LiveOutputs(g));
    values = Launch(p, &record, taped);
    // The targets are still pending and ours: nobody else reads them yet.
    NoteGroupOrigins(p.name, p.nodes, p.sources, p.leaves, p.targets);
  }

  for (size_t m = 0; m < p.targets.size(); ++m) {
    Publish(*p.targets[m], values[m]->storage, values[m]->strides, values[m]->offset);
  }
  if (taped) {
    record.outputs.assign(std::make_move_iterator(p.targets.begin()),
                          std::make_move_iterator(p.targets.end()));
    records->push_back(std::move(record));
  }
  left->nodes.insert(left->nodes.end(), g.nodes.begin(), g.nodes.end());
  left->plan = std::move(p);
  left->values = std::move(values);
}

// Requires `lock` (on the graph) held; may release it meanwhile. What
// the final run leaves goes to `left`, to be freed once the lock is released.
void MaterializeLocked(const std::shared_ptr<ArrayImpl>& root, GraphUniqueLock& lock,
                       std::vector<PendingRecord>* records, Leftovers* left) {
  while (root->pending != nullptr) {
    const LazyNode& node = *root->pending;
    const bool inputs_ready = std::none_of(node.inputs.begin(), node.inputs.end(),
                                           [](const auto& in) { return in->pending != nullptr; });
    if (inputs_ready) {  // known now without the lock, for the next read section
      for (const auto& in : node.inputs) in->computed.store(true, std::memory_order_release);
    }
    if (!node.running && inputs_ready) {
      if (!TapeActive() && RunReadyNode(root, lock, left)) return;
      Group g;  // a group of one, with nothing to gather or cut
      g.nodes.push_back(root->pending);
      Run(g, root, {}, /*ready=*/true, lock, records, left);
      return;
    }
    Group g = Gather(root->pending);
    // Part of the group is being computed by another thread: wait for it,
    // then look again (its results may have become leaves of ours).
    if (std::any_of(g.nodes.begin(), g.nodes.end(),
                    [](const std::shared_ptr<LazyNode>& n) { return n->running; })) {
      g = Group();
      WaitForRunning(lock);
      continue;
    }
    LiveList live = LiveOutputs(g);
    std::vector<std::shared_ptr<ArrayImpl>> cuts;
    for (const LiveOutput& o : live) {
      if (o.impl == root || !o.held_outside) continue;
      if (o.impl->shape != root->shape) cuts.push_back(o.impl);
    }
    if (cuts.empty()) {
      Run(g, root, std::move(live), /*ready=*/false, lock, records, left);
      return;
    }
    live.clear();
    g = Group();
    for (const auto& cut : cuts) {
      // Freed at once, under the lock, as the next gather expects: a node
      // kept alive would keep its inputs' use counts up and change which
      // outputs look held from outside.
      Leftovers cut_left;
      MaterializeLocked(cut, lock, records, &cut_left);
    }
  }
}

}  // namespace

GroupPlan PlanGroup(const Group& g, const std::shared_ptr<ArrayImpl>& root, LiveList live) {
  Plan p = MakePlan(g, root, std::move(live));
  GroupPlan plan;
  if (IsWholeNode(p)) {
    plan.primal = p.nodes[0].function;
  } else {
    std::vector<jit::Type> leaf_types(p.leaves.size(), JitType(p.dtype));
    plan.primal = ComposeCached(p.name, leaf_types, p.nodes, p.sources)->primal;
  }
  plan.name = std::move(p.name);
  plan.leaves = std::move(p.leaves);
  plan.leaf_constant = std::move(p.leaf_constant);
  plan.nodes = std::move(p.nodes);
  plan.sources = std::move(p.sources);
  plan.targets = std::move(p.targets);
  plan.consumed_inside.assign(p.consumed_inside.begin(), p.consumed_inside.end());
  plan.shape = *p.shape;
  plan.dtype = p.dtype;
  return plan;
}

BroadcastGradInfo RecomputeGradInfo(GroupPlan&& plan) {
  BroadcastGradInfo info;
  info.copy_user_memory = true;
  info.name = std::move(plan.name);
  info.primal = std::move(plan.primal);
  info.out_shape = std::move(plan.shape);
  const auto& ci = plan.consumed_inside;
  const bool fused_consumers = std::find(ci.begin(), ci.end(), true) != ci.end();
  if (plan.sources.size() > 1) info.reads = FusedReads(plan.nodes, plan.sources, plan.leaves.size());
  info.wrt.reserve(plan.leaves.size());
  for (size_t j = 0; j < plan.leaves.size(); ++j) {
    if (!plan.leaf_constant[j]) info.wrt.push_back(static_cast<int>(j));
  }
  if (fused_consumers) {
    info.fusion = std::move(plan.nodes);
    info.fusion_outputs = std::move(plan.sources);
  }
  info.consumed_inside = std::move(plan.consumed_inside);
  info.leaves = std::move(plan.leaves);
  return info;
}

void FillTargets(const GroupPlan& plan, const std::vector<std::shared_ptr<ArrayImpl>>& values) {
  for (size_t m = 0; m < plan.targets.size(); ++m) {
    if (values[m] == nullptr) continue;
    Publish(*plan.targets[m], values[m]->storage, values[m]->strides, values[m]->offset);
  }
  NoteGroupOrigins(plan.name, plan.nodes, plan.sources, plan.leaves, plan.targets);
}

void MaterializeLocked(const std::shared_ptr<ArrayImpl>& root, GraphLock& lock,
                       std::vector<PendingRecord>* records) {
  Leftovers left;  // freed under the lock here: callers are rare (a cut before a reduction)
  MaterializeLocked(root, lock.lock(), records, &left);
}


size_t IrCacheCapacity() {
  static const size_t capacity = jit::EnvCapacity("DUALCAST_IR_CACHE_MAX", kDefaultIrCacheCapacity);
  return capacity;
}

std::shared_ptr<const jit::JvpResult> CachedJvp(const std::shared_ptr<const jit::Function>& fn,
                                                std::span<const int> wrt, uint64_t* hash) {
  struct Entry {
    std::shared_ptr<const jit::Function> fn;  // keeps the keyed address alive
    std::shared_ptr<const jit::JvpResult> jvp;
    uint64_t hash = 0;  // StructuralHash(jvp->function)
    std::vector<int> wrt;  // in the per-thread list only
  };
  // A few recent results per thread, most recent first: a training loop asks
  // for the same one every step, and this needs neither the lock nor a key.
  // Outside DUALCAST_IR_CACHE_MAX, and its hits count as jvp hits (README says so).
  constexpr size_t kRecentPerThread = 8;
  thread_local std::vector<Entry> recent;
  for (size_t r = 0; r < recent.size(); ++r) {
    if (recent[r].fn != fn || !std::equal(wrt.begin(), wrt.end(), recent[r].wrt.begin(),
                                          recent[r].wrt.end())) {
      continue;
    }
    std::rotate(recent.begin(), recent.begin() + static_cast<std::ptrdiff_t>(r),
                recent.begin() + static_cast<std::ptrdiff_t>(r) + 1);
    jit::RecordCacheLookup(jit::Cache::kJvp, true);
    if (hash != nullptr) *hash = recent.front().hash;
    return recent.front().jvp;
  }
  auto remember = [&](const Entry& e) {
    if (recent.size() >= kRecentPerThread) recent.pop_back();
    recent.insert(recent.begin(), Entry{fn, e.jvp, e.hash, std::vector<int>(wrt.begin(), wrt.end())});
    if (hash != nullptr) *hash = e.hash;
    return e.jvp;
  };
  static std::mutex mu;
  static auto* cache =
      new jit::LruMap<std::vector<uint64_t>, Entry>(jit::Cache::kJvp, IrCacheCapacity());
  std::vector<uint64_t> key;
  key.reserve(wrt.size() + 1);
  key.push_back(reinterpret_cast<uintptr_t>(fn.get()));
  for (int j : wrt) key.push_back(static_cast<uint64_t>(j));
  Entry found;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (Entry* hit = cache->Find(key)) found = *hit;
  }
  if (found.jvp == nullptr) {
    auto jvp = std::make_shared<jit::JvpResult>(jit::Jvp(*fn, wrt));
    jvp->function = jit::Optimize(jvp->function);
    const uint64_t jvp_hash = jit::StructuralHash(jvp->function);
    std::lock_guard<std::mutex> lock(mu);
    found = cache->Insert(key, Entry{fn, std::move(jvp), jvp_hash, {}});
  }
  return remember(found);
}

void Materialize(ArrayImpl& impl) {
  if (t_launching_group) {
    if (impl.pending != nullptr) {
      throw Error(ErrorKind::kInternal, "a fused group read a pending array it does not own");
    }
    return;
  }
  // Every read of an array's data comes here: a computed one, never pending
  // again, needs no lock and no read section.
  if (impl.computed.load(std::memory_order_acquire)) return;
  std::vector<PendingRecord> records;
  // Released after the lock (declared before it): dropping the last
  // reference to a node or an array frees memory, which needs no lock.
  Leftovers left;
  if (MaterializeReady(impl, !TapeActive(), &left.nodes)) return;
  std::shared_ptr<ArrayImpl> root, reduction;
  {
    // Always under the lock: `pending` and `storage` change when another
    // thread computes a shared pending array, and reading them without the
    // lock would race (an uncontended lock costs tens of nanoseconds).
    GraphUniqueLock lock(LazyGraphMutex());
    if (impl.pending == nullptr) {
      impl.computed.store(true, std::memory_order_release);
      return;
    }
    // A shared_ptr to `impl` from its node (it is alive, so the weak one locks).
    root = impl.pending->outputs[impl.pending_output].lock();
    if (root.get() != &impl) {
      throw Error(ErrorKind::kInternal, "a pending array is not owned by its lazy node");
    }
    if (root->pending->reduce != nullptr) {
      reduction = std::move(root);  // takes the lock itself (lazy_reduce.cc)
    } else {
      MaterializeLocked(root, lock, &records, &left);
    }
  }
  if (reduction != nullptr) {
    MaterializeReduction(reduction);
    return;
  }
  for (PendingRecord& r : records) {
    // Outputs the one-pass plan recorded while they were still pending
    // (one_pass.cc: an operand nobody else held) are on the tape already,
    // before the reduction that reads them; recording them again, after it,
    // would send the reduction's adjoint to a node the sweep has passed.
    const bool recorded = std::all_of(r.outputs.begin(), r.outputs.end(), [](const auto& out) {
      return out == nullptr || out->grad_fn != nullptr;
    });
    if (!recorded) Record(MakeBroadcastGradNode(std::move(r.info)), r.outputs);
  }
}

}  // namespace dualcast::detail
