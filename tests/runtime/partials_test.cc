// Tests of dualcast::partials: values and dy_m/dx_j against Dual<double>, wrt subsets, user views, errors, edge values.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <dualcast/dual.hpp>

#include "dualcast/array.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/partials.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "jit/error.h"
#include "jit/stats.h"

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

// A small plasticity-like law with two outputs and a branch.
auto Law = [](auto eps, auto ep, auto E) {
  using namespace dualcast::math;
  auto trial = E * (eps - ep);
  if (abs(trial) > 1) return std::tuple{copysign(1 + 0.1 * (abs(trial) - 1), trial), ep + 0.01 * trial};
  return std::tuple{trial, ep};
};

TEST_CASE("partials: every dy_m/dx_j of a branchy two-output kernel, one launch, against Dual") {
  Kernel law = kernel("law", Law);
  auto eps = Array<double>::uniform({4, 3}, 1, -2, 2);
  auto ep = Array<double>::uniform({3}, 2, -0.5, 0.5);
  auto E = Array<double>::uniform({4, 1}, 3, 0.5, 2);
  jit::ResetStats();
  Partials<double> p = partials(law, {eps, ep, E});
  CHECK(jit::GetStats().launches == 1);
  CHECK(p.num_outputs() == 2);
  std::vector<double> e = eps.to_vector(), q = ep.to_vector(), s = E.to_vector();
  using D = Dual<double, 3>;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) {
      auto [y0, y1] = Law(D::variable(e[i * 3 + j], 0), D::variable(q[j], 1), D::variable(s[i], 2));
      const D ys[2] = {y0, y1};
      for (int m = 0; m < 2; ++m) {
        CHECK(p.value(m).at({i, j}) == doctest::Approx(ys[m].value()).epsilon(1e-14));
        for (int k = 0; k < 3; ++k) {
          CHECK(p.d(m, k).at({i, j}) == doctest::Approx(ys[m].partial(k)).epsilon(1e-13));
        }
      }
    }
  }
}

TEST_CASE("partials: an untaken sqrt branch gives exactly 0, structural zeros, wrt subsets") {
  Kernel k = kernel("safe_sqrt", [](auto x, auto y) {
    using namespace dualcast::math;
    if (x > 0) return sqrt(x);
    return 0 * y + 0;
  });
  auto x = Array<float>::from({-1, 4, -0.0f, 9}, {4});
  auto y = Array<float>::ones({4});
  PartialsOptions<float> only_x;
  only_x.wrt = {0};
  only_x.values = false;
  Partials<float> p = partials(k, {x, y}, only_x);
  CHECK(p.d(0, 0).to_vector() == std::vector<float>{0, 0.25f, 0, 1.0f / 6});
  CHECK(MessageOf([&] { p.value(0); }, ErrorKind::kInvalidArgument) ==
        "safe_sqrt: values were not computed (PartialsOptions::values was false)");
  CHECK(MessageOf([&] { p.d(0, 1); }, ErrorKind::kInvalidArgument) ==
        "safe_sqrt: no partials with respect to argument position 1 were computed; add it to "
        "PartialsOptions::wrt");
  Kernel c = kernel("const_in_x", [](auto x, auto y) {
    if (x > 0) return y;
    return 2 * y;
  });
  Partials<float> q = partials(c, {x, y});
  CHECK(q.structurally_zero(0, 0));
  CHECK_FALSE(q.structurally_zero(0, 1));
  CHECK(q.d(0, 0).to_vector() == std::vector<float>{0, 0, 0, 0});
  CHECK(q.d(0, 1).to_vector() == std::vector<float>{2, 1, 2, 1});
}

// Kernels round a double constant to the input's type before comparing (x > 0.1 on f32 compares
// with 0.1f); Dual<float> must do the same, or the two take different branches at x = 0.1f.
template <class F>
void CheckSameBranchAsDualFloat(const char* name, F f) {
  CAPTURE(name);
  Kernel k = kernel(name, f);
  std::vector<float> xs;
  for (double c : {0.1, 1.0 / 3.0, 0.7, 1e-40, -2.2}) {
    const float r = static_cast<float>(c);
    for (float x : {r, std::nextafter(r, 1e30f), std::nextafter(r, -1e30f)}) xs.push_back(x);
  }
  auto x = Array<float>::from(xs, {static_cast<int64_t>(xs.size())});
  Partials<float> p = partials(k, {x});
  const std::vector<float> value = p.value(0).to_vector(), d = p.d(0, 0).to_vector();
  using F1 = Dual<float, 1>;
  for (size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(xs[i]);
    const F1 want = f(F1::variable(xs[i], 0));
    CHECK(value[i] == want.value());
    CHECK(d[i] == want.partial(0));
  }
}

TEST_CASE("partials: f32 kernels and Dual<float> take the same branch on a double constant") {
  // The constants of the cases (0.1, 1/3, 0.7, 1e-40, -2.2) are not floats; the points are
  // each constant rounded to float and its two neighbours.
  CheckSameBranchAsDualFloat("gt_tenth", [](auto x) {
    if (x > 0.1) return x * 2;
    return x * 0 + 5;
  });
  CheckSameBranchAsDualFloat("lt_const_first", [](auto x) {
    if (1.0 / 3.0 < x) return x * 3;
    if (x == 1.0 / 3.0) return x * 0 + 7;
    return x * 0 - 1;
  });
  CheckSameBranchAsDualFloat("le_ge_ne", [](auto x) {
    if (x <= 0.7 && x >= 0.7) return x * 4;
    if (x != 1e-40) return x * 0 + 2;
    return x * 5;
  });
  CheckSameBranchAsDualFloat("eq_negative", [](auto x) {
    if (-2.2 == x) return x * x;
    if (x >= -2.2) return x + 1;
    return x * 0;
  });
}

// Steps (derivative 0) and relu, compiled, against Dual: 0 at finite points and at +-inf, NaN
// at a NaN input (dual_math.hpp: "any f, NaN value: all lanes NaN").
template <class T, class F>
void CheckStepAgainstDual(const char* name, F f) {
  CAPTURE(name);
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const std::vector<T> xs = {-2.5, -0.0, 0, 0.5, 1.5, 3, inf, -inf, nan};
  Partials<T> p = partials(kernel(name, f), {Array<T>::from(xs, {static_cast<int64_t>(xs.size())})});
  const std::vector<T> d = p.d(0, 0).to_vector();
  for (size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(xs[i]);
    const T want = f(Dual<T, 1>::variable(xs[i], 0)).partial(0);
    // References by hand: relu' is 1 above 0; every other derivative here is 0; NaN in, NaN out.
    const T by_hand = std::isnan(xs[i]) ? nan : (std::string(name) == "relu" && xs[i] > 0 ? 1 : 0);
    CHECK((std::isnan(by_hand) ? std::isnan(want) : want == by_hand));
    CHECK((std::isnan(by_hand) ? std::isnan(d[i]) : d[i] == by_hand));
  }
}

TEST_CASE("partials: floor & co., sign and relu give NaN at a NaN input, 0 at +-inf, like Dual") {
  using namespace dualcast::math;
  auto all = [&]<class T>() {
    CheckStepAgainstDual<T>("floor", [](auto x) { return floor(x); });
    CheckStepAgainstDual<T>("ceil", [](auto x) { return ceil(x); });
    CheckStepAgainstDual<T>("round", [](auto x) { return round(x); });
    CheckStepAgainstDual<T>("trunc", [](auto x) { return trunc(x); });
    CheckStepAgainstDual<T>("rint", [](auto x) { return rint(x); });
    CheckStepAgainstDual<T>("nearbyint", [](auto x) { return nearbyint(x); });
    CheckStepAgainstDual<T>("sign", [](auto x) { return sign(x); });
    CheckStepAgainstDual<T>("relu", [](auto x) { return relu(x); });
  };
  all.template operator()<float>();
  all.template operator()<double>();
  // A scaled lane (not the seed) keeps the rule: d/dx relu(3x) is 3, 0 or NaN.
  Partials<double> p = partials(kernel("relu3", [](auto x) { return relu(3 * x); }),
                                {Array<double>::from({-1, 2, std::nan("")}, {3})});
  const std::vector<double> d = p.d(0, 0).to_vector();
  CHECK(d[0] == 0);
  CHECK(d[1] == 3);
  CHECK(std::isnan(d[2]));
}

TEST_CASE("partials: hypot where h overflows or is subnormal, compiled and on the tape") {
  // hypot's partials were 0 at an h that overflowed from finite arguments and lost digits at a
  // subnormal h. Reference: a / sqrt(a^2 + b^2) in long double.
  const std::vector<double> a{1.5e308, 1e308, 1e-310, 5e-324, 3.0}, b{1.5e308, -1.5e308, 3e-311, 5e-324, 4.0};
  Kernel hyp = kernel("hyp", [](auto x, auto y) { return dualcast::math::hypot(x, y); });
  const auto A = Array<double>::from(a, {5}), B = Array<double>::from(b, {5});
  Partials<double> p = partials(hyp, {A, B});
  std::vector<double> da = p.d(0, 0).to_vector(), db = p.d(0, 1).to_vector();
  Tape tape;
  const auto At = Array<double>::from(a, {5}), Bt = Array<double>::from(b, {5});
  const std::vector<Array<double>> g = tape.gradient(sum(hypot(At, Bt)), {At, Bt});
  for (size_t k = 0; k < a.size(); ++k) {
    CAPTURE(k);
    const long double h = std::sqrt(static_cast<long double>(a[k]) * a[k] + static_cast<long double>(b[k]) * b[k]);
    for (const auto& [got, want] : {std::pair{da[k], a[k] / h}, std::pair{db[k], b[k] / h},
                                    std::pair{g[0].to_vector()[k], a[k] / h}, std::pair{g[1].to_vector()[k], b[k] / h}}) {
      CHECK(std::abs(got - want) <= 2e-16L * std::abs(want));
    }
  }
  const std::vector<float> af{2e38f, 7e-45f}, bf{3e38f, 7e-45f};
  Partials<float> pf = partials(hyp, {Array<float>::from(af, {2}), Array<float>::from(bf, {2})});
  for (size_t k = 0; k < af.size(); ++k) {
    const long double h = std::sqrt(static_cast<long double>(af[k]) * af[k] + static_cast<long double>(bf[k]) * bf[k]);
    CHECK(std::abs(pf.d(0, 0).to_vector()[k] - af[k] / h) <= 2.4e-7L * (af[k] / h));
    CHECK(std::abs(pf.d(0, 1).to_vector()[k] - bf[k] / h) <= 2.4e-7L * (bf[k] / h));
  }
}

TEST_CASE("partials: lgamma' and tgamma' just below 0 are +inf and -inf, compiled (were NaN)") {
  // mpmath: psi(-1e-310) = 1.0e310, beyond double: +inf; tgamma' = tgamma psi = (-inf)(+inf).
  const double inf = std::numeric_limits<double>::infinity();
  const auto X = Array<double>::from({-5.5626846462680035e-309, -1e-310, -5e-324}, {3});
  Kernel lg = kernel("lg", [](auto x) { return dualcast::math::lgamma(x); });
  Kernel tg = kernel("tg", [](auto x) { return dualcast::math::tgamma(x); });
  CHECK(partials(lg, {X}).d(0, 0).to_vector() == std::vector<double>{inf, inf, inf});
  CHECK(partials(tg, {X}).d(0, 0).to_vector() == std::vector<double>{-inf, -inf, -inf});
}

TEST_CASE("partials into user views land in the user's buffer; errors leave it untouched") {
  Kernel k = kernel("prod", [](auto a, auto b) { return a * b; });
  const int n = 5;
  auto a = Array<double>::uniform({n}, 4, -1, 1);
  auto b = Array<double>::uniform({n}, 5, -1, 1);
  // Interleaved columns of an n x 4 table: value, d/da, d/db, untouched.
  std::vector<double> table(n * 4, -7.0);
  auto col = [&](int c) { return Array<double>::view(table.data() + c, {n}, {4}); };
  PartialsOptions<double> opts;
  opts.value_out = {col(0)};
  opts.partial_out = {col(1), col(2)};
  Partials<double> p = partials(k, {a, b}, opts);
  std::vector<double> as = a.to_vector(), bs = b.to_vector();
  for (int i = 0; i < n; ++i) {
    CHECK(table[i * 4 + 0] == as[i] * bs[i]);
    CHECK(table[i * 4 + 1] == bs[i]);
    CHECK(table[i * 4 + 2] == as[i]);
    CHECK(table[i * 4 + 3] == -7.0);
  }
  CHECK(p.d(0, 1).to_vector() == as);

  const std::vector<double> before = table;
  PartialsOptions<double> bad = opts;
  bad.partial_out[1] = Array<double>::view(table.data(), {n - 1}, {4});
  CHECK(MessageOf([&] { partials(k, {a, b}, bad); }, ErrorKind::kShape) ==
        "prod: partial_out[1] (d output 1 / d argument 2, position 1) has shape [4] but the broadcast result "
        "has shape [5]; pass an array (or view) of exactly that shape");
  CHECK(std::memcmp(before.data(), table.data(), table.size() * sizeof(double)) == 0);

  // A destination over an argument's memory (in place) is refused, nothing written.
  auto view_a = Array<double>::view(table.data(), {n}, {4});
  PartialsOptions<double> alias;
  alias.value_out = {col(0)};
  CHECK(MessageOf([&] { partials(k, {view_a, b}, alias); }, ErrorKind::kInvalidArgument) ==
        "prod: value_out[0] overlaps the memory of argument 1 (position 0); results cannot be "
        "written over the arguments (in place): pass a separate destination or copy() the "
        "argument");
  CHECK(std::memcmp(before.data(), table.data(), table.size() * sizeof(double)) == 0);
  // Interleaved with an argument's column is fine: no element is shared.
  alias.value_out = {col(3)};
  partials(k, {view_a, b}, alias);
  for (int i = 0; i < n; ++i) CHECK(table[i * 4 + 3] == table[i * 4] * bs[i]);
  PartialsOptions<double> out_of_range;
  out_of_range.wrt = {2};
  CHECK(MessageOf([&] { partials(k, {a, b}, out_of_range); }, ErrorKind::kInvalidArgument) ==
        "prod: wrt position 2 is out of range; the kernel was given 2 arguments (positions 0 to "
        "1)");
  // Destinations are named as passed: a partial over an argument, found by the overlap check.
  PartialsOptions<double> partial_alias;
  partial_alias.partial_out.resize(2);
  partial_alias.partial_out[1] = col(0);
  const std::vector<double> held = table;
  CHECK(MessageOf([&] { partials(k, {view_a, b}, partial_alias); }, ErrorKind::kInvalidArgument)
            .starts_with("prod: partial_out[1] (d output 1 / d argument 2, position 1) overlaps the memory of "
                         "argument 1 (position 0)"));
  CHECK(table == held);
}

}  // namespace
}  // namespace dualcast

namespace dualcast {
namespace {

TEST_CASE("interleaved columns of a table whose row stride is not a power of two") {
  // Inputs and outputs in the columns of one n x 6 table (48-byte rows): the
  // overlap test must work modulo 48, whichever column comes first in memory.
  Kernel k = kernel("prod6", [](auto a, auto b) { return a * b; });
  const int n = 7;
  std::vector<double> table(n * 6);
  for (int i = 0; i < n; ++i) {
    table[i * 6 + 3] = 0.25 * i - 1;  // a
    table[i * 6 + 4] = 1.5 - 0.5 * i;  // b
  }
  auto col = [&](int c) { return Array<double>::view(table.data() + c, {n}, {6}); };
  PartialsOptions<double> opts;
  opts.value_out = {col(0)};
  opts.partial_out = {col(1), col(5)};  // below and above the inputs in memory
  partials(k, {col(3), col(4)}, opts);
  for (int i = 0; i < n; ++i) {
    const double a = table[i * 6 + 3], b = table[i * 6 + 4];
    CHECK(table[i * 6 + 0] == a * b);
    CHECK(table[i * 6 + 1] == b);
    CHECK(table[i * 6 + 5] == a);
  }
}

}  // namespace
}  // namespace dualcast
