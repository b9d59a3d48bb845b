// Hand-written fused loops for the HM-LSTM cell (see handwritten.h).
#include "bench/hmlstm/handwritten.h"

#include <cmath>

#include "jit/cpu/thread_pool.h"

namespace dualcast::bench {

namespace {

inline float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// One row of the cell. `w` is the output adjoint (nullptr: 1, the paper
// variant); `c` the value (nullptr: not stored).
inline void Row(const Problem& p, int64_t r, const float* w, float* c, float* dcp, float* df,
                float* di, float* dg) {
  const int64_t n = p.n, base = r * n;
  const float* cp = p.c_prev.data() + base;
  const float* f = p.f.data() + base;
  const float* i = p.i.data() + base;
  const float* g = p.g.data() + base;
  const float* wr = w ? w + base : nullptr;
  dcp += base;
  df += base;
  di += base;
  dg += base;
  if (c) c += base;
  if (p.layout == Layout::kRows) {
    const float z = p.z[r], zb = p.zb[r];
    if (z == 1) {  // FLUSH
#pragma GCC ivdep
      for (int64_t k = 0; k < n; ++k) {
        const float si = Sigmoid(i[k]), tg = std::tanh(g[k]), s = wr ? wr[k] : 1.0f;
        if (c) c[k] = si * tg;
        dcp[k] = 0;
        df[k] = 0;
        di[k] = s * si * (1 - si) * tg;
        dg[k] = s * si * (1 - tg * tg);
      }
    } else if (zb == 0) {  // COPY
#pragma GCC ivdep
      for (int64_t k = 0; k < n; ++k) {
        if (c) c[k] = cp[k];
        dcp[k] = wr ? wr[k] : 1.0f;
        df[k] = 0;
        di[k] = 0;
        dg[k] = 0;
      }
    } else {  // UPDATE
#pragma GCC ivdep
      for (int64_t k = 0; k < n; ++k) {
        const float si = Sigmoid(i[k]), tg = std::tanh(g[k]), sf = Sigmoid(f[k]);
        const float s = wr ? wr[k] : 1.0f;
        if (c) c[k] = sf * cp[k] + si * tg;
        dcp[k] = s * sf;
        df[k] = s * sf * (1 - sf) * cp[k];
        di[k] = s * si * (1 - si) * tg;
        dg[k] = s * si * (1 - tg * tg);
      }
    }
    return;
  }
  const float* z = p.z.data();
  const float* zb = p.zb.data();
#pragma GCC ivdep
  for (int64_t k = 0; k < n; ++k) {
    const float si = Sigmoid(i[k]), tg = std::tanh(g[k]), sf = Sigmoid(f[k]);
    const float s = wr ? wr[k] : 1.0f;
    const bool flush = z[k] == 1, copy = !flush && zb[k] == 0, update = !flush && !copy;
    if (c) c[k] = flush ? si * tg : (copy ? cp[k] : sf * cp[k] + si * tg);
    dcp[k] = copy ? s : (update ? s * sf : 0.0f);
    df[k] = update ? s * sf * (1 - sf) * cp[k] : 0.0f;
    di[k] = copy ? 0.0f : s * si * (1 - si) * tg;
    dg[k] = copy ? 0.0f : s * si * (1 - tg * tg);
  }
}

void Ensure(std::vector<float>& v, size_t n) {
  if (v.size() != n) v.assign(n, 0.0f);
}

void Run(const Problem& p, Results& out, bool full) {
  const size_t nn = static_cast<size_t>(p.n * p.n);
  Ensure(out.d_cprev, nn);
  Ensure(out.d_f, nn);
  Ensure(out.d_i, nn);
  Ensure(out.d_g, nn);
  if (full) {
    Ensure(out.c, nn);
    // dc/dz and dc/dzb are zero almost everywhere (piecewise-constant branch
    // choice): their gradients are zero vectors; a hand-written code knows it.
    out.d_z.assign(static_cast<size_t>(p.n), 0.0f);
    out.d_zb.assign(static_cast<size_t>(p.n), 0.0f);
  }
  const float* w = full ? p.cbar.data() : nullptr;
  float* c = full ? out.c.data() : nullptr;
  jit::ParallelFor(p.n, 8, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      Row(p, r, w, c, out.d_cprev.data(), out.d_f.data(), out.d_i.data(), out.d_g.data());
    }
  });
}

}  // namespace

void HandwrittenPaper(const Problem& p, Results& out) { Run(p, out, false); }
void HandwrittenFull(const Problem& p, Results& out) { Run(p, out, true); }

}  // namespace dualcast::bench
