// The HM-LSTM cell's full gradient (shared/HMLSTM.md, "our full variant") against a hand-written float64 reference.
//
// value c and ∂/∂{z, zb, c_prev, f, i, g} of loss = sum(cbar ⊙ c), in float32
// and float64, in cache and recompute mode, for the "rows" layout (z, zb of
// shape (n, 1)) and the "columns" layout ((1, n)). The reference applies the
// derivative formulas by hand, per element:
//   FLUSH  (z == 1):            c = σ(i)·tanh(g)
//   COPY   (z != 1, zb == 0):   c = c_prev
//   UPDATE (otherwise):         c = σ(f)·c_prev + σ(i)·tanh(g)
//   ∂c/∂c_prev = σ(f) | 1 | 0 (UPDATE | COPY | FLUSH); ∂c/∂f = σ(f)(1-σ(f))·c_prev on UPDATE;
//   ∂c/∂i = σ(i)(1-σ(i))·tanh(g) and ∂c/∂g = σ(i)(1-tanh²(g)) on FLUSH and UPDATE;
//   ∂c/∂z = ∂c/∂zb = 0 (they only steer), summed over the broadcast axis: zero arrays
//   of z's shape.
// The same cell written TF-style (every branch computed, `where`, one tape
// node per primitive under Unfused) must give the same numbers: it is the
// benchmark's reverse-mode comparator.
#include <doctest/doctest.h>

#include <cmath>

#include "dualcast/array.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/kernel.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "runtime/auto_partials.h"

namespace dualcast {
namespace {

// σ for plain numbers; a traced Var finds jit::sigmoid by argument-dependent lookup.
namespace host {
template <class T>
  requires std::is_floating_point_v<T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}
}  // namespace host

const Kernel& Cell() {
  static const Kernel k = kernel("hmlstm_cell", [](auto z, auto zb, auto c, auto f, auto i, auto g) {
    using host::sigmoid, std::tanh;
    if (z == 1) return sigmoid(i) * tanh(g);       // FLUSH
    if (zb == 0) return c;                         // COPY
    return sigmoid(f) * c + sigmoid(i) * tanh(g);  // UPDATE
  });
  return k;
}

struct Reference {
  std::vector<double> c, dc, df, di, dg;  // value and gradients of sum(cbar ⊙ c)
};

// z, zb: one value per row ("rows") or per column ("columns").
Reference HandReference(int n, bool rows, const std::vector<double>& z, const std::vector<double>& zb,
                        const std::vector<double>& c, const std::vector<double>& f,
                        const std::vector<double>& i, const std::vector<double>& g,
                        const std::vector<double>& cbar) {
  auto sig = [](double x) { return 1 / (1 + std::exp(-x)); };
  Reference r;
  for (int row = 0; row < n; ++row) {
    for (int col = 0; col < n; ++col) {
      const size_t e = static_cast<size_t>(row * n + col);
      const double zz = z[rows ? row : col], zzb = zb[rows ? row : col];
      const double sf = sig(f[e]), si = sig(i[e]), tg = std::tanh(g[e]);
      double value, dc = 0, df = 0, di = 0, dg = 0;
      if (zz == 1) {  // FLUSH
        value = si * tg;
        di = si * (1 - si) * tg;
        dg = si * (1 - tg * tg);
      } else if (zzb == 0) {  // COPY
        value = c[e];
        dc = 1;
      } else {  // UPDATE
        value = sf * c[e] + si * tg;
        dc = sf;
        df = sf * (1 - sf) * c[e];
        di = si * (1 - si) * tg;
        dg = si * (1 - tg * tg);
      }
      r.c.push_back(value);
      r.dc.push_back(cbar[e] * dc);
      r.df.push_back(cbar[e] * df);
      r.di.push_back(cbar[e] * di);
      r.dg.push_back(cbar[e] * dg);
    }
  }
  return r;
}

template <class T>
std::vector<double> Doubles(const Array<T>& a) {
  std::vector<T> v = a.to_vector();
  return std::vector<double>(v.begin(), v.end());
}

template <class T>
void CheckNear(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    INFO("element " << k << ": got " << got[k] << ", want " << want[k]);
    CHECK(std::abs(got[k] - want[k]) <= tol * (1 + std::abs(want[k])));
  }
}

// The TF-style comparator: every branch computed, `where` selects.
template <class T>
Array<T> ReverseModeCell(const Array<T>& z, const Array<T>& zb, const Array<T>& c, const Array<T>& f,
                         const Array<T>& i, const Array<T>& g) {
  Unfused unfused;
  Array<T> flush = sigmoid(i) * tanh(g);
  Array<T> update = sigmoid(f) * c + flush;
  return where(z == 1.0, flush, where(zb == 0.0, c, update));
}

template <class T>
void CheckHmLstm(bool rows, PartialsMode mode, bool comparator, size_t budget = Tape::kDefaultBudgetBytes) {
  const int n = 7;
  const Shape zshape = rows ? Shape{n, 1} : Shape{1, n};
  auto zv = Array<T>::uniform(zshape, 1).to_vector(), zbv = Array<T>::uniform(zshape, 2).to_vector();
  for (auto& v : zv) v = std::round(v);
  for (auto& v : zbv) v = std::round(v);
  // Rows (or columns) 0, 1, 2 cover FLUSH, COPY, UPDATE.
  zv[0] = 1, zbv[0] = 0, zv[1] = 0, zbv[1] = 0, zv[2] = 0, zbv[2] = 1;
  const auto Z = Array<T>::from(zv, zshape), Zb = Array<T>::from(zbv, zshape);
  const auto C = Array<T>::uniform({n, n}, 3), F = Array<T>::uniform({n, n}, 4);
  const auto I = Array<T>::uniform({n, n}, 5), G = Array<T>::uniform({n, n}, 6);
  const auto Cbar = Array<T>::uniform({n, n}, 7, T(-1), T(1));

  Tape tape(mode, budget);
  Array<T> c = comparator ? ReverseModeCell(Z, Zb, C, F, I, G) : broadcast(Cell(), Z, Zb, C, F, I, G);
  Array<T> loss = sum(c * Cbar);
  std::vector<Array<T>> grads = tape.gradient(loss, {Z, Zb, C, F, I, G});

  Reference ref = HandReference(n, rows, Doubles(Z), Doubles(Zb), Doubles(C), Doubles(F), Doubles(I),
                                Doubles(G), Doubles(Cbar));
  // float32: a few roundings of values below 1 (σ, tanh, products): 1e-6
  // relative is ~8 ulp. float64: 1e-14.
  const double tol = sizeof(T) == 4 ? 1e-6 : 1e-14;
  CheckNear<T>(Doubles(c), ref.c, tol);
  double expect_loss = 0;
  for (size_t e = 0; e < ref.c.size(); ++e) expect_loss += ref.c[e] * Doubles(Cbar)[e];
  CHECK(std::abs(double(loss.item()) - expect_loss) <= tol * n * n);
  for (int k : {0, 1}) {
    CHECK(grads[k].shape() == zshape);
    CHECK(Doubles(grads[k]) == std::vector<double>(n, 0.0));
  }
  CheckNear<T>(Doubles(grads[2]), ref.dc, tol);
  CheckNear<T>(Doubles(grads[3]), ref.df, tol);
  CheckNear<T>(Doubles(grads[4]), ref.di, tol);
  CheckNear<T>(Doubles(grads[5]), ref.dg, tol);
}

TEST_CASE_TEMPLATE("HM-LSTM full variant: value and all six gradients vs the hand-written reference", T,
                   float, double) {
  for (bool rows : {true, false}) {
    for (PartialsMode mode : {PartialsMode::kCache, PartialsMode::kRecompute}) {
      CAPTURE(rows);
      CAPTURE(static_cast<int>(mode));
      CheckHmLstm<T>(rows, mode, /*comparator=*/false);
    }
    // kAuto: a zero budget forces recompute, the default one caches.
    CheckHmLstm<T>(rows, PartialsMode::kAuto, /*comparator=*/false, 0);
    CheckHmLstm<T>(rows, PartialsMode::kAuto, /*comparator=*/false);
  }
}

TEST_CASE_TEMPLATE("HM-LSTM reverse-mode comparator (where, unfused) gives the same gradients", T, float,
                   double) {
  for (PartialsMode mode : {PartialsMode::kCache, PartialsMode::kRecompute}) {
    CheckHmLstm<T>(/*rows=*/true, mode, /*comparator=*/true);
  }
}

TEST_CASE("kAuto caches the HM-LSTM cell's partials (transcendentals): it is not recorded to recompute") {
  // runtime/auto_partials.h: five sigmoid/tanh for four nonzero partials
  // weigh more than recomputing is worth; a cheap kernel is recorded to recompute.
  const int n = 4;
  const auto Z = Array<float>::full({n, 1}, 1), Zb = Array<float>::full({n, 1}, 0);
  const auto C = Array<float>::uniform({n, n}, 3), F = Array<float>::uniform({n, n}, 4);
  const auto I = Array<float>::uniform({n, n}, 5), G = Array<float>::uniform({n, n}, 6);
  Tape tape;
  const size_t before = detail::RecomputingEntriesForTesting();
  broadcast(Cell(), Z, Zb, C, F, I, G).eval();
  CHECK(detail::RecomputingEntriesForTesting() == before);
  (C * F + I).eval();
  CHECK(detail::RecomputingEntriesForTesting() > before);
}

}  // namespace
}  // namespace dualcast
