// Dual<T, N, Tag> itself: construction, arithmetic with Duals and scalars, comparisons, traits,
// the strong-zero rule, and the compile-time rejection of mixed tags.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

#include <dualcast/dual.hpp>

namespace {

using dualcast::Dual;
using D2 = Dual<double, 2>;

struct TagA;
struct TagB;

// Operations that must exist or must not, as concepts (a requires-expression outside a
// template would be a hard error rather than false).
template <class A, class B>
concept addable = requires(A a, B b) { a + b; };
template <class A, class B>
concept multipliable = requires(A a, B b) { a * b; };
template <class A, class B>
concept comparable = requires(A a, B b) { a < b; a == b; };
template <class A, class B>
concept powable = requires(A a, B b) { dualcast::math::pow(a, b); };
template <class A, class B>
concept minable = requires(A a, B b) { dualcast::math::min(a, b); };
template <class From, class To>
concept converts = std::is_convertible_v<From, To>;

TEST_CASE("construction: constants, variables, explicit partials") {
  const D2 c = 3.5;
  CHECK(c.value() == 3.5);
  CHECK(c.partial(0) == 0.0);
  CHECK(c.partial(1) == 0.0);
  const D2 i = 2;  // int constants too
  CHECK(i.value() == 2.0);

  const D2 x = D2::variable(1.25, 1);
  CHECK(x.value() == 1.25);
  CHECK(x.partial(0) == 0.0);
  CHECK(x.partial(1) == 1.0);

  const D2 e(1.0, 0.5, -2.0);
  CHECK(e.partial(0) == 0.5);
  CHECK(e.partial(1) == -2.0);

  const D2 z;
  CHECK(z.value() == 0.0);
  CHECK(z.partial(1) == 0.0);
  CHECK(D2::constant(4.0).partial(0) == 0.0);

  static_assert(std::is_trivially_copyable_v<D2>);
  static_assert(sizeof(D2) == 3 * sizeof(double));
  static_assert(sizeof(Dual<Dual<double, 1, TagA>, 1, TagB>) == 4 * sizeof(double),
                "nesting adds no padding");
  static_assert(sizeof(Dual<float, 8>) == 9 * sizeof(float));
}

TEST_CASE("arithmetic: Dual with Dual") {
  const D2 x = D2::variable(3.0, 0);
  const D2 y = D2::variable(4.0, 1);
  const D2 s = x + y, d = x - y, p = x * y, q = x / y, n = -x, u = +x;
  CHECK(s.value() == 7.0);
  CHECK(s.partial(0) == 1.0);
  CHECK(s.partial(1) == 1.0);
  CHECK(d.value() == -1.0);
  CHECK(d.partial(1) == -1.0);
  CHECK(p.value() == 12.0);
  CHECK(p.partial(0) == 4.0);
  CHECK(p.partial(1) == 3.0);
  CHECK(q.value() == 0.75);
  CHECK(q.partial(0) == 0.25);
  CHECK(q.partial(1) == doctest::Approx(-3.0 / 16.0).epsilon(1e-15));
  CHECK(n.value() == -3.0);
  CHECK(n.partial(0) == -1.0);
  CHECK(u.partial(0) == 1.0);
}

TEST_CASE("arithmetic: Dual with scalars, int literals included") {
  const D2 x = D2::variable(2.0, 0);
  CHECK((x * 2).value() == 4.0);
  CHECK((x * 2).partial(0) == 2.0);
  CHECK((2 * x).partial(0) == 2.0);
  CHECK((x + 1).value() == 3.0);
  CHECK((1 + x).partial(0) == 1.0);
  CHECK((1 - x).value() == -1.0);
  CHECK((1 - x).partial(0) == -1.0);
  CHECK((x - 0.5).value() == 1.5);
  CHECK((x / 4).partial(0) == 0.25);
  CHECK((1 / x).value() == 0.5);
  CHECK((1 / x).partial(0) == -0.25);
  CHECK((x * 2.5f).partial(0) == 2.5);

  D2 a = x;
  a += 1;
  a *= x;       // (x + 1) x = 6, d = 2x + 1 = 5
  a -= 0.5;     // 5.5
  a /= 2;       // 2.75, d = 2.5
  CHECK(a.value() == 2.75);
  CHECK(a.partial(0) == 2.5);
  a += D2::variable(1.0, 1);
  CHECK(a.partial(1) == 1.0);

  // A constant converted to float Dual is rounded to float first: x * 0.1 == x * 0.1f.
  using F = Dual<float, 1>;
  const F xf = F::variable(3.0f, 0);
  CHECK((xf * 0.1).value() == 3.0f * 0.1f);
  CHECK((xf * 0.1).partial(0) == 0.1f);
}

TEST_CASE("arithmetic and comparisons are constexpr") {
  constexpr D2 c = D2::variable(2.0, 0) * 3 + D2::variable(1.0, 1) / 4 - 1;
  static_assert(c.value() == 5.25 && c.partial(0) == 3.0 && c.partial(1) == 0.25);
  static_assert(D2::variable(2.0, 0) > 1 && !(D2(1.0) < 1));
  CHECK(c.value() == 5.25);
}

TEST_CASE("comparisons look at values only") {
  const D2 x = D2::variable(1.0, 0);
  const D2 y(1.0, 7.0, 7.0);  // same value, different partials
  CHECK(x == y);
  CHECK_FALSE(x != y);
  CHECK(x <= y);
  CHECK(x >= y);
  CHECK_FALSE(x < y);
  CHECK(x == 1);
  CHECK(1 == x);
  CHECK(x != 2);
  CHECK(x < 1.5);
  CHECK(0 < x);
  CHECK(x > 0.5f);
  CHECK(2 >= x);
  const D2 nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_FALSE(nan == nan);
  CHECK(nan != nan);
  CHECK_FALSE(nan < 0);
  CHECK_FALSE(nan > 0);
}

TEST_CASE("comparisons with a constant convert it to the Dual's real type first") {
  // 0.1 rounds up to 0.1f (0.100000001490116...), so in double 0.1f > 0.1 is true while in
  // float it is false: a kernel (which rounds the constant to f32) and Dual<float> must agree.
  using F = Dual<float, 1>;
  const F x = F::variable(0.1f, 0);
  CHECK_FALSE(x > 0.1);
  CHECK_FALSE(0.1 < x);
  CHECK(x >= 0.1);
  CHECK(0.1 <= x);
  CHECK(x == 0.1);
  CHECK(0.1 == x);
  CHECK_FALSE(x != 0.1);
  CHECK_FALSE(0.1 != x);
  CHECK_FALSE(x < 0.1);
  CHECK(x <= 0.1);
  // 1/3 rounds down to float: 1/3.f < 1/3 in double, equal in float.
  const F third = F::variable(1.0f / 3.0f, 0);
  CHECK_FALSE(third < 1.0 / 3.0);
  CHECK(third == 1.0 / 3.0);
  CHECK_FALSE(1.0 / 3.0 > third);
  // 1e39 overflows to +inf in float: FLT_MAX compares below it either way, inf equals it.
  const F big = F::variable(std::numeric_limits<float>::max(), 0);
  CHECK(big < 1e39);
  CHECK(F(std::numeric_limits<float>::infinity()) == 1e39);
  // A double Dual keeps the double constant (no rounding to float of a float constant).
  const D2 xd = D2::variable(0.1, 0);
  CHECK(xd < 0.1f);
  CHECK(xd != 0.1f);
  // Nested: the innermost real type decides.
  using FF = Dual<Dual<float, 1>, 1>;
  const FF xx(0.1f);
  CHECK(xx == 0.1);
  CHECK_FALSE(xx > 0.1);
}

TEST_CASE("strong zeros: a zero lane stays zero whatever its coefficient") {
  using dualcast::math::sqrt;
  const D2 x(0.0, 1.0, 0.0);  // lane 1 does not depend on x
  const D2 r = sqrt(x);
  CHECK(r.value() == 0.0);
  CHECK(r.partial(0) == std::numeric_limits<double>::infinity());
  CHECK(r.partial(1) == 0.0);

  // inf * (lane 0) + value * (lane 1): no 0 * inf = NaN in the unrelated lane.
  const D2 big(std::numeric_limits<double>::infinity(), 0.0, 0.0);
  const D2 p = big * D2::variable(2.0, 1);
  CHECK(p.partial(0) == 0.0);
  CHECK(p.partial(1) == std::numeric_limits<double>::infinity());

  // Division by zero: untouched lanes stay 0, touched ones are honest.
  const D2 q = D2(1.0, 1.0, 0.0) / D2(0.0);
  CHECK(q.partial(0) == std::numeric_limits<double>::infinity());
  CHECK(q.partial(1) == 0.0);
}

TEST_CASE("division: a NaN quotient gives NaN partials (0/0, inf/inf, NaN/b), as kernels do") {
  constexpr double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // The limits of a/b at these points do not exist (or are NaN): docs/ops.md's "0/0, inf/inf:
  // NaN value and NaN partials". A lane that is exactly zero stays zero (strong zero).
  for (auto [a, b] : {std::pair{0.0, 0.0}, std::pair{-0.0, 0.0}, std::pair{inf, inf}, std::pair{-inf, inf},
                      std::pair{nan, 2.0}, std::pair{2.0, nan}}) {
    CAPTURE(a);
    CAPTURE(b);
    const D2 q = D2::variable(a, 0) / D2::variable(b, 1);
    CHECK(std::isnan(q.value()));
    CHECK(std::isnan(q.partial(0)));
    CHECK(std::isnan(q.partial(1)));
    // Dual / constant and constant / Dual.
    CHECK(std::isnan((D2::variable(a, 0) / b).partial(0)));
    CHECK(std::isnan((a / D2::variable(b, 1)).partial(1)));
    CHECK((D2(a, 0.0, 1.0) / b).partial(0) == 0.0);
    // Float: the same rule.
    using F = Dual<float, 1>;
    CHECK(std::isnan((F::variable(static_cast<float>(a), 0) / static_cast<float>(b)).partial(0)));
  }
  // Where the quotient is a number the partials are the plain ones: d/da (a/b) = 1/b,
  // d/db = -a/b^2, also at an infinite numerator (-inf/b^2) and an infinite denominator (0).
  const D2 q = D2::variable(3.0, 0) / D2::variable(4.0, 1);
  CHECK(q.partial(0) == 0.25);
  CHECK(q.partial(1) == -3.0 / 16.0);
  CHECK((D2::variable(inf, 0) / 2.0).partial(0) == 0.5);
  CHECK((1.0 / D2::variable(inf, 0)).partial(0) == 0.0);
}

TEST_CASE("traits and primal") {
  using Inner = Dual<double, 1, TagA>;
  using Outer = Dual<Inner, 3, TagB>;
  static_assert(dualcast::is_dual_v<Outer>);
  static_assert(!dualcast::is_dual_v<double>);
  static_assert(dualcast::dual_depth_v<double> == 0);
  static_assert(dualcast::dual_depth_v<Inner> == 1);
  static_assert(dualcast::dual_depth_v<Outer> == 2);
  static_assert(std::is_same_v<dualcast::scalar_type_t<Outer>, double>);
  static_assert(std::is_same_v<Outer::value_type, Inner>);
  static_assert(std::is_same_v<Outer::tag_type, TagB>);
  static_assert(Outer::lanes == 3);
  const Outer o(Inner(2.5));
  CHECK(dualcast::primal(o) == 2.5);
  CHECK(dualcast::primal(1.5) == 1.5);
}

TEST_CASE("printing") {
  std::ostringstream os;
  os << D2::variable(1.5, 1);
  CHECK(os.str() == "1.5 [0, 1]");
}

TEST_CASE("tags: Duals of different tags combine into one level per tag, never into one lane") {
  using A = Dual<double, 1, TagA>;
  using B = Dual<double, 1, TagB>;
  using U = Dual<double, 1>;  // untagged
  // Same type, constants and inner levels: the type is kept.
  static_assert(addable<A, A> && addable<A, double> && addable<int, A> && comparable<A, int>);
  static_assert(powable<A, A> && powable<A, int> && powable<float, A> && minable<A, double>);
  using AB = Dual<A, 1, TagB>;  // TagB on top of TagA: a nested differentiation
  using BA = Dual<B, 1, TagA>;  // the same two perturbations nested the other way round
  static_assert(addable<AB, A> && multipliable<A, AB> && comparable<AB, A> && powable<AB, A>);
  static_assert(std::is_same_v<decltype(std::declval<A>() * std::declval<AB>()), AB>);
  // Different tags at the same level: one level each, in one canonical order whatever the
  // order of the operands (TagB sorts after TagA, so it is the outer level).
  static_assert(std::is_same_v<decltype(std::declval<A>() + std::declval<B>()), AB>);
  static_assert(std::is_same_v<decltype(std::declval<B>() * std::declval<A>()), AB>);
  static_assert(std::is_same_v<decltype(dualcast::math::pow(std::declval<B>(), std::declval<A>())), AB>);
  static_assert(comparable<A, B> && minable<U, A> && addable<U, A>);
  // Conversions never lose a perturbation: into a type with all the levels (any order), yes.
  static_assert(converts<A, AB> && converts<B, AB> && converts<BA, AB> && converts<AB, BA>);
  static_assert(!converts<B, A> && !converts<U, A> && !converts<AB, A>);
  // Same tag with different lane counts, or different real types: rejected.
  static_assert(!addable<Dual<double, 1>, Dual<double, 2>>);
  static_assert(!addable<Dual<float, 1>, Dual<double, 1, TagA>>);
  static_assert(!addable<Dual<float, 1>, Dual<double, 1>>);
  static_assert(!addable<A, bool>);

  // x*y with x in TagA, y in TagB: d/dx = y, d/dy = x, d2/dxdy = 1, each in its own slot.
  const AB p = A::variable(2.0, 0) * B::variable(3.0, 0);
  CHECK(p.value().value() == 6.0);
  CHECK(p.value().partial(0) == 3.0);  // d/dx
  CHECK(p.partial(0).value() == 2.0);  // d/dy
  CHECK(p.partial(0).partial(0) == 1.0);
  // Re-nesting the other way round moves the slots, not the numbers.
  const BA q = p;
  CHECK(q.value().partial(0) == 2.0);  // d/dy, now inner
  CHECK(q.partial(0).value() == 3.0);  // d/dx, now outer
  CHECK(q.partial(0).partial(0) == 1.0);
}

}  // namespace
