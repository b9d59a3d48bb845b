// Arrays written in place after a tape recorded them: an Error that says so, never a gradient of other values.
//
// Each case wrote silently wrong gradients before runtime/in_place.h: the
// sweep read overwritten arguments (recompute mode), an overwritten argument
// kept as a cached partial (d(x*b)/dx is b itself), or credited an array to
// the node that had computed it although a destination write (partials'
// value_out) or a write through a view had replaced its values; or cut the
// path through an array written after a node had read it. Expected values
// are hand-written derivatives at the recorded inputs.
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "dualcast/dualcast.hpp"
#include "runtime/error_text.h"

namespace dualcast {
namespace {

using D = Array<double>;

const Kernel& Mul() {
  static const Kernel k = kernel("mul", [](auto x, auto y) { return x * y; });
  return k;
}
const Kernel& Affine() {  // d/dx = y + 1: a private partial, not an argument
  static const Kernel k = kernel("affine", [](auto x, auto y) { return x * y + x; });
  return k;
}
const Kernel& Square() {
  static const Kernel k = kernel("square", [](auto x) { return x * x; });
  return k;
}

std::string ErrorOf(const std::function<void()>& fn) { return test::ErrorOf(fn, "(no error)"); }
using test::Has;

TEST_CASE("recompute mode: an argument assigned after the forward pass is an Error naming it") {
  D x = D::from({1, 2}, {2}), b = D::from({3, 4}, {2});
  Tape tape(PartialsMode::kRecompute);
  D loss = sum(broadcast(Mul(), x, b));
  loss.eval();  // the forward pass is over
  x.assign({10, 20});
  const std::string m = ErrorOf([&] { tape.gradient(loss, {b}); });
  MESSAGE(m);
  CHECK(Has(m, "argument 1 of 'mul' (an array of shape [2]) was written in place"));
  CHECK(Has(m, "Write into a copy() instead"));
}

TEST_CASE("an argument that is itself a partial (d(x*b)/dx = b), assigned later: kCache refuses, kAuto keeps a copy") {
  // x * b is cheap: kAuto records it to recompute (runtime/auto_partials.h),
  // and the write has it keep a copy of the old b first; kCache kept b itself.
  for (const PartialsMode mode : {PartialsMode::kCache, PartialsMode::kAuto}) {
    CAPTURE(static_cast<int>(mode));
    D x = D::from({1, 2}, {2}), b = D::from({3, 4}, {2});
    Tape tape(mode);
    D y = broadcast(Mul(), x, b);
    y.eval();
    D loss = sum(y * D::from({1, 1}, {2}));
    b.assign({30, 40});
    if (mode == PartialsMode::kAuto) {
      CHECK(tape.gradient(loss, {x})[0].to_vector() == std::vector<double>{3, 4});
      continue;
    }
    const std::string m = ErrorOf([&] { tape.gradient(loss, {x}); });
    MESSAGE(m);
    CHECK(Has(m, "kept as a partial derivative"));
    CHECK(Has(m, "written in place"));
  }
}

TEST_CASE("cached partials the kernel owns: an argument assigned later changes nothing, no Error") {
  D x = D::from({1, 2}, {2}), b = D::from({3, 4}, {2});
  Tape tape(PartialsMode::kCache);
  D y = broadcast(Affine(), x, b);
  y.eval();
  D loss = sum(y * D::from({1, 1}, {2}));
  b.assign({30, 40});  // d y / d x = b + 1 was cached at b = (3, 4)
  CHECK(tape.gradient(loss, {x})[0].to_vector() == std::vector<double>{4, 5});
}

TEST_CASE("writes before the forward pass are fine: the gradient is at the written values") {
  D x = D::from({1, 2}, {2}), b = D::from({3, 4}, {2});
  x.assign({5, 6});
  double* p = b.mutable_data();
  p[0] = 7;
  Tape tape(PartialsMode::kRecompute);
  D loss = sum(broadcast(Mul(), x, b));
  loss.eval();
  const std::vector<D> g = tape.gradient(loss, {x, b});
  CHECK(g[0].to_vector() == std::vector<double>{7, 4});  // d/dx = b
  CHECK(g[1].to_vector() == std::vector<double>{5, 6});  // d/db = x
}

TEST_CASE("a taped result overwritten as partials' value_out is a leaf from then on, computed from the new inputs") {
  D a = D::from({1, 2}, {2}), c = D::from({5, 6}, {2});
  Tape tape;
  D d = broadcast(Affine(), a, a);
  d.eval();
  PartialsOptions<double> o;
  o.value_out = {d};
  partials(Square(), {c}, o);  // d = c * c now; partials() is not recorded
  CHECK(d.to_vector() == std::vector<double>{25, 36});
  D loss = sum(d * D::from({1, 1}, {2}));
  // The loss no longer depends on a: zeros when asked for, never affine's gradient.
  CHECK(tape.gradient(loss, {a}, {.allow_unused = true})[0].to_vector() == std::vector<double>{0, 0});
  // It depends on c, through an untaped computation: an Error, not zeros.
  const std::string m = ErrorOf([&] { tape.gradient(loss, {c}, {.allow_unused = true}); });
  MESSAGE(m);
  CHECK(Has(m, "computed by 'square'"));
}

TEST_CASE("partials() results are computed from its inputs: a tape refuses a gradient through them") {
  D c = D::from({5, 6}, {2});
  Partials<double> p = partials(Square(), {c});
  Tape tape;
  D loss = sum(p.value(0) * D::from({1, 1}, {2}) + p.d(0, 0));
  const std::string m = ErrorOf([&] { tape.gradient(loss, {c}, {.allow_unused = true}); });
  MESSAGE(m);
  CHECK(Has(m, "computed by 'square'"));
}

TEST_CASE("a taped result written through a view of its memory: the sweep refuses to credit it to its node") {
  D x = D::from({1, 2, 3, 4}, {2, 2}), b = D::from({3, 4, 5, 6}, {2, 2});
  Tape tape;
  D y = broadcast(Affine(), x, b);
  y.eval();
  D flat = y.reshape({4});  // a view of y's memory
  REQUIRE(flat.data() == y.data());  // shares y's storage
  flat.assign({0, 0, 0, 0});
  D loss = sum(y * D::from({1, 1, 1, 1}, {2, 2}));
  const std::string m = ErrorOf([&] { tape.gradient(loss, {x}); });
  MESSAGE(m);
  CHECK(Has(m, "computed by 'affine'"));
  CHECK(Has(m, "written in place"));
}

TEST_CASE("accumulate_gradient's buffer is written in place: a node that kept it refuses it later") {
  D x = D::from({1, 2}, {2}), g = D::from({0, 0}, {2}), z = D::from({3, 5}, {2});
  Tape tape(PartialsMode::kRecompute);
  D loss = sum(broadcast(Mul(), x, g));  // g is an argument of mul, kept for the sweep
  loss.eval();
  // Of z, not x: a buffer holding a gradient with respect to x would also be refused as a
  // path to x the tape cannot see (never_silent_test.cc), hiding the case this test is about.
  D loss2 = sum(broadcast(Square(), z));
  loss2.eval();
  tape.accumulate_gradient(loss2, {z}, {g});  // g += 2z
  CHECK(g.to_vector() == std::vector<double>{6, 10});
  CHECK(Has(ErrorOf([&] { tape.gradient(loss, {x}); }), "argument 2 of 'mul'"));
}
}  // namespace
}  // namespace dualcast

namespace dualcast {
namespace {

// dL/dx for L = sum(sin(x)^2) + sum(x): sin(2x) + 1.
std::vector<double> SinSquaredPlusX(const std::vector<double>& x) {
  std::vector<double> g;
  for (double v : x) g.push_back(std::sin(2 * v) + 1);
  return g;
}

void CheckNear(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-12));
}

TEST_CASE("an intermediate written after a node read it: that node's adjoint still reaches what computed it") {
  // Before: the write made y a leaf for every node, also those recorded
  // before it, so d/dx lost the path through y and came out 1 in every mode.
  const std::vector<double> xv = {0.5, -1.0, 2.0};
  for (PartialsMode mode : {PartialsMode::kCache, PartialsMode::kAuto}) {
    for (bool through_pointer : {false, true}) {
      CAPTURE(through_pointer);
      D x = D::from(xv, {3});
      Tape tape(mode);
      D y = sin(x);
      y.eval();
      D loss = sum(y * y) + sum(x);
      loss.eval();
      if (through_pointer) {
        (void)y.mutable_data();  // counts as a write, even if only read
      } else {
        y.assign({7, 8, 9});
      }
      CheckNear(tape.gradient(loss, {x})[0].to_vector(), SinSquaredPlusX(xv));
    }
  }
  // Recompute mode re-runs y * y from y, which no longer holds what it read: refused.
  D x = D::from(xv, {3});
  Tape tape(PartialsMode::kRecompute);
  D y = sin(x);
  y.eval();
  D loss = sum(y * y) + sum(x);
  loss.eval();
  y.assign({7, 8, 9});
  CHECK(Has(ErrorOf([&] { tape.gradient(loss, {x}); }), "written in place"));
}

TEST_CASE("a loss that reaches an input before and after a write to it: an Error in every mode, never a mix") {
  // Before: cache mode gave 2 x_old + c, the derivative with respect to neither.
  for (PartialsMode mode : {PartialsMode::kCache, PartialsMode::kRecompute, PartialsMode::kAuto}) {
    D x = D::from({0.5, -1, 2}, {3}), c = D::from({3, 4, 5}, {3});
    Tape tape(mode);
    D first = sum(x * x);
    first.eval();
    x.assign({1, 1, 1});
    D loss = first + sum(x * c);
    const std::string m = ErrorOf([&] { tape.gradient(loss, {x}); });
    CHECK(Has(m, "both as it is now and as it was before it was written in place"));
    CHECK(Has(ErrorOf([&] { tape.gradient(loss, {x}, {.allow_unused = true}); }), "written in place"));
    // What the loss reaches only as it is now is given: d/dc = x now.
    CHECK(tape.gradient(loss, {c})[0].to_vector() == std::vector<double>{1, 1, 1});
  }
}

TEST_CASE("a result written through a view after the nodes that read it: the gradient they recorded is given") {
  D x = D::from({1, 2, 3, 4}, {2, 2}), b = D::from({3, 4, 5, 6}, {2, 2});
  Tape tape;
  D y = broadcast(Affine(), x, b);
  y.eval();
  D loss = sum(y * D::from({1, 1, 1, 1}, {2, 2}));
  loss.eval();  // read y before the write
  D flat = y.reshape({4});
  flat.assign({0, 0, 0, 0});
  // d/dx = b + 1, cached at the recorded b; before, refused as if the loss had read the zeros.
  CHECK(tape.gradient(loss, {x})[0].to_vector() == std::vector<double>{4, 5, 6, 7});
}

TEST_CASE("an array computed before the tape and written after a taped node read it: still a path the tape cannot see") {
  // Before: the write dropped the array's Origin, and with it the path from
  // the loss to x through tanh(x): d/dx came out 1, silently.
  D x = D::from({0.5, -1.0}, {2}), c = D::from({3, 4}, {2});
  D h = tanh(x);
  h.eval();
  Tape tape;
  D loss = sum(h * c) + sum(x);
  loss.eval();
  h.assign({7, 8});
  const std::string m = ErrorOf([&] { tape.gradient(loss, {x}); });
  CHECK(Has(m, "computed by 'tanh' before this Tape was opened"));
}

TEST_CASE("an array computed from an input's old values is a constant: the written input is another variable") {
  // H = X * W, then W.assign(...): H holds W's old values, computed from
  // another variable than the W a gradient now asks about. Until the
  // ancestry recorded versions this was refused ("cannot tell the old
  // variable from the new"). d/dw sum(h * w) = column sums of h, by hand.
  D x = D::from({1, 2, 3, 4}, {2, 2}), w = D::from({0.5, 0.25}, {1, 2});
  D h = (x * w).eval();
  w.assign({2, 3});
  Tape tape;
  const std::vector<double> g = tape.gradient(sum(h * w), {w})[0].to_vector();
  CHECK(g == std::vector<double>{1 * 0.5 + 3 * 0.5, 2 * 0.25 + 4 * 0.25});

  // Without a write, hy is computed from the y a gradient asks about, before
  // the (second) tape: refused, and the advice is to open the Tape earlier.
  D y = D::from({1, 2}, {1, 2});
  D hy = (x * y).eval();
  Tape other;
  const std::string n = ErrorOf([&] { other.gradient(sum(hy * y), {y}); });
  CHECK(Has(n, "computed by 'mul' outside this tape's record"));
  CHECK(Has(n, "Open the Tape before"));
  CHECK_FALSE(Has(n, "written in place"));
}

TEST_CASE("time stepping in place: u_old = u.copy() before the Tape, u.assign() under it") {
  // The idiom of a simulation code: the old state is a constant, the new one
  // the variable. d/du sum((u - u_old)^2) = 2 (u - u_old), by hand.
  D u = D::from({1, 2, 3}, {3});
  D u_old = u.copy();
  Tape tape;
  u.assign({2, 4, 7});
  const D d = u - u_old;
  CHECK(tape.gradient(sum(d * d), {u})[0].to_vector() == std::vector<double>{2, 4, 8});
  // The same through mutable_data() (every element written by hand).
  D v = D::from({1, 2, 3}, {3});
  D v_old = v * 1.0;
  v_old.eval();
  Tape t2;
  double* p = v.mutable_data();
  p[0] = 2, p[1] = 4, p[2] = 7;
  const D e = v - v_old;
  CHECK(t2.gradient(sum(e * e), {v})[0].to_vector() == std::vector<double>{2, 4, 8});
  // And through several generations: w1 from u's first values, w2 from its
  // second, the loss reading w2 and u's third values: both constants.
  D s = D::from({1, 1}, {2});
  D w1 = (s * 2.0).eval();
  s.assign({3, 3});
  D w2 = (s * w1).eval();  // reads the second version of s
  Tape t3;
  s.assign({5, 6});
  CHECK(t3.gradient(sum(s * w2), {s})[0].to_vector() == std::vector<double>{6, 6});
}

TEST_CASE("the same op on a leaf before and after a write in place: the second result read the new variable") {
  // An Origin is shared by launches that read the same arrays (the recent
  // Origins of NoteOrigin); a leaf written in place keeps its (null) Origin,
  // so only the version tells the second sin(x) from the first. Shared, y2
  // would have counted as computed from the old x: not behind the x a
  // gradient asks about, and d/dx sum(y2 * x) would miss the path through
  // y2 (2x instead of an Error), silently.
  D x = D::from({1, 2}, {2});
  D y1 = dualcast::sin(x).eval();  // one input: x alone
  x.assign({3, 4});
  D y2 = dualcast::sin(x).eval();
  Tape tape;
  const std::string m = ErrorOf([&] { tape.gradient(sum(y2 * x), {x}); });
  CHECK(Has(m, "before this Tape was opened"));
  // y1 read the old variable: a constant, d/dx sum(y1 * x) = y1 = sin(old x).
  const std::vector<double> g = tape.gradient(sum(y1 * x), {x})[0].to_vector();
  CHECK(g[0] == doctest::Approx(std::sin(1.0)).epsilon(1e-15));
  CHECK(g[1] == doctest::Approx(std::sin(2.0)).epsilon(1e-15));
}

TEST_CASE("an array computed from values a write through another view replaced: refused, the advice a copy") {
  // Two views of one buffer: a write through `b` leaves `a`'s own version as
  // it was, so the tape cannot tell that h read the old values.
  std::vector<double> buf = {1, 2};
  D a = D::view(buf.data(), {2}), b = D::view(buf.data(), {2});
  D h = (a * 2.0).eval();
  b.assign({5, 6});
  Tape tape;
  const std::string m = ErrorOf([&] { tape.gradient(sum(h * a), {a}); });
  CHECK(Has(m, "computed by 'mul' before this Tape was opened"));
  CHECK(Has(m, "through another view"));
  CHECK(Has(m, "holds the old values"));
  CHECK_FALSE(Has(m, "Open the Tape before"));
}

TEST_CASE("a write through another view of the same user buffer: the tape sees it") {
  // Before: the other view's storage was not stamped, so d/dc = x came out as
  // the new values (cache mode) and d/dx re-ran sin at them (recompute mode).
  // x is a view of writable user memory, so the tape copied what it reads
  // again when it recorded x * c: the partial d/dc = x (kCache), or the
  // argument it recomputes from (kAuto).
  for (const PartialsMode mode : {PartialsMode::kCache, PartialsMode::kAuto}) {
    CAPTURE(static_cast<int>(mode));
    std::vector<double> buf = {0.5, -1, 2};
    Tape tape(mode);
    D x = D::view(buf.data(), {3});
    D c = D::from({3, 4, 5}, {3});
    D loss = sum(broadcast(Mul(), x, c));
    loss.eval();
    D::view(buf.data(), {3}).assign({10, 20, 30});
    CHECK(tape.gradient(loss, {c})[0].to_vector() == std::vector<double>{0.5, -1, 2});
  }
  {
    std::vector<double> buf = {0.5, -1, 2};
    Tape tape(PartialsMode::kRecompute);
    D x = D::view(buf.data(), {3});
    D c = D::from({3, 4, 5}, {3});
    D loss = sum(sin(x) * c);
    loss.eval();
    D::view(buf.data(), {3}).assign({10, 20, 30});
    CHECK(Has(ErrorOf([&] { tape.gradient(loss, {x}); }), "written in place"));
  }
}

TEST_CASE("columns of an interleaved table: writing one column leaves a gradient with respect to another intact") {
  // Before, a write into column 1 stamped column 0 as written too, so d/d col0
  // was refused ("only as it was before it was written in place"); with a
  // second thread writing, some gradients came back all zeros. Reference: the
  // hand formula d/du sum((u^2 + 1/4)^2) = 4 u (u^2 + 1/4).
  for (int when = 0; when < 3; ++when) {
    CAPTURE(when);
    std::vector<double> table = {0.5, 10, -1.5, 20, 2.25, 30};  // 3 rows x 2 columns
    D u = D::view(table.data(), {3}, {2});
    D v = D::view(table.data() + 1, {3}, {2});
    Tape tape;
    D y = broadcast(Square(), u) + 0.25;
    if (when == 0) v.assign({1, 2, 3});  // y pending
    y.eval();
    if (when == 1) v.assign({1, 2, 3});  // y computed, loss not made
    D loss = sum(y * y);
    if (when == 2) v.assign({1, 2, 3});  // loss pending
    const std::vector<double> g = tape.gradient(loss, {u})[0].to_vector();
    REQUIRE(g.size() == 3);
    for (int i = 0; i < 3; ++i) {
      const double x = table[2 * i];
      CHECK(g[i] == doctest::Approx(4 * x * (x * x + 0.25)).epsilon(1e-14));
    }
  }
}

TEST_CASE("writes refused before anything is written name the call the user made") {
  const std::vector<double> values = {1, 2};
  D ro = D::view(values.data(), {2});  // const memory
  CHECK(Has(ErrorOf([&] { ro.assign({3, 4}); }), "Array::assign: the array (shape [2]) is a read-only view"));
  // A gradient buffer whose elements share memory: refused up front, not by an internal copy.
  double cell = 5;
  D x = D::from({1, 2}, {2});
  D shared = D::view(&cell, {2}, {0});
  Tape tape;
  D loss = sum(x * x);
  const std::string m = ErrorOf([&] { tape.accumulate_gradient(loss, {x}, {shared}); });
  CHECK(Has(m, "Tape::accumulate_gradient: gradient buffer 1 has shape [2] and strides [0]"));
  CHECK(cell == 5);
}

TEST_CASE("after a one-pass gradient, a write to what its kernel read: never the path dropped") {
  // The one-pass plan records the group while its operand is still pending;
  // a later write computed that operand first and recorded it again, after
  // the sum: d/dw came out 1 1 1 (the sum(w) term alone), silently. The kept
  // group now stays the one recorded; it re-runs the kernel, which reads c:
  // refused, as recompute mode refuses any argument written since.
  std::vector<double> xb = {0.5, -1.0, 2.0};
  D w = D::from({1, 2, 3}, {3});
  Tape tape;  // kAuto: the one-pass plan
  D x = D::view(xb.data(), {3}), c = D::from({1, 1, 1}, {3});
  D first = sum(sin(x) * w + c);
  std::vector<double> g = tape.gradient(first, {w})[0].to_vector();
  for (size_t i = 0; i < 3; ++i) CHECK(g[i] == doctest::Approx(std::sin(xb[i])).epsilon(1e-12));
  c.assign({7, 8, 9});
  D loss = first + sum(w);
  CHECK(Has(ErrorOf([&] { tape.gradient(loss, {w}); }), "written in place"));
}

TEST_CASE("a leaf written through another view between two uses: an Error, never a mix") {
  // Before: cos(x_old) + cos(x_new), the derivative with respect to neither.
  std::vector<double> buf = {0.5, -1.0, 2.0};
  D x = D::view(buf.data(), {3});
  Tape tape;
  D first = sum(sin(x));
  first.eval();
  D::view(buf.data(), {3}).assign({1, 1, 1});
  D second = sum(sin(x));
  CHECK(Has(ErrorOf([&] { tape.gradient(first + second, {x}); }),
            "both as it is now and as it was before it was written in place"));
  for (double d : tape.gradient(second, {x})[0].to_vector()) CHECK(d == doctest::Approx(std::cos(1.0)).epsilon(1e-14));
}

TEST_CASE("a partials() or accumulate_gradient() destination read through another view: refused like the destination") {
  // Before: the destination's Origin was set on the written array only, so a
  // slice or transpose made before the write, or a second view() of the same
  // buffer, hid the untaped path: d/da (sum(v * w) + sum(a)) came out [1 1]
  // where it is 2 a w + 1 = [11 25] (a = [1 2], w = [5 6]).
  const std::string kWritten = "whose memory holds values written there by 'square'";
  auto check = [&](const std::function<D(const D& dest)>& view_of, bool view_before_tape) {
    D a = D::from({1, 2}, {2}), w = D::from({5, 6}, {2}), dest = D::zeros({2});
    std::optional<D> early;
    if (view_before_tape) early = view_of(dest);
    Tape tape;
    D v = early ? *early : view_of(dest);
    PartialsOptions<double> o;
    o.value_out = {dest};
    partials(Square(), {a}, o);
    D loss = sum(v.reshape({2}) * w) + sum(a);
    CHECK(loss.to_vector() == std::vector<double>{1 * 5 + 4 * 6 + 3});
    const std::string m = ErrorOf([&] { tape.gradient(loss, {a}); });
    CHECK(Has(m, "input 1 (shape [2]) reaches the loss on this tape, but also through"));
    CHECK(Has(m, kWritten));
  };
  check([](const D& d) { return slice(d, {{0, 2}}); }, false);
  check([](const D& d) { return slice(d, {{0, 2}}); }, true);
  check([](const D& d) { return d.reshape({2, 1}).transpose(); }, false);

  // Two views of one user buffer, made separately (docs/embedding.md).
  {
    std::vector<double> buf(2, 0.0);
    D a = D::from({1, 2}, {2}), w = D::from({5, 6}, {2});
    Tape tape;
    D dest = D::view(buf.data(), {2}), v = D::view(buf.data(), {2});
    PartialsOptions<double> o;
    o.value_out = {dest};
    partials(Square(), {a}, o);
    CHECK(Has(ErrorOf([&] { tape.gradient(sum(v * w) + sum(a), {a}); }), kWritten));
    // The advice: computed under the tape, the path is there: 2 a w + 1.
    D k = broadcast(Square(), a);
    CHECK(tape.gradient(sum(k * w) + sum(a), {a})[0].to_vector() == std::vector<double>{11, 25});
  }
  // accumulate_gradient's buffer read through a view made before: as the buffer itself.
  {
    D a = D::from({1, 2}, {2}), w = D::from({5, 6}, {2}), g = D::zeros({2});
    Tape tape;
    D v = slice(g, {{0, 2}});
    tape.accumulate_gradient(sum(a * a * a), {a}, {g});  // g = 3 a^2
    CHECK(v.to_vector() == std::vector<double>{3, 12});
    const std::string m = ErrorOf([&] { tape.gradient(sum(v * w) + sum(a), {a}); });
    CHECK(Has(m, "whose memory holds values written by Tape::accumulate_gradient"));
    CHECK(Has(m, "dualcast differentiates once"));
  }
}

TEST_CASE("a view of user memory made after partials() or accumulate_gradient() wrote it: refused too") {
  // Before: only views alive at the write carried what wrote the memory, so
  // view(buf) made afterwards (the destination view a temporary, long gone)
  // was a constant to the tape: d/da = [1 1], where it is 2 a w + 1 = [11 25]
  // (partials) or 6 a w + 1 = [31 73] (accumulate_gradient, a = [1 2], w = [5 6]).
  for (bool keep_destination : {false, true}) {
    CAPTURE(keep_destination);
    std::vector<double> buf(2, 0.0);
    D a = D::from({1, 2}, {2}), w = D::from({5, 6}, {2});
    Tape tape;
    std::optional<D> dest;
    {
      PartialsOptions<double> o;
      o.value_out = {D::view(buf.data(), {2})};
      if (keep_destination) dest = o.value_out[0];
      partials(Square(), {a}, o);
    }
    const D v = D::view(buf.data(), {2});
    CHECK(v.to_vector() == std::vector<double>{1, 4});
    CHECK(Has(ErrorOf([&] { tape.gradient(sum(v * w) + sum(a), {a}); }),
              "whose memory holds values written there by 'square'"));
    // User values over all of it: a constant again.
    D::view(buf.data(), {2}).assign({7, 8});
    CHECK(tape.gradient(sum(D::view(buf.data(), {2}) * w) + sum(a), {a})[0].to_vector() ==
          std::vector<double>{1, 1});
  }
  {
    std::vector<double> buf(2, 0.0);
    D a = D::from({1, 2}, {2}), w = D::from({5, 6}, {2});
    Tape tape;
    tape.accumulate_gradient(sum(a * a * a), {a}, {D::view(buf.data(), {2})});
    const D v = D::view(buf.data(), {2});
    CHECK(v.to_vector() == std::vector<double>{3, 12});
    CHECK(Has(ErrorOf([&] { tape.gradient(sum(v * w) + sum(a), {a}); }),
              "whose memory holds values written by Tape::accumulate_gradient"));
  }
}

// Found by a bug hunt: a buffer freed and allocated again at the same address
// (a std::vector that grew) took on the kept records of the old one, and a
// correct program was refused with advice ("use a fresh copy") that did not
// apply. dualcast cannot see a free; the error now says so and names
// forget_written_values, which lifts the records for the range given (a part
// of a record outside it stays), while a view alive at the call keeps its own.
TEST_CASE("forget_written_values: memory refilled by its owner after partials() wrote it is the caller's values") {
  D a = D::from({1, 2, 3, 4}, {4}), w = D::from({5, 6, 7, 8}, {4});
  std::vector<double> buf(4, 0.0);
  {
    PartialsOptions<double> o;
    o.value_out = {D::view(buf.data(), {4})};
    partials(Square(), {a}, o);  // buf = a^2, written by 'square'; the view is gone after this
  }
  buf = {0.5, 1.5, 2.5, 3.5};  // the owner's own values now (as after free and malloc)
  {
    Tape tape;
    const std::string m = ErrorOf([&] { tape.gradient(sum(D::view(buf.data(), {4}) * a), {a}); });
    CHECK(Has(m, "whose memory holds values written there by 'square'"));
    CHECK(Has(m, "dualcast::forget_written_values(data, bytes)"));
    CHECK(Has(m, "freed and allocated"));
  }
  // Forget the middle half only: a view of it is the user's values (d/da sum(v * a[1:3]) = v),
  // a view of the whole still meets the two outer elements' record.
  forget_written_values(buf.data() + 1, 2 * sizeof(double));
  {
    Tape tape;
    const D mid = D::view(buf.data() + 1, {2});
    const D a_mid = slice(a, {{1, 3}});
    CHECK(tape.gradient(sum(mid * a_mid), {a})[0].to_vector() == std::vector<double>{0, 1.5, 2.5, 0});
  }
  {
    Tape tape;
    CHECK(Has(ErrorOf([&] { tape.gradient(sum(D::view(buf.data(), {4}) * w) + sum(a), {a}); }),
              "written there by 'square'"));
  }
  // A view alive at the call, which took on the records, reads the caller's values after it, and
  // so does a new one: d/da sum(v * a) = v, and sum(v * w) + sum(a) has d/da = 1. A loss computed
  // through the view before the call is still refused (its memory is taken as written since).
  {
    const D alive = D::view(buf.data(), {4});
    Tape before;
    D loss = sum(alive * a);
    loss.eval();
    forget_written_values(buf.data(), buf.size() * sizeof(double));
    CHECK_THROWS_AS(before.gradient(loss, {a}), Error);
    Tape tape;
    CHECK(tape.gradient(sum(alive * w) + sum(a), {a})[0].to_vector() == std::vector<double>{1, 1, 1, 1});
  }
  Tape tape;
  const D v = D::view(buf.data(), {4});
  CHECK(tape.gradient(sum(v * a), {a})[0].to_vector() == std::vector<double>{0.5, 1.5, 2.5, 3.5});
  CHECK(tape.gradient(sum(v * w) + sum(a), {a})[0].to_vector() == std::vector<double>{1, 1, 1, 1});
}

TEST_CASE("a write through mutable_data() into a computed array: refused, never its other elements dropped") {
  // mutable_data() hands out all of y, so which elements change is unknown.
  // Before, y became a leaf of user values: with x = [1 2 3], w = [5 6 7],
  // y = 2x, y[0] = 7, d/dx (sum(y * w) + sum(x)) came out [1 1 1] where it is
  // [1, 2*6+1, 2*7+1] = [1 13 15]; without the + sum(x), strict mode said x
  // did not reach the loss, and with nothing written at all (true: 2w).
  D x = D::from({1, 2, 3}, {3}), w = D::from({5, 6, 7}, {3});
  for (int variant = 0; variant < 3; ++variant) {
    Tape tape;
    D y = x * 2.0;
    double* p = y.mutable_data();
    if (variant < 2) p[0] = 7;
    D loss = variant == 0 ? sum(y * w) + sum(x) : sum(y * w);
    const std::string m = ErrorOf([&] { tape.gradient(loss, {x}); });
    CHECK(Has(m, "computed by 'mul' and then written through mutable_data()"));
    CHECK(Has(m, "cannot tell which of its elements were overwritten"));
    CHECK(Has(m, "assign()"));
    CHECK_FALSE(Has(m, "nothing recorded on this tape connects them"));
    CHECK(Has(ErrorOf([&] { tape.gradient(loss, {x}, {.allow_unused = true}); }), "mutable_data()"));
  }
  // The documented uses stay: a leaf written through its pointer is a new
  // leaf (d/dx sum(x * w) = w); assign() replaces every value, so y is then
  // a constant and d/dx (sum(y * w) + sum(x)) = 1; a write through a view of
  // a leaf writes the leaf (d/dx sum(x * w) = w at its values now).
  {
    D leaf = D::from({1, 2, 3}, {3});
    Tape tape;
    leaf.mutable_data()[0] = 9;
    CHECK(tape.gradient(sum(leaf * w), {leaf})[0].to_vector() == std::vector<double>{5, 6, 7});
  }
  {
    Tape tape;
    D y = x * 2.0;
    y.assign({7, 8, 9});
    CHECK(tape.gradient(sum(y * w) + sum(x), {x})[0].to_vector() == std::vector<double>{1, 1, 1});
  }
  {
    D leaf = D::from({1, 2, 3}, {3});
    Tape tape;
    slice(leaf, {{0, 2}}).mutable_data()[1] = 9;
    D loss = sum(leaf * w);
    CHECK(loss.to_vector() == std::vector<double>{5 + 9 * 6 + 3 * 7});
    CHECK(tape.gradient(loss, {leaf})[0].to_vector() == std::vector<double>{5, 6, 7});
  }
}

TEST_CASE("a view written in place and its base both read by the loss: refused, not the base's part alone") {
  // s = x[0:2]; s.assign(...) made s a leaf of its own, so d/dx (sum(x * w) +
  // sum(s * v)) came out w = [5 6 7]; s is x's memory, so it is w + [v, 0] =
  // [105 206 7] (x = [10 20 3] then, v = [100 200]).
  D w = D::from({5, 6, 7}, {3}), v = D::from({100, 200}, {2});
  {
    D x = D::from({1, 2, 3}, {3});
    Tape tape;
    D s = slice(x, {{0, 2}});
    s.assign({10, 20});
    D loss = sum(x * w) + sum(s * v);
    CHECK(loss.to_vector() == std::vector<double>{10 * 5 + 20 * 6 + 3 * 7 + 10 * 100 + 20 * 200});
    const std::string m = ErrorOf([&] { tape.gradient(loss, {x}); });
    CHECK(Has(m, "reads the memory of input 1 (shape [3]) also through another array (shape [2])"));
    CHECK(Has(m, "Make the view again"));
    // The advice: a view made after the write is recorded from x.
    D s2 = slice(x, {{0, 2}});
    CHECK(tape.gradient(sum(x * w) + sum(s2 * v), {x})[0].to_vector() == std::vector<double>{105, 206, 7});
  }
  {  // Two view()s of one buffer, nothing written: the same memory, two leaves.
    std::vector<double> buf = {1, 2, 3};
    Tape tape;
    D x = D::view(buf.data(), {3}), other = D::view(buf.data(), {3});
    CHECK(Has(ErrorOf([&] { tape.gradient(sum(x * w) + sum(other), {x}); }), "also through another array"));
    CHECK(tape.gradient(sum(x * w), {x})[0].to_vector() == std::vector<double>{5, 6, 7});
  }
}

TEST_CASE("a view made before its base was written, read after: the refusal names the view") {
  // It said the loss reached x "only as it was before it was written in
  // place", but the loss read x's new values, through the view.
  D v = D::from({100, 200}, {2});
  D x = D::from({1, 2, 3}, {3});
  Tape tape;
  D s = slice(x, {{0, 2}});
  x.assign({10, 20, 30});
  D loss = sum(s * v);
  CHECK(loss.to_vector() == std::vector<double>{10 * 100 + 20 * 200});
  const std::string m = ErrorOf([&] { tape.gradient(loss, {x}); });
  CHECK(Has(m, "through an array of shape [2] computed by 'slice' from it before it was written in place"));
  CHECK(Has(m, "Make the view again after writing"));
  CHECK_FALSE(Has(m, "only as it was before"));
  CHECK(tape.gradient(sum(slice(x, {{0, 2}}) * v), {x})[0].to_vector() == std::vector<double>{100, 200, 0});
}

}  // namespace
}  // namespace dualcast
