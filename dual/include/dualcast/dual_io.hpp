// Printing Duals on host streams (for tests, examples and debugging); not available on devices.
#pragma once

#include <ostream>

#include "dualcast/dual_number.hpp"

namespace dualcast {

// Prints "value [p0, p1, ...]"; nested Duals print recursively.
//
// Example:  std::cout << Dual<double, 2>::variable(1.5, 1);   // 1.5 [0, 1]
template <class T, int N, class Tag>
std::ostream& operator<<(std::ostream& os, const Dual<T, N, Tag>& x) {
  os << x.value() << " [";
  for (int k = 0; k < N; ++k) os << (k ? ", " : "") << x.partial(k);
  return os << ']';
}

}  // namespace dualcast
