// Umbrella header of the dual-number library: Dual<T, N, Tag>, its math, and the eager helpers.
#pragma once

// Example:
//   #include <dualcast/dual.hpp>
//   auto f = [](auto x) { using namespace dualcast::math; return x > 0 ? sqrt(x) : 0 * x; };
//   double d = dualcast::derivative(f, 4.0);                  // 0.25
//   dualcast::Dual<float, 2> a = dualcast::Dual<float, 2>::variable(1.0f, 0);
//   auto b = dualcast::math::tanh(a) * 2;                     // value and 2 partials
//
// Works as host C++20, in nvcc device code and under NVRTC (-std=c++20 with
// -I<cuda>/include/cccl); printing and the std::array helpers are host-only.

#include "dualcast/host_device.hpp"
#include "dualcast/math.hpp"
#include "dualcast/dual_number.hpp"
#include "dualcast/dual_math.hpp"
#include "dualcast/derivatives.hpp"
#if !DUALCAST_RTC
#include "dualcast/dual_io.hpp"
#endif
