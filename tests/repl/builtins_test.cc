// The REPL's builtins come from jit/ir/ops.def: every op is callable inside a def and on arrays, with gradients.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "dualcast/array.hpp"
#include "examples/repl/lower.h"
#include "examples/repl/session.h"
#include "jit/ir/ir.h"

namespace {

using namespace dualcast::repl;
namespace jit = dualcast::jit;

TEST_CASE("every ops.def op with a scalar meaning is a REPL builtin of the same arity") {
  for (int i = 0; i < jit::kNumOps; ++i) {
    const jit::Op op = static_cast<jit::Op>(i);
    const jit::OpKind kind = jit::Info(op).kind;
    if (kind == jit::OpKind::Leaf || kind == jit::OpKind::Control || kind == jit::OpKind::Cast) {
      continue;
    }
    const std::string name = jit::Info(op).spelling;
    CAPTURE(name);
    int arity = -1;
    CHECK(IsScalarBuiltin(name, &arity));
    CHECK(arity == jit::Info(op).arity);
  }
}

// The value of `expr` in a fresh session that has run `setup` first.
double Eval(const std::string& setup, const std::string& expr) {
  std::ostringstream out, err;
  Session s(out, err);
  if (!setup.empty()) REQUIRE_MESSAGE(s.Run(setup), err.str());
  Value v = s.Evaluate(expr);
  REQUIRE(v.parts.size() == 1);
  return v.parts[0].item();
}

TEST_CASE("the math staples work inside a def and on arrays alike") {
  const double ln2 = std::log(2.0);
  struct Case {
    const char* call;
    double want;
  };
  const Case cases[] = {
      {"exp2(3)", 8},           {"sign(-0.5)", -1},          {"square(-3)", 9},
      {"rsqrt(4)", 0.5},        {"clamp(5, 0, 2)", 2},       {"logaddexp(1, 1)", 1 + ln2},
      {"fmod(7.5, 2)", 1.5},    {"remainder(7.5, 2)", -0.5}, {"ldexp(3, 2)", 12},
      {"tgamma(5)", 24},        {"lgamma(3)", std::log(2.0)}, {"isnan(nan)", 1},
      {"isfinite(inf)", 0},     {"erfinv(0)", 0},
  };
  for (const Case& c : cases) {
    const std::string call = c.call;
    CAPTURE(call);
    CHECK(Eval("", c.call) == doctest::Approx(c.want).epsilon(1e-15));
    // In a body a test is a condition (true/false), not a number.
    const std::string body = std::string(c.call).rfind("is", 0) == 0
                                 ? std::string("(if ") + c.call + " then 1 else 0)"
                                 : std::string(c.call);
    CHECK(Eval("def f(t) = t * 0 + " + body, "f.(1)") == doctest::Approx(c.want).epsilon(1e-15));
  }
}

TEST_CASE("a staple's gradient through the tape at the top level") {
  std::ostringstream out, err;
  Session s(out, err);
  REQUIRE(s.Run("x = [0.5, 2]"));
  // d/dx sum(square(x) + logaddexp(x, x)) = 2x + 1.
  Value g = s.Evaluate("grad(sum(square(x) + logaddexp(x, x)), x)");
  REQUIRE(g.parts.size() == 1);
  CHECK(g.parts[0].to_vector() == std::vector<double>{2, 5});
}

}  // namespace
