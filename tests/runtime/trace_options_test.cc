// Tests of dc::kernel(name, f, TraceOptions) and dc::cond through broadcasts: limits reach the tracer, results match plain ifs and do not depend on the vector width.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "dualcast/array.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/kernel.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "jit/error.h"
#include "jit/stats.h"

namespace dualcast {
namespace {

// Four sequential conditions, written with plain ifs and with dc::cond.
inline constexpr auto kPlain = [](auto x, auto y) {
  auto a = x;
  for (int i = 0; i < 4; ++i) {
    if (x > -0.5 + 0.3 * i) a = a * y;
    else a = a + y;
  }
  return a;
};
inline constexpr auto kCond = [](auto x, auto y) {
  auto a = x;
  for (int i = 0; i < 4; ++i) {
    a = cond(x > -0.5 + 0.3 * i, [&] { return a * y; }, [&] { return a + y; });
  }
  return a;
};

TEST_CASE("dc::kernel with TraceOptions: the path limit reaches the tracer and its error names dc::cond") {
  jit::TraceOptions options;
  options.max_paths = 8;  // the plain kernel has 16 paths
  Kernel plain = kernel("plain4", kPlain, options);
  try {
    (void)plain.function(2, jit::Type::kF32);
    FAIL("16 paths passed a limit of 8");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kTrace);
    const std::string what = e.what();
    CHECK(what.find("'plain4'") != std::string::npos);
    CHECK(what.find("more than 8 paths") != std::string::npos);
    CHECK(what.find("dc::cond") != std::string::npos);
  }
  Kernel with_cond = kernel("cond4", kCond, options);  // one run: no limit met
  CHECK_NOTHROW(with_cond.function(2, jit::Type::kF32));

  jit::TraceOptions bad;
  bad.vector_width = 6;
  try {
    (void)kernel("wide", kPlain, bad);
    FAIL("vector_width 6 was accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()).find("'wide'") != std::string::npos);
  }
}

TEST_CASE("plain ifs and dc::cond give the same broadcast results as the lambda on doubles") {
  auto x = Array<double>::uniform({7, 5}, 3, -1, 1);
  auto y = Array<double>::uniform({7, 5}, 4, 0.5, 1.5);
  std::vector<double> xs = x.to_vector(), ys = y.to_vector();
  std::vector<double> plain = broadcast(kernel("plain4", kPlain), x, y).to_vector();
  std::vector<double> with_cond = broadcast(kernel("cond4", kCond), x, y).to_vector();
  REQUIRE(plain.size() == xs.size());
  REQUIRE(with_cond.size() == xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    // Same operations in the same order; the tolerance only allows the
    // backend to contract a * y + y into one fma.
    const double expected = kPlain(xs[i], ys[i]);
    CHECK(kCond(xs[i], ys[i]) == expected);
    CHECK(plain[i] == doctest::Approx(expected).epsilon(1e-13));
    CHECK(with_cond[i] == doctest::Approx(expected).epsilon(1e-13));
  }
}

// Exact IEEE operations only (no libm call, whose vector variants differ per width), so every
// vector width must give the same bits.
inline constexpr auto kBranchy = [](auto x, auto y) {
  using namespace dualcast::math;
  auto r = x * y;
  if (x > y) r = r + x;
  else r = sqrt(x * x + y * y) - y;
  return r;
};

TEST_CASE("TraceOptions' vector width and fast-math are part of the kernel cache key") {
  auto x = Array<float>::uniform({3, 37}, 5, -2, 2);
  auto y = Array<float>::uniform({3, 37}, 6, -2, 2);
  auto built = [] {
    const jit::Stats s = jit::GetStats();
    return s.compiles + s.disk_hits;  // kernels produced, not served from the memory cache
  };
  // Same name, same lambda, same IR: only the options differ. Before they were in the key the
  // second and third broadcasts silently reused the first kernel's code.
  auto run = [&](jit::TraceOptions options) {
    const int64_t before = built();
    std::vector<float> out = broadcast(kernel("hinted", kBranchy, options), x, y).to_vector();
    CHECK_MESSAGE(built() == before + 1, "options ", options.vector_width, "/",
                  options.fast_math, " reused another kernel's code");
    return out;
  };
  jit::TraceOptions narrow, wide, fast;
  narrow.vector_width = 2;
  wide.vector_width = 16;
  fast.fast_math = true;
  const std::vector<float> base = run({}), two = run(narrow), sixteen = run(wide),
                           fast_out = run(fast);
  // The same options again: the memory cache answers.
  const int64_t before = built();
  (void)broadcast(kernel("hinted", kBranchy, narrow), x, y).to_vector();
  CHECK(built() == before);

  const std::vector<float> xs = x.to_vector(), ys = y.to_vector();
  REQUIRE(base.size() == xs.size());
  for (const auto* other : {&two, &sixteen, &fast_out}) {
    REQUIRE(other->size() == base.size());
    CHECK(std::memcmp(other->data(), base.data(), base.size() * sizeof(float)) == 0);
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    CHECK(base[i] == doctest::Approx(kBranchy(xs[i], ys[i])).epsilon(1e-6));
  }
}

// A long chain of dependent steps: the CPU backend runs several host vectors
// per step for it (jit/cpu/interleave.h).
inline constexpr auto kChain = [](auto x, auto y) {
  auto a = x;
  for (int i = 0; i < 60; ++i) a = a * 0.999 + y * 0.001;
  if (a > 0.25) a = tanh(a);
  else a = a * a;
  for (int i = 0; i < 20; ++i) a = a * 0.998 + 0.0005;
  return a;
};

TEST_CASE("a long chain interleaved gives the bits of a narrow kernel: transposed and broadcast inputs, gradients") {
  const auto base = Array<double>::uniform({37, 5}, 7, -1, 1);
  const auto x = base.transpose();                        // (5, 37), strided: gathered
  const auto y = Array<double>::uniform({5, 1}, 8, -1, 1);  // one value per row
  jit::TraceOptions narrow;
  narrow.vector_width = 2;
  struct Result {
    std::vector<double> value, dx, dy;
  };
  auto run = [&](const jit::TraceOptions& options) {
    Tape tape;
    const Array<double> out = broadcast(kernel("long_chain", kChain, options), x, y);
    out.eval();  // its own kernel (and the partials' next), not fused into a one-pass gradient
    const std::vector<Array<double>> g = tape.gradient(sum(out), {x, y});
    return Result{out.to_vector(), g[0].to_vector(), g[1].to_vector()};
  };
  const Result wide = run({}), two = run(narrow);
  CHECK(wide.value == two.value);  // bitwise: every lane computes the same operations
  CHECK(wide.dx == two.dx);
  CHECK(wide.dy == two.dy);
  // Against the lambda on doubles and central differences of it.
  const std::vector<double> xs = x.to_vector(), ys = y.to_vector();
  REQUIRE(wide.value.size() == xs.size());
  double dy_fd[5] = {};
  for (size_t i = 0; i < xs.size(); ++i) {
    const double yi = ys[i / 37], h = 1e-6;
    CHECK(wide.value[i] == doctest::Approx(kChain(xs[i], yi)).epsilon(1e-12));
    CHECK(wide.dx[i] == doctest::Approx((kChain(xs[i] + h, yi) - kChain(xs[i] - h, yi)) / (2 * h)).epsilon(1e-6));
    dy_fd[i / 37] += (kChain(xs[i], yi + h) - kChain(xs[i], yi - h)) / (2 * h);
  }
  for (int r = 0; r < 5; ++r) CHECK(wide.dy[r] == doctest::Approx(dy_fd[r]).epsilon(1e-6));
}

TEST_CASE("TraceOptions' vector width reaches the kernels a gradient and a fused sum compile") {
  auto x = Array<float>::uniform({3, 37}, 9, -2, 2);
  auto y = Array<float>::uniform({3, 37}, 10, -2, 2);
  auto built = [] {
    const jit::Stats s = jit::GetStats();
    return s.compiles + s.disk_hits;
  };
  jit::TraceOptions narrow;
  narrow.vector_width = 2;
  std::vector<float> grads[2], sums[2];
  for (int k = 0; k < 2; ++k) {
    // Same name, lambda and IR; only the options differ, so each one-pass
    // gradient and each fused sum is a kernel of its own (before, the second
    // of each reused the first's code: the width was dropped on the way).
    const Kernel kern = kernel("hinted_grad", kBranchy, k == 0 ? jit::TraceOptions{} : narrow);
    const int64_t before = built();
    {
      Tape tape;
      grads[k] = tape.gradient(sum(broadcast(kern, x, y)), {x})[0].to_vector();
    }
    CHECK_MESSAGE(built() > before, "options ", k, ": the gradient reused another kernel's code");
    const int64_t before_sum = built();
    sums[k] = sum(broadcast(kern, x, y), {1}).to_vector();
    CHECK_MESSAGE(built() > before_sum, "options ", k, ": the fused sum reused another kernel's code");
  }
  CHECK(grads[0] == grads[1]);  // elementwise partials: the same bits at any width
  REQUIRE(sums[0].size() == 3);
  const std::vector<float> xs = x.to_vector(), ys = y.to_vector();
  for (size_t r = 0; r < 3; ++r) {
    double want = 0;
    for (size_t c = 0; c < 37; ++c) want += kBranchy(double(xs[r * 37 + c]), double(ys[r * 37 + c]));
    CHECK(sums[1][r] == doctest::Approx(want).epsilon(1e-5));
  }
}

}  // namespace
}  // namespace dualcast
