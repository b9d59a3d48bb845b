// Splat floating-point constants read from memory at their use, so AVX2 arithmetic takes them as a memory operand.
//
// Why: x86 code generation turns each splat constant of a vector operation into
// its own `vbroadcastss` from the constant pool (it saves pool space), placed
// before the instruction that uses it. The HM-LSTM kernels' exp polynomials
// and activations have some forty such constants per loop step; on AVX2 every
// one is an extra instruction, and they are too many to stay in the 16
// vector registers. Read as a full-width load from a variable holding the
// splat, the load folds into the arithmetic instruction (`vfmadd213ps ymm,
// ymm, [rip + c]`): the columns kernel's loop lost its 41 broadcasts.
// Measured on the Zen 1 VM (2026-11-29, interleaved A/B of one binary, two runs
// each, DUALCAST_CACHE_DIR=off; x the cheap hand loop at n = 512 / 2048):
// paper columns 1.26-1.37 / 1.26-1.35 -> 1.17-1.28 / 1.18-1.19, fast-math
// paper columns 1.02-1.04 / 1.03-1.04 -> 0.93-0.96 / 0.90-0.98, full rows
// 1.22-1.31 / 1.11-1.13 -> 1.21-1.25 / 1.06-1.10; full columns within the
// noise. (An earlier A/B of the same idea had measured 0-2%: it ran with the
// disk cache on, so both processes ran the same kernel.) It also compiles
// faster, since code generation no longer builds, selects and allocates a
// register for each broadcast: HM-LSTM jvp kernel rows 22.4-23.3 -> 19.1 ms,
// columns 18.4-19.1 -> 15.2 ms, one-pass gradient 26.9-27.9 -> 20.4 ms (CPU
// minimum of 5 rebuilds).
// The variable is internal and never stored to, but not marked constant:
// marked constant, the optimiser folds the loads straight back into
// constants. Nothing in the kernel pipeline can prove the kernel's stores miss
// it, so the loads stay where they are used (each folds into its user; a load
// with several users in a block is one vector load, as the broadcast was).
// Not on AVX-512 hosts: there an instruction takes a splat constant as an
// embedded broadcast memory operand already ({1to16}).
//
// Example (after the printer, before the optimiser):
//   if (HostVectorBits() < 512) ReadSplatsFromMemory(*module);
#pragma once

namespace llvm {
class Module;
}  // namespace llvm

namespace dualcast::jit::cpu {

// Replaces each non-zero splat floating-point vector constant that an
// instruction of `module`'s functions uses (phis, shuffles and intrinsic
// calls other than fmuladd keep theirs) by a load of an internal variable
// holding it, one variable per constant.
void ReadSplatsFromMemory(llvm::Module& module);

}  // namespace dualcast::jit::cpu
