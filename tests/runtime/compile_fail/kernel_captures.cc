// Must NOT compile: dualcast::kernel refuses lambdas with captures (a traced kernel would freeze them).
//
// tests/CMakeLists.txt compiles this file once per DUALCAST_CAPTURE variant
// and passes when the compiler fails with the static_assert's message.
#include <dualcast/kernel.hpp>

int main() {
  double shift = 1;
#if DUALCAST_CAPTURE == 1
  auto k = dualcast::kernel("by_reference", [&shift](auto x) { return x + shift; });
#elif DUALCAST_CAPTURE == 2
  auto k = dualcast::kernel("by_value", [shift](auto x) { return x + shift; });
#else
  auto k = dualcast::kernel("init_capture", [s = &shift](auto x) { return x + *s; });
#endif
  (void)k;
  return 0;
}
