// The lean launch path's shortcuts against hand-written formulas: one-node groups used as is, per-thread launch plans, 1-element reductions.
#include <doctest/doctest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "dualcast/array.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/kernel.hpp"
#include "dualcast/array_ops.hpp"
#include "dualcast/error.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/partials.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"

namespace dualcast {
namespace {

Kernel TwoOut() {
  return kernel("lp_two", [](auto x, auto y) {
    using namespace dualcast::math;
    return std::tuple{x * y, exp(x) - y};
  });
}

TEST_CASE("1-element tape step with two outputs into the loss: gradients equal the formula") {
  // loss = x y + (e^x - y)  =>  d/dx = y + e^x, d/dy = x - 1 (two terms per leaf in the backward)
  for (double xv : {0.5, -1.25}) {
    const auto x = Array<double>::from({xv}, {1});
    const auto y = Array<double>::from({3.0}, {1});
    for (int rep = 0; rep < 3; ++rep) {  // repeats take the cached paths
      Tape tape;
      std::vector<Array<double>> o = broadcast_n(TwoOut(), x, y);
      auto loss = sum(o[0] + o[1]);
      auto g = tape.gradient(loss, {x, y});
      CHECK(loss.item() == doctest::Approx(xv * 3.0 + std::exp(xv) - 3.0).epsilon(1e-15));
      CHECK(g[0].item() == doctest::Approx(3.0 + std::exp(xv)).epsilon(1e-15));
      CHECK(g[1].item() == doctest::Approx(xv - 1.0).epsilon(1e-15));
    }
  }
}

TEST_CASE("a one-node group that reads a leaf twice, or is asked for its second output first") {
  const Kernel f = TwoOut();
  const auto x = Array<float>::from({0.25f, 2.0f}, {2});
  for (int rep = 0; rep < 3; ++rep) {
    // Leaf repeated: the group is composed (2 inputs folded into 1), not the node as is.
    std::vector<Array<float>> o = broadcast_n(f, x, x);
    const std::vector<float> second = o[1].to_vector();  // output 1 first, output 0 still held
    const std::vector<float> first = o[0].to_vector();
    for (size_t i = 0; i < 2; ++i) {
      const float v = x.to_vector()[i];
      CHECK(first[i] == doctest::Approx(v * v));
      CHECK(second[i] == doctest::Approx(std::exp(v) - v));
    }
    // Distinct leaves, output 1 requested first while output 0 is held.
    const auto y = Array<float>::from({-1.0f, 0.5f}, {2});
    std::vector<Array<float>> p = broadcast_n(f, x, y);
    const std::vector<float> p1 = p[1].to_vector(), p0 = p[0].to_vector();
    for (size_t i = 0; i < 2; ++i) {
      const float v = x.to_vector()[i], w = y.to_vector()[i];
      CHECK(p0[i] == doctest::Approx(v * w));
      CHECK(p1[i] == doctest::Approx(std::exp(v) - w));
    }
  }
}

TEST_CASE("repeated launches over other shapes and strides do not reuse another layout's plan") {
  const Kernel f = kernel("lp_axpy", [](auto a, auto b) { return a * 2 + b; });
  const auto m = Array<double>::from({1, 2, 3, 4, 5, 6}, {2, 3});
  const auto row = Array<double>::from({10, 20, 30}, {1, 3});
  const auto col = Array<double>::from({100, 200}, {2, 1});
  for (int rep = 0; rep < 3; ++rep) {
    CHECK(broadcast(f, m, row).to_vector() == std::vector<double>{12, 24, 36, 18, 30, 42});
    CHECK(broadcast(f, m, col).to_vector() == std::vector<double>{102, 104, 106, 208, 210, 212});
    CHECK(broadcast(f, m.transpose(), col.transpose()).to_vector() ==
          std::vector<double>{102, 208, 104, 210, 106, 212});
    CHECK(broadcast(f, m, m).to_vector() == std::vector<double>{3, 6, 9, 12, 15, 18});
  }
}

// Destinations ride the plans too (the sweep's strided copies and adds):
// keyed on their strides and on add-or-overwrite, and checked at every launch.
TEST_CASE("launches into destinations: other strides or add-instead-of-copy get their own plan; each is checked") {
  const Kernel f = kernel("lp_dest", [](auto a, auto b) { return a * b + a; });
  std::vector<double> xbuf = {1, 2, 3, 4, 5, 6};
  const auto x = Array<double>::view(xbuf.data(), {2, 3});
  const auto y = Array<double>::from({10, 20, 30, 40, 50, 60}, {2, 3});
  const std::vector<double> fxy = {11, 42, 93, 164, 255, 366};  // x y + x, row-major
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<double> row(6, -1), col(6, -1);
    partials(f, {x, y}, {.wrt = {0}, .value_out = {Array<double>::view(row.data(), {2, 3})}});
    partials(f, {x, y}, {.wrt = {0}, .value_out = {Array<double>::view(col.data(), {2, 3}, {1, 2})}});
    CHECK(row == fxy);
    CHECK(col == std::vector<double>{11, 164, 42, 255, 93, 366});  // column-major
    // Same shapes and strides as `row`, so the same plan: the checks still run.
    const std::vector<double> before = xbuf;
    CHECK_THROWS_WITH_AS(
        partials(f, {x, y}, {.wrt = {0}, .value_out = {Array<double>::view(xbuf.data(), {2, 3})}}),
        doctest::Contains("overlaps the memory of argument 1"), Error);
    const std::vector<double> frozen(6, 7);
    CHECK_THROWS_WITH_AS(
        partials(f, {x, y}, {.wrt = {0}, .value_out = {Array<double>::view(frozen.data(), {2, 3})}}),
        doctest::Contains("read-only view"), Error);
    CHECK(xbuf == before);
    CHECK(frozen == std::vector<double>(6, 7));
  }
  // accumulate_gradient adds a (2, 3) array into a (2, 3) destination; concat
  // copies one into its (2, 3) region of the result: one function, one
  // layout, add against overwrite.
  std::vector<double> g(6, 1);
  const auto piece = Array<double>::from({1, 2, 3, 4, 5, 6}, {2, 3});
  const auto tail = Array<double>::from({7, 8, 9}, {1, 3});
  for (int rep = 1; rep <= 3; ++rep) {
    {
      Tape tape;
      const auto w = Array<double>::from({1, 2, 3, 4, 5, 6}, {2, 3});
      tape.accumulate_gradient(sum(w * y), {w}, {Array<double>::view(g.data(), {2, 3})});
    }
    for (size_t k = 0; k < 6; ++k) CHECK(g[k] == 1 + rep * 10.0 * static_cast<double>(k + 1));
    CHECK(concat({piece, tail}).to_vector() == std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  }
}

}  // namespace
}  // namespace dualcast
