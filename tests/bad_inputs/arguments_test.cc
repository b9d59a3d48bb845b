// Bad-input catalogue, arguments: values a parameter does not take, and empty (default-constructed) objects.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <utility>

#include "bad_inputs/bad_inputs.h"

namespace dualcast::bad_inputs {
namespace {

// NumPy refuses a negative scale ("scale < 0"); dualcast returned mirrored
// samples for -1 and NaNs for NaN.
TEST_CASE("normal with a negative or NaN stddev: kInvalidArgument naming it") {
  for (double stddev : {-1.0, -1e-300, std::nan("")}) {
    CAPTURE(stddev);
    std::optional<Error> e = Catch([&] { Array<double>::normal({4}, 1, 0.0, stddev); });
    REQUIRE(e);
    CHECK(e->kind() == ErrorKind::kInvalidArgument);
    CHECK(Contains(e->what(), "Array::normal"));
    CHECK(Contains(e->what(), "stddev"));
  }
  CHECK(Catch([] { Array<float>::normal({4}, 1, 0.0f, -2.0f); }).has_value());
  // stddev 0 is a constant array, as in NumPy.
  CHECK(Array<double>::normal({3}, 1, 2.5, 0.0).to_vector() == std::vector<double>{2.5, 2.5, 2.5});
}

// Every sample was lo (the clamp that keeps [lo, hi) took them all) when lo
// >= hi or a bound was infinite, and NaN for a NaN bound.
TEST_CASE("uniform with lo >= hi or a bound not finite: kInvalidArgument naming both") {
  const double inf = std::numeric_limits<double>::infinity();
  for (auto [lo, hi] : {std::pair{5.0, 1.0}, {1.0, 1.0}, {0.0, inf}, {-inf, 0.0}, {std::nan(""), 1.0}}) {
    CAPTURE(lo);
    CAPTURE(hi);
    std::optional<Error> e = Catch([&] { Array<double>::uniform({3}, 1, lo, hi); });
    REQUIRE(e);
    CHECK(e->kind() == ErrorKind::kInvalidArgument);
    CHECK(Contains(e->what(), "Array::uniform"));
    CHECK(Contains(e->what(), "lo < hi"));
  }
  for (double v : Array<double>::uniform({100}, 7, -2.0, 3.0).to_vector()) CHECK((v >= -2.0 && v < 3.0));
}

// A default-constructed std::function reached the first broadcast, where
// calling it threw std::bad_function_call (not a dualcast::Error).
TEST_CASE("a Kernel made from an empty trace function: kInvalidArgument naming the kernel") {
  std::optional<Error> e = Catch([] { Kernel k("emptyfn", Kernel::TraceFn{}); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kInvalidArgument);
  CHECK(Contains(e->what(), "Kernel 'emptyfn'"));
}

// A hand-written trace function that ignores its argument types was refused
// later by Execute as an internal error ("Execute was given 2").
TEST_CASE("a trace function whose inputs do not match the call: kArity or kType naming the kernel") {
  auto one_input = [](jit::Type t) {
    return [t](const std::string& name, std::span<const jit::Type>) {
      jit::Function f(name);
      jit::Builder b(f);
      b.Return({b.Input(t)});
      return f;
    };
  };
  const auto x = Array<double>::ones({2});
  std::optional<Error> e = Catch([&] { broadcast(Kernel("fewin", one_input(jit::Type::kF64)), x, x).eval(); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kArity);
  CHECK(Contains(e->what(), "fewin: called with 2 arguments"));
  e = Catch([&] { broadcast(Kernel("wrongty", one_input(jit::Type::kF32)), x).eval(); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kType);
  CHECK(Contains(e->what(), "wrongty: argument 1 is f64"));
  CHECK(x.to_vector() == std::vector<double>{1, 1});
}

// A trace function with no outputs made broadcast_n return no arrays.
TEST_CASE("a kernel whose trace function returns no outputs: kArity naming it") {
  std::optional<Error> e;
  const Kernel none("no_outputs", [](const std::string& name, std::span<const jit::Type> types) {
    jit::Function f(name);
    jit::Builder b(f);
    for (jit::Type t : types) b.Input(t);
    b.Return({});
    return f;
  });
  e = Catch([&] { broadcast_n(none, Array<double>::ones({2})); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kArity);
  CHECK(Contains(e->what(), "no_outputs: the kernel's trace function returned no outputs"));
}

// A value outside the enum (from a cast) was accepted and behaved like some mode.
TEST_CASE("Tape with a PartialsMode outside the enum: kInvalidArgument, and the refused tape is not left recording") {
  std::optional<Error> e = Catch([] { Tape tape(static_cast<PartialsMode>(42)); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kInvalidArgument);
  CHECK(Contains(e->what(), "PartialsMode 42"));
  // The refused tape did not stay registered: a later tape works, and no tape records now.
  auto x = Array<double>::from({1, 2}, {2});
  Tape tape(PartialsMode::kRecompute);
  CHECK(tape.gradient(sum(x * x), {x})[0].to_vector() == std::vector<double>{2, 4});
}

// kernel.hpp says using an empty handle throws; name() returned "<empty kernel>".
TEST_CASE("an empty Kernel handle: name() throws kInvalidArgument like every other use") {
  Kernel empty;
  CHECK_FALSE(empty.valid());
  std::optional<Error> e = Catch([&] { (void)empty.name(); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kInvalidArgument);
  CHECK(Contains(e->what(), "empty dualcast::Kernel handle"));
  auto a = Array<double>::from({1, 2}, {2});
  for (auto use : {+[](const Kernel& k, const Array<double>& x) { broadcast(k, x); },
                   +[](const Kernel& k, const Array<double>& x) { partials(k, {x}); }}) {
    e = Catch([&] { use(empty, a); });
    REQUIRE(e);
    CHECK(e->kind() == ErrorKind::kInvalidArgument);
    CHECK(Contains(e->what(), "empty dualcast::Kernel handle"));
  }
}

// The message began with the (empty) kernel name: ": output 0 does not exist".
TEST_CASE("a default-constructed Partials: kInvalidArgument saying it is empty") {
  Partials<double> p;
  CHECK(p.num_outputs() == 0);
  for (auto use : {+[](const Partials<double>& q) { q.value(0); },
                   +[](const Partials<double>& q) { q.d(0, 0); },
                   +[](const Partials<double>& q) { (void)q.structurally_zero(0, 0); }}) {
    std::optional<Error> e = Catch([&] { use(p); });
    REQUIRE(e);
    CHECK(e->kind() == ErrorKind::kInvalidArgument);
    CHECK(Contains(e->what(), "empty (default-constructed) Partials"));
    CHECK(std::string(e->what()).rfind(": ", 0) != 0);
  }
  // A computed one still names its kernel for an output out of range.
  Kernel k = kernel("twice", [](auto x) { return x * 2; });
  Partials<double> q = partials(k, {Array<double>::from({1, 2}, {2})});
  std::optional<Error> e = Catch([&] { q.value(1); });
  REQUIRE(e);
  CHECK(Contains(e->what(), "twice: output 1 does not exist"));
}

}  // namespace
}  // namespace dualcast::bad_inputs
