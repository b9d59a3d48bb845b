// Bad-input catalogue, shapes and data: mismatch, rank above kMaxRank, size 0, NaN/Inf, aliasing.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "bad_inputs/bad_inputs.h"
#include "jit/codegen/kernel_abi.h"

namespace dualcast::bad_inputs {
namespace {

const Kernel& Cell() {
  static const Kernel k = kernel("cell", [](auto x, auto y) {
    using namespace dualcast::math;
    if (x > 0) return sqrt(x) * y;
    return x * y + 1;
  });
  return k;
}

TEST_CASE("broadcast shape mismatch: kShape naming kernel, sizes and dim; buffers untouched") {
  auto a = Array<double>::uniform({2, 3}, 1), b = Array<double>::uniform({4, 3}, 2);
  std::optional<Error> e = Catch([&] { broadcast(Cell(), a, b); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kShape);
  CHECK(Contains(e->what(), "cell"));
  CHECK(Contains(e->what(), "2"));
  CHECK(Contains(e->what(), "4"));

  // partials into caller memory: nothing written.
  Guarded<double> value({4, 3}), d0({4, 3}), d1({4, 3});
  PartialsOptions<double> o;
  o.value_out = {value.view};
  o.partial_out = {d0.view, d1.view};
  e = Catch([&] { partials(Cell(), {a, b}, o); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kShape);
  CHECK(value.untouched());
  CHECK(d0.untouched());
  CHECK(d1.untouched());

  // Gradient buffers of the wrong shape: nothing accumulated.
  Tape tape;
  auto c = Array<double>::uniform({4, 3}, 3);
  auto loss = sum(broadcast(Cell(), b, c));
  Guarded<double> gb({4, 3}), gc({3, 4});  // gc transposed: wrong
  e = Catch([&] { tape.accumulate_gradient(loss, {b, c}, {gb.view, gc.view}); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kShape);
  CHECK(gb.untouched());
  CHECK(gc.untouched());
}

TEST_CASE("rank above jit::kMaxRank after merging: kShape; buffers untouched") {
  // Alternating broadcast patterns leave no two neighbouring dims mergeable,
  // so kMaxRank + 1 result dims stay kMaxRank + 1 merged dims.
  const int rank = jit::kMaxRank + 1;
  Shape sa, sb, out;
  for (int d = 0; d < rank; ++d) {
    sa.push_back(d % 2 ? 1 : 2);
    sb.push_back(d % 2 ? 2 : 1);
    out.push_back(2);
  }
  auto a = Array<double>::uniform(sa, 1), b = Array<double>::uniform(sb, 2);
  Guarded<double> value(out), d0(out), d1(out);
  PartialsOptions<double> o;
  o.value_out = {value.view};
  o.partial_out = {d0.view, d1.view};
  std::optional<Error> e = Catch([&] { partials(Cell(), {a, b}, o); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kShape);
  CHECK(Contains(e->what(), "cell"));
  // The advice fits arrays that are contiguous already (they were told to "pass contiguous arrays").
  CHECK(Contains(e->what(), "broadcast along both or neither"));
  CHECK(Contains(e->what(), "their full shape"));
  CHECK(value.untouched());
  CHECK(d0.untouched());
  CHECK(d1.untouched());
  // The lazy path reports the same category when the result is computed.
  e = Catch([&] { broadcast(Cell(), a, b).eval(); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kShape);

  // The same rank that *can* merge (every input contiguous, same pattern) is fine.
  auto full = Array<double>::uniform(out, 3);
  CHECK(broadcast(Cell(), full, full).size() == (int64_t{1} << rank));
}

TEST_CASE("size-0 arrays are valid: empty results, zero gradients of the input shapes") {
  auto a = Array<double>::zeros({0, 3}), b = Array<double>::uniform({1, 3}, 1);
  Array<double> y = broadcast(Cell(), a, b);
  CHECK(y.shape() == Shape{0, 3});
  CHECK(y.to_vector().empty());
  Partials<double> p = partials(Cell(), {a, b});
  CHECK(p.value(0).shape() == Shape{0, 3});
  CHECK(p.d(0, 1).shape() == Shape{0, 3});
  CHECK(p.d(0, 1).to_vector().empty());
  Tape tape;
  Array<double> loss = sum(broadcast(Cell(), a, b));
  CHECK(loss.item() == 0.0);
  std::vector<Array<double>> g = tape.gradient(loss, {a, b});
  CHECK(g[0].shape() == Shape{0, 3});
  CHECK(g[1].shape() == Shape{1, 3});
  CHECK(g[1].to_vector() == std::vector<double>{0, 0, 0});
}

TEST_CASE("NaN and Inf inputs propagate like Dual<double>, never crash") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const std::vector<double> xs = {nan, inf, -inf, 0.0, -0.0, 4.0, nan, -2.0};
  const std::vector<double> ys = {1.0, 2.0, 3.0, inf, nan, -inf, nan, 0.5};
  auto x = Array<double>::from(xs, {8}), y = Array<double>::from(ys, {8});
  Partials<double> p = partials(Cell(), {x, y});
  std::vector<double> v = p.value(0).to_vector(), dx = p.d(0, 0).to_vector(),
                      dy = p.d(0, 1).to_vector();
  auto same = [](double got, double want) {
    return std::isnan(want) ? std::isnan(got) : got == want;
  };
  using D = Dual<double, 2>;
  for (size_t i = 0; i < xs.size(); ++i) {
    // The kernel's own lambda on Dual<double, 2>: the reference semantics.
    D r = [](D a, D b) {
      using namespace dualcast::math;
      if (a > 0) return sqrt(a) * b;
      return a * b + 1;
    }(D::variable(xs[i], 0), D::variable(ys[i], 1));
    CAPTURE(i);
    CHECK(same(v[i], r.value()));
    // Partials: Dual's strong zero keeps 0 * inf at 0, the jvp pass only
    // structural zeros (see tests/differential); compare where Dual is finite
    // and the lane is live, and require NaN/Inf to stay non-finite.
    if (std::isfinite(r.partial(0))) CHECK((same(dx[i], r.partial(0)) || !std::isfinite(dx[i])));
    else CHECK_FALSE(std::isfinite(dx[i]));
    if (std::isfinite(r.partial(1))) CHECK((same(dy[i], r.partial(1)) || !std::isfinite(dy[i])));
    else CHECK_FALSE(std::isfinite(dy[i]));
  }
  // The reverse sweep carries them too: the gradient of sum(cell(x, y)) is
  // the partials themselves. At x = NaN the comparison is false, so the else
  // branch's d/dx = y is finite; at (4, -inf), d/dy = sqrt(4).
  Tape tape;
  std::vector<Array<double>> g = tape.gradient(sum(broadcast(Cell(), x, y)), {x, y});
  std::vector<double> gx = g[0].to_vector(), gy = g[1].to_vector();
  for (size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(i);
    CHECK((same(gx[i], dx[i]) || (!std::isfinite(gx[i]) && !std::isfinite(dx[i]))));
    CHECK((same(gy[i], dy[i]) || (!std::isfinite(gy[i]) && !std::isfinite(dy[i]))));
  }
  CHECK(gx[0] == 1.0);
  CHECK(gy[5] == 2.0);
}

TEST_CASE("aliasing an output view with an input: kInvalidArgument; nothing written") {
  std::vector<double> shared(6);
  for (size_t i = 0; i < shared.size(); ++i) shared[i] = 0.5 + static_cast<double>(i);
  const std::vector<double> original = shared;
  auto x = Array<double>::view(shared.data(), {2, 3});
  auto y = Array<double>::uniform({2, 3}, 4);
  Guarded<double> d0({2, 3}), d1({2, 3});
  PartialsOptions<double> o;
  o.value_out = {x};  // the value would overwrite input 1 in place
  o.partial_out = {d0.view, d1.view};
  std::optional<Error> e = Catch([&] { partials(Cell(), {x, y}, o); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kInvalidArgument);
  CHECK(Contains(e->what(), "overlaps"));
  CHECK(shared == original);
  CHECK(d0.untouched());
  CHECK(d1.untouched());

  // A partial destination that overlaps an input only partly (shifted view).
  auto shifted = Array<double>::view(shared.data() + 1, {1, 3});
  auto x_row = Array<double>::view(shared.data(), {1, 3});
  Guarded<double> v({1, 3}), p1({1, 3});
  PartialsOptions<double> o2;
  o2.value_out = {v.view};
  o2.partial_out = {shifted, p1.view};
  e = Catch([&] { partials(Cell(), {x_row, Array<double>::uniform({1, 3}, 5)}, o2); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kInvalidArgument);
  CHECK(shared == original);
  CHECK(v.untouched());
  CHECK(p1.untouched());
}

// Found by the bad-input hunt: concat summed the lengths along the axis
// unchecked, so MAX + MAX + 4 wrapped to 2; the result was allocated for 2
// elements and the inputs written far past its end (a segfault). Two 2^62
// views wrapped negative instead, and the error named an internal kernel
// ("fill: argument 2 has a negative size") and a shape nobody passed.
TEST_CASE("concat whose length along the axis overflows int64: kShape naming concat, the shapes and the axis") {
  const int64_t max = std::numeric_limits<int64_t>::max();
  static double one = 1.0;  // static: the forked child reads it too
  std::optional<Error> e = CatchInChild([&] {
    auto a = Array<double>::view(&one, {max}, {0});  // one element, stride 0
    auto b = Array<double>::from({1, 2, 3, 4}, {4});
    concat({a, a, b});
  });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kShape);
  CHECK(Contains(e->what(), "concat"));
  CHECK(Contains(e->what(), "[9223372036854775807], [9223372036854775807], [4]"));
  CHECK(Contains(e->what(), "axis 0"));

  e = CatchInChild([&] {
    auto h = Array<double>::view(&one, {int64_t{1} << 62}, {0});
    concat({h, h});
  });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kShape);
  CHECK(Contains(e->what(), "concat"));
  CHECK(Contains(e->what(), "[4611686018427387904], [4611686018427387904]"));
  CHECK_FALSE(Contains(e->what(), "fill"));

  // The lengths fit but the element count does not (2^62 rows of 2), along a negative axis.
  auto rows = Array<double>::view(&one, {int64_t{1} << 61, 2}, {0, 0});
  e = Catch([&] { concat({rows, rows}, -2); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kShape);
  CHECK(Contains(e->what(), "concat"));
  CHECK(Contains(e->what(), "axis 0"));
  // stack, which joins along a new axis, is checked the same way.
  auto half = Array<double>::view(&one, {int64_t{1} << 62}, {0});
  e = Catch([&] { stack({half, half}); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kShape);
  CHECK(Contains(e->what(), "stack"));
  // Joins that fit are unchanged.
  auto x = Array<double>::from({1, 2}, {2});
  CHECK(concat({x, x}).to_vector() == std::vector<double>{1, 2, 1, 2});
}

// Found by the bad-input hunt: reshape multiplied the target sizes unchecked,
// so {3, 6148914691236517206} (2^64 + 2 elements) passed the size check of a
// 2-element array; the result read through wrapped offsets (and crashed).
TEST_CASE("reshape into a shape whose element count overflows int64: kShape, as NumPy") {
  const int64_t third = 6148914691236517206;  // 3 * third = 2^64 + 2
  auto x = Array<double>::from({1, 2}, {2});
  for (const Shape& target : {Shape{3, third}, Shape{-1, 3, third}, Shape{third, 3, -1}}) {
    CAPTURE(target.size());
    std::optional<Error> e = Catch([&] { x.reshape(target); });
    REQUIRE(e);
    CHECK(e->kind() == ErrorKind::kShape);
    CHECK(Contains(e->what(), "reshape"));
    CHECK(Contains(e->what(), "6148914691236517206"));
    CHECK(Contains(e->what(), "2^63"));
  }
  // Through a copy (a transposed array) too, and through dualcast::reshape.
  auto m = Array<double>::from({1, 2, 3, 4, 5, 6}, {2, 3}).transpose();
  std::optional<Error> e = Catch([&] { reshape(m, {int64_t{1} << 62, 4, 6}); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kShape);
  CHECK(x.reshape({2, 1}).shape() == Shape{2, 1});
}

// A shape whose nonzero sizes multiply past int64 is refused as NumPy refuses it ("array is
// too big"), as a shape error, even with a size-0 dim: zeros said "out of memory ... 2^63 bytes"
// for an array of 0 bytes. A shape that counts but whose bytes do not fit stays kMemory.
TEST_CASE("zeros of a shape whose nonzero sizes overflow int64: kShape naming the shape, size 0 or not") {
  for (const Shape& shape : {Shape{int64_t{1} << 62, 4, 0}, Shape{int64_t{1} << 62, 4, 1}}) {
    std::optional<Error> e = Catch([&] { Array<float>::zeros(shape); });
    REQUIRE(e);
    CHECK(e->kind() == ErrorKind::kShape);
    CHECK(Contains(e->what(), "[4611686018427387904, 4, "));
    CHECK(Contains(e->what(), "too big"));
    CHECK_FALSE(Contains(e->what(), "memory"));
  }
  std::optional<Error> e = Catch([&] { Array<double>::zeros({int64_t{1} << 61, 2}); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kMemory);
  CHECK(Array<float>::zeros({int64_t{1} << 40, 0}).size() == 0);
}

// NumPy: np.zeros((0, 3)).reshape(-1, 0) is a ValueError (any size fits the -1);
// dualcast gave shape (0, 0).
TEST_CASE("reshape with -1 and another size 0: the -1 cannot be inferred, kShape") {
  auto z = Array<double>::zeros({0, 3});
  std::optional<Error> e = Catch([&] { z.reshape({-1, 0}); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kShape);
  CHECK(Contains(e->what(), "[-1, 0]"));
  CHECK(Contains(e->what(), "-1 cannot be inferred"));
  e = Catch([&] { Array<double>::zeros({2, 3}).reshape({0, -1}); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kShape);
  // Without a -1, size-0 reshapes stay valid.
  CHECK(z.reshape({3, 0}).shape() == Shape{3, 0});
  CHECK(z.reshape({-1}).shape() == Shape{0});
}

// Found by the bad-input hunt: (3, 1) x (1, 1) x (1, THIRD) broadcast to
// 2^64 + 2 elements, counted as 2. Without a tape the allocation failed
// (kMemory); under a tape the one-pass plan, which never allocates the
// product, returned loss and gradient 2 (the true value is 3 * THIRD).
TEST_CASE("a broadcast whose element count overflows int64: kShape naming the kernel and every shape, on every path") {
  const int64_t third = 6148914691236517206;
  static double one = 1.0;
  auto a = Array<double>::view(&one, {3, 1}, {0, 0});
  auto c = Array<double>::view(&one, {1, third}, {0, 0});
  auto refused = [](const std::optional<Error>& e) {
    REQUIRE(e);
    CHECK(e->kind() == ErrorKind::kShape);
    CHECK(Contains(e->what(), "[3, 1]"));
    CHECK(Contains(e->what(), "[1, 6148914691236517206]"));
    CHECK(Contains(e->what(), "to shape [3, 6148914691236517206]"));
  };
  // Lazy: refused when the pending result is made (its size() said 2).
  refused(Catch([&] { broadcast(Cell(), a, c); }));
  std::optional<Error> e = Catch([&] { broadcast(Cell(), a, c); });
  REQUIRE(e);
  CHECK(Contains(e->what(), "cell"));
  // Eager, and through the operators.
  {
    Unfused eager;
    refused(Catch([&] { broadcast(Cell(), a, c); }));
  }
  refused(Catch([&] { sum(a * c).item(); }));
  // Under a tape: the gradient was 2.
  {
    Tape tape;
    auto b = Array<double>::from({1}, {1, 1});
    e = Catch([&] {
      auto loss = sum(a * b * c);
      tape.gradient(loss, {b});
    });
    REQUIRE(e);
    CHECK(e->kind() == ErrorKind::kShape);
    CHECK(Contains(e->what(), "[3, 6148914691236517206]"));
    e = Catch([&] { tape.value_and_gradient(sum(a * b * c), {b}); });
    REQUIRE(e);
    CHECK(e->kind() == ErrorKind::kShape);
  }
  // partials would write the wrapped count's buffers out of bounds: in a child.
  refused(CatchInChild([&] { partials(Cell(), {a, c}); }));
  // A broadcast whose count fits is unchanged.
  auto small = Array<double>::view(&one, {1, 4}, {0, 0});
  CHECK(broadcast(Cell(), a, small).shape() == Shape{3, 4});
}

// Found by the bad-input hunt: views were checked in elements, so a (2,) view
// with stride 2^61 (its last element 2^64 bytes past the pointer) was accepted.
TEST_CASE("a view whose byte extent passes the end of the address space: kShape") {
  double cell[2] = {1, 2};
  for (const auto& [shape, strides] : {std::pair{Shape{2}, Shape{int64_t{1} << 61}},
                                       std::pair{Shape{16}, Shape{int64_t{1} << 59}},
                                       std::pair{Shape{2, 2}, Shape{1, int64_t{1} << 60}}}) {
    CAPTURE(strides.back());
    std::optional<Error> e = Catch([&] { Array<double>::view(cell, shape, strides); });
    REQUIRE(e);
    CHECK(e->kind() == ErrorKind::kShape);
    CHECK(Contains(e->what(), "Array::view"));
    CHECK(Contains(e->what(), "address space"));
  }
  // float: 4-byte elements, so stride 2^61 is 2^63 bytes: still too far.
  float fcell[2] = {1, 2};
  CHECK(Catch([&] { Array<float>::view(fcell, {2}, {int64_t{1} << 61}); }).has_value());
  // Stride 0 addresses one element however many there are; a plain view is fine.
  CHECK(Array<double>::view(cell, {std::numeric_limits<int64_t>::max()}, {0}).size() ==
        std::numeric_limits<int64_t>::max());
  CHECK(Array<double>::view(cell, {2}).to_vector() == std::vector<double>{1, 2});
}

// reductions, concat, stack and argmax accept negative axes (NumPy), and so
// does np.transpose; dualcast's transpose refused them.
TEST_CASE("transpose accepts negative axes; one out of range is kShape naming it") {
  auto a = Array<double>::from({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(a.transpose({-1, 0}).shape() == Shape{3, 2});
  CHECK(a.transpose({-1, -2}).to_vector() == a.transpose().to_vector());
  CHECK(transpose(a, {1, -2}).to_vector() == std::vector<double>{1, 4, 2, 5, 3, 6});
  auto c = Array<double>::zeros({2, 3, 4});
  CHECK(c.transpose({-1, 0, -2}).shape() == Shape{4, 2, 3});
  std::optional<Error> e = Catch([&] { a.transpose({-3, 0}); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kShape);
  CHECK(Contains(e->what(), "axis -3"));
  CHECK(Contains(e->what(), "-2..1"));
  e = Catch([&] { a.transpose({-1, 1}); });  // both name axis 1
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kShape);
  CHECK(Contains(e->what(), "[-1, 1] is not a permutation"));
  e = Catch([&] { a.transpose({std::numeric_limits<int>::min(), 0}); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kShape);
  // The gradient flows back through a negative-axis transpose.
  Tape tape;
  auto x = Array<double>::from({1, 2, 3, 4, 5, 6}, {2, 3});
  auto w = Array<double>::from({1, 10, 100, 1000, 1e4, 1e5}, {3, 2});
  auto g = tape.gradient(sum(x.transpose({-1, -2}) * w), {x});
  CHECK(g[0].to_vector() == std::vector<double>{1, 100, 1e4, 10, 1000, 1e5});
}

}  // namespace
}  // namespace dualcast::bad_inputs
