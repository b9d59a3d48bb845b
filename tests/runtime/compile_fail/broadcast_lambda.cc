// Must NOT compile: broadcast takes a dualcast::Kernel; a bare lambda gets a message that says how to make one.
//
// tests/CMakeLists.txt passes when the compiler fails with broadcast.hpp's
// message. DUALCAST_VARIANT 1: broadcast, 2: broadcast_n.
#include <dualcast/broadcast.hpp>

int main() {
  auto x = dualcast::Array<float>::zeros({3});
  auto f = [](auto v) { return v * 2; };
#if DUALCAST_VARIANT == 1
  auto y = dualcast::broadcast(f, x);
#else
  auto y = dualcast::broadcast_n(f, x);
#endif
  (void)y;
  return 0;
}
