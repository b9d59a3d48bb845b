// Shared helpers of the tracer tests: input types, op counts, and traced IR + jvp checked against Dual.
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <dualcast/dual.hpp>

#include "jit/ir/interpret.h"
#include "jit/ir/ir.h"
#include "jit/ir/verify.h"
#include "jit/passes/jvp.h"

namespace dualcast::jit::trace_testing {

inline std::vector<Type> Types(Type t, size_t n) { return std::vector<Type>(n, t); }

inline int CountOps(const Function& f, Op op) {
  int n = 0;
  for (const Inst& inst : f.insts) n += inst.op == op;
  return n;
}

// Bitwise agreement, with NaN equal to NaN (a NaN partial is a documented answer, not noise).
inline bool Same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// Compares the traced IR and its jvp (both interpreted) with the lambda run on
// doubles and on Dual<double, N> at random points: the value and every partial,
// bit for bit (the IR and the Dual library share their formulas). Every fifth
// point is rounded to a quarter so that ties (x == y) on comparisons are hit.
template <size_t N, class F>
void CheckValuesAndPartials(const std::string& name, F f, const Function& traced, int trials = 300,
                            double lo = -2, double hi = 2) {
  REQUIRE(Verify(traced).ok());
  REQUIRE(traced.num_outputs() == 1);
  std::vector<int> wrt;
  for (size_t i = 0; i < N; ++i) wrt.push_back(static_cast<int>(i));
  JvpResult jvp = Jvp(traced, wrt);
  REQUIRE(Verify(jvp.function).ok());
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> dist(lo, hi);
  using D = Dual<double, static_cast<int>(N)>;
  for (int trial = 0; trial < trials; ++trial) {
    std::array<double, N> x;
    for (double& xi : x) xi = trial % 5 == 0 ? std::round(dist(rng) * 4) / 4 : dist(rng);
    std::array<D, N> dx;
    for (size_t i = 0; i < N; ++i) dx[i] = D::variable(x[i], static_cast<int>(i));
    const D expected = std::apply(f, dx);
    const std::vector<double> got = Interpret(jvp.function, std::span<const double>(x));
    CAPTURE(name);
    CAPTURE(x[0]);
    CAPTURE(x[N - 1]);
    CHECK(Same(got[0], expected.value()));
    for (size_t j = 0; j < N; ++j) {
      CHECK(Same(got[PartialIndex(1, N, 0, j)], expected.partial(static_cast<int>(j))));
    }
    CHECK(Same(Interpret(traced, std::span<const double>(x))[0], std::apply(f, x)));
  }
}

}  // namespace dualcast::jit::trace_testing
