// Host/device portability for the dual library: the DUALCAST_HD macro and the std-vs-cuda::std switch.
#pragma once

// Every function in dual/ is DUALCAST_HD so that the same headers compile as ordinary host C++,
// under nvcc (both passes) and under NVRTC, which has no host standard library at all.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define DUALCAST_HD __host__ __device__
#define DUALCAST_CUDA 1
#else
#define DUALCAST_HD
#define DUALCAST_CUDA 0
#endif

// Before a DUALCAST_HD template that calls a user callable: the callable may be host-only (a
// plain lambda on the host), which is fine as long as the template is only used on the host.
#if defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#define DUALCAST_HD_CALLS_USER _Pragma("nv_exec_check_disable")
#else
#define DUALCAST_HD_CALLS_USER
#endif

// NVRTC ships no <type_traits>/<cmath>/<array>; libcu++ (CCCL, -I<cuda>/include/cccl) provides the
// traits. Code that needs <array>, <ostream> or <tuple> (the eager helpers, printing) is host-only.
#if defined(__CUDACC_RTC__)
#define DUALCAST_RTC 1
#include <cuda/std/type_traits>
namespace dualcast::detail {
namespace stdx = ::cuda::std;
}  // namespace dualcast::detail
#else
#define DUALCAST_RTC 0
#include <type_traits>
namespace dualcast::detail {
namespace stdx = ::std;
}  // namespace dualcast::detail
#endif
