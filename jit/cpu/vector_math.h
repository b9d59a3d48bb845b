// Math on W-lane vectors for the CPU backend: direct calls to glibc's libmvec variants, scalar libm where none exists.
//
// The printer emits kernels at the host's vector width (llvm_kernel.h), so a
// `tanhf` on a <16 x float> becomes one call of libmvec's `_ZGVeN16v_tanhf`
// (AVX-512), a <8 x float> one of `_ZGVdN8v_tanhf` (AVX2), and so on. glibc's
// libmvec (libmvec.so.1, glibc >= 2.35) exports SIMD versions of every
// transcendental our IR has (exp, expm1, log*, sin/cos/tan, the inverse and
// hyperbolic functions, erf/erfc, cbrt, pow, atan2, hypot) for SSE (`b`: 2 x
// f64 / 4 x f32), AVX2 (`d`: 4 / 8) and AVX-512 (`e`: 8 / 16). A vector wider
// than the widest variant the host runs is split into chunks; a name libmvec
// does not export (a newer op, or no libmvec at all) is scalarised: one libm
// call per lane, so every op works at every width.
//
// Chosen over hand-written polynomials because it is fast with no accuracy
// work of our own — except exp and expm1, the activations' hot path, which
// are written out inline (inline_exp.h): a call spills every live vector
// register, and five of them per HM-LSTM element cost a third of the kernel. Accuracy against the scalar interpreter
// (tests/cpu/accuracy_test.cc, 1e5+ points per function, specials included):
// every function within 4 ulp in f32 and f64. Two libmvec results fall
// outside the function's range (f32 sin(-1116.8363) = 1.00000012); the
// printer's ClampRange puts sin, cos, tanh and erf back into [-1, 1] (two
// compares and selects; NaN passes through), which only ever moves a result
// closer to the true value. The f64 AVX-512 cos returns 1 - 2^-53 at
// -1.9e-9 where the true value rounds to 1: the printer answers 1 below
// |x| = 2^-27 (2^-13 in f32), where that is the correctly rounded result.
//
// Example:
//   llvm::Value* y = EmitMathCall(b, module, "tanhf", b.getFloatTy(), 16, {x});
#pragma once

#include <span>
#include <string>
#include <vector>

#include "llvm/IR/IRBuilder.h"

namespace llvm {
class Function;
class Module;
class Type;
}  // namespace llvm

namespace dualcast::jit::cpu {

// Which libmvec vector ISAs the host can run.
struct VectorIsa {
  bool sse2 = false;     // `b` variants (xmm)
  bool avx2 = false;     // `d` variants (ymm)
  bool avx512 = false;   // `e` variants (zmm)
};

// The host's vector ISAs; all false on a non-x86-64 host or when libmvec.so.1
// could not be loaded (then math is scalarised).
VectorIsa HostVectorIsa();

// The register width kernels are written for: 512 with AVX-512, 256 with
// AVX2, else 128 (LLVM legalises generic vectors on any target).
int HostVectorBits();

// Lanes [first, first + count) of the vector `v`, as a vector of `count` lanes.
llvm::Value* SliceLanes(llvm::IRBuilder<>& b, llvm::Value* v, int first, int count);
// The concatenation of equally wide vectors (a power-of-two count), pairwise.
llvm::Value* ConcatLanes(llvm::IRBuilder<>& b, std::vector<llvm::Value*> parts);

// Loads libmvec.so.1 into the process once; false when it is absent.
bool LibmvecAvailable();

// `scalar_name`(args...) lane by lane on `lanes`-wide vectors of `elem` (or on
// scalars when lanes == 1): libmvec variants where the host has them, chunked
// to their width, else one scalar libm call per lane.
llvm::Value* EmitMathCall(llvm::IRBuilder<>& b, llvm::Module& module, const char* scalar_name,
                          llvm::Type* elem, int lanes, std::span<llvm::Value* const> args);

// `v` clamped to [lo, hi] lane by lane, NaN unchanged.
llvm::Value* ClampRange(llvm::IRBuilder<>& b, llvm::Value* v, double lo, double hi);

// Declares (or finds) the function `name` of `arity` arguments of `type`
// (scalar or vector), marked `nounwind willreturn memory(none)`: errno is
// never read by generated code, so the calls are pure.
llvm::Function* DeclareMathFunction(llvm::Module& module, const std::string& name,
                                    llvm::Type* type, int arity);

// Marks `fn` as pure math: `nounwind willreturn nosync nofree memory(none)`.
void MarkPureMathFunction(llvm::Function& fn);

}  // namespace dualcast::jit::cpu
