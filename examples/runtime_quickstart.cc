// The README quickstart, compiled and run by ctest so the README never lies.
#include <dualcast/dualcast.hpp>
#include <iostream>
namespace dc = dualcast;

int main() {
  // A scalar kernel: a generic lambda with ordinary branches on the data.
  dc::Kernel cell = dc::kernel("cell", [](auto z, auto c, auto g) {
    using namespace dc::math;
    if (z == 1) return sigmoid(g) * tanh(g);   // only the taken branch runs
    return sigmoid(g) * c;
  });
  auto Z = dc::Array<float>::from({1, 0}, {2, 1});        // broadcast per row
  auto C = dc::Array<float>::uniform({2, 3}, /*seed=*/1);
  auto G = dc::Array<float>::uniform({2, 3}, /*seed=*/2);
  dc::Tape tape;                                           // reverse mode
  auto loss = dc::sum(dc::broadcast(cell, Z, C, G));       // one fused dual kernel
  auto grads = tape.gradient(loss, {C, G});                // partials x adjoint, summed
  std::cout << grads[0] << "\n" << dc::FormatStats() << "\n";
}
