// Per-thread launch plans (see launch_plan.h).
#include "runtime/launch_plan.h"

#include <algorithm>
#include <cstddef>

#include "runtime/array_pool.h"
#include "jit/codegen/broadcast_layout.h"
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
        plan.iteration_shape != options.iteration_shape || plan.reduce_ops != options.reduce_ops ||
        plan.divisors != options.divisors || plan.accumulate != options.accumulate ||
        plan.has_destination.size() != options.destinations.size()) {
      continue;
    }
    bool same = true;
    for (size_t i = 0; i < inputs.size() && same; ++i) {
      same = inputs[i]->shape == plan.in_shapes[i] && inputs[i]->strides == plan.in_strides[i];
    }
    for (size_t m = 0; m < options.destinations.size() && same; ++m) {
      const ArrayImpl* dest = options.destinations[m].get();
      same = (dest != nullptr) == plan.has_destination[m] &&
             (dest == nullptr || (dest->shape == plan.out_shapes[m] &&
                                  dest->strides == plan.destination_strides[m]));
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

namespace {

// Kernel arguments for a plan: the inputs' data pointers, and room for the
// outputs' (inline up to 16 of each, as kernels have few).
class PlanArgs {
 public:
  PlanArgs(const LaunchPlan& plan, const std::vector<std::shared_ptr<ArrayImpl>>& inputs, size_t n_out) {
    const size_t n_in = inputs.size();
    if (n_in > kInline) in_ptrs_ = (in_big_.resize(n_in), in_big_.data());
    if (n_out > kInline) out_ptrs_ = (out_big_.resize(n_out), out_big_.data());
    for (size_t i = 0; i < n_in; ++i) in_ptrs_[i] = inputs[i]->data();
    std::fill_n(out_ptrs_, n_out, nullptr);
    args_ = jit::KernelArgs{plan.sizes.data(), in_ptrs_, plan.arg_in_strides.data(), out_ptrs_,
                            plan.arg_out_strides.data(), 0, plan.rank == 0 ? 1 : plan.sizes[0]};
  }
  PlanArgs(const PlanArgs&) = delete;
  PlanArgs& operator=(const PlanArgs&) = delete;
  void*& out(size_t m) { return out_ptrs_[m]; }
  const jit::KernelArgs& args() const { return args_; }

 private:
  static constexpr size_t kInline = 16;
  const void* in_small_[kInline];
  void* out_small_[kInline];
  std::vector<const void*> in_big_;
  std::vector<void*> out_big_;
  const void** in_ptrs_ = in_small_;
  void** out_ptrs_ = out_small_;
  jit::KernelArgs args_;
};

}  // namespace

std::shared_ptr<Storage> RunPlanIntoStorage(const jit::Function* fn,
                                            const std::vector<std::shared_ptr<ArrayImpl>>& inputs) {
  static const ExecuteOptions kDefaults;
  LaunchPlan* found = FindPlan(fn, inputs, kDefaults);
  if (found == nullptr || found->out_shapes.size() != 1 || found->reduce_spec != nullptr) return nullptr;
  const LaunchPlan& plan = *found;
  int64_t elements = 1;
  for (int64_t s : plan.out_shapes[0]) elements *= s;
  std::shared_ptr<Storage> storage =
      Allocate(static_cast<size_t>(elements) * SizeOf(plan.dtype), Device::cpu());
  PlanArgs args(plan, inputs, 1);
  args.out(0) = storage->data;
  jit::RecordCacheHit();  // what the kernel cache would have counted
  jit::LaunchCpu(plan.kernel->entry_as<jit::KernelEntry>(), args.args(), plan.rank,
                 {static_cast<int>(inputs.size()), 1, static_cast<int>(SizeOf(plan.dtype))});
  return storage;
}

std::vector<std::shared_ptr<ArrayImpl>> RunPlan(const LaunchPlan& plan, size_t n_out,
                                                const std::vector<std::shared_ptr<ArrayImpl>>& inputs,
                                                Device device,
                                                std::vector<std::shared_ptr<ArrayImpl>> outputs) {
  PlanArgs args(plan, inputs, n_out);
  outputs.resize(n_out);
  for (size_t m = 0; m < n_out; ++m) {
    if (!plan.write.empty() && !plan.write[m]) continue;
    if (outputs[m] == nullptr) outputs[m] = NewContiguousArray(plan.dtype, plan.out_shapes[m], device);
    args.out(m) = outputs[m]->data();
  }
  jit::RecordCacheHit();  // what the kernel cache would have counted
  if (plan.reduce_spec == nullptr) {
    jit::LaunchCpu(plan.kernel->entry_as<jit::KernelEntry>(), args.args(), plan.rank,
                   {static_cast<int>(inputs.size()), static_cast<int>(n_out),
                    static_cast<int>(SizeOf(plan.dtype))});
    return outputs;
  }
  jit::LaunchCpu(plan.kernel->entry_as<jit::KernelEntry>(), args.args(), *plan.reduce_spec,
                 ReducedDestinations(*plan.reduce_spec, outputs, plan.loop_order, plan.divisors));
  return outputs;
}

std::vector<jit::ReducedDestination> ReducedDestinations(
    const jit::KernelSpec& spec, const std::vector<std::shared_ptr<ArrayImpl>>& outputs,
    std::span<const int> loop_order, std::span<const double> divisors) {
  std::vector<jit::ReducedDestination> reduced(outputs.size());
  for (size_t m = 0; m < outputs.size(); ++m) {
    if (spec.reduces(m) == 0) continue;
    reduced[m] = {outputs[m]->data(), outputs[m]->shape, outputs[m]->strides,
                  m < divisors.size() ? divisors[m] : 1.0};
    if (!loop_order.empty()) jit::PermuteDims(loop_order, reduced[m].shape, reduced[m].strides);
  }
  return reduced;
}

}  // namespace dualcast::detail
