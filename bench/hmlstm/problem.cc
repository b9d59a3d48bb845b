// Inputs, the float64 reference and the error measure of the HM-LSTM benchmark.
#include "bench/hmlstm/problem.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace dualcast::bench {

const char* LayoutName(Layout layout) { return layout == Layout::kRows ? "rows" : "columns"; }
const char* VariantName(Variant variant) { return variant == Variant::kPaper ? "paper" : "full"; }

Problem MakeProblem(int64_t n, Layout layout, uint64_t seed) {
  Problem p;
  p.n = n;
  p.layout = layout;
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return static_cast<float>(std::uniform_real_distribution<double>(0, 1)(rng)); };
  auto fill = [&](std::vector<float>& v, size_t size) {
    v.resize(size);
    for (float& x : v) x = uniform();
  };
  const size_t nn = static_cast<size_t>(n * n);
  fill(p.c_prev, nn);
  fill(p.f, nn);
  fill(p.i, nn);
  fill(p.g, nn);
  fill(p.cbar, nn);
  p.z.resize(static_cast<size_t>(n));
  p.zb.resize(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    p.z[k] = std::round(uniform());
    p.zb[k] = std::round(uniform());
  }
  const float forced[3][2] = {{1, 0}, {0, 0}, {0, 1}};  // FLUSH, COPY, UPDATE
  for (int64_t k = 0; k < std::min<int64_t>(3, n); ++k) {
    p.z[k] = forced[k][0];
    p.zb[k] = forced[k][1];
  }
  return p;
}

Reference ComputeReference(const Problem& p, Variant variant) {
  const int64_t n = p.n;
  const size_t nn = static_cast<size_t>(n * n);
  Reference r;
  r.d_cprev.assign(nn, 0);
  r.d_f.assign(nn, 0);
  r.d_i.assign(nn, 0);
  r.d_g.assign(nn, 0);
  if (variant == Variant::kFull) {
    r.c.assign(nn, 0);
    r.d_z.assign(static_cast<size_t>(n), 0);
    r.d_zb.assign(static_cast<size_t>(n), 0);
  }
  auto sigmoid = [](double x) { return 1 / (1 + std::exp(-x)); };
  for (int64_t row = 0; row < n; ++row) {
    for (int64_t k = 0; k < n; ++k) {
      const size_t e = static_cast<size_t>(row * n + k);
      const double z = p.z[p.flag_index(row, k)], zb = p.zb[p.flag_index(row, k)];
      const double cp = p.c_prev[e], si = sigmoid(p.i[e]), tg = std::tanh(p.g[e]);
      const double sf = sigmoid(p.f[e]);
      double c, dcp = 0, df = 0, di = 0, dg = 0;
      if (z == 1) {  // FLUSH
        c = si * tg;
        di = si * (1 - si) * tg;
        dg = si * (1 - tg * tg);
      } else if (zb == 0) {  // COPY
        c = cp;
        dcp = 1;
      } else {  // UPDATE
        c = sf * cp + si * tg;
        dcp = sf;
        df = sf * (1 - sf) * cp;
        di = si * (1 - si) * tg;
        dg = si * (1 - tg * tg);
      }
      const double w = variant == Variant::kFull ? p.cbar[e] : 1.0;
      r.d_cprev[e] = w * dcp;
      r.d_f[e] = w * df;
      r.d_i[e] = w * di;
      r.d_g[e] = w * dg;
      if (variant == Variant::kFull) r.c[e] = c;
    }
  }
  return r;
}

namespace {
double Compare(const std::vector<float>& got, const std::vector<double>& ref) {
  if (got.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t k = 0; k < ref.size(); ++k) {
    double err = std::abs(static_cast<double>(got[k]) - ref[k]) / std::max(std::abs(ref[k]), 1.0);
    if (!(err <= worst)) worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
  }
  return worst;
}
}  // namespace

double MaxError(const Results& got, const Reference& ref, Variant variant) {
  double e = std::max({Compare(got.d_cprev, ref.d_cprev), Compare(got.d_f, ref.d_f),
                       Compare(got.d_i, ref.d_i), Compare(got.d_g, ref.d_g)});
  if (variant == Variant::kFull) {
    e = std::max({e, Compare(got.c, ref.c), Compare(got.d_z, ref.d_z), Compare(got.d_zb, ref.d_zb)});
  }
  return e;
}

double FloorBytes(int64_t n, Variant variant) {
  const double nn = static_cast<double>(n) * static_cast<double>(n);
  const double flags = 2.0 * 4 * static_cast<double>(n);
  return variant == Variant::kPaper ? 32 * nn + flags : 40 * nn + flags * 2;
}

}  // namespace dualcast::bench
