// Tests of dc::kernel(name, f, TraceOptions) and dc::cond through broadcasts: limits reach the tracer, results match plain ifs.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "dualcast/array.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/kernel.hpp"
#include "jit/error.h"

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

}  // namespace
}  // namespace dualcast
