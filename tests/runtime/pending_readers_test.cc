// A write in place through dualcast never changes a lazy result made before it (runtime/pending_readers.h).
//
// Each case failed before: the pending result was computed at its first read,
// from the input as the write had left it. Expected values are the inputs'
// values before the write, put through the kernel by hand, as eager code
// would give them.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "dualcast/dualcast.hpp"
#include "runtime/error_text.h"
#include "runtime/pending_readers.h"

namespace dualcast {
namespace {

using D = Array<double>;
using V = std::vector<double>;

const Kernel& Mul() {
  static const Kernel k = kernel("mul", [](auto x, auto y) { return x * y; });
  return k;
}
const Kernel& Square() {
  static const Kernel k = kernel("square", [](auto x) { return x * x; });
  return k;
}

TEST_CASE("assign after a pending broadcast: the result has the values from before the write") {
  D x = D::from({1, 2, 3}, {3});
  D y = x * 2.0;
  REQUIRE(y.is_pending());
  x.assign({10, 20, 30});
  CHECK_FALSE(y.is_pending());  // computed by the write, before it
  CHECK(y.to_vector() == V{2, 4, 6});
  CHECK((x * 2.0).to_vector() == V{20, 40, 60});  // made after the write: the new values
}

TEST_CASE("mutable_data: the pending result is computed before the pointer is handed out") {
  D x = D::from({1, 2}, {2});
  D y = broadcast(Mul(), x, x);
  double* p = x.mutable_data();
  p[0] = 7;
  CHECK(y.to_vector() == V{1, 4});
}

TEST_CASE("a write through another view of the same memory") {
  D x = D::from({1, 2, 3, 4}, {2, 2});
  D flat = x.reshape({4});
  REQUIRE(flat.data() == x.data());
  D y = x + 1.0;
  flat.assign({0, 0, 0, 0});
  CHECK(y.to_vector() == V{2, 3, 4, 5});
}

TEST_CASE("a fused chain and a pending reduction over the written input") {
  D x = D::from({1, 2, 3}, {3});
  D z = (x * 2.0) + 1.0;  // one pending group of two nodes
  D s = sum(x * x);       // a pending reduction of a pending broadcast
  x.assign({0, 0, 0});
  CHECK(z.to_vector() == V{3, 5, 7});
  CHECK(s.item() == 14);
}

TEST_CASE("an input computed after its reader was made: found at the write, not when the reader was made") {
  D x = D::from({1, 2}, {2});
  D y = x * 3.0;
  D z = y + 1.0;  // reads y while y is pending
  y.eval();       // y has memory now; z still pending
  REQUIRE(z.is_pending());
  y.mutable_data()[1] = 100;
  CHECK(z.to_vector() == V{4, 7});
  CHECK(y.to_vector() == V{3, 100});
}

TEST_CASE("partials() writing into a destination that a pending result reads") {
  D d = D::from({1, 2}, {2}), c = D::from({5, 6}, {2});
  D e = d * 2.0;
  PartialsOptions<double> o;
  o.value_out = {d};
  partials(Square(), {c}, o);
  CHECK(d.to_vector() == V{25, 36});
  CHECK(e.to_vector() == V{2, 4});
}

TEST_CASE("accumulate_gradient's buffer read by a pending result") {
  D x = D::from({1, 2}, {2}), g = D::from({10, 20}, {2});
  D seen = g + 0.5;  // pending, reads the buffer
  Tape tape;
  D loss = sum(broadcast(Square(), x));
  tape.accumulate_gradient(loss, {x}, {g});  // g += 2x
  CHECK(g.to_vector() == V{12, 24});
  CHECK(seen.to_vector() == V{10.5, 20.5});
}

TEST_CASE("under a tape: the result is recorded with the values it used, and a gradient that needs the old ones is an Error") {
  for (const PartialsMode mode : {PartialsMode::kCache, PartialsMode::kAuto}) {
    D x = D::from({1, 2}, {2}), b = D::from({3, 4}, {2});
    Tape tape(mode);
    D y = broadcast(Mul(), x, b);
    x.assign({10, 20});  // y = x * b is computed (and recorded) first, at x = (1, 2)
    CHECK(y.to_vector() == V{3, 8});
    D loss = sum(y);
    // x now holds other values than the ones the loss used: which x is meant cannot be told.
    const std::string mx = test::ErrorOf([&] { tape.gradient(loss, {x}); }, "(no error)");
    CHECK(test::Has(mx, "only as it was before it was written in place"));
    if (mode == PartialsMode::kAuto) {
      // Recorded to recompute, the node kept a copy of x at (1, 2) before the write.
      CHECK(tape.gradient(loss, {b})[0].to_vector() == V{1, 2});
      continue;
    }
    // d/db = x at (1, 2), the cached partial the write replaced: refused, never (10, 20).
    const std::string m = test::ErrorOf([&] { tape.gradient(loss, {b}); }, "(no error)");
    MESSAGE(m);
    CHECK(test::Has(m, "written in place"));
  }
}

TEST_CASE("a write through a second view of the same buffer: results reading the first keep their values") {
  // Two Array::view calls on one buffer are two storages (storage_aliases.h);
  // before, a write through one was not seen by results reading the other.
  std::vector<double> buf = {1, 2, 3};
  D a = D::view(buf.data(), {3});
  D y = a * 10.0;
  D b = D::view(buf.data(), {3});
  b.assign({7, 8, 9});
  CHECK(y.to_vector() == V{10, 20, 30});
  CHECK(buf == V{7, 8, 9});
  // A partials() destination that is a fresh view of memory a pending result reads.
  std::vector<double> sig = {1, 2, 3}, eps = {5, 6, 7};
  D z = D::view(static_cast<const double*>(sig.data()), {3}) + 0.5;
  PartialsOptions<double> o;
  o.value_out = {D::view(sig.data(), {3})};
  partials(Square(), {D::view(static_cast<const double*>(eps.data()), {3})}, o);
  CHECK(z.to_vector() == V{1.5, 2.5, 3.5});
  CHECK(sig == V{25, 36, 49});
  // A view of memory dualcast owns, made from data(), written through the view.
  D owned = D::from({1, 2}, {2});
  D w = owned * 3.0;
  D::view(const_cast<double*>(owned.data()), {2}).assign({5, 6});
  CHECK(w.to_vector() == V{3, 6});
  // Views of disjoint halves do not alias: no work for the other half's readers.
  std::vector<double> two = {1, 2, 3, 4};
  D left = D::view(two.data(), {2});
  D r = D::view(two.data() + 2, {2}) * 1.0;
  left.assign({0, 0});
  CHECK(r.is_pending());
  CHECK(r.to_vector() == V{3, 4});
}

TEST_CASE("columns of an interleaved table: a write into one column computes nothing that reads another") {
  // Before, any two views whose address ranges met aliased: writing column 1
  // computed a pending result of column 0, on the writing thread (away from
  // the tape of the thread that made it: a spurious "computed before this
  // Tape was opened"). The element grids tell them apart.
  std::vector<double> table = {1, 10, 2, 20, 3, 30};  // 3 rows x 2 columns, row-major
  D col0 = D::view(table.data(), {3}, {2});
  D col1 = D::view(table.data() + 1, {3}, {2});
  D y = broadcast(Square(), col0);
  col1.assign({7, 8, 9});
  CHECK(y.is_pending());
  CHECK(y.to_vector() == V{1, 4, 9});
  CHECK(table == V{1, 7, 2, 8, 3, 9});
  // A view that shares elements with column 0 (every other row) still aliases
  // it: its readers keep the values of before the write.
  D z = broadcast(Square(), col0);
  D::view(table.data(), {2}, {4}).assign({5, 6});  // rows 0 and 2 of column 0
  CHECK_FALSE(z.is_pending());
  CHECK(z.to_vector() == V{1, 4, 9});
  CHECK((col0 * 1.0).to_vector() == V{5, 2, 6});
  // float32 columns of a 3-column table (a 12-byte row stride): also apart.
  std::vector<float> f = {1, 2, 3, 4, 5, 6};
  Array<float> fc0 = Array<float>::view(f.data(), {2}, {3});
  Array<float> fy = fc0 * 2.0f;
  Array<float>::view(f.data() + 2, {2}, {3}).assign({0, 0});
  CHECK(fy.is_pending());
  CHECK(fy.to_vector() == std::vector<float>{2, 8});
}

TEST_CASE("under a tape, a pending result computed by another thread's write: the Error names that write") {
  // Blocks of two columns of a 4-column table interleave without sharing an
  // element, which counts as sharing memory (storage_aliases.h): the other
  // thread's write computes y there, where this tape cannot record it. The
  // message said y was computed "before this Tape was opened", which the
  // user had not done.
  std::vector<double> table(16);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<double>(i);
  D mine = D::view(table.data(), {4, 2}, {4, 1});
  D theirs = D::view(table.data() + 2, {4, 2}, {4, 1});
  Tape tape;
  D y = broadcast(Square(), mine);
  std::thread([&] { theirs.assign(V(8, -1.0)); }).join();
  REQUIRE_FALSE(y.is_pending());
  CHECK(y.to_vector() == V{0, 1, 16, 25, 64, 81, 144, 169});
  const std::string m = test::ErrorOf([&] { tape.gradient(sum(y), {mine}); }, "(no error)");
  MESSAGE(m);
  CHECK(test::Has(m, "by a write in place"));
  CHECK(test::Has(m, "another view of the same buffer"));
  CHECK(test::Has(m, "Evaluate it (eval()) under the tape"));
  CHECK_FALSE(test::Has(m, "before this Tape was opened"));
  // Evaluated under the tape first, as the message says: the gradient, 2 x.
  Tape again;
  D y2 = broadcast(Square(), mine);
  y2.eval();
  CHECK(again.gradient(sum(y2), {mine})[0].to_vector() == V{0, 2, 8, 10, 16, 18, 24, 26});
  // Written after y2 read it, through the other view: still counts as a
  // write into `mine` (conservatively), and the refusal says through what.
  std::thread([&] { theirs.assign(V(8, -2.0)); }).join();
  const std::string m2 = test::ErrorOf([&] { again.gradient(sum(y2), {mine}); }, "(no error)");
  MESSAGE(m2);
  CHECK(test::Has(m2, "only as it was before it was written in place"));
  CHECK(test::Has(m2, "not through this array but through another view of its memory"));
}

TEST_CASE("a pending result made on a thread that has ended") {
  D x = D::from({1, 2}, {2});
  D y;
  std::thread([&] { y = x * 5.0; }).join();
  REQUIRE(y.is_pending());
  x.assign({0, 0});
  CHECK(y.to_vector() == V{5, 10});
}

TEST_CASE("a thread writing while another makes and reads pending results: each keeps its own inputs' values") {
  // The writer scans the other thread's registry while it grows (TSan runs this).
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::thread maker([&] {
    D mine = D::from({1, 2}, {2});
    for (int k = 0; !stop.load() && k < 20000; ++k) {
      D y = mine * static_cast<double>(k);
      D z = y + 1.0;
      if (z.to_vector() != V{1.0 + k, 1.0 + 2.0 * k}) wrong.fetch_add(1);
    }
  });
  D w = D::from({0, 0}, {2});
  for (int k = 0; k < 2000; ++k) {
    D r = w + 1.0;
    w.assign({static_cast<double>(k), static_cast<double>(k)});
    if (r.to_vector() != V{k == 0 ? 1.0 : k, k == 0 ? 1.0 : k}) wrong.fetch_add(1);
  }
  stop.store(true);
  maker.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE("writes that no pending result reads compute nothing") {
  D x = D::from({1, 2}, {2}), other = D::from({3, 4}, {2});
  D y = other * 2.0;
  x.assign({7, 8});
  CHECK(y.is_pending());
  CHECK(y.to_vector() == V{6, 8});
}

TEST_CASE("a loop of short-lived broadcasts keeps the registry small (dead nodes are pruned)") {
  D x = D::from({1, 2}, {2});
  double total = 0;
  for (int k = 0; k < 10000; ++k) total += sum(x * static_cast<double>(k)).item();
  CHECK(total == 3.0 * 9999 * 10000 / 2);
  CHECK(detail::RegisteredNodesForTesting() <= 128);
}

}  // namespace
}  // namespace dualcast
