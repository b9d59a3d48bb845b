// Execute: the one path from a jit::Function and arrays to results (layout, spec, cache, compile, launch).
#include "dualcast/detail/execute.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <utility>

#include "absl/status/statusor.h"
#include "dualcast/kernel.hpp"
#include "absl/strings/str_cat.h"
#include "cuda_runtime.h"  // [CUDA path]
#include "jit/broadcast_layout.h"
#include "jit/cpu/cpu_backend.h"
#include "jit/cpu/launch.h"
#include "jit/disk_cache.h"
#include "jit/error.h"
#include "jit/kernel_abi.h"
#include "jit/kernel_cache.h"
#include "jit/kernel_spec.h"

namespace dualcast::detail {
namespace {

std::string DeviceProblem(const Device& device) {
  if (!device.available()) return device.unavailable_reason();
  return "CUDA kernels are not supported by this build yet; move the arrays to the CPU with "
         ".to(dualcast::Device::cpu())";
}

// Byte addresses spanned by an array's elements: [lo, hi). Empty arrays span nothing.
struct Extent {
  uintptr_t lo = 0, hi = 0;
  uint64_t step = 0;  // gcd of the byte strides of dims with size > 1 (0: one element)
  bool empty = true;
};

Extent ExtentOf(const ArrayImpl& a) {
  Extent e;
  if (a.storage == nullptr || a.size() == 0) return e;
  const int64_t es = static_cast<int64_t>(SizeOf(a.dtype));
  int64_t lo = 0, hi = 0;
  uint64_t step = 0;
  for (int d = 0; d < a.rank(); ++d) {
    if (a.shape[d] <= 1) continue;
    const int64_t span = (a.shape[d] - 1) * a.strides[d] * es;
    (span < 0 ? lo : hi) += span;
    step = std::gcd(step, static_cast<uint64_t>(std::llabs(a.strides[d] * es)));
  }
  const auto base = reinterpret_cast<intptr_t>(a.data());
  e.lo = static_cast<uintptr_t>(base + lo);
  e.hi = static_cast<uintptr_t>(base + hi + es);
  e.step = step;
  e.empty = false;
  return e;
}

// Whether two arrays may share an element: their address ranges meet and
// their element grids (base + multiples of the stride gcd) come within one
// element of each other. Never false when they do share one.
bool MayOverlap(const ArrayImpl& a, const ArrayImpl& b) {
  const Extent ea = ExtentOf(a), eb = ExtentOf(b);
  if (ea.empty || eb.empty) return false;
  if (ea.hi <= eb.lo || eb.hi <= ea.lo) return false;
  const uint64_t g = std::gcd(ea.step, eb.step);
  if (g == 0) return true;  // both single elements, ranges meet
  const auto base_a = reinterpret_cast<uintptr_t>(a.data());
  const auto base_b = reinterpret_cast<uintptr_t>(b.data());
  const uint64_t es = std::max(SizeOf(a.dtype), SizeOf(b.dtype));
  // The offset modulo g, on the signed difference: an unsigned wrap-around is
  // only congruent modulo powers of two (a 6-column interleaved table has a
  // 48-byte row stride and would be rejected).
  const int64_t diff = static_cast<int64_t>(base_b - base_a);
  const int64_t gs = static_cast<int64_t>(g);
  const uint64_t r = static_cast<uint64_t>(((diff % gs) + gs) % gs);
  return r < es || g - r < es;
}

// Whether two distinct indices of `a` can address the same element.
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
    if (!a.device.is_cpu() && !a.device.available()) {  // [CUDA path] cuda arrays run there
      throw Error(ErrorKind::kDevice,
                  absl::StrCat(name, ": argument ", i + 1, " is on ", a.device.name(),
                               " and cannot be used: ", DeviceProblem(a.device)));
    }
    if (a.device != inputs[0]->device) {  // [CUDA path]
      throw Error(ErrorKind::kDevice,
                  absl::StrCat(name, ": argument ", i + 1, " is on ", a.device.name(),
                               " but argument 1 is on ", inputs[0]->device.name(),
                               "; move the arrays to one device with .to(...) first"));
    }
  }
}

}  // namespace

std::vector<int64_t> BroadcastShape(const std::string& kernel_name,
                                    const std::vector<std::vector<int64_t>>& shapes) {
  absl::StatusOr<std::vector<int64_t>> shape = jit::BroadcastShape(shapes, kernel_name);
  if (!shape.ok()) ThrowStatus(shape.status());
  return *std::move(shape);
}

std::vector<std::shared_ptr<ArrayImpl>> Execute(const std::string& kernel_name,
                                                std::shared_ptr<const jit::Function> fn,
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
  std::vector<bool> write = options.write;
  if (write.empty()) write.assign(n_out, true);
  if (write.size() != n_out ||
      (!options.destinations.empty() && options.destinations.size() != n_out)) {
    throw Error(ErrorKind::kInternal,
                absl::StrCat(kernel_name, ": ", n_out, " outputs but ", write.size(),
                             " write flags and ", options.destinations.size(), " destinations"));
  }

  std::vector<std::vector<int64_t>> shapes;
  for (const auto& in : inputs) shapes.push_back(in->shape);
  const std::vector<int64_t> out_shape = BroadcastShape(kernel_name, shapes);

  // Validate every destination before anything is allocated or written.
  std::vector<std::shared_ptr<ArrayImpl>> outputs(n_out);
  for (size_t m = 0; m < n_out; ++m) {
    if (!write[m] || options.destinations.empty() || options.destinations[m] == nullptr) continue;
    const std::shared_ptr<ArrayImpl>& dest = options.destinations[m];
    Materialize(*dest);
    auto where = [&] { return absl::StrCat(kernel_name, ": destination for output ", m + 1); };
    if (dest->shape != out_shape) {
      throw Error(ErrorKind::kShape,
                  absl::StrCat(where(), " has shape ", jit::FormatShape(dest->shape),
                               " but the broadcast result has shape ", jit::FormatShape(out_shape),
                               "; pass an array (or view) of exactly that shape"));
    }
    if (dest->dtype != dtype) {
      throw Error(ErrorKind::kType, absl::StrCat(where(), " is ", DTypeName(dest->dtype),
                                                 " but the arguments are ", DTypeName(dtype)));
    }
    if (dest->device != device) {
      throw Error(ErrorKind::kDevice, absl::StrCat(where(), " is on ", dest->device.name(),
                                                   " but the arguments are on ", device.name()));
    }
    if (dest->read_only) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(where(), " is a read-only view (of const memory); pass a view "
                                        "of writable memory"));
    }
    if (SelfOverlapping(*dest)) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(where(), " has strides ", jit::FormatShape(dest->strides),
                               " under which several elements share memory; pass a "
                               "destination whose elements are distinct"));
    }
    for (size_t i = 0; i < n_in; ++i) {
      if (MayOverlap(*dest, *inputs[i])) {
        throw Error(ErrorKind::kInvalidArgument,
                    absl::StrCat(where(), " overlaps the memory of argument ", i + 1,
                                 "; results cannot be written over the arguments (in place): "
                                 "pass a separate destination or copy() the argument"));
      }
    }
    for (size_t k = 0; k < m; ++k) {
      if (outputs[k] != nullptr && MayOverlap(*dest, *outputs[k])) {
        throw Error(ErrorKind::kInvalidArgument,
                    absl::StrCat(where(), " overlaps the destination for output ", k + 1,
                                 "; every output needs its own memory"));
      }
    }
    outputs[m] = dest;
  }

  // The layout: outputs ride along as extra operands, so that destinations
  // with any strides merge only where their memory allows too.
  std::vector<std::vector<int64_t>> strides;
  for (const auto& in : inputs) strides.push_back(in->strides);
  for (size_t m = 0; m < n_out; ++m) {
    if (!write[m]) continue;
    if (outputs[m] == nullptr) outputs[m] = NewArray(dtype, out_shape, device);
    shapes.push_back(out_shape);
    strides.push_back(outputs[m]->strides);
  }
  absl::StatusOr<jit::BroadcastLayout> merged = jit::MergeBroadcast(shapes, strides, kernel_name);
  if (!merged.ok()) ThrowStatus(merged.status());
  if (merged->num_elements == 0) return outputs;  // nothing to compute: launch nothing

  const int rank = merged->rank();
  jit::BroadcastLayout in_layout = *merged;
  in_layout.in_strides.resize(n_in);
  in_layout.in_broadcast.resize(n_in);
  jit::KernelSpec spec = jit::KernelSpec::For(
      fn, JitType(dtype), device.is_cuda() ? jit::Target::kCuda : jit::Target::kCpu, in_layout);
  spec.write = write;

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
  if (device.is_cuda()) {  // [CUDA path] compile (cached per device) and launch there
    CudaExecute(kernel_name, spec, args, device);
    return outputs;
  }
  absl::StatusOr<const jit::CachedKernel*> kernel = jit::KernelCache::Global().GetOrCompile(
      spec, [&]() -> absl::StatusOr<jit::CompiledKernel> {
        absl::StatusOr<jit::CompiledCpuKernel> c =
            jit::CompileCpuKernel(spec, &jit::DiskCache::Default());
        if (!c.ok()) return c.status();
        return jit::CompiledKernel{reinterpret_cast<void*>(c->entry), c->symbol, c->compile_ms,
                                   c->from_object_store, nullptr};
      });
  if (!kernel.ok()) ThrowStatus(kernel.status());

  jit::LaunchCpu((*kernel)->entry_as<jit::KernelEntry>(), args, rank);
  return outputs;
}

}  // namespace dualcast::detail
