// Pending sum/mean/max/min: the node, and its evaluation as an extra reduced output of the operand's fused kernel.
//
// Off the tape, `sum(x * y)` with x * y pending runs ONE kernel over the
// operand's group whose extra output is the operand summed down to the
// reduction's kept shape (ExecuteOptions::output_shapes); the operand is
// written only if something besides the reduction still holds it. Under a
// tape the operand is computed and recorded first (its partials or leaves
// are what the reverse sweep needs), then reduced: the fused one-pass form
// for a tape is Tape::gradient's (one_pass.cc).
//
// Example:
//   auto s = dc::sum(x * y, {1}, true);   // pending; x * y is never stored
//   s.to_vector();                         // one kernel: the row sums
#include "runtime/lazy_reduce.h"

#include <algorithm>

#include <atomic>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "dualcast/detail/execute.hpp"
#include "dualcast/detail/grad_node.hpp"
#include "jit/error.h"
#include "jit/passes/compose.h"
#include "jit/passes/optimize.h"
#include "runtime/array_pool.h"
#include "runtime/grad_kernels.h"
#include "runtime/lazy_group.h"
#include "runtime/pending_readers.h"

namespace dualcast::detail {
namespace {

std::atomic<int64_t> g_fused{0}, g_operands_written{0};

// `primal` with one more output: a copy of output 0 (Execute reduces it).
std::shared_ptr<const jit::Function> WithRootCopy(const std::shared_ptr<const jit::Function>& primal) {
  struct Entry {
    std::shared_ptr<const jit::Function> primal;  // keeps the keyed address alive
    std::shared_ptr<const jit::Function> fn;
  };
  static std::mutex mu;
  static auto* cache = new absl::flat_hash_map<const jit::Function*, Entry>();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache->find(primal.get()); it != cache->end()) return it->second.fn;
  jit::Function fn = jit::DerivedFunction(*primal, primal->name);
  jit::Builder b(fn);
  std::vector<jit::ValueId> args;
  for (size_t i = 0; i < primal->num_inputs(); ++i) args.push_back(b.Input(primal->input_type(i)));
  std::vector<jit::ValueId> outs = jit::Inline(b, *primal, args);
  outs.push_back(outs[0]);
  b.Return(outs);
  auto result = std::make_shared<const jit::Function>(jit::Optimize(fn));
  if (cache->size() >= 4096) cache->clear();  // bounded; rebuilding is cheap
  cache->emplace(primal.get(), Entry{primal, result});
  return result;
}

// With the graph lock held, no tape recording, and root's operand a pending
// broadcast output: one kernel computes the operand's group and the sum.
// False when, after waiting for another thread's run, the operand is no
// longer pending (the caller then reduces the computed operand).
bool FusedReduceLocked(const std::shared_ptr<ArrayImpl>& root, GraphLock& lock) {
  const std::shared_ptr<LazyNode> node = root->pending;
  const std::shared_ptr<ArrayImpl>& operand = node->inputs[0];
  const PendingReduce& r = *node->reduce;
  std::vector<PendingRecord> records;  // stays empty: no tape records
  LiveList live;
  Group g;
  for (;;) {
    if (root->pending == nullptr) return true;  // another thread computed it meanwhile
    if (operand->pending == nullptr) return false;
    g = Gather(operand->pending);
    if (AnyRunning(g)) {  // another thread runs part of it without the lock
      g = Group();
      lock.Wait();
      continue;
    }
    live = LiveOutputs(g);
    std::vector<std::shared_ptr<ArrayImpl>> cuts;
    for (const LiveOutput& o : live) {
      if (o.impl != operand && o.held_outside && o.impl->shape != operand->shape) cuts.push_back(o.impl);
    }
    if (cuts.empty()) break;
    live.clear();
    for (const auto& cut : cuts) MaterializeLocked(cut, lock, &records);
  }
  // References to the operand besides this reduction's input and `live`'s copy.
  bool operand_held = false;
  for (const LiveOutput& o : live) {
    if (o.impl == operand) operand_held = o.impl.use_count() - 2 - o.internal_refs > 0;
  }
  GroupPlan plan = PlanGroup(g, operand, std::move(live));
  const size_t M = plan.targets.size();
  ExecuteOptions options;
  options.write.assign(M + 1, true);
  options.write[0] = operand_held;
  options.output_shapes.assign(M + 1, {});
  options.output_shapes[M] = PaddedShape(r.keep_shape, plan.shape.size());
  if (r.kind != ReduceKind::kSum) {
    options.reduce_ops.assign(M + 1, ReduceKind::kSum);
    options.reduce_ops[M] = r.kind;
  }
  if (r.divisor != 1) {
    options.divisors.assign(M + 1, 1.0);
    options.divisors[M] = r.divisor;
  }
  options.iteration_shape = plan.shape;
  std::vector<std::shared_ptr<ArrayImpl>> values =
      Execute(plan.name, WithRootCopy(plan.primal), plan.leaves, options);
  std::shared_ptr<ArrayImpl> reduced = values[M];
  values.resize(M);
  FillTargets(plan, values);
  FillFrom(*root, *reduced);
  NoteReduction(node->name.c_str(), operand, root, node->reduce);
  g_fused.fetch_add(1, std::memory_order_relaxed);
  if (operand_held) g_operands_written.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace

FusedReductionCounts GetFusedReductionCounts() {
  return {g_fused.load(std::memory_order_relaxed), g_operands_written.load(std::memory_order_relaxed)};
}

void PadShapeInto(std::vector<int64_t>& padded, const std::vector<int64_t>& shape, size_t rank) {
  padded.assign(rank > shape.size() ? rank - shape.size() : 0, 1);  // keeps its capacity
  padded.insert(padded.end(), shape.begin(), shape.end());
}

std::vector<int64_t> PaddedShape(const std::vector<int64_t>& shape, size_t rank) {
  std::vector<int64_t> padded;
  padded.reserve(std::max(rank, shape.size()));
  PadShapeInto(padded, shape, rank);
  return padded;
}

void FillFrom(ArrayImpl& target, const ArrayImpl& value) {
  if (value.size() != target.size() || !value.contiguous()) {
    throw Error(ErrorKind::kInternal, "a reduced result does not fit its pending array");
  }
  Publish(target, value.storage, ContiguousStrides(target.shape), value.offset);
}

std::shared_ptr<const PendingReduce> SharedReduce(PendingReduce r) {
  return std::allocate_shared<PendingReduce>(BlockAllocator<PendingReduce>{}, std::move(r));
}

std::shared_ptr<ArrayImpl> LazyReduce(const char* what, const std::shared_ptr<ArrayImpl>& in,
                                      PendingReduce r) {
  auto node = std::allocate_shared<LazyNode>(BlockAllocator<LazyNode>{});
  node->name = what;
  node->inputs = {in};
  node->constant = {false};
  node->shape = ReducedShape(r);
  node->dtype = in->dtype;
  node->device = in->device;
  node->reduce = SharedReduce(std::move(r));
  auto out = PooledArrayImpl();
  out->dtype = in->dtype;
  out->device = in->device;
  SetContiguousShape(*out, node->shape);
  out->pending = node;
  node->outputs.push_back(out);
  NotePendingNode(node);
  return out;
}

void MaterializeReduction(const std::shared_ptr<ArrayImpl>& root) {
  std::shared_ptr<LazyNode> node;
  {
    GraphLock lock;
    if (root->pending == nullptr) return;  // another thread computed it
    node = root->pending;
    const std::shared_ptr<ArrayImpl>& in = node->inputs[0];
    if (!TapeActive() && in->pending != nullptr && in->pending->reduce == nullptr) {
      if (FusedReduceLocked(root, lock)) return;
      if (root->pending == nullptr) return;
    }
  }
  // Under a tape (or with an operand that is computed, or itself a pending
  // reduction): the operand the usual way (recorded), then the reduction.
  const std::shared_ptr<ArrayImpl>& in = node->inputs[0];
  std::shared_ptr<ArrayImpl> value = ComputeReduction(node->name.c_str(), in, *node->reduce);
  {
    GraphLock lock;
    if (root->pending == nullptr) return;
    FillFrom(*root, *value);
  }
  NoteReduction(node->name.c_str(), in, root, node->reduce);
}

}  // namespace dualcast::detail
