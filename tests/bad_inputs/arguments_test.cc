// Bad-input catalogue, arguments: values a parameter does not take, and empty (default-constructed) objects.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

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

}  // namespace
}  // namespace dualcast::bad_inputs
