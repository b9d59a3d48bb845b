// Threads: 8 std::threads call partials / broadcast / the tape on their own mesh blocks with one shared Kernel, vs a single-threaded run.
//
// What an OpenMP-parallel simulation code does: one Kernel and read-only
// parameter arrays shared by every thread, each thread calling
// dualcast::partials on its block of the mesh with views of the caller's
// memory. Results must equal the single-threaded run over the whole mesh
// (exactly: the kernels use only arithmetic, sqrt and comparisons, which
// are correctly rounded on every code path, vector or scalar). Registered
// with the ctest label `threads`; CI also runs it under ThreadSanitizer with
// tests/threads/tsan.supp (see docs/embedding.md for what that covers).
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <latch>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <dualcast/dualcast.hpp>

namespace {

namespace dc = dualcast;
using dc::Array;

constexpr int kThreads = 8;
constexpr int64_t kBlock = 5000;  // points per thread (a chunk of the thread pool's grain)
constexpr int64_t kPoints = kThreads * kBlock;

// A small return-mapping-like law with real branches and two outputs. The
// shift is a compile-time constant (kernels take no captures), so each
// value is its own kernel structure.
template <int kShift1024>
auto MakeLaw() {
  return dc::kernel("threads_law", [](auto eps, auto k, auto y) {
    using namespace dc::math;
    constexpr double shift = kShift1024 / 1024.0;
    auto trial = k * eps + shift;
    if (trial > y) return std::tuple{y + (trial - y) / (1 + k), sqrt(trial - y)};
    if (trial < -y) return std::tuple{-y + (trial + y) / (1 + k), -sqrt(-y - trial)};
    return std::tuple{trial, trial * 0};
  });
}

std::vector<double> Strains() {
  std::vector<double> eps(kPoints);
  for (int64_t i = 0; i < kPoints; ++i) eps[i] = 3.0 * std::sin(0.001 * static_cast<double>(i));
  return eps;
}

Array<double> Block(const std::vector<double>& v, int b) {
  return Array<double>::view(v.data() + b * kBlock, {kBlock});
}
Array<double> Block(std::vector<double>& v, int b) {
  return Array<double>::view(v.data() + b * kBlock, {kBlock});
}

// Runs fn(thread_index) on kThreads threads released together.
template <class F>
void RunTogether(F fn) {
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      fn(t);
    });
  }
  for (auto& th : threads) th.join();
}

}  // namespace

TEST_CASE("8 threads: partials on their own blocks, one shared Kernel, results equal the single-threaded run") {
  const dc::Kernel law = MakeLaw<128>();
  const std::vector<double> eps = Strains();
  const Array<double> k = Array<double>::scalar(2.0), y = Array<double>::scalar(1.5);
  k.eval();
  y.eval();

  // Reference: one call over the whole mesh, on this thread.
  dc::Partials<double> ref = dc::partials(law, {Array<double>::view(eps.data(), {kPoints}), k, y});
  const std::vector<double> ref_s = ref.value(0).to_vector(), ref_p = ref.value(1).to_vector();
  const std::vector<double> ref_ds = ref.d(0, 0).to_vector(), ref_dy = ref.d(1, 2).to_vector();

  // Each thread writes values and d/d eps, d/dy into its block of shared buffers, 5 times.
  std::vector<double> s(kPoints, -1), p(kPoints, -1), ds(kPoints, -1), dy(kPoints, -1);
  RunTogether([&](int t) {
    for (int rep = 0; rep < 5; ++rep) {
      dc::PartialsOptions<double> o;
      o.wrt = {0, 2};
      o.value_out = {Block(s, t), Block(p, t)};
      o.partial_out = {Block(ds, t), Array<double>(), Array<double>(), Block(dy, t)};
      dc::partials(law, {Block(eps, t), k, y}, o);
    }
  });
  CHECK(s == ref_s);
  CHECK(p == ref_p);
  CHECK(ds == ref_ds);
  CHECK(dy == ref_dy);
}

TEST_CASE("8 threads: concurrent first-time trace and compile of one kernel are done once") {
  // A constant no other test uses, so neither the trace nor the kernel exists yet.
  const dc::Kernel law = MakeLaw<64>();
  const std::vector<double> eps = Strains();
  const Array<double> k = Array<double>::scalar(3.0), y = Array<double>::scalar(1.0);
  k.eval();
  y.eval();
  std::vector<double> s(kPoints, -1), ds(kPoints, -1);
  const dc::Stats before = dc::stats();
  RunTogether([&](int t) {
    dc::PartialsOptions<double> o;
    o.wrt = {0};
    o.value_out = {Block(s, t), Array<double>()};
    o.partial_out = {Block(ds, t), Array<double>()};
    dc::partials(law, {Block(eps, t), k, y}, o);
  });
  const dc::Stats after = dc::stats();
  // One kernel structure: one backend compile (or disk load) in all.
  CHECK(after.compiles + after.disk_hits - before.compiles - before.disk_hits == 1);

  // Hand-written reference for the first output and its derivative.
  for (int64_t i = 0; i < kPoints; i += 97) {
    const double trial = 3.0 * eps[i] + 0.0625;
    double want = trial, dwant = 3.0;
    if (trial > 1.0) want = 1.0 + (trial - 1.0) / 4.0, dwant = 0.75;
    if (trial < -1.0) want = -1.0 + (trial + 1.0) / 4.0, dwant = 0.75;
    CHECK(s[i] == doctest::Approx(want).epsilon(1e-15));
    CHECK(ds[i] == doctest::Approx(dwant).epsilon(1e-15));
  }
}

TEST_CASE("8 threads: lazy broadcasts and a Tape per thread give the single-threaded gradients") {
  const dc::Kernel law = MakeLaw<128>();
  const std::vector<double> eps = Strains();
  auto gradients_of = [&](int b) {
    // Parameters are per thread: the tape differentiates with respect to them.
    Array<double> k = Array<double>::scalar(2.0), y = Array<double>::scalar(1.5);
    dc::Tape tape;
    std::vector<Array<double>> outs = dc::broadcast_n(law, Block(eps, b), k, y);
    Array<double> loss = dc::sum(outs[0] * outs[0] + outs[1]);
    std::vector<Array<double>> g = tape.gradient(loss, {k, y});
    return std::vector<double>{loss.item(), g[0].item(), g[1].item()};
  };
  std::vector<std::vector<double>> reference;
  for (int b = 0; b < kThreads; ++b) reference.push_back(gradients_of(b));
  std::vector<std::vector<double>> got(kThreads);
  RunTogether([&](int t) { got[t] = gradients_of(t); });
  for (int b = 0; b < kThreads; ++b) {
    CAPTURE(b);
    CHECK(got[b] == reference[b]);
  }
}

namespace {

// out = x * s + y for a compile-time s, one kernel structure per s.
template <int kScale>
dc::Kernel Affine() {
  return dc::kernel("threads_affine", [](auto x, auto y) { return x * kScale + y; });
}

template <int... kScales>
std::vector<dc::Kernel> AffineKernels(std::integer_sequence<int, kScales...>) {
  return {Affine<kScales + 1000>()...};
}

std::vector<double> Iota(int64_t n, double start) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + 0.5 * static_cast<double>(i);
  return v;
}

}  // namespace

TEST_CASE("8 threads: the first lazy broadcast of a new kernel compiles once, off the graph lock") {
  const dc::Kernel f = Affine<7771>();  // no other test uses this scale: the kernel is new
  std::vector<std::vector<double>> got(kThreads);
  const dc::Stats before = dc::stats();
  RunTogether([&](int t) {
    const auto x = Array<double>::from(Iota(64, t), {64});
    const auto y = Array<double>::from(Iota(64, -t), {64});
    got[t] = dc::broadcast(f, x, y).to_vector();
  });
  const dc::Stats after = dc::stats();
  const int kernel = static_cast<int>(dualcast::jit::Cache::kKernel);
  CHECK(after.caches[kernel].misses - before.caches[kernel].misses == 1);
  CHECK(after.compiles + after.disk_hits - before.compiles - before.disk_hits == 1);
  for (int t = 0; t < kThreads; ++t) {
    const std::vector<double> x = Iota(64, t), y = Iota(64, -t);
    for (size_t i = 0; i < x.size(); ++i) CHECK(got[t][i] == x[i] * 7771 + y[i]);
  }
}

TEST_CASE("8 threads: concurrent launches of different kernels on independent graphs") {
  const std::vector<dc::Kernel> kernels = AffineKernels(std::make_integer_sequence<int, kThreads>());
  std::vector<int> wrong(kThreads, 0);
  RunTogether([&](int t) {
    const dc::Kernel& f = kernels[static_cast<size_t>(t)];
    const dc::Kernel& g = kernels[static_cast<size_t>((t + 1) % kThreads)];
    const std::vector<double> xv = Iota(33, t), yv = Iota(33, 1);
    const auto x = Array<double>::from(xv, {33});
    const auto y = Array<double>::from(yv, {33});
    const double sf = 1000 + t, sg = 1000 + (t + 1) % kThreads;
    for (int rep = 0; rep < 50; ++rep) {
      // A fused chain of two kernels (one launch) and a single one.
      Array<double> u = dc::broadcast(f, x, y);
      Array<double> w = dc::broadcast(g, u, x);
      const std::vector<double> wv = w.to_vector(), uv = u.to_vector();
      for (size_t i = 0; i < xv.size(); ++i) {
        const double ur = xv[i] * sf + yv[i];
        if (uv[i] != ur || wv[i] != ur * sg + xv[i]) ++wrong[t];
      }
    }
  });
  for (int t = 0; t < kThreads; ++t) CHECK(wrong[t] == 0);
}

TEST_CASE("8 threads read one shared pending array: computed once, every thread sees the result") {
  const dc::Kernel f = Affine<3>();
  const std::vector<double> xv = Iota(1000, 0), yv = Iota(1000, 2);
  const auto x = Array<double>::from(xv, {1000});
  const auto y = Array<double>::from(yv, {1000});
  for (int rep = 0; rep < 20; ++rep) {
    const Array<double> shared = dc::broadcast(f, x, y);  // pending until a thread reads it
    const dc::Stats before = dc::stats();
    std::vector<std::vector<double>> got(kThreads);
    RunTogether([&](int t) { got[t] = shared.to_vector(); });
    CHECK(dc::stats().launches - before.launches == 1);
    for (int t = 0; t < kThreads; ++t) {
      REQUIRE(got[t].size() == xv.size());
      for (size_t i = 0; i < xv.size(); i += 37) CHECK(got[t][i] == xv[i] * 3 + yv[i]);
    }
  }
}

TEST_CASE("8 threads read two outputs of one pending chain: overlapping groups wait for each other") {
  const dc::Kernel f = Affine<5>();
  const dc::Kernel g = Affine<7>();
  const std::vector<double> xv = Iota(257, 1), yv = Iota(257, -3);
  const auto x = Array<double>::from(xv, {257});
  const auto y = Array<double>::from(yv, {257});
  for (int rep = 0; rep < 50; ++rep) {
    // a = 5x + y and b = 7a + x, both pending: reading b fuses a into its kernel.
    const Array<double> a = dc::broadcast(f, x, y);
    const Array<double> b = dc::broadcast(g, a, x);
    std::vector<std::vector<double>> got(kThreads);
    RunTogether([&](int t) { got[t] = (t % 2 == 0 ? a : b).to_vector(); });
    for (int t = 0; t < kThreads; ++t) {
      REQUIRE(got[t].size() == xv.size());
      for (size_t i = 0; i < xv.size(); i += 17) {
        const double av = xv[i] * 5 + yv[i];
        CHECK(got[t][i] == (t % 2 == 0 ? av : av * 7 + xv[i]));
      }
    }
  }
}

TEST_CASE("8 threads build on a shared pending array while others compute it: every value is right") {
  // Half the threads read `a` (computing it, on the lean path or under the
  // lock) while the others make broadcasts that read it and ask whether it
  // is pending. Making a broadcast once read `a`'s node without the lock
  // while another thread's fill reset it (a data race ThreadSanitizer saw).
  const dc::Kernel f = Affine<3>();
  const dc::Kernel g = Affine<13>();
  const std::vector<double> xv = Iota(33, 4), yv = Iota(33, -5);
  const auto x = Array<double>::from(xv, {33});
  const auto y = Array<double>::from(yv, {33});
  int wrong = 0;
  for (int rep = 0; rep < 300; ++rep) {
    const Array<double> a = dc::broadcast(f, x, y);
    std::vector<std::vector<double>> got(kThreads);
    RunTogether([&](int t) {
      if (t % 2 == 0) {
        got[t] = a.to_vector();
        return;
      }
      const Array<double> b = dc::broadcast(g, a, x);
      const Array<double> c = dc::broadcast(g, b, a);
      (void)a.is_pending();
      got[t] = c.to_vector();
    });
    for (int t = 0; t < kThreads; ++t) {
      REQUIRE(got[t].size() == xv.size());
      for (size_t i = 0; i < xv.size(); ++i) {
        const double av = xv[i] * 3 + yv[i];
        const double want = t % 2 == 0 ? av : (av * 13 + xv[i]) * 13 + av;
        if (got[t][i] != want) ++wrong;
      }
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("8 threads meet on shared pending arrays: lean claims and locked groups agree, each node runs once") {
  // a is a ready node (evaluated by a thread's lean path, in a read section
  // of the graph lock); b and c read a, so a thread reading them gathers a
  // group under the exclusive lock, fusing a when it is still pending or
  // waiting for it while another thread runs it. Repeated so that every
  // interleaving of claim, launch and fill meets the other path.
  const dc::Kernel f = Affine<3>();
  const dc::Kernel g = Affine<11>();
  const std::vector<double> xv = Iota(65, 2), yv = Iota(65, -7);
  const auto x = Array<double>::from(xv, {65});
  const auto y = Array<double>::from(yv, {65});
  (void)dc::broadcast(f, x, y).to_vector();  // x and y are now known computed without the lock
  int wrong = 0;
  for (int rep = 0; rep < 200; ++rep) {
    const Array<double> a = dc::broadcast(f, x, y);
    const Array<double> b = dc::broadcast(g, a, x);
    const Array<double> c = dc::broadcast(f, a, y);
    const dc::Stats before = dc::stats();
    std::vector<std::vector<double>> got(kThreads);
    RunTogether([&](int t) { got[t] = (t % 3 == 0 ? a : t % 3 == 1 ? b : c).to_vector(); });
    // a, b and c take at most three launches, however the threads interleave.
    CHECK(dc::stats().launches - before.launches <= 3);
    for (int t = 0; t < kThreads; ++t) {
      REQUIRE(got[t].size() == xv.size());
      for (size_t i = 0; i < xv.size(); ++i) {
        const double av = xv[i] * 3 + yv[i];
        const double want = t % 3 == 0 ? av : t % 3 == 1 ? av * 11 + xv[i] : av * 3 + yv[i];
        if (got[t][i] != want) ++wrong;
      }
    }
  }
  CHECK(wrong == 0);
}

namespace {

// Thread A differentiates sum(K(u)^2), K(x) = x^2 + 1/4, with respect to its
// part `u` of a shared row-major table while thread B writes its own part
// (`assign`, or as a partials() value_out), `iters` times. Each outcome is
// compared with the hand formula 4 u (u^2 + 1/4); `check` counts those that
// are neither that nor (where allowed) an Error. Gradient calls rotate over
// gradient, value_and_gradient and accumulate_gradient; Y is left pending
// every other time.
struct Outcomes {
  int exact = 0, errors = 0, wrong = 0, zeros = 0;
};
Outcomes DifferentiateWhileOtherWrites(const Array<double>& u, const std::vector<double>& u_values,
                                       Array<double> v, int iters) {
  static const dc::Kernel k = dc::kernel("threads_column_k", [](auto x) { return x * x + 0.25; });
  static const dc::Kernel copy = dc::kernel("threads_column_copy", [](auto x) { return x * 1.0; });
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int c = 0; !stop.load(std::memory_order_relaxed); ++c) {
      if (c % 2 == 0) {
        v.assign(std::vector<double>(static_cast<size_t>(v.size()), c));
      } else {
        dc::PartialsOptions<double> o;
        o.wrt = {0};
        o.value_out = {v};
        dc::partials(copy, {Array<double>::full(v.shape(), c)}, o);
      }
    }
  });
  Outcomes out;
  for (int it = 0; it < iters; ++it) {
    std::vector<double> g;
    try {
      dc::Tape tape;
      Array<double> y = dc::broadcast(k, u);
      if (it % 2 == 0) y.eval();
      Array<double> loss = dc::sum(y * y);
      if (it % 3 == 0) {
        g = tape.gradient(loss, {u})[0].to_vector();
      } else if (it % 3 == 1) {
        g = tape.value_and_gradient(loss, {u}).gradients[0].to_vector();
      } else {
        Array<double> acc = Array<double>::zeros(u.shape());
        tape.accumulate_gradient(loss, {u}, {acc});
        g = acc.to_vector();
      }
    } catch (const dc::Error&) {
      ++out.errors;
      continue;
    }
    bool exact = g.size() == u_values.size(), zero = true;
    for (size_t i = 0; exact && i < g.size(); ++i) {
      const double x = u_values[i];
      exact = std::fabs(g[i] - 4 * x * (x * x + 0.25)) <= 1e-13 * (1 + std::fabs(g[i]));
    }
    for (double gi : g) zero = zero && gi == 0;
    if (exact) {
      ++out.exact;
    } else {
      ++out.wrong;
      if (zero) ++out.zeros;
    }
  }
  stop.store(true);
  writer.join();
  return out;
}

}  // namespace

TEST_CASE("a column of a shared table per thread: gradients are exact while another thread writes its column") {
  // Before, a write into column 1 counted as a write into column 0 (their
  // address ranges meet), so thread A's gradients were refused at random,
  // computed on thread B away from A's tape, or came back all zeros.
  constexpr int64_t n = 8;
  std::vector<double> table(2 * n);
  for (size_t i = 0; i < table.size(); ++i) table[i] = 0.1 * static_cast<double>(i + 1);
  std::vector<double> u_values(n);
  for (int64_t i = 0; i < n; ++i) u_values[i] = table[2 * i];
  const Array<double> u = Array<double>::view(table.data(), {n}, {2});
  const Array<double> v = Array<double>::view(table.data() + 1, {n}, {2});
  const Outcomes out = DifferentiateWhileOtherWrites(u, u_values, v, 3000);
  CHECK(out.errors == 0);
  CHECK(out.wrong == 0);
  CHECK(out.exact == 3000);
}

TEST_CASE("blocks of a shared table that alias conservatively: each gradient is exact or an Error, never zeros") {
  // Two columns each of a 4-column table: element grids that interleave
  // without sharing an element, which count as aliases (storage_aliases.h),
  // so B's writes stamp A's memory and A's gradient may be refused. It must
  // never be wrong: before, the sweep took each input's key (which holds the
  // stamp) again at the end, missed the adjoint after a write in between,
  // and handed out zeros.
  constexpr int64_t rows = 8;
  std::vector<double> table(4 * rows);
  for (size_t i = 0; i < table.size(); ++i) table[i] = 0.1 * static_cast<double>(i + 1);
  std::vector<double> u_values;
  for (int64_t r = 0; r < rows; ++r) {
    u_values.push_back(table[4 * r]);
    u_values.push_back(table[4 * r + 1]);
  }
  const Array<double> u = Array<double>::view(table.data(), {rows, 2}, {4, 1});
  const Array<double> v = Array<double>::view(table.data() + 2, {rows, 2}, {4, 1});
  const Outcomes out = DifferentiateWhileOtherWrites(u, u_values, v, 6000);
  MESSAGE("exact ", out.exact, ", refused ", out.errors, ", wrong ", out.wrong, " (all zeros: ", out.zeros, ")");
  CHECK(out.wrong == 0);
  CHECK(out.zeros == 0);
}
