// Helpers for the bad-input catalogue: caller buffers that must come back untouched, byte for byte.
//
// Every bad-input case hands the library caller-owned destinations (value and
// partial outputs through PartialsOptions, gradient buffers through
// Tape::accumulate_gradient), provokes one error, asserts its ErrorKind, and
// then checks that not one byte of those buffers changed: "a failed call
// leaves user buffers untouched" (DESIGN.md).
//
// Example:
//   Guarded<double> out({2, 3});                 // filled with a marker pattern
//   std::optional<Error> e = Catch([&] { partials(k, {a, b}, options); });
//   REQUIRE(e);
//   CHECK(e->kind() == ErrorKind::kShape);
//   CHECK(out.untouched());
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "dualcast/dualcast.hpp"

namespace dualcast::bad_inputs {

// A caller buffer viewed as an Array, with a copy of its bytes to compare against.
template <class T>
struct Guarded {
  std::vector<T> buffer;
  std::vector<T> original;
  Array<T> view;

  explicit Guarded(const Shape& shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    buffer.resize(static_cast<size_t>(n) + 1);  // +1: never empty, so the pointer is real
    for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<T>(1000.25 + static_cast<double>(i));
    original = buffer;
    view = Array<T>::view(buffer.data(), shape);
  }
  bool untouched() const {
    return std::memcmp(buffer.data(), original.data(), buffer.size() * sizeof(T)) == 0;
  }
};

// The dualcast::Error `f` throws, or nothing when it returns normally.
template <class F>
std::optional<Error> Catch(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace dualcast::bad_inputs

