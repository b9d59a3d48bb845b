// The calling convention shared by every compiled broadcast kernel (CPU and CUDA) and the launcher.
//
// A kernel runs one Function over a merged broadcast index space of rank R
// (R is compiled in, see KernelSpec). Sizes and strides are run-time values, so
// a new batch size never recompiles. Strides are in elements, outer dim first;
// an input's stride along a dim where it is broadcast is 0 and is not read
// (the spec's broadcast bits compile the 0 in).
//
// Output slots are the Function's outputs in order; a slot whose pointer is
// null is not written (the spec's `write` mask says which are compiled in).
// A reduced output's slot (KernelSpec::output_reduce) is a double scratch
// buffer that the kernel adds into, with strides 0 along the summed dims
// (LaunchCpu(spec) provides it and stores the result).
//
// Threading: the launcher splits the outermost merged dim into [begin, end)
// chunks; a kernel processes only indices with begin <= i0 < end (for R == 0,
// the single element when begin == 0 < end).
#pragma once

#include <cstdint>

namespace dualcast::jit {

inline constexpr int kMaxRank = 8;

struct KernelArgs {
  const int64_t* sizes;          // [R] merged sizes, outer first
  const void* const* inputs;     // [num_inputs] base pointers (element type = spec dtype)
  const int64_t* in_strides;     // [num_inputs * R], row i = input i
  void* const* outputs;          // [num_outputs] base pointers; null = not written
  const int64_t* out_strides;    // [num_outputs * R]
  int64_t begin;                 // first index of the outermost merged dim
  int64_t end;                   // one past the last
};

// The symbol every CPU kernel exports: extern "C" void kernel(const KernelArgs*).
using KernelEntry = void (*)(const KernelArgs*);

}  // namespace dualcast::jit
