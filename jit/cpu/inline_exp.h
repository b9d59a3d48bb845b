// exp and expm1 on W-lane vectors written out as LLVM instructions, so the hot activations need no call.
//
// Why not libmvec here, as for every other transcendental (vector_math.h):
// a call clobbers every vector register under the x86-64 ABI, so a kernel
// that calls `_ZGVeN16v_expf` spills and reloads all its live values around
// each call. The HM-LSTM cell calls exp or expm1 five times per element
// (sigmoid twice, tanh, and their jvp), and those spills plus the calls were
// about a third of its one-pass gradient kernel. Inline, the polynomial is
// scheduled with the rest of the element's work and nothing is spilled.
// The price is compile time: the jvp kernel of the rows layout holds five
// copies (each branch side computes its own activations), about 45% of its
// 25 ms compile on the 2-core Zen 1 VM. Outlined into one internal function
// per module, even with the preserve_all convention (the callee saves the
// vector registers it uses), that compile fell to 19 ms but the kernels ran
// 1.2-1.35x slower (2026-11-26), so they stay inline.
//
// Method (one core for both functions): k = roundeven(x / ln 2);
// r = x - k ln 2 in two FMA steps (Cody-Waite), |r| <= ln2/2;
// q = expm1(r) = r + r^2 (1/2 + r/6 + ...) by Horner on the Taylor series
// (f32: Cephes expf's degree-5 minimax fit; f64: Taylor to degree 13,
// truncation below 2^-55 relative). Then
//   exp(x)   = (1 + q) 2^k, one rounding also for subnormal results: AVX-512's
//              vscalef on vectors of 512 bits or a multiple (in 512-bit pieces), else (1 + q) 2^k1 2^k2 with
//              k1 = k >> 1, k2 = k - k1 (each factor normal, the last product
//              rounds);
//   expm1(x) = 2^k q + (2^k - 1) (one FMA; exact q when k = 0, so tiny x
//              keeps full relative accuracy), exp(x) - 1 once 2^k - 1 = 2^k.
// The integer k is read from the bits of the rounding sum x/ln2 + 1.5*2^p
// (no float-to-int conversion, whose result for NaN is poison), so a NaN
// lane runs through every step to NaN with no select to guard it.
// Two forms, one bit pattern. The clamps and the two-factor scaling serve
// only lanes near or past the ends of the range. When every lane of a vector
// has |x| <= 87 (exp) or 69 (expm1) (f64: 708, 693), k is small enough for
// one normal 2^k and no clamp acts: the common form drops them (exp: 6 vector
// instructions of 25, plus the clamps' compares in expm1's `over` lanes) and
// gives the same bits, because scaling by a normal power of two is exact. A
// vector with any lane beyond (or an infinity) calls the full form instead:
// one cold function per vector type, under preserve_all so the hot code
// keeps its registers. Kernels only declare it (kSharedFunctionPrefix): the
// JIT builds each one the first time an object calling it is linked
// (BuildSharedFunctionsModule) and keeps it linked for the process, since
// compiled into every module the two full forms were a fifth of the HM-LSTM
// jvp kernel's instructions and of its code generation time. NaN lanes stay
// in the common form (it carries them to NaN). The printer emits each exp as
// a call to an alwaysinline function holding the test and both branches,
// inlined by InlineExpCalls after SinkIntoUniformBranches (llvm_kernel.cc),
// so until then an exp is one pure instruction that the sinking moves like
// any other op. (Not LLVM's
// always-inline pass: on a one-function module it cost 1.2 ms per compile.) Measured
// (HM-LSTM, Zen 1 AVX2): full variant rows 1.26-1.32x -> 1.14x of the hand
// loop, fast-math paper columns 1.30x -> 1.14x; the extra block per exp costs
// about 3 ms of the jvp kernel's compile there. AVX-512 (vscalef) keeps one
// form: its scaling is one instruction already.
// Special values: NaN -> NaN; +inf -> +inf; exp(-inf) = +0, expm1(-inf) = -1;
// overflow to +inf above the largest finite result (88.72 / 709.78).
// Accuracy (tests/cpu/accuracy_test.cc, the reference table): within 2 ulp
// in f32 and f64 for both functions.
//
// Example:
//   llvm::Value* y = EmitInlineExp(b, x);    // x: <16 x float>
//   llvm::Value* d = EmitInlineExpm1(b, x);
//   // the JIT, linking an object that calls "dualcast.shared.exp.full.v16f32":
//   auto module = BuildSharedFunctionsModule({"dualcast.shared.exp.full.v16f32"}, context);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "llvm/IR/IRBuilder.h"

namespace dualcast::jit::cpu {

// exp(x) lane by lane; x is a vector of float or double.
llvm::Value* EmitInlineExp(llvm::IRBuilder<>& b, llvm::Value* x);

// expm1(x) = exp(x) - 1 lane by lane, accurate near 0.
llvm::Value* EmitInlineExpm1(llvm::IRBuilder<>& b, llvm::Value* x);

// Replaces the calls EmitInlineExp/EmitInlineExpm1 left in `module` by their
// bodies, once the printer's own passes over the kernel are done.
void InlineExpCalls(llvm::Module& module);

// Kernels call the full-range forms by names that start with this and do not
// define them; BuildSharedFunctionsModule builds one module that defines the
// named ones (an error names a symbol it does not know).
inline constexpr char kSharedFunctionPrefix[] = "dualcast.shared.";
absl::StatusOr<std::unique_ptr<llvm::Module>> BuildSharedFunctionsModule(
    const std::vector<std::string>& symbols, llvm::LLVMContext& context);

}  // namespace dualcast::jit::cpu
