// Kernel: the per-(arity, dtype) trace cache behind a kernel handle.
#include "dualcast/kernel.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include <mutex>
#include "jit/error.h"
#include "jit/ir/hash.h"
#include "jit/ir/print.h"
#include "jit/passes/optimize.h"

namespace dualcast {

namespace {
std::atomic<uint64_t> next_state_id{1};

// One Function per distinct trace in the process. Every later cache (fusion's
// composition, jvp, backward, launch plans) keys on the Function's address,
// so a kernel made again with the same lambda (dc::kernel inside a loop, or
// in a function called each step) would miss all of them on every step: a
// taped step ran 10x slower, with the caches full of equal entries. Equal
// means the same name (errors name it), hints and structure, the printed text
// compared as well, so that a 64-bit hash collision cannot merge two traces.
struct TraceKey {
  std::string name;
  uint64_t hash;
  bool fast_math;
  int vector_width;
  bool operator==(const TraceKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const TraceKey& k) {
    return H::combine(std::move(h), k.name, k.hash, k.fast_math, k.vector_width);
  }
};

std::shared_ptr<const jit::Function> Interned(std::shared_ptr<const jit::Function> fn) {
  static std::mutex mu;
  struct Traced {
    std::weak_ptr<const jit::Function> fn;
    std::string text;  // jit::Print(*fn)
  };
  static auto* table = new absl::flat_hash_map<TraceKey, std::vector<Traced>>();
  TraceKey key{fn->name, jit::StructuralHash(*fn), fn->hints.fast_math, fn->hints.vector_width};
  std::string text = jit::Print(*fn);
  std::lock_guard<std::mutex> lock(mu);
  auto& same = (*table)[key];
  std::erase_if(same, [](const Traced& t) { return t.fn.expired(); });
  for (const Traced& t : same) {
    if (t.text != text) continue;
    if (auto old = t.fn.lock()) return old;
  }
  same.push_back({fn, std::move(text)});
  // Traces that died leave empty lists behind: swept when the table doubles.
  static size_t sweep_at = 1024;
  if (table->size() > sweep_at) {
    absl::erase_if(*table, [](const auto& entry) {
      return std::all_of(entry.second.begin(), entry.second.end(),
                         [](const auto& t) { return t.fn.expired(); });
    });
    sweep_at = 2 * table->size() + 1024;
  }
  return fn;
}
}  // namespace

struct Kernel::State {
  // Unique for the process: a per-thread memo keyed by a State's address
  // must not match a later State allocated at the same address.
  const uint64_t id = next_state_id.fetch_add(1, std::memory_order_relaxed);
  std::string name;
  std::mutex mu;
  // Tracing runs the user's lambda, which is not required to be thread-safe
  // (only pure), so it runs under the lock too: one trace at a time per kernel.
  TraceFn trace;  // guarded by mu
  // Key: arity * 4 + type.
  absl::flat_hash_map<int, std::shared_ptr<const jit::Function>> traced;  // guarded by mu
};

Kernel::Kernel(std::string name, TraceFn trace) : state_(std::make_shared<State>()) {
  if (!trace) {  // calling it threw std::bad_function_call at the first broadcast
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrCat("Kernel '", name, "': the trace function is empty; pass one that "
                             "builds a jit::Function with one input per argument type"));
  }
  state_->name = std::move(name);
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->trace = std::move(trace);
}

namespace {
// A hand-written TraceFn (kernel.hpp) must give one input per argument, of
// its type: else Execute refused the call as an internal error.
void CheckTraced(const std::string& name, const jit::Function& traced, std::span<const jit::Type> types) {
  if (traced.num_outputs() == 0) {  // broadcast_n returned no arrays, silently
    throw Error(ErrorKind::kArity, absl::StrCat(name, ": the kernel's trace function returned no "
                                                "outputs; a kernel returns at least one value"));
  }
  if (traced.num_inputs() != types.size()) {
    throw Error(ErrorKind::kArity,
                absl::StrCat(name, ": called with ", types.size(), " arguments, but the kernel's trace "
                             "function built a function of ", traced.num_inputs(), " inputs; it must "
                             "add one input per argument type it is given"));
  }
  for (size_t i = 0; i < types.size(); ++i) {
    if (traced.input_type(i) != types[i]) {
      throw Error(ErrorKind::kType,
                  absl::StrCat(name, ": argument ", i + 1, " is ", jit::TypeName(types[i]),
                               ", but the kernel's trace function made input ", i + 1, " ",
                               jit::TypeName(traced.input_type(i)),
                               "; it must give each input the type it is given"));
    }
  }
}

[[noreturn]] void ThrowEmptyHandle() {
  throw Error(ErrorKind::kInvalidArgument,
              "an empty dualcast::Kernel handle was used; create one with dualcast::kernel(name, "
              "lambda)");
}
}  // namespace

// Throws on an empty handle, as kernel.hpp says of every use (and as Array's
// accessors do): valid() is the question that never throws.
const std::string& Kernel::name() const {
  if (state_ == nullptr) ThrowEmptyHandle();
  return state_->name;
}

std::shared_ptr<const jit::Function> Kernel::function(int arity, jit::Type dtype) const {
  if (state_ == nullptr) ThrowEmptyHandle();
  if (dtype != jit::Type::kF32 && dtype != jit::Type::kF64) {
    throw Error(ErrorKind::kType,
                absl::StrCat(state_->name, ": kernels run on float32 or float64 arrays, not ",
                             jit::TypeName(dtype)));
  }
  if (arity < 0) {
    throw Error(ErrorKind::kArity, absl::StrCat(state_->name, ": negative arity ", arity));
  }
  const int key = arity * 4 + static_cast<int>(dtype);
  // A few recent answers per thread, so that threads broadcasting one shared
  // Kernel do not take turns on its lock for every call.
  struct Recent {
    uint64_t id = 0;
    int key = -1;
    std::shared_ptr<const jit::Function> fn;
  };
  thread_local Recent recent[4];
  thread_local unsigned next = 0;
  for (const Recent& r : recent) {
    if (r.id == state_->id && r.key == key) return r.fn;
  }
  std::shared_ptr<const jit::Function> fn;
  {
    std::unique_lock<std::mutex> lock(state_->mu);
    auto it = state_->traced.find(key);
    if (it != state_->traced.end()) {
      fn = it->second;
    } else {
      std::vector<jit::Type> types(static_cast<size_t>(arity), dtype);
      jit::Function traced = state_->trace(state_->name, types);
      CheckTraced(state_->name, traced, types);
      fn = Interned(std::make_shared<const jit::Function>(jit::Optimize(traced)));
      state_->traced.emplace(key, fn);
    }
  }
  // What the memo hands out shares ownership of `fn` through a control block
  // of this thread's own: every broadcast copies the pointer into its lazy
  // node and drops it with the node, and on the shared block those two
  // atomic counts moved one cache line between the cores of threads
  // broadcasting one Kernel (2 threads: 1.5x one thread's rate, 1.9x with a
  // handle per thread). The pointer, the key of every cache, is the same.
  auto anchor = std::make_shared<std::shared_ptr<const jit::Function>>(fn);
  std::shared_ptr<const jit::Function> local(anchor, anchor->get());
  recent[next++ % 4] = Recent{state_->id, key, local};
  return local;
}

std::shared_ptr<const jit::Function> Kernel::function(int arity, detail::DType dtype) const {
  return function(arity, detail::JitType(dtype));
}

}  // namespace dualcast
