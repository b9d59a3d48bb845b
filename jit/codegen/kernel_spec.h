// KernelSpec: what a compiled broadcast kernel is specialised on (structure, never sizes).
//
// The spec is the cache key: the structural hash of the function plus
// everything else that changes the generated code. Two launches with the same
// spec share one compiled kernel whatever their sizes and strides.
//
// Example:
//   BroadcastLayout layout = MergeBroadcast({{n, 1}, {n, n}}, ...).value();
//   KernelSpec spec = KernelSpec::For(jvp_fn, Type::kF32, Target::kCpu, layout);
//   // spec.rank == 2, spec.input_broadcast == {0b10, 0b00}: input 0 is broadcast
//   // along merged dim 1 (the inner one); Describe() prints it outer-first, "01".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "jit/codegen/kernel_abi.h"
#include "jit/ir/ir.h"

namespace dualcast::jit {

struct BroadcastLayout;  // broadcast_layout.h

enum class Target : uint8_t { kCpu, kCuda };
const char* TargetName(Target target);

// How an output reduced along some dims combines its elements. Sums and
// products are formed in double; max and min propagate NaN (NumPy's max/min).
enum class ReduceOp : uint8_t { kSum, kProd, kMax, kMin };
const char* ReduceOpName(ReduceOp op);
// The element that leaves every other unchanged: 0, 1, -inf, +inf.
double ReduceIdentity(ReduceOp op);
// a (op) b in double, with the NaN rule above; the one scalar meaning the
// launchers' partial combination and the tests share.
double ReduceCombine(ReduceOp op, double a, double b);

struct KernelSpec {
  // The function to run, usually jvp'ed: its outputs are the values followed by
  // the partials (see jvp.h for the order). Shared, immutable.
  std::shared_ptr<const Function> function;
  uint64_t function_hash = 0;     // StructuralHash(*function), computed once
  Type dtype = Type::kF32;        // element type of every input and output
  Target target = Target::kCpu;
  int rank = 0;                   // merged rank, 0..kMaxRank
  // Per input: bit d (d = 0 is the OUTERMOST merged dim) set when the input is
  // broadcast (stride 0) along merged dim d.
  std::vector<uint32_t> input_broadcast;
  // Per output of `function`: compiled to be stored (values, partials or both).
  std::vector<bool> write;
  // Every non-broadcast operand has stride 1 along the innermost merged dim, so
  // the inner loop uses unit stride (and vectorises).
  bool inner_contiguous = true;
  // When not: which operands (the layout's: the inputs, then the written
  // outputs in order) have another stride there. The CPU kernel gathers and
  // scatters only those; the rest keep plain vector loads and stores (x.T + y
  // gathers x.T alone; it had scattered its contiguous output too, lane by
  // lane). Empty with inner_contiguous false: every operand is strided.
  std::vector<bool> strided_inner;
  bool StridedInner(size_t operand) const {
    if (inner_contiguous) return false;
    return strided_inner.empty() || (operand < strided_inner.size() && strided_inner[operand]);
  }
  // Per output (empty = none): bit d set when the output is SUMMED along merged
  // dim d (it is stored with size 1 there). A reduced output is accumulated
  // in double into a scratch buffer (contiguous over its kept dims) that the
  // launcher provides and finishes (see jit/cpu/launch.h); the layout never
  // merges dims where an output's bits differ.
  std::vector<uint32_t> output_reduce;
  // Per output (empty = every reduced output is a sum): the combining op of a
  // reduced output. Only sums may also accumulate into their destination.
  std::vector<ReduceOp> output_reduce_op;
  // Per output (empty = none): the result is added into the destination
  // (dest = dest + result, in the element type) instead of overwriting it.
  std::vector<bool> accumulate;
  // dc::kernel's fast-math and vector-width options (from function->hints in For()).
  BackendHints hints;

  // The spec for running `function` over `layout`: every output written
  // (callers clear `write` bits for outputs nobody wants). `function_hash` is
  // StructuralHash(*function) when the caller kept it; 0: computed here.
  static KernelSpec For(std::shared_ptr<const Function> function, Type dtype, Target target,
                        const BroadcastLayout& layout, uint64_t function_hash = 0);

  // Whether output m of `function` is stored (an empty mask writes all).
  bool writes(size_t m) const { return write.empty() || (m < write.size() && write[m]); }
  uint32_t reduces(size_t m) const { return m < output_reduce.size() ? output_reduce[m] : 0; }
  bool accumulates(size_t m) const { return m < accumulate.size() && accumulate[m]; }
  ReduceOp reduce_op(size_t m) const {
    return m < output_reduce_op.size() ? output_reduce_op[m] : ReduceOp::kSum;
  }
  // Whether any output is reduced or accumulated.
  bool HasReductions() const;
  // Checks the spec is internally consistent (function verifies, dtype,
  // rank, masks); the error names the backend and the kernel. Every backend
  // calls it before generating code.
  absl::Status Validate(const char* backend) const;

  // A 64-bit key over everything above (the function by its hash; computed
  // from the function when `function_hash` was left 0).
  uint64_t Key() const;
  // The exported name of a compiled kernel: "dc_<function name>_<dtype>_<key>",
  // the key mixed with a backend's format tag (bumped when its generated code
  // changes meaning, which also retires its on-disk objects).
  std::string Symbol(uint64_t format_tag) const;
  // Human-readable summary for logs and errors, e.g. "cpu f32 rank 2 bcast [01,00]".
  std::string Describe() const;
};

}  // namespace dualcast::jit
