// Per-thread launch plans: what a repeated CPU launch of one function over same-shaped operands reuses.
//
// Execute merges the operands' layout, builds a KernelSpec, hashes it and
// looks the kernel up under the kernel cache's lock: about a microsecond
// that a training loop or a simulation step repeats with identical shapes.
// A plan keeps the merged layout (ready as kernel arguments) and the kernel
// for one (function, operand shapes and strides, write mask); each thread
// keeps a few, most recent first, so a repeat launch needs no lock and no
// allocation beyond its outputs. A plan whose kernel the cache has evicted
// is dropped, so the kernel cache's bound and counts stay truthful. For CPU
// launches; destinations (the sweep's strided copies and adds, 64-element
// arrays whose launch costs more than their loop) are keyed on their shapes,
// strides and accumulate flags, and checked at every launch as the full path
// checks them. Outputs summed over broadcast axes (ExecuteOptions::output_shapes, the
// fused reductions and the one-pass gradient of a tape step) are planned too,
// keyed on the requested output and iteration shapes.
//
// Example (inside Execute):
//   if (LaunchPlan* plan = FindPlan(fn.get(), inputs, options)) {
//     return RunPlan(*plan, fn->num_outputs(), inputs, device);
//   }
//   ... the full path, then KeepPlan(...) with what it computed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "dualcast/detail/array_impl.hpp"
#include "dualcast/detail/execute.hpp"
#include "jit/codegen/kernel_cache.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/cpu/launch.h"
#include "jit/ir/ir.h"

namespace dualcast::detail {

struct LaunchPlan {
  std::shared_ptr<const jit::Function> fn;  // held: its address is part of the key
  DType dtype = DType::kF32;
  std::vector<bool> write;       // as requested (empty: all)
  std::vector<bool> accumulate;  // as requested
  // Per output when destinations were given (else empty): whether output m
  // had one, and its strides (its shape is out_shapes[m]).
  std::vector<bool> has_destination;
  std::vector<std::vector<int64_t>> destination_strides;
  std::vector<int64_t> full;  // the iteration shape, for the destinations' errors
  std::vector<std::vector<int64_t>> in_shapes, in_strides;
  int rank = 0;
  std::vector<int64_t> sizes;            // merged, then a trailing 1
  std::vector<int64_t> arg_in_strides;   // KernelArgs::in_strides
  std::vector<int64_t> arg_out_strides;  // KernelArgs::out_strides (contiguous outputs)
  jit::KernelCache::Ref kernel;
  // The request's reductions (part of the key), the shape each output is
  // allocated in, and the spec the reducing launcher needs (null when no
  // output is summed).
  std::vector<std::vector<int64_t>> output_shapes;
  std::vector<int64_t> iteration_shape;
  std::vector<ReduceKind> reduce_ops;
  std::vector<double> divisors;
  std::vector<std::vector<int64_t>> out_shapes;
  std::shared_ptr<const jit::KernelSpec> reduce_spec;
  // The dims' order when Execute reordered them for a reduction (empty: logical).
  std::vector<int> loop_order;
};

// This thread's plan for `fn` over `inputs` with `write`, now its most
// recent, or null.
LaunchPlan* FindPlan(const jit::Function* fn, const std::vector<std::shared_ptr<ArrayImpl>>& inputs,
                     const ExecuteOptions& options);
// Files `plan` as this thread's most recent (dropping its oldest beyond a few).
void KeepPlan(std::unique_ptr<LaunchPlan> plan);
// jit::StructuralHash(*fn), remembered for the last few functions this
// thread launched without a plan (new shapes each call, or one-off callers
// such as partials()), so that those launches do not rehash the IR either.
uint64_t FunctionHash(const std::shared_ptr<const jit::Function>& fn);
// Where the reducing launcher stores each output `spec` sums (empty entries
// for the others): the outputs' own memory, shape and strides.
// With a loop order (Execute's, for a reduction whose dims it reordered),
// each destination's shape and strides are padded to the iteration rank and
// permuted like the dims: the launcher walks the destination in the order of
// its scratch, which is contiguous over the kept dims in loop order. Each
// gets its entry of `divisors` (ExecuteOptions::divisors).
std::vector<jit::ReducedDestination> ReducedDestinations(
    const jit::KernelSpec& spec, const std::vector<std::shared_ptr<ArrayImpl>>& outputs,
    std::span<const int> loop_order = {}, std::span<const double> divisors = {});
// New contiguous outputs (null where not written) except where `outputs`
// already holds a checked destination, then the kernel's launch.
std::vector<std::shared_ptr<ArrayImpl>> RunPlan(const LaunchPlan& plan, size_t n_out,
                                                const std::vector<std::shared_ptr<ArrayImpl>>& inputs,
                                                Device device,
                                                std::vector<std::shared_ptr<ArrayImpl>> outputs = {});
// The lazy graph's cache-hit launch of a one-output CPU function with default
// options (Materialize of a ready broadcast): runs a plan that an earlier
// Execute of `fn` over operands of these shapes and strides kept, into new
// storage that is returned, holding the contiguous result (of the inputs'
// broadcast shape, which the caller's pending array has), for the caller to
// give to that array. Skips what RunPlan allocates
// beyond the data (an ArrayImpl, its shape and strides, the result list).
// Null when no such plan exists: the caller runs Execute.
std::shared_ptr<Storage> RunPlanIntoStorage(const jit::Function* fn,
                                            const std::vector<std::shared_ptr<ArrayImpl>>& inputs);

}  // namespace dualcast::detail
