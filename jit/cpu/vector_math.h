// Vectorisable math for the CPU backend: libm declarations and their glibc libmvec vector variants.
//
// A loop that calls `tanhf` is only vectorised when LLVM knows a vector
// version of `tanhf` and the call is declared free of side effects. glibc's
// libmvec (libmvec.so.1, glibc >= 2.35) exports SIMD versions of every
// transcendental our IR has (exp, expm1, log*, sin/cos/tan, the inverse and
// hyperbolic functions, erf/erfc, cbrt, pow, atan2, hypot) for SSE (`b`, 2 x
// f64 / 4 x f32), AVX2 (`d`, 4 / 8) and AVX-512 (`e`, 8 / 16). LLVM 19's
// built-in LIBMVEC_X86 table knows only sin, cos, tan, exp, log and pow, so
// we register the whole set ourselves, restricted to the ISAs the host has
// (a `d` variant takes ymm registers and must never be called without AVX2).
//
// Chosen over hand-written polynomials in IR because it is fast with no
// accuracy work of our own. Measured (thread CPU time, best of 5, 2-core AMD
// EPYC Zen 4 VM) on the branchy f32 loop `y = x > 0 ? tanh(x) : exp(x)` over
// 1e7 elements compiled by this backend: scalar libm calls (mappings
// disabled) 68 ms; libmvec 7.6 ms (the vectoriser picks the AVX-512 `e`
// variants, 16 lanes); 11.8 ms when held to 256-bit vectors. The price is
// compile time: a vectorised body is emitted twice more (main loop and
// vector epilogue); orc_jit.cc lists what the HM-LSTM kernel costs and why. Accuracy against the scalar interpreter
// (tests/cpu/accuracy_test.cc, 1e5+ points per function, specials
// included): every function within 4 ulp in f32 and f64 (the worst: f32 log,
// erf and sigmoid at 4; most at 1-3).
//
// Example:
//   llvm::TargetLibraryInfoImpl tlii(triple);
//   AddVectorMathMappings(tlii, HostVectorIsa());
//   fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
//   // ...then PassBuilder::registerFunctionAnalyses(fam), in that order.
#pragma once

#include <string>

namespace llvm {
class Function;
class Module;
class TargetLibraryInfoImpl;
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
// could not be loaded (then no mapping is registered and math stays scalar).
VectorIsa HostVectorIsa();

// Loads libmvec.so.1 into the process once; false when it is absent.
bool LibmvecAvailable();

// Registers scalar -> vector mappings for the libm names in codegen.h's
// LibmName (and the matching llvm.* intrinsics) for the ISAs in `isa`.
void AddVectorMathMappings(llvm::TargetLibraryInfoImpl& tlii, const VectorIsa& isa);

// Declares (or finds) the libm function `name` taking `arity` arguments of
// `type`, marked `nounwind willreturn memory(none)` so the loop vectoriser
// may if-convert and widen it (errno is never read by generated code).
llvm::Function* DeclareMathFunction(llvm::Module& module, const std::string& name,
                                    llvm::Type* type, int arity);

}  // namespace dualcast::jit::cpu
