// Determinism digest (see determinism.h).
#include "differential/determinism.h"

#include <cstring>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "dualcast/dualcast.hpp"
#include "jit/codegen/disk_cache.h"
#include "kernels/kernels.h"

namespace dualcast::difftest {
namespace {

template <class T>
void Mix(std::string& bytes, const Array<T>& a) {
  std::vector<T> v = a.to_vector();
  bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

template <class T>
std::string Digest() {
  const Kernel cell = kernel("determinism_cell", testing::HmLstmCell::fn);
  const int64_t rows = 600, cols = 512;  // 307200 elements: ~10 chunks
  // Boundary flags (0 or 1) so every branch of the cell is taken somewhere.
  std::vector<T> flags_z(rows), flags_zb(rows);
  for (int64_t r = 0; r < rows; ++r) {
    flags_z[r] = r % 3 == 0 ? T(1) : T(0);
    flags_zb[r] = r % 5 == 0 ? T(0) : T(1);
  }
  auto z = Array<T>::from(flags_z, {rows, 1});
  auto zb = Array<T>::from(flags_zb, {rows, 1});
  auto c = Array<T>::uniform({rows, cols}, 13, T(-2), T(2));
  auto f = Array<T>::uniform({1, cols}, 14, T(-3), T(3));
  auto i = Array<T>::uniform({rows, cols}, 15, T(-3), T(3));
  auto g = Array<T>::uniform({rows, cols}, 16, T(-3), T(3));
  auto w = Array<T>::uniform({rows, cols}, 17, T(-1), T(1));
  std::string bytes;
  Mix(bytes, broadcast(cell, z, zb, c, f, i, g));
  // Axis sums: generated kernels with reduced outputs (columns, rows, all).
  Mix(bytes, sum(c * w, {0}, true));
  Mix(bytes, sum(g, {1}));
  Mix(bytes, mean(i));
  Partials<T> p = partials(cell, {z, zb, c, f, i, g});
  for (int j = 0; j < 6; ++j) Mix(bytes, p.d(0, j));
  // Reductions of transposed operands, which loop in memory order (jit::LoopOrder):
  // the reduced dim outermost, split into chunks, and a pending one fused.
  Mix(bytes, sum(c.transpose(), {1}));
  Mix(bytes, sum(c.transpose() * w.transpose(), {0}, true));
  Mix(bytes, max(g.transpose(), {1}));
  Mix(bytes, logsumexp(i.transpose(), {0}));
  Mix(bytes, sum(c.transpose()));
  // Lazy sums fused into the cell's kernel, along each axis and over all.
  Mix(bytes, sum(broadcast(cell, z, zb, c, f, i, g) * w, {0}, true));
  Mix(bytes, sum(broadcast(cell, z, zb, c, f, i, g) * w, {1}, true));
  Mix(bytes, mean(broadcast(cell, z, zb, c, f, i, g) * w));
  // kAuto takes the one-pass gradient (one kernel, reduced outputs).
  for (PartialsMode mode : {PartialsMode::kCache, PartialsMode::kRecompute, PartialsMode::kAuto}) {
    Tape tape(mode);
    Array<T> loss = sum(broadcast(cell, z, zb, c, f, i, g) * w);
    std::vector<Array<T>> grads = tape.gradient(loss, {z, zb, c, f, i, g});  // loss still pending
    Mix(bytes, loss);
    for (const Array<T>& grad : grads) Mix(bytes, grad);
  }
  return absl::StrFormat("%s %d bytes %016x", sizeof(T) == 4 ? "f32" : "f64", bytes.size(),
                         jit::Fnv1a64(bytes));
}

}  // namespace

std::string DeterminismDigest() { return Digest<double>() + "; " + Digest<float>(); }

}  // namespace dualcast::difftest
