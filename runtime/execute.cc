// Execute: the one path from a jit::Function and arrays to results (layout, spec, cache, compile, launch).
#include "dualcast/detail/execute.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "dualcast/kernel.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jit/codegen/broadcast_layout.h"
#include "jit/cpu/launch.h"
#include "jit/error.h"
#include "jit/codegen/kernel_abi.h"
#include "jit/codegen/kernel_cache.h"
#include "jit/codegen/kernel_spec.h"
#include "runtime/backend.h"
#include "runtime/grad_kernels.h"
#include "runtime/launch_plan.h"
#include "runtime/storage_aliases.h"

namespace dualcast::detail {

static_assert(static_cast<int>(ReduceKind::kSum) == static_cast<int>(jit::ReduceOp::kSum) &&
              static_cast<int>(ReduceKind::kProd) == static_cast<int>(jit::ReduceOp::kProd) &&
              static_cast<int>(ReduceKind::kMax) == static_cast<int>(jit::ReduceOp::kMax) &&
              static_cast<int>(ReduceKind::kMin) == static_cast<int>(jit::ReduceOp::kMin));

namespace {

void CheckInputs(const std::string& name, const jit::Function& fn,
                 const std::vector<std::shared_ptr<ArrayImpl>>& inputs) {
  if (fn.num_inputs() != inputs.size()) {
    throw Error(ErrorKind::kInternal,
                absl::StrCat(name, ": the kernel function takes ", fn.num_inputs(),
                             " inputs but Execute was given ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(name, ": argument ", i + 1, " is an empty Array handle"));
    }
    const ArrayImpl& a = *inputs[i];
    if (a.dtype != inputs[0]->dtype) {
      throw Error(ErrorKind::kType,
                  absl::StrCat(name, ": argument ", i + 1, " is ", DTypeName(a.dtype),
                               " but argument 1 is ", DTypeName(inputs[0]->dtype),
                               "; all arguments of a broadcast must have one element type"));
    }
    if (fn.input_type(i) != JitType(a.dtype)) {
      throw Error(ErrorKind::kInternal,
                  absl::StrCat(name, ": input ", i + 1, " of the kernel function is ",
                               jit::TypeName(fn.input_type(i)), " but the array is ",
                               DTypeName(a.dtype)));
    }
    if (!a.device.is_cpu() && !a.device.available()) {
      throw Error(ErrorKind::kDevice,
                  absl::StrCat(name, ": argument ", i + 1, " is on ", a.device.name(),
                               " and cannot be used: ", a.device.unavailable_reason()));
    }
    if (a.device != inputs[0]->device) {
      throw Error(ErrorKind::kDevice,
                  absl::StrCat(name, ": argument ", i + 1, " is on ", a.device.name(),
                               " but argument 1 is on ", inputs[0]->device.name(),
                               "; move the arrays to one device with .to(...) first"));
    }
  }
}

}  // namespace

bool SelfOverlapping(const ArrayImpl& a) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // |stride|, size
  for (int d = 0; d < a.rank(); ++d) {
    if (a.shape[d] > 1) dims.emplace_back(std::llabs(a.strides[d]), a.shape[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t reach = 1;  // elements covered by the inner dims so far
  for (const auto& [stride, size] : dims) {
    if (stride < reach) return true;
    reach = stride * (size - 1) + reach;
  }
  return false;
}

std::vector<int64_t> BroadcastShape(const std::string& kernel_name,
                                    const std::vector<std::vector<int64_t>>& shapes) {
  absl::StatusOr<std::vector<int64_t>> shape = jit::BroadcastShape(shapes, kernel_name);
  if (!shape.ok()) ThrowStatus(shape.status());
  return *std::move(shape);
}

bool BroadcastsTo(const std::vector<int64_t>& target, const std::vector<int64_t>& full) {
  if (target.size() > full.size()) return false;
  const size_t lead = full.size() - target.size();
  for (size_t k = 0; k < target.size(); ++k) {
    if (target[k] != 1 && target[k] != full[lead + k]) return false;
  }
  return true;
}

namespace {

// Whether an output stored as `target` is summed along some dim of `full` (a dim of size > 1).
bool Summed(const std::vector<int64_t>& target, const std::vector<int64_t>& full) {
  const size_t lead = full.size() - target.size();
  for (size_t d = 0; d < full.size(); ++d) {
    const int64_t t = d < lead ? 1 : target[d - lead];
    if (full[d] != 1 && t == 1) return true;
  }
  return false;
}

struct Plan {
  std::vector<bool> write;
  std::vector<bool> accumulate;
  std::vector<int64_t> full;                 // the iteration shape
  std::vector<std::vector<int64_t>> shapes;  // per output: its stored shape
  bool reduces = false;                      // some output is summed or accumulated
};

Plan MakePlan(const std::string& name, const jit::Function& fn,
              const std::vector<std::shared_ptr<ArrayImpl>>& inputs, const ExecuteOptions& o) {
  const size_t n_out = fn.num_outputs();
  Plan plan;
  plan.write = o.write;
  if (plan.write.empty()) plan.write.assign(n_out, true);
  plan.accumulate = o.accumulate;
  if (plan.accumulate.empty()) plan.accumulate.assign(n_out, false);
  if (plan.write.size() != n_out || (!o.destinations.empty() && o.destinations.size() != n_out) ||
      plan.accumulate.size() != n_out ||
      (!o.output_shapes.empty() && o.output_shapes.size() != n_out) ||
      (!o.divisors.empty() && o.divisors.size() != n_out)) {
    throw Error(ErrorKind::kInternal,
                absl::StrCat(name, ": ", n_out, " outputs but ", plan.write.size(),
                             " write flags, ", o.destinations.size(), " destinations, ",
                             o.accumulate.size(), " accumulate flags, ", o.output_shapes.size(),
                             " output shapes and ", o.divisors.size(), " divisors"));
  }
  for (size_t m = 0; m < o.divisors.size(); ++m) {
    if (o.divisors[m] != 1 && plan.accumulate[m]) {
      throw Error(ErrorKind::kInternal, absl::StrCat(name, ": output ", m + 1, " both divided and accumulated"));
    }
  }
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& in : inputs) shapes.push_back(in->shape);
  plan.full = BroadcastShape(name, shapes);
  if (!o.iteration_shape.empty()) {
    shapes.push_back(o.iteration_shape);
    if (BroadcastShape(name, shapes) != o.iteration_shape) {
      throw Error(ErrorKind::kShape,
                  absl::StrCat(name, ": the arguments broadcast to ", jit::FormatShape(plan.full),
                               ", which does not broadcast to the iteration shape ",
                               jit::FormatShape(o.iteration_shape),
                               "; give an iteration shape every argument broadcasts to"));
    }
    plan.full = o.iteration_shape;
  }
  for (size_t m = 0; m < n_out; ++m) {
    std::vector<int64_t> shape =
        o.output_shapes.empty() || o.output_shapes[m].empty() ? plan.full : o.output_shapes[m];
    if (!plan.write[m]) {
      plan.shapes.push_back(std::move(shape));
      continue;
    }
    if (!BroadcastsTo(shape, plan.full)) {
      throw Error(ErrorKind::kShape,
                  absl::StrCat(name, ": output ", m + 1, " is to be stored with shape ",
                               jit::FormatShape(shape), ", which does not broadcast to the "
                               "iteration shape ", jit::FormatShape(plan.full),
                               "; a reduced output must keep or set to 1 each trailing dimension"));
    }
    if (plan.accumulate[m] &&
        (o.destinations.empty() || o.destinations[m] == nullptr)) {
      throw Error(ErrorKind::kInternal,
                  absl::StrCat(name, ": output ", m + 1,
                               " accumulates into its destination, but none was given"));
    }
    if (Summed(shape, plan.full) || plan.accumulate[m]) plan.reduces = true;
    plan.shapes.push_back(std::move(shape));
  }
  return plan;
}

// Checks a destination for output m before anything is written; returns it.
void CheckDestination(const std::string& kernel_name, size_t m, ArrayImpl& dest,
                      const std::vector<int64_t>& shape, const std::vector<int64_t>& full,
                      DType dtype, const Device& device,
                      const std::vector<std::shared_ptr<ArrayImpl>>& inputs,
                      const std::vector<std::shared_ptr<ArrayImpl>>& outputs,
                      const std::vector<std::string>& names) {
  Materialize(dest);
  auto name_of = [&](size_t k) {
    return k < names.size() ? names[k] : absl::StrCat("destination for output ", k + 1);
  };
  auto where = [&] { return absl::StrCat(kernel_name, ": ", name_of(m)); };
  if (dest.shape != shape) {
    throw Error(ErrorKind::kShape,
                absl::StrCat(where(), " has shape ", jit::FormatShape(dest.shape),
                             shape == full ? " but the broadcast result has shape "
                                           : " but the output is reduced to shape ",
                             jit::FormatShape(shape),
                             shape == full ? "" : absl::StrCat(" (from ", jit::FormatShape(full), ")"),
                             "; pass an array (or view) of exactly that shape"));
  }
  if (dest.dtype != dtype) {
    throw Error(ErrorKind::kType, absl::StrCat(where(), " is ", DTypeName(dest.dtype),
                                               " but the arguments are ", DTypeName(dtype)));
  }
  if (dest.device != device) {
    throw Error(ErrorKind::kDevice, absl::StrCat(where(), " is on ", dest.device.name(),
                                                 " but the arguments are on ", device.name()));
  }
  if (dest.read_only) {
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrCat(where(), " is a read-only view (of const memory); pass a view "
                                      "of writable memory"));
  }
  if (SelfOverlapping(dest)) {
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrCat(where(), " has strides ", jit::FormatShape(dest.strides),
                             " under which several elements share memory; pass a "
                             "destination whose elements are distinct"));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (MayOverlap(dest, *inputs[i])) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(where(), " overlaps the memory of argument ", i + 1, " (position ", i, ")",
                               "; results cannot be written over the arguments (in place): "
                               "pass a separate destination or copy() the argument"));
    }
  }
  for (size_t k = 0; k < m; ++k) {
    if (outputs[k] != nullptr && MayOverlap(dest, *outputs[k])) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(where(), " overlaps ", name_of(k),
                               "; every output needs its own memory"));
    }
  }
}

// Every written output's destination, checked before anything is allocated
// or written (null where none was given): the full path's and a plan's.
// `write` empty: every output is written.
std::vector<std::shared_ptr<ArrayImpl>> CheckedDestinations(
    const std::string& kernel_name, const ExecuteOptions& options, const std::vector<bool>& write,
    const std::vector<std::vector<int64_t>>& shapes, const std::vector<int64_t>& full, DType dtype,
    const Device& device, const std::vector<std::shared_ptr<ArrayImpl>>& inputs, size_t n_out) {
  std::vector<std::shared_ptr<ArrayImpl>> outputs(n_out);
  for (size_t m = 0; m < options.destinations.size(); ++m) {
    if (options.destinations[m] == nullptr || (!write.empty() && !write[m])) continue;
    CheckDestination(kernel_name, m, *options.destinations[m], shapes[m], full, dtype, device, inputs,
                     outputs, options.destination_names);
    outputs[m] = options.destinations[m];
  }
  return outputs;
}

// The loop order of a launch with summed outputs (see jit::LoopOrder), or
// empty for the logical order (no summed output, or nothing to reorder).
// `shapes` and `strides` are the layout's operands: the inputs, the written
// outputs, then the iteration shape when one was given. The inputs alone have
// a say; the outputs and the iteration shape follow. Not the full-size
// outputs: a pending operand the user still holds is written by the same
// kernel, and its vote made the summation order, so the result's last bits,
// depend on whether the user held it (sum(x.T * 2 + 1) differed by an ulp).
// A new array for an output of `kernel_name`; when memory runs out, the
// error names the kernel and the output's shape (the allocator knows only
// bytes). Not the output's index: a fused group's outputs are not the user's.
std::shared_ptr<ArrayImpl> NewOutput(const std::string& kernel_name, DType dtype,
                                     const std::vector<int64_t>& shape, Device device) {
  try {
    return NewArray(dtype, shape, device);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kMemory) throw;
    throw Error(ErrorKind::kMemory,
                absl::StrCat(kernel_name, ": an output of shape [", absl::StrJoin(shape, ", "),
                             "]: ", e.what()));
  }
}

std::vector<int> ReductionLoopOrder(const std::vector<std::vector<int64_t>>& shapes,
                                    const std::vector<std::vector<int64_t>>& strides, size_t n_in,
                                    const std::vector<bool>& summed) {
  if (std::find(summed.begin(), summed.end(), true) == summed.end()) return {};
  std::vector<bool> votes(shapes.size(), false);
  std::fill_n(votes.begin(), n_in, true);
  std::vector<int> order = jit::LoopOrder(shapes, strides, votes);
  for (size_t d = 0; d < order.size(); ++d) {
    if (order[d] != static_cast<int>(d)) return order;
  }
  return {};
}

}  // namespace

namespace {

// The divisors (ExecuteOptions::divisors) that no launch took
// (`scratch_divided` false: an empty reduction's zeros, an output summed over
// no merged axis): applied here, in the element type. Returns whether any was.
bool DivideAfter(const ExecuteOptions& options, const std::vector<bool>& scratch_divided,
                 std::vector<std::shared_ptr<ArrayImpl>>& outputs) {
  bool any = false;
  for (size_t m = 0; m < options.divisors.size() && m < outputs.size(); ++m) {
    if (options.divisors[m] == 1 || scratch_divided[m] || outputs[m] == nullptr) continue;
    any = true;
    std::shared_ptr<ArrayImpl> divided = Divided(*outputs[m], options.divisors[m]);
    if (!options.destinations.empty() && options.destinations[m] != nullptr) {
      CopyInto(*outputs[m], *divided);
    } else {
      outputs[m] = std::move(divided);
    }
  }
  return any;
}

}  // namespace

// Zeros into every element of `a` (a reduction over nothing).
void CpuStoreZeros(ArrayImpl& a) {
  ForEachElement(a.shape, a.strides, [&](int64_t, int64_t off) {
    if (a.dtype == DType::kF32) {
      static_cast<float*>(a.data())[off] = 0.0f;
    } else {
      static_cast<double*>(a.data())[off] = 0.0;
    }
  });
}


namespace {

// Whether the full-size outputs written beside a reduction keep dims apart
// that the inputs and the summed outputs alone would merge (`rank`: the
// merge with them). Such an output is a pending operand the user still
// holds (a new row-major array) over a transposed input: merged with it, the
// loop's rows, the lanes' share of each row and so the sum's last bits
// depended on whether the user held it (sum(x.T * 2 + 1), 17 x 8 doubles, on
// a 4-lane host). `shapes` and `strides` are in loop order.
bool FullOutputsKeepDimsApart(const std::vector<std::vector<int64_t>>& shapes,
                              const std::vector<std::vector<int64_t>>& strides, size_t n_in,
                              const std::vector<bool>& write, const std::vector<bool>& summed,
                              int rank) {
  std::vector<std::vector<int64_t>> kept_shapes(shapes.begin(), shapes.begin() + n_in);
  std::vector<std::vector<int64_t>> kept_strides(strides.begin(), strides.begin() + n_in);
  size_t operand = n_in;
  bool any_full = false;
  for (size_t m = 0; m < write.size(); ++m) {
    if (!write[m]) continue;
    if (summed[m]) {
      kept_shapes.push_back(shapes[operand]);
      kept_strides.push_back(strides[operand]);
    } else {
      any_full = true;
    }
    ++operand;
  }
  if (!any_full) return false;
  for (; operand < shapes.size(); ++operand) {  // the iteration shape, when given
    kept_shapes.push_back(shapes[operand]);
    kept_strides.push_back(strides[operand]);
  }
  absl::StatusOr<jit::BroadcastLayout> alone = jit::MergeBroadcast(kept_shapes, kept_strides, "");
  return alone.ok() && alone->rank() < rank;
}

// The reduction launch with its summed outputs alone, then the full-size
// outputs in a launch of their own (FullOutputsKeepDimsApart): the sums'
// bits are then those of the launch without them. The kernel runs twice,
// only for a held operand over an input whose layout differs from it.
std::vector<std::shared_ptr<ArrayImpl>> ExecuteSplit(const std::string& kernel_name,
                                                     const std::shared_ptr<const jit::Function>& fn,
                                                     const std::vector<std::shared_ptr<ArrayImpl>>& inputs,
                                                     const ExecuteOptions& options,
                                                     const std::vector<bool>& write,
                                                     const std::vector<bool>& summed) {
  ExecuteOptions sums = options, full = options;
  sums.write.assign(write.size(), false);
  full.write.assign(write.size(), false);
  for (size_t m = 0; m < write.size(); ++m) {
    if (!write[m]) continue;
    (summed[m] ? sums : full).write[m] = true;
  }
  std::vector<std::shared_ptr<ArrayImpl>> outputs = Execute(kernel_name, fn, inputs, sums);
  std::vector<std::shared_ptr<ArrayImpl>> rest = Execute(kernel_name, fn, inputs, full);
  for (size_t m = 0; m < write.size(); ++m) {
    if (full.write[m]) outputs[m] = std::move(rest[m]);
  }
  return outputs;
}

}  // namespace

std::vector<std::shared_ptr<ArrayImpl>> Execute(const std::string& kernel_name,
                                                const std::shared_ptr<const jit::Function>& fn,
                                                const std::vector<std::shared_ptr<ArrayImpl>>& inputs,
                                                const ExecuteOptions& options) {
  if (fn == nullptr) throw Error(ErrorKind::kInternal, kernel_name + ": null kernel function");
  CheckInputs(kernel_name, *fn, inputs);
  for (const auto& in : inputs) Materialize(*in);

  const size_t n_in = inputs.size();
  const size_t n_out = fn->num_outputs();
  if (n_in == 0) {
    throw Error(ErrorKind::kArity, kernel_name + ": a broadcast needs at least one array argument");
  }
  const DType dtype = inputs[0]->dtype;
  const Device device = inputs[0]->device;
  for (size_t m = 0; m < n_out; ++m) {
    if (fn->output_type(m) != JitType(dtype)) {
      throw Error(ErrorKind::kType,
                  absl::StrCat(kernel_name, ": output ", m + 1, " of the kernel is ",
                               jit::TypeName(fn->output_type(m)), " but its arguments are ",
                               DTypeName(dtype), "; a kernel must return its arguments' type"));
    }
  }
  // The per-thread fast path: same function, shapes and strides (inputs and
  // destinations) as a recent launch. Destinations are checked as below.
  const bool plannable =
      device.is_cpu() && (options.write.empty() || options.write.size() == n_out) &&
      (options.destinations.empty() || options.destinations.size() == n_out) &&
      std::all_of(options.destinations.begin(), options.destinations.end(),
                  [](const auto& d) { return d == nullptr || d->storage != nullptr; });
  if (plannable) {
    if (LaunchPlan* plan = FindPlan(fn.get(), inputs, options)) {
      return RunPlan(*plan, n_out, inputs, device,
                     CheckedDestinations(kernel_name, options, plan->write, plan->out_shapes, plan->full,
                                         dtype, device, inputs, n_out));
    }
  }

  const Plan plan = MakePlan(kernel_name, *fn, inputs, options);
  Backend& backend = BackendFor(device);
  const std::vector<bool>& write = plan.write;
  const std::vector<int64_t>& out_shape = plan.full;

  std::vector<std::shared_ptr<ArrayImpl>> outputs = CheckedDestinations(
      kernel_name, options, write, plan.shapes, plan.full, dtype, device, inputs, n_out);
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& in : inputs) shapes.push_back(in->shape);

  // The layout: outputs ride along as extra operands, so that destinations
  // with any strides merge only where their memory allows too. A summed
  // output rides with its stored shape and the contiguous strides of the
  // scratch the kernel adds into: its broadcast bits are its reduce bits,
  // so dims merge only where every output's reduce pattern agrees.
  std::vector<std::vector<int64_t>> strides;
  for (const auto& in : inputs) strides.push_back(in->strides);
  std::vector<bool> summed(n_out, false);
  for (size_t m = 0; m < n_out; ++m) {
    if (!write[m]) continue;
    summed[m] = Summed(plan.shapes[m], out_shape);
    if (outputs[m] == nullptr) outputs[m] = NewOutput(kernel_name, dtype, plan.shapes[m], device);
    shapes.push_back(plan.shapes[m]);
    // Summed into the backend's contiguous scratch, or stored straight into the destination.
    strides.push_back(summed[m] && backend.SumsIntoScratch() ? ContiguousStrides(plan.shapes[m])
                                                             : outputs[m]->strides);
  }
  if (!options.iteration_shape.empty()) {  // read nowhere: broadcast everywhere, merges anything
    shapes.push_back(out_shape);
    strides.push_back(std::vector<int64_t>(out_shape.size(), 0));
  }
  // A reduction loops in the memory order of its operands (LoopOrder): no
  // full-size output fixes the order, and the logical one would read a
  // transposed operand one cache line per element. The summed outputs'
  // scratch follows the loop: contiguous over their kept dims in that order.
  const std::vector<int> order = backend.SumsIntoScratch()
                                     ? ReductionLoopOrder(shapes, strides, n_in, summed)
                                     : std::vector<int>();
  absl::StatusOr<jit::BroadcastLayout> merged = absl::InternalError("not merged");
  bool split_full_outputs = false;
  if (!order.empty()) {
    std::vector<std::vector<int64_t>> ordered_shapes = shapes, ordered_strides = strides;
    for (size_t k = 0; k < ordered_shapes.size(); ++k) {
      jit::PermuteDims(order, ordered_shapes[k], ordered_strides[k]);
    }
    size_t operand = n_in;
    for (size_t m = 0; m < n_out; ++m) {
      if (!write[m]) continue;
      if (summed[m]) ordered_strides[operand] = ContiguousStrides(ordered_shapes[operand]);
      ++operand;
    }
    merged = jit::MergeBroadcast(ordered_shapes, ordered_strides, kernel_name);
    split_full_outputs = merged.ok() && FullOutputsKeepDimsApart(ordered_shapes, ordered_strides, n_in,
                                                                  write, summed, merged->rank());
  }
  // The logical order (also when the ordered dims would not merge under kMaxRank).
  std::vector<int> loop_order = order;
  if (!merged.ok()) {
    loop_order.clear();
    split_full_outputs = false;
    merged = jit::MergeBroadcast(shapes, strides, kernel_name);
  }
  if (!merged.ok()) ThrowStatus(merged.status());
  if (split_full_outputs) return ExecuteSplit(kernel_name, fn, inputs, options, write, summed);
  if (merged->num_elements == 0) {  // nothing to compute: a sum over nothing is 0
    for (size_t m = 0; m < n_out; ++m) {
      if (!summed[m] || plan.accumulate[m] || outputs[m]->size() == 0) continue;
      if (m < options.reduce_ops.size() && options.reduce_ops[m] != ReduceKind::kSum) {
        throw Error(ErrorKind::kInternal,
                    absl::StrCat(kernel_name, ": output ", m + 1,
                                 " reduces over no elements with an op that is not a sum; the "
                                 "caller must handle empty reductions"));
      }
      backend.StoreZeros(outputs[m]);
    }
    DivideAfter(options, std::vector<bool>(n_out, false), outputs);  // 0 / 0: an empty mean's NaN
    return outputs;
  }

  const int rank = merged->rank();
  jit::BroadcastLayout in_layout = *merged;
  in_layout.in_strides.resize(n_in);
  in_layout.in_broadcast.resize(n_in);
  jit::KernelSpec spec =
      jit::KernelSpec::For(fn, JitType(dtype), backend.target(), in_layout,
                           options.function_hash != 0 ? options.function_hash : FunctionHash(fn));
  spec.write = write;
  if (plan.reduces) {
    spec.output_reduce.assign(n_out, 0);
    spec.accumulate.assign(n_out, false);
    if (!options.reduce_ops.empty()) {
      spec.output_reduce_op.assign(n_out, jit::ReduceOp::kSum);
      for (size_t m = 0; m < n_out && m < options.reduce_ops.size(); ++m) {
        if (summed[m]) spec.output_reduce_op[m] = static_cast<jit::ReduceOp>(options.reduce_ops[m]);
      }
    }
    size_t operand = n_in;
    for (size_t m = 0; m < n_out; ++m) {
      if (!write[m]) continue;
      spec.accumulate[m] = plan.accumulate[m];
      if (summed[m]) spec.output_reduce[m] = merged->in_broadcast[operand];
      ++operand;
    }
  }

  std::vector<const void*> in_ptrs(n_in);
  std::vector<int64_t> in_strides(n_in * rank + 1, 0);
  for (size_t i = 0; i < n_in; ++i) {
    in_ptrs[i] = inputs[i]->data();
    std::copy(merged->in_strides[i].begin(), merged->in_strides[i].end(),
              in_strides.begin() + i * rank);
  }
  std::vector<void*> out_ptrs(n_out, nullptr);
  std::vector<int64_t> out_strides(n_out * rank + 1, 0);
  size_t operand = n_in;
  for (size_t m = 0; m < n_out; ++m) {
    if (!write[m]) continue;
    out_ptrs[m] = outputs[m]->data();
    std::copy(merged->in_strides[operand].begin(), merged->in_strides[operand].end(),
              out_strides.begin() + m * rank);
    ++operand;
  }
  std::vector<int64_t> sizes = merged->out_shape;
  sizes.push_back(1);  // never empty, so data() is a real pointer for rank 0
  jit::KernelArgs args{sizes.data(),       in_ptrs.data(),     in_strides.data(),
                       out_ptrs.data(),    out_strides.data(), 0,
                       rank == 0 ? 1 : sizes[0]};
  jit::KernelCache::Ref kernel =
      backend.Run(kernel_name, spec, args, ReducedDestinations(spec, outputs, loop_order, options.divisors),
                  device);
  if (!options.divisors.empty()) {
    std::vector<bool> scratch_divided(n_out, false);
    for (size_t m = 0; m < n_out; ++m) {
      scratch_divided[m] = plan.reduces && spec.reduces(m) != 0;  // both backends' launches divide
    }
    // A plan replays the launch alone: kept only when the launcher divided.
    if (DivideAfter(options, scratch_divided, outputs)) return outputs;
  }
  if (plannable && kernel != nullptr) {
    // Every written output here is a destination (keyed on its strides) or a
    // new contiguous array, as RunPlan makes them.
    auto kept = std::make_unique<LaunchPlan>();
    kept->fn = fn;
    kept->dtype = dtype;
    kept->write = options.write;
    kept->accumulate = options.accumulate;
    kept->full = plan.full;
    for (const auto& dest : options.destinations) {
      kept->has_destination.push_back(dest != nullptr);
      kept->destination_strides.push_back(dest != nullptr ? dest->strides : std::vector<int64_t>());
    }
    for (const auto& in : inputs) {
      kept->in_shapes.push_back(in->shape);
      kept->in_strides.push_back(in->strides);
    }
    kept->rank = rank;
    kept->sizes = sizes;
    kept->arg_in_strides = in_strides;
    kept->arg_out_strides = out_strides;
    kept->kernel = std::move(kernel);
    kept->output_shapes = options.output_shapes;
    kept->iteration_shape = options.iteration_shape;
    kept->reduce_ops = options.reduce_ops;
    kept->divisors = options.divisors;
    kept->out_shapes = plan.shapes;
    if (spec.HasReductions()) kept->reduce_spec = std::make_shared<const jit::KernelSpec>(spec);
    kept->loop_order = std::move(loop_order);
    KeepPlan(std::move(kept));
  }
  return outputs;
}

}  // namespace dualcast::detail
