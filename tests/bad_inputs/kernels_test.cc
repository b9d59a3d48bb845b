// Bad-input catalogue, kernels: wrong arity, non-float results (compile time), unbounded branching.
#include <doctest/doctest.h>

#include <array>
#include <string>
#include <tuple>

#include "bad_inputs/bad_inputs.h"
#include "jit/trace/trace.h"

namespace dualcast::bad_inputs {
namespace {

TEST_CASE("kernel with the wrong arity: kArity naming the arities it takes; buffers untouched") {
  Kernel two = kernel("two_args", [](auto x, auto y) { return x * y; });
  auto a = Array<double>::uniform({3}, 1);
  std::optional<Error> e = Catch([&] { broadcast(two, a, a, a); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kArity);
  CHECK(Contains(e->what(), "two_args"));
  CHECK(Contains(e->what(), "2"));

  Guarded<double> value({3}), d0({3}), d1({3}), d2({3});
  PartialsOptions<double> o;
  o.value_out = {value.view};
  o.partial_out = {d0.view, d1.view, d2.view};
  e = Catch([&] { partials(two, {a, a.copy(), a.copy()}, o); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kArity);
  CHECK(value.untouched());
  CHECK(d0.untouched());
  CHECK(d1.untouched());
  CHECK(d2.untouched());
}

// A kernel must return float scalars (or a tuple/array of them). That is a
// compile-time property: shown here with the concept the tracer checks
// (jit::KernelResult), so the test compiles and documents the rule instead of
// being a build that must fail. dualcast::kernel/Trace static_assert on it.
template <class F>
concept TraceableKernel = requires(F f, jit::Var x) {
  { f(x) } -> jit::KernelResult;
};

TEST_CASE("kernel returning a non-float: rejected at compile time (concept check)") {
  auto returns_float = [](auto x) { return x * 2; };
  auto returns_bool = [](auto x) { return x > 0; };       // jit::Bool: a comparison, not a number
  auto returns_string = [](auto) { return std::string("y"); };
  auto returns_empty_tuple = [](auto) { return std::tuple<>{}; };
  auto returns_pair = [](auto x) { return std::tuple{x, x + 1}; };
  auto returns_array = [](auto x) { return std::array{x, -x}; };
  static_assert(TraceableKernel<decltype(returns_float)>);
  static_assert(!TraceableKernel<decltype(returns_bool)>);
  static_assert(!TraceableKernel<decltype(returns_string)>);
  static_assert(!TraceableKernel<decltype(returns_empty_tuple)>);
  static_assert(TraceableKernel<decltype(returns_pair)>);
  static_assert(TraceableKernel<decltype(returns_array)>);
  static_assert(!jit::KernelResult<bool>);  // plain bool is not a scalar result either
  static_assert(jit::KernelResult<double> && jit::KernelResult<int>);  // constants are fine
  CHECK(true);
}

TEST_CASE("unbounded branching (a data-dependent loop): kTrace naming the kernel and the limit") {
  Kernel countdown = kernel("countdown", [](auto x) {
    while (x > 0) x = x - 1;  // trip count depends on the data
    return x;
  });
  auto a = Array<double>::uniform({4}, 1, 0, 10);
  Guarded<double> value({4}), d0({4});
  PartialsOptions<double> o;
  o.value_out = {value.view};
  o.partial_out = {d0.view};
  std::optional<Error> e = Catch([&] { partials(countdown, {a}, o); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kTrace);
  CHECK(Contains(e->what(), "countdown"));
  CHECK(value.untouched());
  CHECK(d0.untouched());
  e = Catch([&] { broadcast(countdown, a); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kTrace);

  // Too many paths in all (each of 13 independent branches doubles them).
  jit::TraceOptions limit;
  limit.max_paths = 4096;
  Kernel wide = kernel("wide", [](auto x) {
    auto acc = x;
    for (int i = 0; i < 13; ++i) {
      if (x > 0.05 * i) acc = acc * 1.5;
      else acc = acc + 0.5;
      x = x * 1.0001 + acc * 1e-9;
    }
    return acc;
  }, limit);
  e = Catch([&] { broadcast(wide, a); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kTrace);
  CHECK(Contains(e->what(), "wide"));
  CHECK(Contains(e->what(), "dc::cond"));
}

}  // namespace
}  // namespace dualcast::bad_inputs
