// Tests of Execute's reduced and accumulating outputs (output_shapes, accumulate, iteration_shape) against a double reference.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dualcast/detail/execute.hpp"
#include "jit/codegen/broadcast_layout.h"
#include "jit/cpu/thread_pool.h"
#include "jit/error.h"
#include "jit/ir/ir.h"
#include "runtime/element_access.h"

namespace dualcast::detail {
namespace {

using Shape = std::vector<int64_t>;

// f(x, y, z) = (x * y + z, x - z): two outputs, so two reduce patterns can share one kernel.
std::shared_ptr<const jit::Function> TestFunction(DType dtype) {
  const jit::Type t = dtype == DType::kF32 ? jit::Type::kF32 : jit::Type::kF64;
  auto f = std::make_shared<jit::Function>("reduce_test");
  jit::Builder b(*f);
  jit::ValueId x = b.Input(t), y = b.Input(t), z = b.Input(t);
  b.Return({b.Add(b.Mul(x, y), z), b.Sub(x, z)});
  return f;
}

using test::At;
using test::Count;

// A contiguous array of `shape` with distinct, sign-mixed values.
std::shared_ptr<ArrayImpl> Filled(DType dtype, const Shape& shape, int seed) {
  return test::FilledWith(dtype, shape,
                          [&](int64_t i) { return std::sin(0.37 * static_cast<double>(i) + seed) * (1 + seed % 3); });
}

// Offset (elements) of full-shape index `idx` in array `a`, broadcast NumPy-style.
int64_t BroadcastOffset(const ArrayImpl& a, const Shape& idx) {
  int64_t off = 0;
  const size_t lead = idx.size() - a.shape.size();
  for (size_t k = 0; k < a.shape.size(); ++k) {
    if (a.shape[k] != 1) off += idx[lead + k] * a.strides[k];
  }
  return off;
}

// The reference: each element's value in the element type (as the kernel
// computes it), summed in double into `target`'s elements, row-major.
std::vector<double> Reference(const std::vector<std::shared_ptr<ArrayImpl>>& in, const Shape& full,
                              const Shape& target, int output) {
  std::vector<double> sums(static_cast<size_t>(Count(target)), 0.0);
  const int64_t n = Count(full);
  Shape idx(full.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rest = flat;
    for (size_t d = full.size(); d-- > 0;) {
      idx[d] = rest % full[d];
      rest /= full[d];
    }
    double v;
    const double x = At(*in[0], BroadcastOffset(*in[0], idx));
    const double y = At(*in[1], BroadcastOffset(*in[1], idx));
    const double z = At(*in[2], BroadcastOffset(*in[2], idx));
    if (in[0]->dtype == DType::kF32) {
      const float xf = static_cast<float>(x), yf = static_cast<float>(y), zf = static_cast<float>(z);
      v = output == 0 ? static_cast<double>(xf * yf + zf) : static_cast<double>(xf - zf);
    } else {
      v = output == 0 ? x * y + z : x - z;
    }
    int64_t t = 0;
    const size_t lead = full.size() - target.size();
    for (size_t k = 0; k < target.size(); ++k) t = t * target[k] + (target[k] == 1 ? 0 : idx[lead + k]);
    sums[static_cast<size_t>(t)] += v;
  }
  return sums;
}

// Every target shape for `full`: each subset of dims set to 1, and the same
// with the leading 1s dropped (down to (1,); the empty shape means "not
// reduced" in ExecuteOptions, so a total sum is stored as (1,) or (1, 1, ...)).
std::vector<Shape> Targets(const Shape& full) {
  std::vector<Shape> out;
  const size_t r = full.size();
  for (uint32_t mask = 0; mask < (1u << r); ++mask) {
    Shape t = full;
    for (size_t d = 0; d < r; ++d) {
      if (mask >> d & 1) t[d] = 1;
    }
    out.push_back(t);
    size_t lead = 0;
    while (lead + 1 < t.size() && t[lead] == 1 && full[lead] != 1) ++lead;
    if (lead > 0) out.push_back(Shape(t.begin() + static_cast<std::ptrdiff_t>(lead), t.end()));
  }
  return out;
}

// Input shapes: the full shape with the dims in `mask` set to 1.
Shape WithOnes(const Shape& full, uint32_t mask) {
  Shape s = full;
  for (size_t d = 0; d < s.size(); ++d) {
    if (mask >> d & 1) s[d] = 1;
  }
  return s;
}

void CheckClose(const ArrayImpl& got, const std::vector<double>& want, const std::vector<double>& base,
                double tol, const std::string& what) {
  REQUIRE(got.size() == static_cast<int64_t>(want.size()));
  int64_t i = 0;
  ForEachElement(got.shape, got.strides, [&](int64_t linear, int64_t off) {
    double expected = want[static_cast<size_t>(linear)];
    if (got.dtype == DType::kF32) expected = static_cast<float>(expected);
    if (!base.empty()) {
      expected = got.dtype == DType::kF32
                     ? static_cast<double>(static_cast<float>(base[static_cast<size_t>(linear)]) +
                                           static_cast<float>(expected))
                     : base[static_cast<size_t>(linear)] + expected;
    }
    const double v = At(got, off);
    if (!(std::fabs(v - expected) <= tol * (1 + std::fabs(expected)))) {
      FAIL_CHECK(what << " element " << linear << ": got " << v << ", want " << expected);
    }
    ++i;
  });
}

void RunCase(DType dtype, const Shape& full, uint32_t in_mask_seed, bool accumulate) {
  const uint32_t all = (1u << full.size()) - 1;
  // Three inputs, each broadcast along some dims (never all three along the same one only by luck).
  std::vector<std::shared_ptr<ArrayImpl>> in;
  for (int k = 0; k < 3; ++k) {
    const uint32_t mask = full.empty() ? 0 : ((in_mask_seed >> (k * 3)) & all);
    in.push_back(Filled(dtype, WithOnes(full, mask), k + 1));
  }
  const double tol = dtype == DType::kF32 ? 2e-6 : 1e-13;
  auto fn = TestFunction(dtype);
  const std::vector<Shape> targets = Targets(full);
  for (size_t ti = 0; ti < targets.size(); ++ti) {
    const Shape& t0 = targets[ti];
    const Shape& t1 = targets[(ti * 7 + 3) % targets.size()];  // a second, different pattern
    ExecuteOptions o;
    o.output_shapes = {t0, t1};
    o.iteration_shape = full;
    std::vector<double> base0, base1;
    if (accumulate) {
      auto d0 = Filled(dtype, t0, 7), d1 = Filled(dtype, t1, 8);
      for (int64_t i = 0; i < d0->size(); ++i) base0.push_back(At(*d0, i));
      for (int64_t i = 0; i < d1->size(); ++i) base1.push_back(At(*d1, i));
      o.destinations = {d0, d1};
      o.accumulate = {true, true};
    }
    auto outs = Execute("reduce_test", fn, in, o);
    const std::string what = absl::StrCat(DTypeName(dtype), " full ", jit::FormatShape(full),
                                          " inputs ", jit::FormatShape(in[0]->shape), ",",
                                          jit::FormatShape(in[1]->shape), ",",
                                          jit::FormatShape(in[2]->shape), " accumulate ",
                                          accumulate);
    REQUIRE(outs.size() == 2);
    CHECK(outs[0]->shape == t0);
    CHECK(outs[1]->shape == t1);
    CheckClose(*outs[0], Reference(in, full, t0, 0), base0, tol,
               absl::StrCat(what, " -> ", jit::FormatShape(t0)));
    CheckClose(*outs[1], Reference(in, full, t1, 1), base1, tol,
               absl::StrCat(what, " -> ", jit::FormatShape(t1)));
  }
}

TEST_CASE("reduced outputs: every axes combination, rank 0-3, odd and zero sizes") {
  const std::vector<Shape> fulls = {{},        {1},       {37},     {0},       {5, 19},
                                    {1, 23},   {19, 1},   {0, 5},   {4, 0},    {3, 7, 11},
                                    {9, 1, 33}, {2, 17, 5}, {3, 0, 2}, {65, 3, 1}};
  for (DType dtype : {DType::kF32, DType::kF64}) {
    for (const Shape& full : fulls) {
      for (uint32_t seed : {0u, 0b001'010'100u, 0b110'011'101u, 0b000'111'000u}) {
        for (bool acc : {false, true}) RunCase(dtype, full, seed, acc);
      }
    }
  }
}

// Repeated launches hit this thread's launch plans (runtime/launch_plan.h),
// keyed on the function, the operands' shapes and strides, and the requested
// output and iteration shapes. Interleaving the reduce patterns of one
// function over same-shaped inputs, with fresh data each round, must give
// every pattern its own plan: a plan answering for another pattern's shapes,
// or an output left from an earlier launch, fails against the reference.
TEST_CASE("reduced outputs: repeated, interleaved reduce patterns reuse launch plans correctly") {
  auto fn = TestFunction(DType::kF32);
  const Shape full = {6, 9};
  const std::vector<std::vector<Shape>> patterns = {
      {{1, 9}, {6, 1}}, {{6, 1}, {1, 9}}, {{1}, {}}, {{}, {1, 1}}, {{6, 9}, {9}}, {}};
  for (int round = 0; round < 4; ++round) {
    std::vector<std::shared_ptr<ArrayImpl>> in = {Filled(DType::kF32, full, round + 1),
                                                  Filled(DType::kF32, {1, 9}, round + 5),
                                                  Filled(DType::kF32, {6, 1}, round + 9)};
    for (const std::vector<Shape>& outs_wanted : patterns) {
      ExecuteOptions o;
      o.output_shapes = outs_wanted;
      if (round % 2 == 1) o.iteration_shape = full;  // the same launch, keyed differently
      auto outs = Execute("reduce_test", fn, in, o);
      for (int m = 0; m < 2; ++m) {
        const Shape want = outs_wanted.empty() || outs_wanted[m].empty() ? full : outs_wanted[m];
        CHECK(outs[m]->shape == want);
        CheckClose(*outs[m], Reference(in, full, want, m), {}, 2e-6,
                   absl::StrCat("round ", round, " output ", m, " -> ", jit::FormatShape(want)));
      }
    }
  }
}

TEST_CASE("reduced outputs: the iteration shape comes from the inputs when not given") {
  auto fn = TestFunction(DType::kF64);
  std::vector<std::shared_ptr<ArrayImpl>> in = {Filled(DType::kF64, {6, 1}, 1),
                                                Filled(DType::kF64, {1, 9}, 2),
                                                Filled(DType::kF64, {1}, 3)};
  ExecuteOptions o;
  o.output_shapes = {{1, 9}, {}};
  auto outs = Execute("reduce_test", fn, in, o);
  CHECK(outs[1]->shape == Shape{6, 9});
  CheckClose(*outs[0], Reference(in, {6, 9}, {1, 9}, 0), {}, 1e-13, "column sums");
  CheckClose(*outs[1], Reference(in, {6, 9}, {6, 9}, 1), {}, 1e-13, "unreduced");
}

TEST_CASE("reduced outputs: a strided destination is written in place") {
  auto fn = TestFunction(DType::kF32);
  std::vector<std::shared_ptr<ArrayImpl>> in = {Filled(DType::kF32, {40, 30}, 1),
                                                Filled(DType::kF32, {40, 1}, 2),
                                                Filled(DType::kF32, {30}, 3)};
  auto big = Filled(DType::kF32, {30, 3}, 4);
  auto column = std::make_shared<ArrayImpl>(*big);  // column 1 of big: shape (1, 30), stride 3
  column->shape = {1, 30};
  column->strides = {0, 3};
  column->offset = 1;
  const std::vector<double> before = {At(*big, 0), At(*big, 2), At(*big, 3 * 29 + 2)};
  ExecuteOptions o;
  o.output_shapes = {{1, 30}, {40, 1}};
  o.destinations = {column, nullptr};
  auto outs = Execute("reduce_test", fn, in, o);
  CHECK(outs[0] == column);
  CheckClose(*column, Reference(in, {40, 30}, {1, 30}, 0), {}, 2e-6, "strided column");
  CheckClose(*outs[1], Reference(in, {40, 30}, {40, 1}, 1), {}, 2e-6, "rows");
  CHECK(At(*big, 0) == before[0]);  // the other columns are untouched
  CHECK(At(*big, 2) == before[1]);
  CHECK(At(*big, 3 * 29 + 2) == before[2]);
}

// A transposed view (strides swapped) of a fresh (cols, rows) array: shape (rows, cols), not contiguous.
std::shared_ptr<ArrayImpl> Transposed(DType dtype, int64_t rows, int64_t cols, int seed) {
  auto t = Filled(dtype, {cols, rows}, seed);
  t->shape = {rows, cols};
  t->strides = {1, rows};
  return t;
}

TEST_CASE("reduced outputs: strided (gathered) inputs, an accumulating strided destination, unwritten outputs") {
  for (DType dtype : {DType::kF32, DType::kF64}) {
    const double tol = dtype == DType::kF32 ? 2e-6 : 1e-13;
    auto fn = TestFunction(dtype);
    std::vector<std::shared_ptr<ArrayImpl>> in = {Transposed(dtype, 21, 35, 1),
                                                  Filled(dtype, {21, 1}, 2),
                                                  Transposed(dtype, 21, 35, 3)};
    // Output 1 not reduced, added into a transposed destination (gather + scatter);
    // output 2 column sums.
    auto dest = Transposed(dtype, 21, 35, 4);
    std::vector<double> base;
    ForEachElement(dest->shape, dest->strides, [&](int64_t, int64_t off) { base.push_back(At(*dest, off)); });
    ExecuteOptions o;
    o.output_shapes = {{}, {1, 35}};
    o.destinations = {dest, nullptr};
    o.accumulate = {true, false};
    auto outs = Execute("reduce_test", fn, in, o);
    CheckClose(*dest, Reference(in, {21, 35}, {21, 35}, 0), base, tol, "accumulate, strided");
    CheckClose(*outs[1], Reference(in, {21, 35}, {1, 35}, 1), {}, tol, "columns of strided inputs");
    // Only output 2 written, reduced to a scalar-like (1, 1).
    ExecuteOptions only;  // flags of an unwritten output are ignored
    only.write = {false, true};
    only.output_shapes = {{}, {1, 1}};
    only.accumulate = {true, false};
    outs = Execute("reduce_test", fn, in, only);
    CHECK(outs[0] == nullptr);
    CheckClose(*outs[1], Reference(in, {21, 35}, {1, 1}, 1), {}, tol, "total of strided inputs");
  }
}

std::vector<char> Bytes(const ArrayImpl& a) {
  std::vector<char> b(static_cast<size_t>(a.size()) * SizeOf(a.dtype));
  if (!b.empty()) std::memcpy(b.data(), a.data(), b.size());
  return b;
}

TEST_CASE("reduced outputs are bitwise the same under 1, 2 and 8 threads") {
  const std::vector<std::pair<Shape, std::vector<Shape>>> cases = {
      {{200001}, {{1}, {200001}}},
      {{301, 257}, {{1, 257}, {301, 1}}},
      {{1025, 77}, {{1}, {1025, 1}}},
      {{7, 130, 129}, {{7, 1, 1}, {1, 130, 1}}},
      {{5000, 3, 5}, {{1, 3, 5}, {3, 1}}},
      {{1030, 257}, {{1, 257}, {1030, 257}}},       // column sums in blocks of rows
      {{9, 301, 130}, {{9, 1, 130}, {1, 1, 130}}},  // the same inside an outer dim
      {{40, 50001}, {{1, 50001}, {40, 1}}},   // wide partials, finished in parallel
      {{3, 70001}, {{1, 70001}, {3, 70001}}},  // partials capped by memory: one chunk
  };
  for (DType dtype : {DType::kF32, DType::kF64}) {
    auto fn = TestFunction(dtype);
    for (const auto& [full, targets] : cases) {
      std::vector<std::shared_ptr<ArrayImpl>> in = {Filled(dtype, full, 1),
                                                    Filled(dtype, WithOnes(full, 1), 2),
                                                    Filled(dtype, full, 3)};
      std::vector<std::vector<char>> first;
      for (int threads : {1, 2, 8}) {
        jit::ThreadPool pool(threads);
        jit::ScopedThreadPool scope(pool);
        for (bool acc : {false, true}) {
          ExecuteOptions o;
          o.output_shapes = targets;
          if (acc) {
            o.destinations = {Filled(dtype, targets[0], 5), Filled(dtype, targets[1], 6)};
            o.accumulate = {true, true};
          }
          auto outs = Execute("reduce_test", fn, in, o);
          for (int m = 0; m < 2; ++m) {
            if (threads == 1) {
              first.push_back(Bytes(*outs[m]));
              if (!acc) {
                CheckClose(*outs[m], Reference(in, full, targets[m], m), {},
                           dtype == DType::kF32 ? 1e-5 : 1e-12, "large");
              }
            } else {
              CHECK_MESSAGE(Bytes(*outs[m]) == first[(acc ? 2 : 0) + m],
                            DTypeName(dtype) << " " << jit::FormatShape(full) << " output " << m
                                             << " differs under " << threads << " threads");
            }
          }
        }
      }
    }
  }
}

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

TEST_CASE("reduced outputs: errors name the kernel, the output and both shapes; nothing is written") {
  auto fn = TestFunction(DType::kF64);
  std::vector<std::shared_ptr<ArrayImpl>> in = {Filled(DType::kF64, {4, 5}, 1),
                                                Filled(DType::kF64, {4, 5}, 2),
                                                Filled(DType::kF64, {4, 5}, 3)};
  auto good = Filled(DType::kF64, {4, 1}, 9);
  const std::vector<char> good_before = Bytes(*good);
  auto wrong = Filled(DType::kF64, {1, 5}, 9);
  ExecuteOptions o;
  o.output_shapes = {{4, 1}, {4, 1}};
  o.destinations = {good, wrong};
  std::string msg = MessageOf([&] { Execute("kern", fn, in, o); }, ErrorKind::kShape);
  CHECK(msg.find("kern") != std::string::npos);
  CHECK(msg.find("output 2") != std::string::npos);
  CHECK(msg.find("[1, 5]") != std::string::npos);
  CHECK(msg.find("[4, 1]") != std::string::npos);
  CHECK(Bytes(*good) == good_before);

  ExecuteOptions bad_shape;
  bad_shape.output_shapes = {{3, 1}, {}};
  msg = MessageOf([&] { Execute("kern", fn, in, bad_shape); }, ErrorKind::kShape);
  CHECK(msg.find("[3, 1]") != std::string::npos);
  CHECK(msg.find("[4, 5]") != std::string::npos);

  ExecuteOptions bad_iter;
  bad_iter.iteration_shape = {4, 6};
  msg = MessageOf([&] { Execute("kern", fn, in, bad_iter); }, ErrorKind::kShape);
  CHECK(msg.find("kern") != std::string::npos);

  ExecuteOptions overlap;  // destination aliases an input
  overlap.output_shapes = {{4, 1}, {}};
  auto alias = std::make_shared<ArrayImpl>(*in[0]);
  alias->shape = {4, 1};
  alias->strides = {5, 1};
  overlap.destinations = {alias, nullptr};
  overlap.accumulate = {true, false};
  msg = MessageOf([&] { Execute("kern", fn, in, overlap); }, ErrorKind::kInvalidArgument);
  CHECK(msg.find("overlaps the memory of argument 1") != std::string::npos);
}

}  // namespace
}  // namespace dualcast::detail
