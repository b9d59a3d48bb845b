// Must NOT compile: dualcast::tanh is the whole-array function; inside a kernel math is dualcast::math's.
//
// tests/CMakeLists.txt passes when the compiler fails with kernel.hpp's
// message, which names the spelling that works.
#include <dualcast/kernel.hpp>
#include <dualcast/operators.hpp>

int main() {
  auto k = dualcast::kernel("array_tanh", [](auto x) { return dualcast::tanh(x); });
  (void)k;
  return 0;
}
