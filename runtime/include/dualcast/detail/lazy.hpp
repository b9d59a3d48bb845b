// LazyNode: one pending broadcast of the lazy graph, and the caches fusion shares with partials().
//
// broadcast() validates its arguments and records a LazyNode instead of
// computing; every output is an ArrayImpl whose `pending` points back at the
// node. Materialize (lazy.cc) gathers the pending nodes a requested array
// depends on, composes them into one function over the leaf arrays and runs
// it with one launch. Nodes hold their inputs strongly and their outputs
// weakly, so an intermediate nobody holds any more is never written.
//
// Example:
//   auto y = broadcast(f, x, a);   // y.impl()->pending: node {f, inputs {x, a}}
//   auto z = broadcast(g, y, b);   // node {g, inputs {y (pending), b}}
//   z.to_vector();                 // one kernel: g(f(x, a), b)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "dualcast/detail/array_impl.hpp"
#include "dualcast/detail/execute.hpp"
#include "jit/ir/ir.h"
#include "jit/passes/jvp.h"

namespace dualcast::detail {

// A pending sum or mean of a LazyNode's only input (lazy_reduce.cc): fused
// into the kernel that produces that input when it is pending.
struct PendingReduce {
  std::vector<bool> summed;          // per operand dim
  std::vector<int64_t> keep_shape;   // the operand's shape with summed dims 1
  // The count for a mean: the sum is divided by it in double before its one
  // rounding (ExecuteOptions::divisors); its adjoint scales by 1 / divisor.
  double divisor = 1;
  bool keepdims = false;
  ReduceKind kind = ReduceKind::kSum;  // max/min fuse the same way (their own reverse rule)
};

struct LazyNode {
  // Members start from their initialisers only: make_shared<LazyNode>() would
  // otherwise zero the whole node first (a rep stos on every broadcast).
  LazyNode() {}
  std::string name;                              // the kernel's
  std::shared_ptr<const jit::Function> function;  // traced for these inputs' arity and dtype
  std::vector<std::shared_ptr<ArrayImpl>> inputs;
  // Per input: a number the runtime turned into a rank-0 array (x * 2): never
  // differentiated, since no user can ask for its gradient.
  absl::InlinedVector<bool, 8> constant;
  std::vector<int64_t> shape;  // the broadcast shape; every output has it
  DType dtype = DType::kF32;
  Device device = Device::cpu();
  absl::InlinedVector<std::weak_ptr<ArrayImpl>, 1> outputs;  // most kernels have one
  // Upper bounds, over the pending nodes this one depends on (itself
  // included), of their IR instructions (the size of the fused kernel) and
  // of their number (the depth of the graph).
  int group_estimate = 1;
  int group_nodes = 1;
  // Set (under the graph lock, or in a read section by the thread that
  // claimed the node's one output: lazy_ready.cc) while a thread composes,
  // compiles and launches the group holding this node without the lock;
  // others wait for it.
  bool running = false;
  // Scratch of Materialize's walk, under the graph lock: the walk that last
  // reached this node, and the node's position in that walk's group.
  uint64_t visit = 0;
  int group_index = -1;
  // Set for a pending reduction of inputs[0] (`function` is then null); a
  // broadcast reading one evaluates it first (the group is cut there).
  std::shared_ptr<const PendingReduce> reduce;
};

// A fused group is cut (broadcast() evaluates its pending arguments first)
// when its IR would exceed kMaxFusedInsts instructions (not counting inputs):
// compile time grows with kernel size, not with the number of broadcasts, so
// 200 one-op broadcasts fuse while a few big kernels already fill a group.
// kMaxFusedNodes only keeps the graph shallow enough to be destroyed without
// deep recursion.
inline constexpr int kMaxFusedInsts = 768;
inline constexpr int kMaxFusedNodes = 256;

// Entries of each process-wide IR cache (composed groups, jvp functions,
// backward functions) before the least recently used is dropped;
// DUALCAST_IR_CACHE_MAX overrides it. Counted in FormatStats().
inline constexpr size_t kDefaultIrCacheCapacity = 2048;
size_t IrCacheCapacity();  // DUALCAST_IR_CACHE_MAX or the default, read once

// The forward-mode (values + partials) version of `fn` with respect to `wrt`,
// computed once per (fn, wrt) while cached, and shared. Thread-safe. When
// `hash` is given it receives StructuralHash of the jvp function (kept with
// the entry, for Execute's ExecuteOptions::function_hash).
std::shared_ptr<const jit::JvpResult> CachedJvp(const std::shared_ptr<const jit::Function>& fn,
                                                std::span<const int> wrt,
                                                uint64_t* hash = nullptr);

}  // namespace dualcast::detail
