// Kernel: the per-(arity, dtype) trace cache behind a kernel handle.
#include "dualcast/kernel.hpp"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include <mutex>
#include "jit/error.h"
#include "jit/optimize.h"

namespace dualcast {

struct Kernel::State {
  std::string name;
  std::mutex mu;
  // Tracing runs the user's lambda, which is not required to be thread-safe
  // (only pure), so it runs under the lock too: one trace at a time per kernel.
  TraceFn trace;  // guarded by mu
  // Key: arity * 4 + type.
  absl::flat_hash_map<int, std::shared_ptr<const jit::Function>> traced;  // guarded by mu
};

Kernel::Kernel(std::string name, TraceFn trace) : state_(std::make_shared<State>()) {
  state_->name = std::move(name);
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->trace = std::move(trace);
}

const std::string& Kernel::name() const {
  static const std::string kEmpty = "<empty kernel>";
  return state_ ? state_->name : kEmpty;
}

std::shared_ptr<const jit::Function> Kernel::function(int arity, jit::Type dtype) const {
  if (state_ == nullptr) {
    throw Error(ErrorKind::kInvalidArgument,
                "an empty dualcast::Kernel handle was used; create one with dualcast::kernel(name, "
                "lambda)");
  }
  if (dtype != jit::Type::kF32 && dtype != jit::Type::kF64) {
    throw Error(ErrorKind::kType,
                absl::StrCat(state_->name, ": kernels run on float32 or float64 arrays, not ",
                             jit::TypeName(dtype)));
  }
  if (arity < 0) {
    throw Error(ErrorKind::kArity, absl::StrCat(state_->name, ": negative arity ", arity));
  }
  const int key = arity * 4 + static_cast<int>(dtype);
  std::unique_lock<std::mutex> lock(state_->mu);
  auto it = state_->traced.find(key);
  if (it != state_->traced.end()) return it->second;
  std::vector<jit::Type> types(static_cast<size_t>(arity), dtype);
  jit::Function traced = state_->trace(state_->name, types);
  auto fn = std::make_shared<const jit::Function>(jit::Optimize(traced));
  state_->traced.emplace(key, fn);
  return fn;
}

std::shared_ptr<const jit::Function> Kernel::function(int arity, detail::DType dtype) const {
  return function(arity, detail::JitType(dtype));
}

}  // namespace dualcast
