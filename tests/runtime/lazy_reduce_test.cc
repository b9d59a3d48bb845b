// Lazy sum/mean: fused into the kernel of their pending operand, checked against host float64 sums.
//
// Every case compares with a reference summed on the host from the inputs'
// values (no dualcast code involved), and the FusedReductionCounts hook shows
// which path ran: a fused sum of an operand nobody holds writes no operand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <thread>

#include "dualcast/array.hpp"
#include "dualcast/array_ops.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/kernel.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "jit/stats.h"
#include "runtime/lazy_reduce.h"

namespace dualcast {
namespace {

using detail::GetFusedReductionCounts;

const Kernel& Wave() {
  static const Kernel k = kernel("lr_wave", [](auto x, auto a) {
    using std::sin;
    return x * a + sin(x);
  });
  return k;
}

// Host sum over `axes` of the (d0, d1, d2) array v (row-major), kept dims 1.
std::vector<double> HostSum(const std::vector<double>& v, const Shape& shape, const std::vector<bool>& summed,
                            double scale) {
  Shape keep = shape;
  for (size_t d = 0; d < 3; ++d) keep[d] = summed[d] ? 1 : shape[d];
  std::vector<double> out(static_cast<size_t>(keep[0] * keep[1] * keep[2]), 0.0);
  for (int64_t i = 0; i < shape[0]; ++i) {
    for (int64_t j = 0; j < shape[1]; ++j) {
      for (int64_t k = 0; k < shape[2]; ++k) {
        const int64_t o = ((summed[0] ? 0 : i) * keep[1] + (summed[1] ? 0 : j)) * keep[2] + (summed[2] ? 0 : k);
        out[static_cast<size_t>(o)] += v[static_cast<size_t>((i * shape[1] + j) * shape[2] + k)];
      }
    }
  }
  for (double& x : out) x *= scale;
  return out;
}

void CheckClose(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t e = 0; e < got.size(); ++e) {
    CHECK(got[e] == doctest::Approx(want[e]).epsilon(1e-12).scale(1.0));
  }
}

TEST_CASE("lazy reduce: sum(x * y) is one fused kernel that never writes the product") {
  auto x = Array<double>::uniform({40, 30}, 1, -1, 1);
  auto y = Array<double>::uniform({40, 30}, 2, -1, 1);
  const std::vector<double> xv = x.to_vector(), yv = y.to_vector();
  double want = 0;
  for (size_t e = 0; e < xv.size(); ++e) want += xv[e] * yv[e];

  const auto before = GetFusedReductionCounts();
  const int64_t launches = jit::GetStats().launches;
  Array<double> s = sum(x * y);
  CHECK(s.is_pending());
  CHECK(s.item() == doctest::Approx(want).epsilon(1e-13));
  CHECK(jit::GetStats().launches == launches + 1);  // one kernel: the product and its sum
  const auto after = GetFusedReductionCounts();
  CHECK(after.fused == before.fused + 1);
  CHECK(after.operands_written == before.operands_written);  // the product was not stored
  CHECK(s.shape() == Shape{});
}

TEST_CASE("lazy reduce: a temporary operand read within its own statement is not written either") {
  // C++ keeps a temporary alive to the end of the full expression, so in
  // `sum(x * y).item()` the product still had a handle while item() ran the
  // kernel, and was stored. The reductions and operators release an
  // argument passed as a temporary (broadcast.hpp).
  auto x = Array<double>::uniform({24, 10}, 11, -1, 1);
  auto y = Array<double>::uniform({24, 1}, 12, -1, 1);
  const std::vector<double> xv = x.to_vector(), yv = y.to_vector();
  double total = 0, top = -INFINITY, clipped = 0;
  std::vector<double> row_max(24, -INFINITY), col_sum(10, 0.0);
  for (int r = 0; r < 24; ++r) {
    for (int c = 0; c < 10; ++c) {
      const double v = std::exp(xv[static_cast<size_t>(r * 10 + c)] * yv[static_cast<size_t>(r)]) + 1.0;
      total += v;
      top = std::max(top, v);
      row_max[static_cast<size_t>(r)] = std::max(row_max[static_cast<size_t>(r)], v);
      col_sum[static_cast<size_t>(c)] += v;
      clipped += std::min(std::max(v, 1.5), 2.0);
    }
  }
  auto unwritten = [](auto read) {
    const auto before = GetFusedReductionCounts();
    read();
    const auto after = GetFusedReductionCounts();
    CHECK(after.fused == before.fused + 1);
    CHECK(after.operands_written == before.operands_written);
  };
  unwritten([&] { CHECK(sum(exp(x * y) + 1.0).item() == doctest::Approx(total).epsilon(1e-13)); });
  unwritten([&] { CHECK(max(exp(x * y) + 1.0).item() == doctest::Approx(top).epsilon(1e-15)); });
  unwritten([&] { CheckClose(max(exp(x * y) + 1.0, {1}).to_vector(), row_max); });
  unwritten([&] { CheckClose(sum(exp(x * y) + 1.0, {0}).to_vector(), col_sum); });
  // clip's argument, a temporary too, is not stored either: the one-liner
  // needs no kernel beyond the one the same code over two statements built.
  auto kernels = [] {
    const jit::Stats st = jit::GetStats();
    return st.compiles + st.disk_hits;
  };
  Array<double> two_statements = sum(clip(exp(x * y) + 1.0, 1.5, 2.0));
  CHECK(two_statements.item() == doctest::Approx(clipped).epsilon(1e-13));
  const int64_t built = kernels();
  unwritten([&] {
    CHECK(sum(clip(exp(x * y) + 1.0, 1.5, 2.0)).item() == doctest::Approx(clipped).epsilon(1e-13));
  });
  CHECK(kernels() == built);
  // std::move of a named operand: the same, and its handle is left empty.
  Array<double> v = exp(x * y) + 1.0;
  unwritten([&] { CHECK(mean(std::move(v)).item() == doctest::Approx(total / 240).epsilon(1e-13)); });
  CHECK_FALSE(v.valid());  // NOLINT(bugprone-use-after-move): the documented moved-from state
  // A named operand passed as it is stays held, and is written.
  Array<double> held = exp(x * y) + 1.0;
  const auto before = GetFusedReductionCounts();
  CHECK(sum(held).item() == doctest::Approx(total).epsilon(1e-13));
  CHECK(GetFusedReductionCounts().operands_written == before.operands_written + 1);
  CHECK_FALSE(held.is_pending());
}

TEST_CASE("lazy reduce: a held operand is written by the same kernel") {
  auto x = Array<double>::uniform({16, 9}, 3, -1, 1);
  auto y = Array<double>::uniform({16, 1}, 4, -1, 1);
  Array<double> p = x * y;
  const auto before = GetFusedReductionCounts();
  Array<double> s = mean(p, {1}, /*keepdims=*/true);
  CHECK(s.shape() == Shape{16, 1});
  const std::vector<double> sv = s.to_vector();
  const auto after = GetFusedReductionCounts();
  CHECK(after.fused == before.fused + 1);
  CHECK(after.operands_written == before.operands_written + 1);
  CHECK_FALSE(p.is_pending());
  const std::vector<double> xv = x.to_vector(), yv = y.to_vector(), pv = p.to_vector();
  for (int r = 0; r < 16; ++r) {
    double row = 0;
    for (int c = 0; c < 9; ++c) {
      const double prod = xv[static_cast<size_t>(r * 9 + c)] * yv[static_cast<size_t>(r)];
      CHECK(pv[static_cast<size_t>(r * 9 + c)] == prod);
      row += prod;
    }
    CHECK(sv[static_cast<size_t>(r)] == doctest::Approx(row / 9).epsilon(1e-13));
  }
}

TEST_CASE("lazy reduce: every axes combination, keepdims or not, sum and mean, at each point of a chain") {
  const Shape shape = {5, 4, 3};
  auto x = Array<double>::uniform(shape, 5, -2, 2);
  auto a = Array<double>::uniform({1, 4, 1}, 6, -1, 1);
  auto b = Array<double>::uniform({5, 1, 3}, 7, -1, 1);
  const std::vector<double> xv = x.to_vector(), av = a.to_vector(), bv = b.to_vector();
  // Host values of the chain's three stages.
  std::vector<double> s1(xv.size()), s2(xv.size()), s3(xv.size());
  for (int64_t i = 0; i < 5; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      for (int64_t k = 0; k < 3; ++k) {
        const size_t e = static_cast<size_t>((i * 4 + j) * 3 + k);
        s1[e] = xv[e] * av[static_cast<size_t>(j)] + std::sin(xv[e]);
        s2[e] = s1[e] * bv[static_cast<size_t>(i * 3 + k)];
        s3[e] = s2[e] + xv[e];
      }
    }
  }
  for (int mask = 0; mask < 8; ++mask) {
    std::vector<int> axes;
    std::vector<bool> summed(3, false);
    int64_t count = 1;
    for (int d = 0; d < 3; ++d) {
      if (mask & (1 << d)) {
        axes.push_back(d - (mask == 5 ? 3 : 0));  // also negative axes
        summed[static_cast<size_t>(d)] = true;
        count *= shape[static_cast<size_t>(d)];
      }
    }
    for (bool keepdims : {false, true}) {
      for (bool is_mean : {false, true}) {
        for (int stage = 1; stage <= 3; ++stage) {
          CAPTURE(mask);
          CAPTURE(keepdims);
          CAPTURE(is_mean);
          CAPTURE(stage);
          // The chain continues after the reduced stage, which stays held.
          Array<double> t1 = broadcast(Wave(), x, a);
          Array<double> t2 = t1 * b;
          Array<double> t3 = t2 + x;
          const Array<double>& operand = stage == 1 ? t1 : stage == 2 ? t2 : t3;
          Array<double> r = is_mean ? mean(operand, axes, keepdims) : sum(operand, axes, keepdims);
          CHECK(r.is_pending());
          const std::vector<double>& ref = stage == 1 ? s1 : stage == 2 ? s2 : s3;
          CheckClose(r.to_vector(), HostSum(ref, shape, summed, is_mean ? 1.0 / count : 1.0));
          Shape want;
          for (int d = 0; d < 3; ++d) {
            if (!summed[static_cast<size_t>(d)]) want.push_back(shape[static_cast<size_t>(d)]);
            else if (keepdims) want.push_back(1);
          }
          CHECK(r.shape() == want);
          CheckClose(t3.to_vector(), s3);  // the rest of the chain is still right
        }
      }
    }
  }
}

TEST_CASE("lazy reduce: a reduction feeding a later broadcast cuts the group there") {
  auto x = Array<double>::uniform({12, 7}, 8, -1, 1);
  auto w = Array<double>::uniform({12, 7}, 9, -1, 1);
  const auto before = GetFusedReductionCounts();
  Array<double> rows = sum(x * x, {1}, true);  // (12, 1), pending
  Array<double> z = rows * w + x;              // reads the reduction: computed first
  CHECK(GetFusedReductionCounts().fused == before.fused + 1);
  CHECK(z.is_pending());
  const std::vector<double> xv = x.to_vector(), wv = w.to_vector(), zv = z.to_vector();
  for (int r = 0; r < 12; ++r) {
    double row = 0;
    for (int c = 0; c < 7; ++c) row += xv[static_cast<size_t>(r * 7 + c)] * xv[static_cast<size_t>(r * 7 + c)];
    for (int c = 0; c < 7; ++c) {
      const size_t e = static_cast<size_t>(r * 7 + c);
      CHECK(zv[e] == doctest::Approx(row * wv[e] + xv[e]).epsilon(1e-13));
    }
  }
}

TEST_CASE("lazy reduce: a reduction of a reduction, and of a computed array") {
  auto x = Array<double>::uniform({6, 5}, 10, -1, 1);
  const std::vector<double> xv = x.to_vector();
  double total = 0;
  for (double v : xv) total += 2 * v;
  Array<double> inner = sum(x * 2.0, {0});
  Array<double> outer = sum(inner);
  CHECK(outer.item() == doctest::Approx(total).epsilon(1e-13));
  CHECK(sum(x).item() == doctest::Approx(total / 2).epsilon(1e-13));  // not pending: computed at once
}

TEST_CASE("lazy reduce: under a kCache tape the sum is recorded and its gradient is right") {
  auto x = Array<double>::uniform({8, 6}, 11, -1, 1);
  auto a = Array<double>::uniform({8, 1}, 12, -1, 1);
  Tape tape(PartialsMode::kCache);
  Array<double> loss = mean(broadcast(Wave(), x, a));
  std::vector<Array<double>> g = tape.gradient(loss, {x, a});
  const std::vector<double> xv = x.to_vector(), av = a.to_vector(), gx = g[0].to_vector(), ga = g[1].to_vector();
  for (int r = 0; r < 8; ++r) {
    double row = 0;
    for (int c = 0; c < 6; ++c) {
      const size_t e = static_cast<size_t>(r * 6 + c);
      CHECK(gx[e] == doctest::Approx((av[static_cast<size_t>(r)] + std::cos(xv[e])) / 48).epsilon(1e-12));
      row += xv[e] / 48;
    }
    CHECK(ga[static_cast<size_t>(r)] == doctest::Approx(row).epsilon(1e-12));
  }
}

TEST_CASE("lazy reduce: threads reading one shared pending sum, and each its own, agree") {
  auto x = Array<double>::uniform({64, 48}, 13, -1, 1);
  auto a = Array<double>::uniform({64, 1}, 14, -1, 1);
  Array<double> shared = sum(broadcast(Wave(), x, a), {0});
  const std::vector<double> xv = x.to_vector(), av = a.to_vector();
  std::vector<double> want(48, 0.0);
  for (int r = 0; r < 64; ++r) {
    for (int c = 0; c < 48; ++c) {
      const double v = xv[static_cast<size_t>(r * 48 + c)];
      want[static_cast<size_t>(c)] += v * av[static_cast<size_t>(r)] + std::sin(v);
    }
  }
  std::vector<std::vector<double>> got_shared(8), got_own(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      got_own[t] = sum(broadcast(Wave(), x, a), {0}).to_vector();
      got_shared[t] = shared.to_vector();
    });
  }
  for (auto& th : threads) th.join();
  for (size_t t = 0; t < 8; ++t) {
    CheckClose(got_shared[t], want);
    CHECK(got_own[t] == got_shared[t]);  // same kernel, same sizes: bitwise
  }
}

}  // namespace
}  // namespace dualcast
