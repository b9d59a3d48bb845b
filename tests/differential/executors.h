// The executors the differential tester compares: Dual<double> (reference), interpreter, CPU JIT, runtime, tape, GPU.
//
// Each executor computes, for one kernel (a random tree) and one ShapeCase,
// the kernel's values and every elementwise partial over the broadcast
// result, or — for the tape executors — the gradient of a weighted sum of the
// outputs. Executors are independent paths through the system:
//   interpreter      jit::Interpret of the jvp'ed IR, element by element
//   cpu-direct       KernelSpec::For + CompileCpuKernel + LaunchCpu on the
//                    merged layout of the strided views (random write masks)
//   runtime-partials dualcast::partials on Array views
//   runtime-broadcast dualcast::broadcast_n (values only; lazy, fused path)
//   tape             Tape::gradient of sum(Σ_m W_m * y_m) vs the Dual sums
//   tape-fd          the same gradient vs float64 central differences
//   gpu              the CUDA backend; skipped ("no CUDA device: ...") until
//                    a device and the backend exist
// The reference is Dual<double, 4> run eagerly on the tree.
//
// Example:
//   KernelUnderTest k = MakeKernel(tree, "rk_1");
//   Reference ref = ComputeReference(k, shapes);
//   Verdict v = RunExecutor(Executor::kCpuDirect, k, shapes, ref, /*variant=*/3);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "differential/shapes.h"
#include "dualcast/kernel.hpp"
#include "jit/ir/ir.h"
#include "kernels/random_kernel.h"

namespace dualcast::difftest {

enum class Executor { kInterpreter, kCpuDirect, kRuntimePartials, kRuntimeBroadcast, kTape, kTapeFd, kGpu };
inline constexpr int kNumExecutors = 7;
const char* ExecutorName(Executor e);

struct KernelUnderTest {
  testing::Tree tree;
  std::string name;
  int num_inputs = 0, num_outputs = 0;
  Kernel kernel;                                // for the runtime executors
  std::shared_ptr<const jit::Function> primal;  // Optimize(Trace(tree))
  std::shared_ptr<const jit::Function> jvp;     // Optimize(Jvp(primal, every input))
};

// Traces and differentiates the tree (N = tree.num_inputs in 1..4, 1 or 2 outputs).
KernelUnderTest MakeKernel(const testing::Tree& tree, const std::string& name);

// Values [m][e] and partials [m * N + j][e] over the result (row-major).
struct Reference {
  std::vector<std::vector<double>> values, partials;
};
Reference ComputeReference(const KernelUnderTest& k, const ShapeCase& c);

struct Verdict {
  enum Kind { kAgree, kDisagree, kSkipped } kind = kAgree;
  std::string detail;     // for kDisagree: what differs where; for kSkipped: why
  int64_t element = -1;   // the first disagreeing result element, if any
  bool near_tie = false;  // the disagreement sits where a branch condition is a near tie
  // Moving one input by an ulp moves Dual<double>'s own result beyond the tolerance: executors
  // whose math differs by an ulp (libmvec's cos vs glibc's) cannot agree there (seed 9101:
  // sin(x1 cos(2 x0)) at x1 = -1e300, where one ulp of cos moves sin's argument by 1e284).
  bool ill_conditioned = false;
  // A partial the jvp'ed IR itself makes NaN/inf where Dual<double> gives a
  // finite number: Dual's "strong zero" (a lane that is exactly 0 stays 0,
  // even times inf or NaN) vs the jvp pass, which drops only *structurally*
  // zero lanes, so a lane that is 0 at run time times a non-finite
  // coefficient (atan2 at the origin, inf inputs) gives NaN. A known
  // convention mismatch in jit/passes/jvp.cc, counted apart (see the report).
  bool strong_zero = false;
};

// Runs one executor and compares with `ref`. `variant` picks executor-internal
// choices deterministically (write masks, tape mode).
Verdict RunExecutor(Executor e, const KernelUnderTest& k, const ShapeCase& c, const Reference& ref,
                    uint64_t variant);

// Why the GPU executor is skipped here (empty when it can run).
std::string GpuSkipReason();

}  // namespace dualcast::difftest
