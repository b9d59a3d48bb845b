// Data-parallel HM-LSTM training over MPI ranks: each rank a slice of rows, shared gradients allreduced in place.
//
// The cell is the HM-LSTM full variant (shared/HMLSTM.md) with two learned
// gate biases b_f, b_i of shape (1, cols), broadcast over every row:
//   FLUSH  (z == 1):           c = σ(i + b_i)·tanh(g)
//   COPY   (z != 1, zb == 0):  c = c_prev
//   UPDATE (otherwise):        c = σ(f + b_f)·c_prev + σ(i + b_i)·tanh(g)
// loss = Σ cbar ⊙ c over all rows of all ranks. Rows are data: each rank owns
// a block of them (z, zb, c_prev, f, i, g, cbar) and their gradients stay on
// it. The biases are parameters every rank holds a copy of: their gradient
// is a sum over all rows, so each rank's tape gives its part and
// MPI_Allreduce(MPI_IN_PLACE, ...) sums the parts in the gradient buffers
// themselves (std::vectors the tape accumulated into through
// Array::view, no copy), and every rank takes the same SGD step.
//
// Same result as one rank: per-row values and gradients are computed
// element by element, so for given biases they do not depend on the
// partition (bitwise equal in step 0); the loss and the bias gradients are
// sums over rows, which P ranks associate differently (P partial sums added
// by MPI) than one rank does, so from step 1 on the biases, and with them
// the rows' values and gradients, differ in the last bits. With cbar >= 0
// and the inputs in [0, 1) every term is >= 0, so the float32 rounding
// difference is relative to the value itself: the ctest allows 2e-5
// relative (float32 eps 6e-8 times a few hundred additions of one row
// block), see docs/scaling.md.
//
// Right, not only consistent: with --check, rank 0 recomputes the first
// step's loss and bias gradients over all rows from the derivative formulas
// by hand, in double (∂c/∂b_f = σ'(f + b_f)·c_prev on UPDATE; ∂c/∂b_i =
// σ'(i + b_i)·tanh(g) on FLUSH and UPDATE; 0 on COPY), and exits non-zero
// beyond 1e-5 relative (float32 terms, all >= 0) or on a NaN in any of them.
//
// Usage: mpirun -np P dualcast-mpi-hmlstm [--rows 64] [--cols 48] [--steps 3] [--check]
// (--inject-nan, for the tests: step 0's last b_i gradient is replaced by NaN, which --check must reject.)
// Lines starting with '#' are timings and checks (not compared); the rest is the result.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <dualcast/dualcast.hpp>

#include "mpi_common.hpp"

namespace {

using dualcast::Array;
using mpi_example::Block;
using mpi_example::Uniform;

const dualcast::Kernel& Cell() {
  static const dualcast::Kernel k = dualcast::kernel(
      "hmlstm_cell_biased", [](auto z, auto zb, auto c, auto f, auto i, auto g, auto bf, auto bi) {
        using namespace dualcast::math;
        if (z == 1) return sigmoid(i + bi) * tanh(g);             // FLUSH
        if (zb == 0) return c;                                    // COPY
        return sigmoid(f + bf) * c + sigmoid(i + bi) * tanh(g);  // UPDATE
      });
  return k;
}

// One rank's rows of an input, generated from the global (row, col) index.
std::vector<float> Rows(uint64_t seed, const Block& rows, int64_t cols, float lo = 0, float hi = 1) {
  std::vector<float> v;
  v.reserve(static_cast<size_t>(rows.count() * cols));
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    for (int64_t k = 0; k < cols; ++k) {
      v.push_back(lo + (hi - lo) * static_cast<float>(Uniform(seed, r * cols + k)));
    }
  }
  return v;
}

// Boundary states per row, rows 0, 1, 2 forced to FLUSH, COPY, UPDATE.
std::vector<float> Boundary(uint64_t seed, const Block& rows, const float forced[3]) {
  std::vector<float> v;
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    v.push_back(r < 3 ? forced[r] : std::round(static_cast<float>(Uniform(seed, r))));
  }
  return v;
}

Array<float> View(std::vector<float>& v, dualcast::Shape shape) {
  return Array<float>::view(v.data(), std::move(shape));
}

// Rank 0 gets the rows of every rank, in row order. The counts and offsets
// are in rows (an MPI type of `width` contiguous floats), not in floats: they
// stay ints for any rows x width once rows and width each fit in an int
// (main refuses more), where float counts overflowed past 2^31 elements.
std::vector<float> GatherRows(const std::vector<float>& local, int64_t rows, int64_t width,
                              const mpi_example::World& world) {
  MPI_Datatype row;
  MPI_Type_contiguous(static_cast<int>(width), MPI_FLOAT, &row);
  MPI_Type_commit(&row);
  std::vector<int> counts(world.size), offsets(world.size);
  for (int p = 0; p < world.size; ++p) {
    const Block b = mpi_example::Partition(rows, p, world.size);
    counts[p] = static_cast<int>(b.count());
    offsets[p] = static_cast<int>(b.begin);
  }
  std::vector<float> all(world.root() ? static_cast<size_t>(rows * width) : 0);
  const int mine = static_cast<int>(static_cast<int64_t>(local.size()) / width);
  MPI_Gatherv(local.data(), mine, row, all.data(), counts.data(), offsets.data(), row, 0, MPI_COMM_WORLD);
  MPI_Type_free(&row);
  return all;
}

// The first step's loss and bias gradients by hand, in double, over every row.
struct HandGradients {
  double loss = 0;
  std::vector<double> bf, bi;
};
HandGradients ByHand(int64_t rows, int64_t cols, const std::vector<float>& bias_f,
                     const std::vector<float>& bias_i) {
  const Block all{0, rows};
  const float z_forced[3] = {1, 0, 0}, zb_forced[3] = {0, 0, 1};
  const std::vector<float> z = Boundary(1, all, z_forced), zb = Boundary(2, all, zb_forced);
  const std::vector<float> c = Rows(3, all, cols), f = Rows(4, all, cols), i = Rows(5, all, cols),
                           g = Rows(6, all, cols), cbar = Rows(7, all, cols);
  auto sig = [](double x) { return 1 / (1 + std::exp(-x)); };
  HandGradients h;
  h.bf.assign(cols, 0.0);
  h.bi.assign(cols, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < cols; ++k) {
      const size_t e = static_cast<size_t>(r * cols + k);
      const double sf = sig(double(f[e]) + bias_f[k]), si = sig(double(i[e]) + bias_i[k]);
      const double tg = std::tanh(double(g[e]));
      if (z[r] == 1) {  // FLUSH
        h.loss += cbar[e] * si * tg;
        h.bi[k] += cbar[e] * si * (1 - si) * tg;
      } else if (zb[r] == 0) {  // COPY
        h.loss += cbar[e] * double(c[e]);
      } else {  // UPDATE
        h.loss += cbar[e] * (sf * c[e] + si * tg);
        h.bf[k] += cbar[e] * sf * (1 - sf) * c[e];
        h.bi[k] += cbar[e] * si * (1 - si) * tg;
      }
    }
  }
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const mpi_example::World world;
  int64_t rows = 64, cols = 48, steps = 3;
  bool check = false, inject_nan = false;
  mpi_example::Options options("dualcast-mpi-hmlstm",
                              "[--rows N (64)] [--cols N (48)] [--steps N (3)] [--check] [--inject-nan]");
  // MPI counts are ints: the gather counts rows, the allreduces and the row type count columns.
  options.Int("--rows", &rows, 3, INT_MAX, "MPI counts rows in an int");
  options.Int("--cols", &cols, 1, INT_MAX, "MPI counts columns in an int");
  options.Int("--steps", &steps, 1, INT_MAX);
  options.Flag("--check", &check);
  options.Flag("--inject-nan", &inject_nan);  // tests: a step-0 bias gradient becomes NaN, --check must fail
  options.Parse(argc, argv);
  mpi_example::ExitIfAnyError(
      rows < 3 * world.size
          ? "--rows " + std::to_string(rows) + " is too few for " + std::to_string(world.size) +
                " ranks: each rank needs at least 3 rows (at least " + std::to_string(3 * world.size) + ")"
          : "");
  const Block mine = mpi_example::Partition(rows, world.rank, world.size);
  const int64_t n = mine.count();

  // This rank's data (rows) and every rank's copy of the parameters.
  const float z_forced[3] = {1, 0, 0}, zb_forced[3] = {0, 0, 1};
  std::vector<float> z = Boundary(1, mine, z_forced), zb = Boundary(2, mine, zb_forced);
  std::vector<float> c = Rows(3, mine, cols), f = Rows(4, mine, cols), i = Rows(5, mine, cols),
                     g = Rows(6, mine, cols), cbar = Rows(7, mine, cols);
  std::vector<float> bf(cols), bi(cols);
  for (int64_t k = 0; k < cols; ++k) {
    bf[k] = 0.5f * static_cast<float>(Uniform(8, k)) - 0.25f;
    bi[k] = 0.5f * static_cast<float>(Uniform(9, k)) - 0.25f;
  }
  // Gradient buffers: rows (local) and parameters (summed over ranks).
  std::vector<float> gz(n), gzb(n), gc(n * cols), gf(n * cols), gi(n * cols), gg(n * cols);
  std::vector<float> gbf(cols), gbi(cols);
  const float learning_rate = 1e-3f;
  // Rank 0's reference for step 0, from the initial biases.
  const HandGradients hand = check && world.root() ? ByHand(rows, cols, bf, bi) : HandGradients{};
  double worst = 0;

  if (world.root()) {
    std::printf("hmlstm data-parallel: rows %lld cols %lld steps %lld\n", static_cast<long long>(rows),
                static_cast<long long>(cols), static_cast<long long>(steps));
  }
  double best_ms = 1e300, total_ms = 0, best_cpu_ms = 1e300, best_cpu_sum_ms = 1e300;
  for (int64_t step = 0; step < steps; ++step) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = mpi_example::CpuMs();
    for (auto* v : {&gz, &gzb, &gc, &gf, &gi, &gg, &gbf, &gbi}) std::fill(v->begin(), v->end(), 0.0f);
    double loss = 0;
    {
      dualcast::Tape tape;
      const std::vector<Array<float>> in = {
          View(z, {n, 1}),    View(zb, {n, 1}),   View(c, {n, cols}), View(f, {n, cols}),
          View(i, {n, cols}), View(g, {n, cols}), View(bf, {1, cols}), View(bi, {1, cols})};
      Array<float> cell = dualcast::broadcast(Cell(), in);
      Array<float> local_loss = dualcast::sum(cell * View(cbar, {n, cols}));
      tape.accumulate_gradient(
          local_loss, in,
          {View(gz, {n, 1}), View(gzb, {n, 1}), View(gc, {n, cols}), View(gf, {n, cols}),
           View(gi, {n, cols}), View(gg, {n, cols}), View(gbf, {1, cols}), View(gbi, {1, cols})});
      loss = local_loss.item();
    }
    // The shared parameters' gradients: summed in place, in the buffers the tape wrote (cols fits in
    // an int: the --cols limit).
    MPI_Allreduce(MPI_IN_PLACE, gbf.data(), static_cast<int>(cols), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, gbi.data(), static_cast<int>(cols), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (inject_nan && step == 0) gbi[cols - 1] = std::nanf("");
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    double cpu_ms = mpi_example::CpuMs() - cpu_start, cpu_sum_ms = cpu_ms;
    MPI_Allreduce(MPI_IN_PLACE, &ms, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &cpu_ms, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &cpu_sum_ms, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (step > 0 || steps == 1) {  // step 0 includes tracing and compiling
      best_ms = std::min(best_ms, ms);
      best_cpu_ms = std::min(best_cpu_ms, cpu_ms);
      best_cpu_sum_ms = std::min(best_cpu_sum_ms, cpu_sum_ms);
    }
    total_ms += ms;
    if (check && world.root() && step == 0) {
      auto rel = [](double got, double want) { return std::abs(got - want) / std::max(std::abs(want), 1e-30); };
      worst = rel(loss, hand.loss);
      for (int64_t k = 0; k < cols; ++k) {
        // COPY-only columns do not exist (rows 0..2 cover every branch), so no reference is 0.
        worst = mpi_example::MaxKeepNan(worst, rel(gbf[k], hand.bf[k]));
        worst = mpi_example::MaxKeepNan(worst, rel(gbi[k], hand.bi[k]));  // a NaN stays
      }
    }
    if (world.root()) {
      std::printf("step %lld loss %.9g grad_bf[0] %.9g grad_bi[0] %.9g\n", static_cast<long long>(step), loss,
                  gbf[0], gbi[0]);
    }
    // SGD on the parameters: identical on every rank (same summed gradient).
    for (int64_t k = 0; k < cols; ++k) {
      bf[k] -= learning_rate * gbf[k];
      bi[k] -= learning_rate * gbi[k];
    }
  }

  // The last step's gradients, whole: parameters from any rank, rows gathered to rank 0.
  struct Named {
    const char* name;
    std::vector<float>* local;
    int64_t width;
  };
  const Named row_grads[] = {{"grad_z", &gz, 1}, {"grad_zb", &gzb, 1}, {"grad_c", &gc, cols},
                             {"grad_f", &gf, cols}, {"grad_i", &gi, cols}, {"grad_g", &gg, cols}};
  for (const Named& r : row_grads) {
    const std::vector<float> all = GatherRows(*r.local, rows, r.width, world);
    if (!world.root()) continue;
    double sum = 0, max_abs = 0;
    for (float v : all) {
      sum += v;
      max_abs = std::max(max_abs, std::abs(double(v)));
    }
    std::printf("%s sum %.12g max %.9g\n", r.name, sum, max_abs);
  }
  if (world.root()) {
    for (auto [name, v] : {std::pair{"grad_bf", &gbf}, std::pair{"grad_bi", &gbi}}) {
      double sum = 0, max_abs = 0;
      for (float x : *v) {
        sum += x;
        max_abs = std::max(max_abs, std::abs(double(x)));
      }
      std::printf("%s sum %.12g max %.9g\n", name, sum, max_abs);
    }
    for (auto [name, v] : {std::pair{"bias_f", &bf}, std::pair{"bias_i", &bi}}) {
      std::printf("%s", name);
      for (int64_t k = 0; k < std::min<int64_t>(cols, 6); ++k) std::printf(" %.9g", (*v)[k]);
      std::printf("\n");
    }
    std::printf("# ranks %d step wall_ms best %.2f mean %.2f, cpu_ms per rank (max) best %.2f, "
                "all ranks best %.2f (elements per rank %lld)\n",
                world.size, best_ms, total_ms / steps, best_cpu_ms, best_cpu_sum_ms,
                static_cast<long long>(n * cols));
  }
  int failed = 0;
  if (check && world.root()) {
    std::printf("# step 0 loss and bias gradients vs the hand-written float64 reference: largest "
                "relative difference %.3g (tolerance 1e-5)\n", worst);
    failed = !(worst <= 1e-5);
    if (failed) std::fprintf(stderr, "error: gradients differ from the hand-written reference\n");
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return failed;
}
