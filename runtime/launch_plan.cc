// Per-thread launch plans (see launch_plan.h).
#include "runtime/launch_plan.h"

#include <algorithm>
#include <cstddef>

#include "jit/codegen/kernel_abi.h"
#include "jit/cpu/launch.h"
#include "jit/ir/hash.h"
#include "jit/stats.h"

namespace dualcast::detail {
namespace {

constexpr size_t kPlansPerThread = 8;
thread_local std::vector<std::unique_ptr<LaunchPlan>> t_plans;

// Functions held: their addresses cannot be reused while remembered.
struct KnownHash {
  std::shared_ptr<const jit::Function> fn;
  uint64_t hash = 0;
};
constexpr size_t kHashesPerThread = 16;
thread_local std::vector<KnownHash> t_hashes;

}  // namespace

uint64_t FunctionHash(const std::shared_ptr<const jit::Function>& fn) {
  for (size_t i = 0; i < t_hashes.size(); ++i) {
    if (t_hashes[i].fn == fn) return t_hashes[i].hash;
  }
  const uint64_t hash = jit::StructuralHash(*fn);
  if (t_hashes.size() >= kHashesPerThread) t_hashes.erase(t_hashes.begin());
  t_hashes.push_back(KnownHash{fn, hash});
  return hash;
}

LaunchPlan* FindPlan(const jit::Function* fn, const std::vector<std::shared_ptr<ArrayImpl>>& inputs,
                     const ExecuteOptions& options) {
  for (size_t p = 0; p < t_plans.size(); ++p) {
    LaunchPlan& plan = *t_plans[p];
    if (plan.fn.get() != fn || plan.write != options.write ||
        plan.in_shapes.size() != inputs.size() || plan.dtype != inputs[0]->dtype ||
        plan.output_shapes != options.output_shapes ||
        plan.iteration_shape != options.iteration_shape || plan.reduce_ops != options.reduce_ops) {
      continue;
    }
    bool same = true;
    for (size_t i = 0; i < inputs.size() && same; ++i) {
      same = inputs[i]->shape == plan.in_shapes[i] && inputs[i]->strides == plan.in_strides[i];
    }
    if (!same) continue;
    if (plan.kernel->evicted.load(std::memory_order_relaxed)) {
      t_plans.erase(t_plans.begin() + static_cast<std::ptrdiff_t>(p));
      return nullptr;
    }
    std::rotate(t_plans.begin(), t_plans.begin() + static_cast<std::ptrdiff_t>(p),
                t_plans.begin() + static_cast<std::ptrdiff_t>(p) + 1);
    return t_plans.front().get();
  }
  return nullptr;
}

void KeepPlan(std::unique_ptr<LaunchPlan> plan) {
  if (t_plans.size() >= kPlansPerThread) t_plans.pop_back();
  t_plans.insert(t_plans.begin(), std::move(plan));
}

std::vector<std::shared_ptr<ArrayImpl>> RunPlan(const LaunchPlan& plan, size_t n_out,
                                                const std::vector<std::shared_ptr<ArrayImpl>>& inputs,
                                                Device device) {
  constexpr size_t kInline = 16;
  const size_t n_in = inputs.size();
  const void* in_small[kInline];
  void* out_small[kInline];
  std::vector<const void*> in_big;
  std::vector<void*> out_big;
  const void** in_ptrs = in_small;
  void** out_ptrs = out_small;
  if (n_in > kInline) in_ptrs = (in_big.resize(n_in), in_big.data());
  if (n_out > kInline) out_ptrs = (out_big.resize(n_out), out_big.data());
  for (size_t i = 0; i < n_in; ++i) in_ptrs[i] = inputs[i]->data();
  std::vector<std::shared_ptr<ArrayImpl>> outputs(n_out);
  for (size_t m = 0; m < n_out; ++m) {
    out_ptrs[m] = nullptr;
    if (!plan.write.empty() && !plan.write[m]) continue;
    outputs[m] = NewArray(plan.dtype, plan.out_shapes[m], device);
    out_ptrs[m] = outputs[m]->data();
  }
  jit::KernelArgs args{plan.sizes.data(),       in_ptrs, plan.arg_in_strides.data(),
                       out_ptrs, plan.arg_out_strides.data(), 0,
                       plan.rank == 0 ? 1 : plan.sizes[0]};
  jit::RecordCacheHit();  // what the kernel cache would have counted
  if (plan.reduce_spec == nullptr) {
    jit::LaunchCpu(plan.kernel->entry_as<jit::KernelEntry>(), args, plan.rank);
    return outputs;
  }
  jit::LaunchCpu(plan.kernel->entry_as<jit::KernelEntry>(), args, *plan.reduce_spec,
                 ReducedDestinations(*plan.reduce_spec, outputs));
  return outputs;
}

std::vector<jit::ReducedDestination> ReducedDestinations(
    const jit::KernelSpec& spec, const std::vector<std::shared_ptr<ArrayImpl>>& outputs) {
  std::vector<jit::ReducedDestination> reduced(outputs.size());
  for (size_t m = 0; m < outputs.size(); ++m) {
    if (spec.reduces(m) != 0) reduced[m] = {outputs[m]->data(), outputs[m]->shape, outputs[m]->strides};
  }
  return reduced;
}

}  // namespace dualcast::detail
