// Tests of Array<T>: creation, views of user memory, layout changes, printing, errors.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "dualcast/array.hpp"
#include "jit/error.h"

namespace dualcast {
namespace {

template <class F>
ErrorKind KindOf(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  FAIL("no dualcast::Error thrown");
  return ErrorKind::kInternal;
}

TEST_CASE("from/to_vector round trip, shape and strides") {
  auto a = Array<float>::from({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(a.shape() == Shape{2, 3});
  CHECK(a.strides() == Shape{3, 1});
  CHECK(a.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(a.at({1, 0}) == 4);
  CHECK(reinterpret_cast<uintptr_t>(a.data()) % 64 == 0);
  CHECK(KindOf([] { Array<float>::from({1, 2, 3}, {2, 2}); }) == ErrorKind::kShape);
}

TEST_CASE("zeros, ones, full, arange, scalar, size-0") {
  CHECK(Array<double>::zeros({3}).to_vector() == std::vector<double>{0, 0, 0});
  CHECK(Array<double>::ones({2}).to_vector() == std::vector<double>{1, 1});
  CHECK(Array<float>::full({2}, 2.5f).to_vector() == std::vector<float>{2.5f, 2.5f});
  CHECK(Array<float>::arange(4).to_vector() == std::vector<float>{0, 1, 2, 3});
  auto s = Array<double>::scalar(7);
  CHECK(s.rank() == 0);
  CHECK(s.item() == 7);
  auto e = Array<float>::zeros({0, 3});
  CHECK(e.size() == 0);
  CHECK(e.to_vector().empty());
  CHECK(KindOf([] { Array<float>::zeros({-1}); }) == ErrorKind::kShape);
}

TEST_CASE("uniform and normal are seeded, in range, with the right moments") {
  auto u1 = Array<float>::uniform({10000}, 1), u2 = Array<float>::uniform({10000}, 1);
  auto u3 = Array<float>::uniform({10000}, 2);
  CHECK(u1.to_vector() == u2.to_vector());
  CHECK(u1.to_vector() != u3.to_vector());
  double mean = 0;
  for (float v : u1.to_vector()) {
    CHECK(v >= 0.0f);
    CHECK(v < 1.0f);
    mean += v;
  }
  CHECK(mean / 10000 == doctest::Approx(0.5).epsilon(0.02));
  auto n = Array<double>::normal({20001}, 3, 1.0, 2.0).to_vector();
  double m = std::accumulate(n.begin(), n.end(), 0.0) / n.size(), var = 0;
  for (double v : n) var += (v - m) * (v - m);
  var /= n.size();
  CHECK(m == doctest::Approx(1.0).epsilon(0.05));
  CHECK(std::sqrt(var) == doctest::Approx(2.0).epsilon(0.03));
}

TEST_CASE("views read and write user memory in place, strided") {
  std::vector<double> buf = {1, 2, 3, 4, 5, 6};
  auto v = Array<double>::view(buf.data(), {3, 2}, {1, 3});  // the transpose of a 2x3
  CHECK(v.is_view());
  CHECK(v.to_vector() == std::vector<double>{1, 4, 2, 5, 3, 6});
  v.assign({10, 40, 20, 50, 30, 60});
  CHECK(buf == std::vector<double>{10, 20, 30, 40, 50, 60});
  const std::vector<double> cbuf = {1, 2};
  auto cv = Array<double>::view(cbuf.data(), {2});
  CHECK(cv.is_read_only());
  CHECK(KindOf([&] { cv.assign({3, 4}); }) == ErrorKind::kInvalidArgument);
  CHECK(cbuf == std::vector<double>{1, 2});
  CHECK(KindOf([] { Array<float>::view(static_cast<float*>(nullptr), {2}); }) ==
        ErrorKind::kInvalidArgument);
  alignas(8) char raw[16] = {};
  CHECK(KindOf([&] { Array<float>::view(reinterpret_cast<float*>(raw + 1), {2}); }) ==
        ErrorKind::kInvalidArgument);
  CHECK(KindOf([&] { Array<double>::view(buf.data(), {2, 3}, {1}); }) == ErrorKind::kShape);
}

TEST_CASE("assign refuses a view whose elements share memory and writes nothing") {
  // Stride 0: three elements, one double. Writing 1, 2, 3 would keep only 3
  // (partials() refuses such a destination the same way).
  double cell = 7;
  auto v = Array<double>::view(&cell, {3}, {0});
  try {
    v.assign({1, 2, 3});
    FAIL("assign accepted a stride-0 view");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
    const std::string what = e.what();
    CHECK(what.find("Array::assign") != std::string::npos);
    CHECK(what.find("shape [3] and strides [0]") != std::string::npos);
    CHECK(what.find("share memory") != std::string::npos);
  }
  CHECK(cell == 7);
  // Interleaved strides: [[0, 1], [1, 2]] address buf[1] twice.
  std::vector<double> buf = {5, 6, 7};
  auto w = Array<double>::view(buf.data(), {2, 2}, {1, 1});
  CHECK(KindOf([&] { w.assign({1, 2, 3, 4}); }) == ErrorKind::kInvalidArgument);
  CHECK(buf == std::vector<double>{5, 6, 7});
  // Distinct elements (a strided view) are written as before.
  auto every_other = Array<double>::view(buf.data(), {2}, {2});
  every_other.assign({1, 2});
  CHECK(buf == std::vector<double>{1, 6, 2});
}

TEST_CASE("transpose and reshape are views; reshape infers -1; bad ones are clear errors") {
  auto a = Array<float>::from({1, 2, 3, 4, 5, 6}, {2, 3});
  auto t = a.transpose();
  CHECK(t.shape() == Shape{3, 2});
  CHECK(t.to_vector() == std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(t.data() == a.data());  // shares memory
  auto r = a.reshape({3, -1});
  CHECK(r.shape() == Shape{3, 2});
  CHECK(r.data() == a.data());
  auto tr = t.reshape({6});  // not contiguous: a copy
  CHECK(tr.to_vector() == std::vector<float>{1, 4, 2, 5, 3, 6});
  auto p = Array<float>::zeros({2, 3, 4}).transpose({1, 2, 0});
  CHECK(p.shape() == Shape{3, 4, 2});
  try {
    a.reshape({4, 2});
    FAIL("reshape accepted a size change");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "reshape: cannot reshape an array of shape [2, 3] (6 elements) into shape [4, 2]");
  }
  CHECK(KindOf([&] { a.transpose({0, 0}); }) == ErrorKind::kShape);
}

TEST_CASE("reshape of a size-0 array gives the new shape (NumPy: np.zeros((2, 0, 3)).reshape(0, 6))") {
  // A fresh size-0 array once counted as strided, so reshape copied it and
  // reshaped the copy, forever (a stack overflow).
  auto e = Array<double>::zeros({2, 0, 3});
  CHECK(e.reshape({0, 6}).shape() == Shape{0, 6});
  CHECK(e.reshape({-1}).shape() == Shape{0});
  CHECK(e.reshape({3, 0, 2}).to_vector().empty());
  CHECK(e.transpose().reshape({6, 0}).shape() == Shape{6, 0});
  auto f = Array<float>::zeros({0});
  CHECK(f.reshape({0, 1}).shape() == Shape{0, 1});
}

TEST_CASE("printing is NumPy-like and elides large arrays") {
  auto a = Array<float>::from({1, 2.5f, 3, 4}, {2, 2});
  CHECK(a.str() == "array([[1, 2.5],\n       [3, 4]], dtype=float32)");
  CHECK(Array<double>::scalar(3).str() == "array(3, dtype=float64)");
  // Empty arrays of rank > 1 name their shape, as NumPy prints them (rows of
  // "[]" for shape (1e12, 0) never ended, and the last 2 of (3, 0, 2) was lost).
  CHECK(Array<double>::zeros({1000000000000, 0}).str() == "array([], shape=(1000000000000, 0), dtype=float64)");
  CHECK(Array<float>::zeros({3, 0, 2}).str() == "array([], shape=(3, 0, 2), dtype=float32)");
  CHECK(Array<float>::zeros({0}).str() == "array([], dtype=float32)");
  std::string big = Array<float>::arange(5000).str();
  CHECK(big == "array([0, 1, 2, ..., 4997, 4998, 4999], dtype=float32)");
}

TEST_CASE("printing tells different values apart: whole numbers in full, else 8 significant digits") {
  // %.6g printed {1000001, 1000002} as "1e+06, 1e+06" and 1 + 1e-9 as "1".
  // The references are NumPy's digits (np.array(...) repr, and int(np.float32(v))
  // for the exact value of a float32 whole number).
  CHECK(Array<double>::from({1000001, 1000002}, {2}).str() ==
        "array([1000001, 1000002], dtype=float64)");
  CHECK(Array<float>::from({16777216, 16777218}, {2}).str() ==
        "array([16777216, 16777218], dtype=float32)");
  CHECK(Array<double>::from({1, 1 + 1e-9}, {2}).str() == "array([1, 1.0000000], dtype=float64)");
  CHECK(element_str(9007199254740993.0) == "9007199254740992");  // the double nearest 2^53 + 1
  CHECK(element_str(3e10f) == "30000001024");
  CHECK(element_str(-0.0) == "-0");
  // Shortest round trip when it has at most 8 digits, in the element's own type.
  CHECK(element_str(0.1) == "0.1");
  CHECK(element_str(0.1f) == "0.1");
  CHECK(element_str(1.0f / 3) == "0.33333334");
  CHECK(element_str(3.4028235e38f) == "3.4028235e+38");
  CHECK(element_str(1e-5) == "1e-05");
  CHECK(element_str(5e-324) == "5e-324");
  CHECK(element_str(1e-45f) == "1e-45");  // the least float32 subnormal
  CHECK(element_str(1e16) == "1e+16");
  // Longer ones are rounded to 8 and keep their zeros; a non-integer keeps one decimal.
  CHECK(element_str(1.0 / 3) == "0.33333333");
  CHECK(element_str(0.1 + 0.2) == "0.30000000");
  CHECK(element_str(1e16 + 2) == "1.0000000e+16");
  CHECK(element_str(12345678.5) == "12345678.5");
  CHECK(element_str(123456789.125) == "123456789.1");
  CHECK(element_str(-std::numeric_limits<double>::quiet_NaN()) == "nan");
  CHECK(element_str(-std::numeric_limits<float>::infinity()) == "-inf");
}

TEST_CASE("a CUDA device without a driver reports why and arrays stay on the CPU") {
  Device d = Device::cuda();
  if (!d.available()) {
    CHECK(d.unavailable_reason().rfind("no CUDA device", 0) == 0);
    CHECK(KindOf([] { Array<float>::zeros({2}).to(Device::cuda()); }) == ErrorKind::kDevice);
  }
  CHECK(Device::cpu().available());
  CHECK(Device::cuda(1).name() == "cuda:1");
}

TEST_CASE("an empty handle is a clear error") {
  Array<float> none;
  CHECK_FALSE(none.valid());
  CHECK(KindOf([&] { (void)none.shape(); }) == ErrorKind::kInvalidArgument);
}

}  // namespace
}  // namespace dualcast
