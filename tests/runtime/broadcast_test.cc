// Tests of broadcast/broadcast_n: NumPy shape rules, views, rank 0..6, size-0, errors (exact text), Unfused.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "dualcast/array.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/dual.hpp"
#include "dualcast/kernel.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "jit/error.h"
#include "jit/stats.h"

// Math spelled out as dualcast::math::name, as many C++ codes write it (at
// global scope, as user code is): the same traced functions as the
// unqualified spelling after `using namespace`, and still libm's functions
// and Dual's rules when the lambda runs on numbers.
inline constexpr auto kQualifiedMath = [](auto x, auto y) {
  namespace m = dualcast::math;
  return m::sin(x) * m::pow(y, 2) + m::sigmoid(x) + m::fma(x, y, 1.0) + m::fabs(y) +
         m::select(m::isnan(x), 0.0, m::atan2(x, y)) + m::clamp(m::tanh(x), -0.5, 0.5);
};
inline constexpr auto kUnqualifiedMath = [](auto x, auto y) {
  using namespace dualcast::math;
  return sin(x) * pow(y, 2) + sigmoid(x) + fma(x, y, 1.0) + fabs(y) +
         select(isnan(x), 0.0, atan2(x, y)) + clamp(tanh(x), -0.5, 0.5);
};

namespace dualcast {
namespace {

std::string MessageOf(const std::function<void()>& f, ErrorKind kind) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.kind() == kind);
    return e.what();
  }
  FAIL("no dualcast::Error thrown");
  return "";
}

// The NumPy broadcast of `shapes` and, for every output element (row-major),
// the flat row-major index of the element each input reads.
struct RefLayout {
  Shape out;
  std::vector<std::vector<int64_t>> index;  // [input][output element]
};

RefLayout Layout(const std::vector<Shape>& shapes) {
  RefLayout r;
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  r.out.assign(rank, 1);
  for (const auto& s : shapes) {
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t& o = r.out[rank - s.size() + k];
      if (s[k] != 1) o = s[k];
    }
  }
  int64_t n = 1;
  for (int64_t d : r.out) n *= d;
  r.index.assign(shapes.size(), std::vector<int64_t>(n));
  for (int64_t flat = 0; flat < n; ++flat) {
    std::vector<int64_t> idx(rank);
    int64_t rest = flat;
    for (size_t d = rank; d-- > 0;) {
      idx[d] = rest % r.out[d];
      rest /= r.out[d];
    }
    for (size_t i = 0; i < shapes.size(); ++i) {
      const Shape& s = shapes[i];
      int64_t pos = 0;
      for (size_t k = 0; k < s.size(); ++k) {
        pos = pos * s[k] + (s[k] == 1 ? 0 : idx[rank - s.size() + k]);
      }
      r.index[i][flat] = pos;
    }
  }
  return r;
}

// A branchy three-argument kernel and its double reference.
auto Branchy = [](auto a, auto b, auto c) {
  using namespace dualcast::math;
  if (a > b) return a * b + c;
  return exp(a) - c * b;
};
double BranchyRef(double a, double b, double c) { return a > b ? a * b + c : std::exp(a) - c * b; }

template <class T>
void CheckAgainstReference(const std::vector<Array<T>>& args) {
  Kernel k = kernel("branchy", Branchy);
  std::vector<Shape> shapes;
  std::vector<std::vector<T>> data;
  for (const auto& a : args) {
    shapes.push_back(a.shape());
    data.push_back(a.to_vector());
  }
  RefLayout ref = Layout(shapes);
  Array<T> y = broadcast(k, args);
  CHECK(y.is_pending());
  CHECK(y.shape() == ref.out);
  std::vector<T> got = y.to_vector();
  REQUIRE(got.size() == ref.index[0].size());
  const double tol = sizeof(T) == 4 ? 1e-5 : 1e-13;
  for (size_t e = 0; e < got.size(); ++e) {
    double want = BranchyRef(data[0][ref.index[0][e]], data[1][ref.index[1][e]],
                             data[2][ref.index[2][e]]);
    CHECK(static_cast<double>(got[e]) == doctest::Approx(want).epsilon(tol));
  }
}

TEST_CASE_TEMPLATE("broadcast (5,1,7) x (1,3,1) x () and (n,1) x (n,n)", T, float, double) {
  CheckAgainstReference<T>({Array<T>::uniform({5, 1, 7}, 1, -1, 1),
                            Array<T>::uniform({1, 3, 1}, 2, -1, 1), Array<T>::scalar(T(0.25))});
  CheckAgainstReference<T>({Array<T>::uniform({6, 1}, 3, -1, 1), Array<T>::uniform({6, 6}, 4, -1, 1),
                            Array<T>::uniform({6, 6}, 5, -1, 1)});
  // Rank 0 only.
  CheckAgainstReference<T>({Array<T>::scalar(T(0.5)), Array<T>::scalar(T(-1)),
                            Array<T>::scalar(T(2))});
}

TEST_CASE("broadcast over ranks 1 to 6 with size-1 dims in random places") {
  uint64_t seed = 11;
  for (int rank = 1; rank <= 6; ++rank) {
    for (int trial = 0; trial < 3; ++trial) {
      Shape full(rank);
      for (int d = 0; d < rank; ++d) full[d] = 1 + static_cast<int64_t>((seed * 7 + d * 3) % 3) + 1;
      std::vector<Array<double>> args;
      for (int i = 0; i < 3; ++i) {
        Shape s = full;
        for (int d = 0; d < rank; ++d) {
          if ((seed >> (d + 3 * i)) & 1) s[d] = 1;
        }
        // Drop leading dims of some arguments (right alignment).
        s.erase(s.begin(), s.begin() + static_cast<long>((seed >> (i + 20)) % (rank + 1) / 2));
        args.push_back(Array<double>::uniform(s, seed + i, -1, 1));
      }
      CheckAgainstReference<double>(args);
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    }
  }
}

TEST_CASE("broadcast reads transposed and strided views in place") {
  std::vector<double> buf(4 * 6);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = std::sin(static_cast<double>(i));
  auto transposed = Array<double>::view(buf.data(), {6, 4}, {1, 6});   // (4,6) transposed
  auto every_other = Array<double>::view(buf.data() + 1, {3, 4}, {8, 2});  // strided rows/cols
  auto column = Array<double>::view(buf.data(), {6, 1}, {4, 1});
  CheckAgainstReference<double>({transposed, Array<double>::uniform({4}, 9, -1, 1), column});
  CheckAgainstReference<double>({every_other, Array<double>::scalar(0.1), every_other});
  CheckAgainstReference<float>({Array<float>::uniform({4, 5}, 3, -1, 1).transpose(),
                                Array<float>::uniform({5, 1}, 4, -1, 1),
                                Array<float>::uniform({5, 4}, 5, -1, 1)});
}

// Larger than the launcher's 64 x 64 tiles (jit/cpu/launch.h), sizes off the
// tile, so the kernel runs per tile with moved pointers and cut rows.
TEST_CASE_TEMPLATE("broadcast reads transposed views larger than a tile", T, float, double) {
  const Array<T> base = Array<T>::uniform({203, 150}, 6, -1, 1);
  CheckAgainstReference<T>({base.transpose(), Array<T>::uniform({150, 1}, 7, -1, 1),
                            Array<T>::uniform({150, 203}, 8, -1, 1)});
  CheckAgainstReference<T>({Array<T>::uniform({150, 203}, 9, -1, 1), base.transpose(),
                            Array<T>::uniform({203}, 10, -1, 1)});
}

TEST_CASE("size-0 dimensions give empty results and launch nothing") {
  Kernel k = kernel("branchy", Branchy);
  auto a = Array<float>::zeros({0, 3});
  auto b = Array<float>::ones({1, 3});
  jit::ResetStats();
  Array<float> y = broadcast(k, a, b, 1.0f);
  CHECK(y.shape() == Shape{0, 3});
  CHECK(y.to_vector().empty());
  Array<float> z = broadcast(k, Array<float>::zeros({5, 0}), Array<float>::ones({1}), 2.0f);
  CHECK(z.shape() == Shape{5, 0});
  CHECK(z.to_vector().empty());
  CHECK(jit::GetStats().launches == 0);
}

TEST_CASE("broadcast_n returns one array per output; numbers are rank-0 constants") {
  Kernel k = kernel("sincos", [](auto x, auto s) {
    using namespace dualcast::math;
    return std::tuple{sin(x) * s, cos(x) * s};
  });
  auto x = Array<double>::uniform({3, 2}, 1, -2, 2);
  std::vector<Array<double>> outs = broadcast_n(k, x, 2.0);
  REQUIRE(outs.size() == 2);
  std::vector<double> xs = x.to_vector(), s = outs[0].to_vector(), c = outs[1].to_vector();
  for (size_t i = 0; i < xs.size(); ++i) {
    CHECK(s[i] == doctest::Approx(2 * std::sin(xs[i])).epsilon(1e-14));
    CHECK(c[i] == doctest::Approx(2 * std::cos(xs[i])).epsilon(1e-14));
  }
  CHECK(MessageOf([&] { broadcast(k, x, 2.0); }, ErrorKind::kArity) ==
        "sincos: the kernel returns 2 outputs; use broadcast_n to get one array per output");
}

TEST_CASE("compiled kernels keep a -NaN constant's sign and round an int64 number to float once") {
  // signbit(V(-NaN)) gave 0 in a kernel (1 on double: docs/ops.md), and 2^60 + 2^36 + 1
  // reached float32 through double: 2^60, where C++ float + long long gives 2^60 + 2^37
  // (float's ulp at 2^60 is 2^37 and the number is past the midpoint; in double it is the tie).
  Kernel sign = kernel("neg_nan", [](auto x) {
    using namespace dualcast::math;
    using V = decltype(x);
    const V minus_nan = V(-std::numeric_limits<double>::quiet_NaN());
    return std::tuple{select(x > 0, minus_nan, x), select(signbit(minus_nan), V(1), V(0)) + x * 0};
  });
  std::vector<Array<double>> d = broadcast_n(sign, Array<double>::ones({2}));
  std::vector<Array<float>> f = broadcast_n(sign, Array<float>::ones({2}));
  for (double v : d[0].to_vector()) CHECK((std::isnan(v) && std::signbit(v)));
  for (float v : f[0].to_vector()) CHECK((std::isnan(v) && std::signbit(v)));
  CHECK(d[1].to_vector() == std::vector<double>{1, 1});
  CHECK(f[1].to_vector() == std::vector<float>{1, 1});

  static constexpr long long L = (1LL << 60) + (1LL << 36) + 1;
  const float once = 0x1p60f + 0x1p37f;
  REQUIRE(0.0f + L == once);
  const std::vector<float> want{once, once};
  auto z = Array<float>::zeros({2});
  CHECK(broadcast(kernel("lit_i64", [](auto x) { return x + L; }), z).to_vector() == want);
  CHECK(broadcast(kernel("add", [](auto x, auto n) { return x + n; }), z, L).to_vector() == want);
  CHECK((z + L).to_vector() == want);
  CHECK((Array<double>::zeros({1}) + L).item() == 0x1p60 + 0x1p36);  // double: its own one rounding
}

TEST_CASE("dualcast::math::sin(x) spelled out in a kernel traces as unqualified sin(x) does") {
  Kernel q = kernel("qualified", kQualifiedMath), u = kernel("unqualified", kUnqualifiedMath);
  const std::vector<double> xs = {0.3, -1.2, 2.5, 0.0}, ys = {1.5, 0.7, -2.0, -0.25};
  auto x = Array<double>::from(xs, {4}), y = Array<double>::from(ys, {4});
  const std::vector<double> a = broadcast(q, x, y).to_vector(), b = broadcast(u, x, y).to_vector();
  Tape tape;
  std::vector<Array<double>> g = tape.gradient(sum(broadcast(q, x, y)), {x, y});
  const std::vector<double> gx = g[0].to_vector(), gy = g[1].to_vector();
  for (size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(i);
    CHECK(a[i] == b[i]);  // one IR, one kernel's arithmetic
    // The same lambda on numbers (libm) and on Duals (the derivative rules).
    CHECK(a[i] == doctest::Approx(kQualifiedMath(xs[i], ys[i])).epsilon(1e-14));
    using D = Dual<double, 2>;
    const D r = kQualifiedMath(D::variable(xs[i], 0), D::variable(ys[i], 1));
    CHECK(gx[i] == doctest::Approx(r.partial(0)).epsilon(1e-13));
    CHECK(gy[i] == doctest::Approx(r.partial(1)).epsilon(1e-13));
  }
}

TEST_CASE("broadcast errors name the kernel, arguments, sizes and dimension; nothing is pending") {
  Kernel cell = kernel("hmlstm_cell", [](auto z, auto zb, auto c, auto f, auto i, auto g) {
    using namespace dualcast::math;
    if (z == 1) return sigmoid(i) * tanh(g);
    if (zb == 0) return c;
    return sigmoid(f) * c + sigmoid(i) * tanh(g);
  });
  auto m24 = Array<float>::zeros({2, 4});
  auto m23 = Array<float>::zeros({2, 3});
  auto m21 = Array<float>::zeros({2, 1});
  CHECK(MessageOf([&] { broadcast(cell, m21, m21, m24, m24, m23, m24); }, ErrorKind::kShape) ==
        "hmlstm_cell: argument 3 has size 4 and argument 5 has size 3 at dimension 1 (shapes "
        "[2, 4] and [2, 3]); sizes must match or one must be 1");
  CHECK(MessageOf([&] { broadcast(cell, m24, m24); }, ErrorKind::kArity) ==
        "kernel 'hmlstm_cell' cannot be called with 2 arguments; it takes 6 arguments");
  auto d24 = Array<double>::zeros({2, 4});
  CHECK(MessageOf([&] { broadcast(cell, m24, m24, m24, d24, m24, m24); }, ErrorKind::kType) ==
        "hmlstm_cell: argument 4 is float64 but argument 1 is float32; all array arguments of a "
        "broadcast must have one element type");
  CHECK(MessageOf([&] { broadcast(cell, 1.0, m24, Array<float>(), m24, m24, m24); },
                  ErrorKind::kInvalidArgument) ==
        "hmlstm_cell: argument 3 is an empty Array handle (default-constructed); pass an array");
  // Rank 9 with alternating broadcast bits cannot be merged below the kernel limit.
  Kernel add = kernel("add2", [](auto a, auto b) { return a + b; });
  auto p = Array<double>::zeros({2, 1, 2, 1, 2, 1, 2, 1, 2});
  auto q = Array<double>::zeros({1, 2, 1, 2, 1, 2, 1, 2, 1});
  std::string msg = MessageOf([&] { broadcast(add, p, q); }, ErrorKind::kShape);
  CHECK(msg.find("add2: the broadcast has rank 9 after merging") == 0);
}

TEST_CASE("Unfused computes every broadcast at once, one launch each") {
  Kernel k = kernel("axpy", [](auto a, auto x, auto y) { return a * x + y; });
  auto x = Array<double>::uniform({4, 4}, 1);
  auto y = Array<double>::uniform({4}, 2);
  jit::ResetStats();
  {
    Unfused unfused;
    CHECK(Unfused::active());
    Array<double> r = broadcast(k, 2.0, x, y);
    CHECK_FALSE(r.is_pending());
    Array<double> s = broadcast(k, 3.0, r, y);
    CHECK_FALSE(s.is_pending());
    CHECK(jit::GetStats().launches == 2);
    std::vector<double> xs = x.to_vector(), ys = y.to_vector(), ss = s.to_vector();
    for (size_t i = 0; i < 16; ++i) {
      CHECK(ss[i] == doctest::Approx(3 * (2 * xs[i] + ys[i % 4]) + ys[i % 4]).epsilon(1e-15));
    }
  }
  CHECK_FALSE(Unfused::active());
  CHECK(broadcast(k, 2.0, x, y).is_pending());
}

}  // namespace
}  // namespace dualcast
