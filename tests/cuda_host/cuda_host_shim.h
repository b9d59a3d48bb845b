// The CUDA built-ins the CUDA printer uses, for compiling its output as ordinary host C++ (the cuda_host harness).
//
// tests/cuda_host prepends this file (g++ -include) to the CUDA C that
// jit/cuda/cuda_kernel.cc writes, so the printed kernels run on the CPU
// without a GPU or a CUDA toolkit:
//   __global__, __device__, __forceinline__   plain (inline) functions.
//   threadIdx, blockIdx, blockDim, gridDim    variables of this translation
//                                             unit, set by the launcher the
//                                             harness appends.
//   expf, tanh, fmaf, ...                     the host's C math library, so a
//                                             printed call is the same glibc
//                                             function the interpreter calls
//                                             (results compare bitwise).
//   __int_as_float, __longlong_as_double      bit casts (non-finite literals).
//   float4, double2, make_float4, ...         16-byte aligned structs.
//   __shared__                                `static`: one copy per kernel,
//                                             which is per block because
//                                             blocks run one after another.
//   __syncthreads, __syncwarp, __shfl_*_sync  real barriers: dc_host_run_grid
//                                             runs a block's threads as
//                                             cooperative fibers (ucontext);
//                                             a fiber runs until it reaches a
//                                             barrier, and the barrier opens
//                                             when every live thread of its
//                                             block (or 32-lane warp) waits
//                                             there. A shuffle writes its value
//                                             to the lane's slot, meets the
//                                             warp, reads the source lane's
//                                             slot and meets the warp again.
//   atomicAdd, atomicCAS, atomicExch, ...     plain read-modify-write: only one
//                                             fiber runs at a time, and a fiber
//                                             switches only inside a barrier.
// Kernels that use no barrier (forward kernels) run each thread to the end
// in turn, on the caller's stack (dc_host_run_grid_plain).
// Misuse that a GPU would hang on or leave undefined is a launch ERROR here,
// never a silent result: a barrier some live threads never reach (deadlock),
// a __syncthreads after some threads of the block exited, a shuffle whose
// mask does not name every lane of a full 32-lane warp. The launcher returns
// the message through dc_host_last_error().
#pragma once

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <vector>

// Sanitized builds compile the kernels with -fsanitize too: ASan is told
// about every stack switch (its fiber API), else fiber stacks look corrupt.
// TSan is not: all fibers are one host thread to it, which is what they are
// (checked by hand: a -fsanitize=thread block reduction runs clean; TSan's
// own fiber API crashed it).
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define DC_HOST_ASAN 1
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __shared__ static
// __restrict__ is a GNU C++ keyword already.

struct dc_host_dim3 {
  unsigned int x = 0, y = 0, z = 0;
};
static dc_host_dim3 threadIdx, blockIdx, blockDim, gridDim;
static const int warpSize = 32;

// The 16-byte vector types of the vectorised loop, aligned as on the GPU, so
// a misaligned access through them is undefined here too (UBSan's alignment
// check reports it in the sanitized build; a GPU faults).
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(16) double2 {
  double x, y;
};
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
static inline double2 make_double2(double x, double y) { return double2{x, y}; }

static inline float __int_as_float(int bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
static inline double __longlong_as_double(long long bits) {
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

// ---- the fiber scheduler of one block ----

enum dc_host_wait { dc_host_running, dc_host_at_block, dc_host_at_warp, dc_host_done };

struct dc_host_fiber {
  ucontext_t context;
  dc_host_wait state = dc_host_running;
  unsigned long long slot = 0;  // a shuffle's value
  void* asan_fake_stack = nullptr;
};

struct dc_host_block {
  std::vector<dc_host_fiber> fibers;
  std::vector<char> stacks;
  ucontext_t scheduler;
  unsigned current = 0;
  void (*entry)(void*) = nullptr;
  void* entry_arg = nullptr;
  char error[512] = {0};
  // The scheduler's own stack (ASan builds).
  const void* scheduler_bottom = nullptr;
  size_t scheduler_size = 0;
};
static dc_host_block dc_host_state;
// Stack per emulated thread: printed kernels are flat (no recursion); sanitizers need more.
static const size_t dc_host_stack_bytes = 256 * 1024;

extern "C" const char* dc_host_last_error() { return dc_host_state.error; }

static inline void dc_host_fail(const char* what) {
  if (dc_host_state.error[0] == '\0') {
    snprintf(dc_host_state.error, sizeof dc_host_state.error, "block %u thread %u: %s",
             blockIdx.x, threadIdx.x, what);
  }
}

// A fiber's switch back to the scheduler; `dying` when the fiber has ended.
static inline void dc_host_leave_fiber(dc_host_fiber& f, bool dying) {
  (void)f;
  (void)dying;
#ifdef DC_HOST_ASAN
  __sanitizer_start_switch_fiber(dying ? nullptr : &f.asan_fake_stack,
                                 dc_host_state.scheduler_bottom, dc_host_state.scheduler_size);
#endif
}
// Back on a fiber's stack (first entry or after a barrier).
static inline void dc_host_enter_fiber(dc_host_fiber& f, bool first) {
  (void)f;
  (void)first;
#ifdef DC_HOST_ASAN
  __sanitizer_finish_switch_fiber(first ? nullptr : f.asan_fake_stack,
                                  &dc_host_state.scheduler_bottom, &dc_host_state.scheduler_size);
#endif
}

// Parks the running fiber in `state` until the scheduler opens its barrier.
static inline void dc_host_wait_at(dc_host_wait state) {
  dc_host_fiber& f = dc_host_state.fibers[dc_host_state.current];
  f.state = state;
  dc_host_leave_fiber(f, false);
  swapcontext(&f.context, &dc_host_state.scheduler);
  dc_host_enter_fiber(f, false);
}

static void dc_host_trampoline() {
  dc_host_enter_fiber(dc_host_state.fibers[dc_host_state.current], true);
  dc_host_state.entry(dc_host_state.entry_arg);
  dc_host_fiber& f = dc_host_state.fibers[dc_host_state.current];
  f.state = dc_host_done;
  dc_host_leave_fiber(f, true);
  // returns to uc_link (the scheduler)
}

// Opens every barrier whose group is complete; false when nothing could open
// (deadlock, or a barrier reached after part of its group exited: an error).
static inline bool dc_host_open_barriers(unsigned threads) {
  std::vector<dc_host_fiber>& fs = dc_host_state.fibers;
  bool opened = false;
  unsigned live = 0, at_block = 0;
  for (unsigned t = 0; t < threads; ++t) {
    live += fs[t].state != dc_host_done;
    at_block += fs[t].state == dc_host_at_block;
  }
  if (at_block > 0 && at_block == live) {
    if (live != threads) {
      dc_host_fail("__syncthreads reached after other threads of the block exited");
      return false;
    }
    for (unsigned t = 0; t < threads; ++t) fs[t].state = dc_host_running;
    return true;
  }
  for (unsigned w = 0; w < threads; w += 32) {
    const unsigned end = w + 32 < threads ? w + 32 : threads;
    unsigned wlive = 0, wait = 0;
    for (unsigned t = w; t < end; ++t) {
      wlive += fs[t].state != dc_host_done;
      wait += fs[t].state == dc_host_at_warp;
    }
    if (wait > 0 && wait == wlive) {
      if (wlive != 32) {
        dc_host_fail("warp shuffle or __syncwarp with fewer than 32 live lanes in the warp");
        return false;
      }
      for (unsigned t = w; t < end; ++t) fs[t].state = dc_host_running;
      opened = true;
    }
  }
  if (!opened) dc_host_fail("deadlock: threads wait at barriers that can never open");
  return opened;
}

// Runs one block of `threads` fibers to completion; false on a barrier error.
static inline bool dc_host_run_block(unsigned threads) {
  dc_host_block& s = dc_host_state;
  if (s.fibers.size() < threads) s.fibers.resize(threads);
  if (s.stacks.size() < threads * dc_host_stack_bytes) s.stacks.resize(threads * dc_host_stack_bytes);
  for (unsigned t = 0; t < threads; ++t) {
    dc_host_fiber& f = s.fibers[t];
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = s.stacks.data() + t * dc_host_stack_bytes;
    f.context.uc_stack.ss_size = dc_host_stack_bytes;
    f.context.uc_link = &s.scheduler;
    makecontext(&f.context, dc_host_trampoline, 0);
    f.state = dc_host_running;
  }
  for (;;) {
    bool any_live = false;
    // Every runnable fiber in thread order, each up to its next barrier or its end.
    for (unsigned t = 0; t < threads; ++t) {
      if (s.fibers[t].state != dc_host_running) {
        any_live |= s.fibers[t].state != dc_host_done;
        continue;
      }
      s.current = t;
      threadIdx.x = t;
#ifdef DC_HOST_ASAN
      void* scheduler_fake_stack = nullptr;
      __sanitizer_start_switch_fiber(&scheduler_fake_stack,
                                     s.stacks.data() + t * dc_host_stack_bytes, dc_host_stack_bytes);
#endif
      swapcontext(&s.scheduler, &s.fibers[t].context);
#ifdef DC_HOST_ASAN
      __sanitizer_finish_switch_fiber(scheduler_fake_stack, nullptr, nullptr);
#endif
      any_live |= s.fibers[t].state != dc_host_done;
    }
    if (!any_live) return true;
    if (!dc_host_open_barriers(threads)) return false;
  }
}

// The emulated cuLaunchKernel of a kernel that uses barriers: blocks in
// reverse order (a GPU promises no order), each as fibers. Returns 0, or 1
// with dc_host_last_error() set.
template <class F>
int dc_host_run_grid(long long grid, int block, F& thread_body) {
  dc_host_state.error[0] = '\0';
  dc_host_state.entry = [](void* p) { (*static_cast<F*>(p))(); };
  dc_host_state.entry_arg = &thread_body;
  gridDim.x = (unsigned)grid;
  blockDim.x = (unsigned)block;
  for (long long b = grid - 1; b >= 0; --b) {
    blockIdx.x = (unsigned)b;
    if (!dc_host_run_block((unsigned)block)) return 1;
  }
  return 0;
}

// A kernel without barriers: every thread to its end in turn.
template <class F>
int dc_host_run_grid_plain(long long grid, int block, F& thread_body) {
  dc_host_state.error[0] = '\0';
  gridDim.x = (unsigned)grid;
  blockDim.x = (unsigned)block;
  for (long long b = grid - 1; b >= 0; --b) {
    blockIdx.x = (unsigned)b;
    for (int t = 0; t < block; ++t) {
      threadIdx.x = (unsigned)t;
      thread_body();
    }
  }
  return 0;
}

// ---- barriers, shuffles, atomics ----

static inline void __syncthreads() { dc_host_wait_at(dc_host_at_block); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
  if (mask != 0xffffffffu) dc_host_fail("__syncwarp with a partial mask (not emulated)");
  dc_host_wait_at(dc_host_at_warp);
}
static inline void __threadfence() {}
static inline void __threadfence_block() {}

template <class T>
static inline T dc_host_shuffle(unsigned mask, T value, int source_lane) {
  static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
  if (mask != 0xffffffffu) dc_host_fail("warp shuffle with a partial mask (not emulated)");
  dc_host_block& s = dc_host_state;
  const unsigned self = s.current, warp = self / 32 * 32;
  memcpy(&s.fibers[self].slot, &value, sizeof value);
  dc_host_wait_at(dc_host_at_warp);  // every lane's slot written
  T out = value;
  if (source_lane >= 0 && source_lane < 32) {
    memcpy(&out, &s.fibers[warp + (unsigned)source_lane].slot, sizeof out);
  }
  dc_host_wait_at(dc_host_at_warp);  // every lane has read before a slot is reused
  return out;
}
// CUDA: a source lane outside the warp (down/up past the edge) returns the caller's own value.
template <class T>
static inline T __shfl_sync(unsigned mask, T value, int lane, int width = 32) {
  (void)width;
  return dc_host_shuffle(mask, value, lane & 31);
}
template <class T>
static inline T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  (void)width;
  const int lane = (int)(threadIdx.x % 32), src = lane + (int)delta;
  T out = dc_host_shuffle(mask, value, src);
  return src < 32 ? out : value;
}
template <class T>
static inline T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  (void)width;
  const int lane = (int)(threadIdx.x % 32), src = lane - (int)delta;
  T out = dc_host_shuffle(mask, value, src);
  return src >= 0 ? out : value;
}
template <class T>
static inline T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
  (void)width;
  return dc_host_shuffle(mask, value, (int)(threadIdx.x % 32) ^ lane_mask);
}

template <class T>
static inline T atomicAdd(T* address, T value) {
  T old = *address;
  *address = old + value;
  return old;
}
template <class T>
static inline T atomicExch(T* address, T value) {
  T old = *address;
  *address = value;
  return old;
}
template <class T>
static inline T atomicCAS(T* address, T compare, T value) {
  T old = *address;
  if (old == compare) *address = value;
  return old;
}
template <class T>
static inline T atomicMax(T* address, T value) {
  T old = *address;
  if (old < value) *address = value;
  return old;
}
template <class T>
static inline T atomicMin(T* address, T value) {
  T old = *address;
  if (value < old) *address = value;
  return old;
}
