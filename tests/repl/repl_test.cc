// Tests of the REPL: lexer, parser and carets, IR lowering against Dual, and the session's numbers
// (the golden transcript gradients.out included) against Dual<double> and the C++ API.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <dualcast/dual.hpp>

#include "dualcast/array.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/kernel.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "examples/repl/driver.h"
#include "examples/repl/interrupt.h"
#include "examples/repl/lexer.h"
#include "examples/repl/lower.h"
#include "examples/repl/parser.h"
#include "examples/repl/session.h"
#include "jit/ir/interpret.h"
#include "jit/ir/verify.h"
#include "jit/passes/jvp.h"

namespace {

using namespace dualcast::repl;
using dualcast::Array;

// The HM-LSTM cell as a C++ generic lambda: the reference the REPL's `def cell` must match.
auto cell_lambda = [](auto z, auto zb, auto c, auto f, auto i, auto g) {
  using namespace dualcast::math;
  if (z == 1) return sigmoid(i) * tanh(g);
  if (zb == 0) return c;
  return sigmoid(f) * c + sigmoid(i) * tanh(g);
};

const char* const kCellDef =
    "def cell(z, zb, c, f, i, g) = if z == 1 then sigmoid(i)*tanh(g) else if zb == 0 then c "
    "else sigmoid(f)*c + sigmoid(i)*tanh(g)";

// Value and the six partials of the cell at a point, by Dual<double, 6>.
std::vector<double> CellDual(const std::vector<double>& x) {
  using D = dualcast::Dual<double, 6>;
  std::vector<D> v;
  for (int k = 0; k < 6; ++k) v.push_back(D::variable(x[static_cast<size_t>(k)], k));
  D y = cell_lambda(v[0], v[1], v[2], v[3], v[4], v[5]);
  std::vector<double> out{y.value()};
  for (int k = 0; k < 6; ++k) out.push_back(y.partial(k));
  return out;
}

SourceError CatchError(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const SourceError& e) {
    return e;
  }
  FAIL("expected a SourceError");
  return SourceError(ErrorCategory::kRuntime, {}, "");
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The numbers printed after "label =" (up to the closing "dtype=...)") in a transcript.
std::vector<double> PrintedArray(const std::string& transcript, const std::string& label) {
  const size_t at = transcript.find("\n" + label + " =");
  REQUIRE_MESSAGE(at != std::string::npos, label);
  const size_t end = transcript.find("dtype=", at);
  const std::string body = transcript.substr(at + label.size() + 3, end - at - label.size() - 3);
  std::vector<double> out;
  std::regex number(R"(-?(nan|inf|[0-9.]+(e[-+]?[0-9]+)?))");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), number); it != std::sregex_iterator(); ++it) {
    out.push_back(std::stod(it->str()));
  }
  return out;
}

void CheckClose(double got, double want, double rel = 1e-5) {
  CHECK(got == doctest::Approx(want).epsilon(rel).scale(1.0));
}

}  // namespace

TEST_CASE("lexer: tokens, spans, comments, and when a statement continues on the next line") {
  std::vector<Token> t = Lex("y = cell.(z, 2.5e-1) # note");
  REQUIRE(t.size() == 9);
  CHECK(t[0].kind == Tok::kIdent);
  CHECK(t[1].kind == Tok::kAssign);
  CHECK(t[3].kind == Tok::kDotParen);
  CHECK(t[3].span.begin == 8);
  CHECK(t[6].number == 0.25);
  CHECK(t[8].kind == Tok::kEnd);

  CHECK(NeedsMoreInput("def f(x) = x + \\"));
  CHECK(NeedsMoreInput("y = f(1,"));
  CHECK(NeedsMoreInput("y = [[1, 2],"));
  CHECK(NeedsMoreInput("def f(x) = if x > 0 then x"));
  CHECK(NeedsMoreInput("def f(x) =\n  if x > 0 then x\n  else if x < -1 then 0"));
  CHECK(NeedsMoreInput("def f(x) = let y = x * 2 in"));
  CHECK(NeedsMoreInput("y = x *  # comment"));
  CHECK_FALSE(NeedsMoreInput("def f(x) = if x > 0 then x else 0"));
  CHECK_FALSE(NeedsMoreInput("y = f(1))"));
  CHECK_FALSE(NeedsMoreInput(":time y = x +"));
  CHECK_FALSE(NeedsMoreInput("# only a comment"));
  CHECK_FALSE(NeedsMoreInput("y = 3 $ 4 ("));  // does not lex: the parser reports it

  CHECK(JoinForHistory("def f(x) = \\\n  x * 2  # double\n") == "def f(x) = x * 2");

  SourceError e = CatchError([] { Lex("x = 1 ! 2"); });
  CHECK(e.category() == ErrorCategory::kParse);
  CHECK(e.span().begin == 6);
}

TEST_CASE("parser: precedence, tuples, assignments and the caret of each error") {
  Stmt s = ParseStatement("y = -x ^ 2 + 1 * 3");
  REQUIRE(s.kind == Stmt::kAssign);
  const Expr& sum = *s.body;
  CHECK(sum.kind == Expr::kBinary);
  CHECK(sum.op == Tok::kPlus);
  CHECK(sum.args[0]->kind == Expr::kUnary);            // -(x^2)
  CHECK(sum.args[0]->args[0]->op == Tok::kCaret);
  CHECK(sum.args[1]->op == Tok::kStar);

  Stmt t = ParseStatement("a, b = f.(x, (1, 2));");
  CHECK(t.targets == std::vector<std::string>{"a", "b"});
  CHECK(t.quiet);
  CHECK(t.body->dot);
  CHECK(t.body->args[1]->kind == Expr::kTuple);

  Stmt d = ParseStatement("def f(x, y) = let s, c = g(x) in if s > c and not y == 0 then s else c");
  CHECK(d.kind == Stmt::kDef);
  CHECK(d.params == std::vector<std::string>{"x", "y"});
  CHECK(d.body->kind == Expr::kLet);

  // The caret of a parse error: "error: ..." then the line and '^' under column 9.
  const std::string text = "y = 1 + * 2";
  SourceError e = CatchError([&] { ParseStatement(text); });
  CHECK(e.span().begin == 8);
  CHECK(FormatError("s.dc", 3, text, e) ==
        "s.dc:3:9: error: expected an expression, found '*'\n  y = 1 + * 2\n          ^\n");
  // On the second line of a multi-line statement, the line number and column follow.
  SourceError e2 = CatchError([] { ParseStatement("def f(x) =\n  x +* 2"); });
  CHECK(FormatError("s.dc", 4, "def f(x) =\n  x +* 2", e2) ==
        "s.dc:5:6: error: expected an expression, found '*'\n    x +* 2\n       ^\n");
  CHECK(CatchError([] { ParseStatement("1 < 2 < 3"); }).span().begin == 6);
  CHECK(CatchError([] { ParseStatement("def f(x, x) = x"); }).span().begin == 9);
  CHECK(CatchError([] { ParseStatement("y = (1 + 2"); }).span().begin == 10);
  // Pathological nesting ends in an error, not a stack overflow.
  CHECK(CatchError([] { ParseStatement(std::string(5000, '(')); }).category() == ErrorCategory::kParse);
  std::string chain = "x";
  for (int k = 0; k < 3000; ++k) chain += "+1";
  CHECK(CatchError([&] { ParseStatement(chain); }).category() == ErrorCategory::kParse);
}

TEST_CASE("lowering: def cell is real IR whose jvp matches Dual<double, 6> on every branch") {
  auto def = MakeFunctionDef(ParseStatement(kCellDef), {});
  CHECK(def->num_outputs == 1);
  for (dualcast::jit::Type type : {dualcast::jit::Type::kF64, dualcast::jit::Type::kF32}) {
    dualcast::jit::Function f = LowerFunction(*def, type);
    CHECK(dualcast::jit::Verify(f).ok());
    CHECK(f.num_inputs() == 6);
  }
  dualcast::jit::Function f = LowerFunction(*def, dualcast::jit::Type::kF64);
  std::vector<int> wrt = {0, 1, 2, 3, 4, 5};
  dualcast::jit::JvpResult jvp = dualcast::jit::Jvp(f, wrt);
  const std::vector<std::vector<double>> points = {
      {1, 0, 0.5, 0.1, 0.2, 0.3},     // FLUSH
      {0, 0, -0.7, 1.5, -2, 0.9},     // COPY
      {0, 1, 0.5, 0.1, 0.2, 0.3},     // UPDATE
      {0, 1, 2.5, -3, 1.25, -0.75}};  // UPDATE
  for (const auto& x : points) {
    std::vector<double> want = CellDual(x);
    std::vector<double> got = dualcast::jit::Interpret(jvp.function, x);
    REQUIRE(got.size() == 7);
    for (size_t k = 0; k < 7; ++k) CheckClose(got[k], want[k], 1e-14);
  }
  // z and zb reach the output only through branch conditions: structurally zero.
  CHECK(jvp.structurally_zero[0]);
  CHECK(jvp.structurally_zero[1]);
  CHECK_FALSE(jvp.structurally_zero[2]);

  // Calls of earlier functions are inlined; tuples give several outputs.
  FunctionTable known;
  known["sc"] = MakeFunctionDef(ParseStatement("def sc(x) = (sin(x), cos(x))"), known);
  auto h = MakeFunctionDef(ParseStatement("def h(x) = let s, c = sc(x) in s*s + c*c"), known);
  std::vector<double> one = dualcast::jit::Interpret(LowerFunction(*h, dualcast::jit::Type::kF64),
                                                     std::vector<double>{0.7});
  CheckClose(one[0], 1.0, 1e-15);
  CHECK(known["sc"]->num_outputs == 2);

  // Mistakes are SourceErrors at the right place, with the right category.
  auto lower = [&](const char* text) {
    return CatchError([&] { MakeFunctionDef(ParseStatement(text), known); });
  };
  CHECK(lower("def f(x) = x + y").category() == ErrorCategory::kUnknownName);
  CHECK(lower("def f(x) = x + y").span().begin == 15);
  CHECK(lower("def f(x) = sin(x, x)").category() == ErrorCategory::kArity);
  CHECK(lower("def f(x) = sc(x) + 1").category() == ErrorCategory::kArity);
  CHECK(lower("def f(x) = if x then 1 else 0").category() == ErrorCategory::kType);
  CHECK(lower("def f(x) = (x > 0) * 2").category() == ErrorCategory::kType);
  CHECK(lower("def f(x) = nosuch(x)").category() == ErrorCategory::kUnknownName);
  CHECK(lower("def exp(x) = x").category() == ErrorCategory::kValue);
}

TEST_CASE("session: the gradients transcript against Dual<double> and the C++ API on the same seeds") {
  const std::string dir = DUALCAST_REPL_TEST_DIR;
  std::ostringstream out, err;
  Session session(out, err, {.origin = "gradients.dc"});
  std::ifstream script(dir + "/gradients.dc");
  REQUIRE(script.good());
  std::ostringstream echo;
  CHECK(RunScript(script, session, {.strict = true}, echo) == 0);
  CHECK(err.str().empty());
  const std::string golden = ReadFile(dir + "/gradients.out");

  auto var = [&](const char* name) {
    const Value* v = session.variable(name);
    REQUIRE_MESSAGE(v != nullptr, name);
    REQUIRE(v->single());
    return v->parts[0];
  };

  // The seed rule: the k-th random call is Array<double>::normal(shape, k).
  const char* const randoms[] = {"c", "f", "i", "g", "cbar"};
  for (int k = 0; k < 5; ++k) {
    CHECK(var(randoms[k]).to_vector() == Array<double>::normal({3, 3}, static_cast<uint64_t>(k + 1)).to_vector());
  }

  // Reference: per element, d(sum(cell * cbar))/d(c, f, i, g) = cbar * dcell/d(...) by Dual.
  const std::vector<double> z = var("z").to_vector(), zb = var("zb").to_vector();
  const std::vector<double> c = var("c").to_vector(), f = var("f").to_vector();
  const std::vector<double> i = var("i").to_vector(), g = var("g").to_vector();
  const std::vector<double> cbar = var("cbar").to_vector();
  std::vector<std::vector<double>> want(4, std::vector<double>(9));
  std::vector<double> want_y(9);
  for (size_t e = 0; e < 9; ++e) {
    std::vector<double> d = CellDual({z[e / 3], zb[e / 3], c[e], f[e], i[e], g[e]});
    want_y[e] = d[0];
    for (size_t k = 0; k < 4; ++k) want[k][e] = cbar[e] * d[3 + k];
  }
  // The C++ API on the same arrays: a traced kernel, the tape, the runtime's reverse sweep.
  dualcast::Kernel cell = dualcast::kernel("cell", cell_lambda);
  std::vector<Array<double>> api;
  {
    dualcast::Tape tape;
    const std::vector<Array<double>> in = {var("c"), var("f"), var("i"), var("g")};
    auto y = dualcast::broadcast(cell, var("z"), var("zb"), in[0], in[1], in[2], in[3]);
    api = tape.gradient(dualcast::sum(y * var("cbar")), in);
  }
  const char* const grads[] = {"dc", "df", "di", "dg"};
  for (size_t k = 0; k < 4; ++k) {
    INFO(grads[k]);
    const std::vector<double> session_values = var(grads[k]).to_vector();
    const std::vector<double> api_values = api[k].to_vector();
    const std::vector<double> printed = PrintedArray(golden, grads[k]);
    REQUIRE(printed.size() == 9);
    for (size_t e = 0; e < 9; ++e) {
      CheckClose(session_values[e], want[k][e], 1e-13);
      CheckClose(api_values[e], want[k][e], 1e-13);
      CheckClose(printed[e], want[k][e], 5e-6);  // the transcript shows 6 significant digits
    }
  }
  const std::vector<double> y = var("y").to_vector(), printed_y = PrintedArray(golden, "y");
  REQUIRE(printed_y.size() == 9);
  for (size_t e = 0; e < 9; ++e) {
    CheckClose(y[e], want_y[e], 1e-14);
    CheckClose(printed_y[e], want_y[e], 5e-6);
  }
  // Hand-checkable lines of the same transcript.
  CHECK(PrintedArray(golden, "gw") == std::vector<double>{1, -1, 1, -1});
  CHECK(PrintedArray(golden, "gv") == std::vector<double>{4, 6});

  // The partials lines: three points, one per branch, against Dual.
  const std::vector<std::vector<double>> points = {
      {1, 0, 0.5, 0.1, 0.2, 0.3}, {0, 0, 0.5, 0.1, 0.2, 0.3}, {0, 1, 0.5, 0.1, 0.2, 0.3}};
  const char* const labels[] = {"cell", "dcell/dz", "dcell/dzb", "dcell/dc",
                                "dcell/df", "dcell/di", "dcell/dg"};
  size_t from = golden.find("> partials(cell");
  for (const auto& p : points) {
    REQUIRE(from != std::string::npos);
    std::vector<double> d = CellDual(p);
    for (size_t k = 0; k < 7; ++k) {
      const std::string key = std::string("\n") + labels[k] + " = ";
      const size_t at = golden.find(key, from);
      REQUIRE(at != std::string::npos);
      INFO(labels[k]);
      CheckClose(std::stod(golden.substr(at + key.size())), d[k], 5e-6);
    }
    from = golden.find("> partials(cell", from + 1);
  }
}

TEST_CASE("session: errors never end the session and leave its state as it was") {
  std::ostringstream out, err;
  Session s(out, err);
  CHECK(s.Run("x = [1, 2, 3]"));
  CHECK_FALSE(s.Run("x = x + [1, 2]"));        // shape
  CHECK(err.str().find("error: add: argument 1 has size 3 and argument 2 has size 2") != std::string::npos);
  CHECK(err.str().find("\n  x = x + [1, 2]\n      ^~~~~~~~~~\n") != std::string::npos);
  CHECK(s.variable("x")->parts[0].to_vector() == std::vector<double>{1, 2, 3});
  CHECK_FALSE(s.Run("y = foo"));                // unknown name
  CHECK(s.variable("y") == nullptr);
  CHECK(s.Run("def sq(x) = x * x"));
  CHECK_FALSE(s.Run("sq.(1, 2)"));              // arity
  CHECK_FALSE(s.Run("def sq(x) = x +"));        // parse error: sq keeps its definition
  CHECK(s.Evaluate("sq.(x)").parts[0].to_vector() == std::vector<double>{1, 4, 9});
  // A gradient of a gradient: the grad of g = 2x as a constant would be 2x, the true one 4x.
  CHECK(s.Run("g = grad(sum(x * x), x)"));
  CHECK_FALSE(s.Run("grad(sum(g * x), x)"));
  CHECK(err.str().find("also through a gradient an earlier grad computed") != std::string::npos);
  // Seeds out of range are refused, not wrapped (-1 was 2^64 - 1) or saturated.
  for (const char* bad : {":seed -1", ":seed 18446744073709551616", ":seed 1.5", ":seed x"}) {
    CAPTURE(bad);
    CHECK_FALSE(s.Run(bad));
  }
  CHECK(err.str().find("n a whole number from 0 to 2^64 - 1") != std::string::npos);
  CHECK(s.Run(":seed 18446744073709551615"));
  CHECK(s.Run(":quit"));
  CHECK(s.quit_requested());

  // --strict stops at the first error, with status 1; without it the script goes on.
  std::istringstream script("x = 1\ny = nosuch\nz = 2\n");
  std::ostringstream echo;
  Session strict(out, err);
  CHECK(RunScript(script, strict, {.strict = true}, echo) == 1);
  CHECK(strict.variable("z") == nullptr);
  std::istringstream script2("x = 1\ny = nosuch\nz = 2\n");
  Session lenient(out, err);
  CHECK(RunScript(script2, lenient, {}, echo) == 0);
  CHECK(lenient.variable("z") != nullptr);
}

TEST_CASE("session: a def whose body or a result is a comparison gives 0/1, like the top level") {
  std::ostringstream out, err;
  Session s(out, err);
  CHECK(s.Run("x = [-1, 0, 0.5, 3, nan, inf]"));
  auto values = [&](const std::string& expr) { return s.Evaluate(expr).parts[0].to_vector(); };
  // References by hand: x > 0, the range test, isnan, isinf, signbit, lt(x, 1) at each point.
  const std::vector<std::pair<std::string, std::vector<double>>> cases = {
      {"def c(x) = x > 0", {0, 0, 1, 1, 0, 1}},
      {"def c(x) = (x > 0) and (x < 2)", {0, 0, 1, 0, 0, 0}},
      {"def c(x) = isnan(x)", {0, 0, 0, 0, 1, 0}},
      {"def c(x) = isfinite(x)", {1, 1, 1, 1, 0, 0}},
      {"def c(x) = isinf(x)", {0, 0, 0, 0, 0, 1}},
      {"def c(x) = signbit(x)", {1, 0, 0, 0, 0, 0}},
      {"def c(x) = lt(x, 1)", {1, 1, 1, 0, 0, 0}},
      {"def c(x) = ge(x, 0.5)", {0, 0, 1, 1, 0, 1}},
      {"def c(x) = ne(x, x)", {0, 0, 0, 0, 1, 0}},
  };
  for (const auto& [def, want] : cases) {
    CAPTURE(def);
    REQUIRE(s.Run(def));
    CHECK(values("c.(x)") == want);
    // Called from another def, the callee's 0/1 is a number there.
    REQUIRE(s.Run("def twice(x) = 2 * c(x)"));
    std::vector<double> doubled = want;
    for (double& v : doubled) v *= 2;
    CHECK(values("twice.(x)") == doubled);
  }
  // One of several results.
  REQUIRE(s.Run("def both(x) = (x * 2, x == 0)"));
  CHECK(s.Run("p, q = both.(x)"));
  CHECK(s.variable("q")->parts[0].to_vector() == std::vector<double>{0, 1, 0, 0, 0, 0});
  CHECK(err.str().find("internal error") == std::string::npos);
}

TEST_CASE("session: fabs and nearbyint, C's names that kernels accept, in a body and at the top level") {
  std::ostringstream out, err;
  Session s(out, err);
  CHECK(s.Run("x = [-2.5, -0.5, 0.5, 1.5]"));
  REQUIRE(s.Run("def k(x) = fabs(x) + nearbyint(x)"));
  // |x| + x rounded to even by hand: 2.5 - 2, 0.5 - 0, 0.5 + 0, 1.5 + 2.
  CHECK(s.Evaluate("k.(x)").parts[0].to_vector() == std::vector<double>{0.5, 0.5, 0.5, 3.5});
  CHECK(s.Evaluate("nearbyint(x)").parts[0].to_vector() == std::vector<double>{-2, -0.0, 0, 2});
  CHECK(s.Evaluate("fabs(x)").parts[0].to_vector() == std::vector<double>{2.5, 0.5, 0.5, 1.5});
}

TEST_CASE("several statements on a line: run in order, ';' keeps each from printing, a parse error runs none") {
  std::vector<Stmt> all = ParseStatements("a = 1; def f(x) = x * a; b = f.(2)");
  REQUIRE(all.size() == 3);
  CHECK(all[0].quiet);
  CHECK(all[1].kind == Stmt::kDef);
  CHECK_FALSE(all[2].quiet);
  CHECK(all[2].span.begin == 25);  // spans index the whole line (error carets)
  // A missing ';' between two statements is the one error, at the second.
  SourceError missing = CatchError([] { ParseStatements("a = 1 b = 2"); });
  CHECK(missing.span().begin == 6);
  CHECK(std::string(missing.what()).find("separate statements with ';'") != std::string::npos);

  std::ostringstream out, err;
  Session s(out, err);
  CHECK(s.Run("a = [1, 2]; b = a * 3"));
  CHECK(out.str() == "b = array([3, 6], dtype=float64)\n");  // a's ';' kept it quiet
  CHECK(s.variable("a")->parts[0].to_vector() == std::vector<double>{1, 2});
  // The second statement fails: the first has run, the third has not.
  CHECK_FALSE(s.Run("c = 5; d = nosuch; e = 1"));
  CHECK(s.variable("c") != nullptr);
  CHECK(s.variable("e") == nullptr);
  CHECK(err.str().find("\n  c = 5; d = nosuch; e = 1\n             ^~~~~~\n") != std::string::npos);
  // A newcomer's `help` points at the command.
  CHECK_FALSE(s.Run("help"));
  CHECK(err.str().find("unknown name 'help' (commands start with ':': :help)") != std::string::npos);
  // A parse error anywhere on the line: nothing runs.
  CHECK_FALSE(s.Run("g = 1; h = 1 +"));
  CHECK(s.variable("g") == nullptr);
}

TEST_CASE("session: numbers print as Array::str prints elements, so different values look different") {
  // Printed with %.6g, 2^53 + 1 read back as 9.0072e+15 and 1 + 1e-9 as 1 (while == 1 gave 0).
  // The references: the double nearest 9007199254740993 is 2^53 (Python int(9007199254740993.0)),
  // 1 + 1e-9 to 8 significant digits with its zeros, 1/3 to 8 digits.
  std::ostringstream out, err;
  Session s(out, err);
  CHECK(s.Run("9007199254740993"));
  CHECK(s.Run("1 + 1e-9"));
  CHECK(s.Run("(1 + 1e-9) == 1"));
  CHECK(s.Run("1 / 3"));
  CHECK(s.Run("[1000001, 1000002]"));
  CHECK(out.str() ==
        "9007199254740992\n1.0000000\n0\n0.33333333\narray([1000001, 1000002], dtype=float64)\n");
  CHECK(err.str().empty());
}

TEST_CASE("session: completion names, output indexing from 1, and Ctrl-C between sub-expressions") {
  std::ostringstream out, err;
  Session s(out, err);
  CHECK(s.Run("def polar(x, y) = (hypot(x, y), atan2(y, x))"));
  CHECK(s.Run("radius_in = [3, 6]"));
  const std::vector<std::string> names = s.CompletionNames();
  for (const char* expected : {"polar", "radius_in", ":load", ":time", "sigmoid", "sum", "pi"}) {
    CHECK_MESSAGE(std::find(names.begin(), names.end(), expected) != names.end(), expected);
  }
  CHECK(std::is_sorted(names.begin(), names.end()));
  // polar's first output is the hypotenuse, the second the angle: checked against <cmath>.
  const std::vector<double> r = s.Evaluate("polar.(radius_in, [4, 8])[1]").parts[0].to_vector();
  CHECK(r == std::vector<double>{5, 10});
  const std::vector<double> theta = s.Evaluate("polar.(radius_in, [4, 8])[2]").parts[0].to_vector();
  CHECK(theta[0] == doctest::Approx(std::atan2(4.0, 3.0)));
  CHECK_FALSE(s.Run("polar.(1, 1)[3]"));
  CHECK(err.str().find("numbered 1 to 2") != std::string::npos);
  // A pending Ctrl-C unwinds the next statement at its first sub-expression; state is kept.
  InstallInterruptHandler();
  std::raise(SIGINT);
  CHECK_FALSE(s.Run("radius_in = [1, 1]"));
  CHECK(err.str().find("interrupted (Ctrl-C)") != std::string::npos);
  CHECK(s.variable("radius_in")->parts[0].to_vector() == std::vector<double>{3, 6});
  CHECK_FALSE(InterruptPending());
  std::signal(SIGINT, SIG_DFL);
}

TEST_CASE("session: slice, concat, stack and clip, with gradients; [k] on one output is an error") {
  std::ostringstream out, err;
  Session s(out, err);
  REQUIRE(s.Run("a = [[1, 5, 5], [2, 0, -1]]"));
  auto eval = [&](const char* text) { return s.Evaluate(text).parts[0].to_vector(); };
  // a[:, 0:3:2] and a[-1:2] by hand.
  CHECK(eval("slice(a, 1, 0, 3, 2)") == std::vector<double>{1, 5, 2, -1});
  CHECK(eval("slice(a, 0, -1, 2)") == std::vector<double>{2, 0, -1});
  // d/da sum(a[:, ::2] * [[10, 20]]): 10 in column 0, 20 in column 2, 0 in column 1.
  CHECK(eval("grad(sum(slice(a, 1, 0, 3, 2) * [[10, 20]]), a)") == std::vector<double>{10, 0, 20, 10, 0, 20});
  CHECK(eval("concat([1, 2], [3])") == std::vector<double>{1, 2, 3});
  CHECK(eval("stack([1, 2], [3, 4])") == std::vector<double>{1, 2, 3, 4});
  CHECK(s.Evaluate("stack([1, 2], [3, 4])").parts[0].shape() == std::vector<int64_t>{2, 2});
  // d/da sum(concat(a, 3a) * w) with w = 1 in the first two rows, 2 in the last two: 1 + 3 * 2 = 7.
  CHECK(eval("grad(sum(concat(a, a * 3) * [[1], [1], [2], [2]]), a)") == std::vector<double>(6, 7));
  // d/da sum(clip(a, 0, 2) * a) = clip'(a) a + clip(a); clip' = 1 inside [lo, hi] (ends included), else 0.
  CHECK(eval("grad(sum(clip(a, 0, 2) * a), a)") == std::vector<double>{1 + 1, 0 + 2, 0 + 2, 2 + 2, 0 + 0, 0 + 0});
  CHECK_FALSE(s.Run("a[1]"));  // NumPy's a[1] is a row; never the whole array in silence
  CHECK(err.str().find("picks an output of a function with several outputs") != std::string::npos);
  CHECK_FALSE(s.Run("slice(a, 2, 0, 1)"));
  CHECK(err.str().find("axis 2 is out of range for an array of shape [2, 3]") != std::string::npos);
  // A step of 0 or below: the library's message, which says negative steps are not supported.
  CHECK_FALSE(s.Run("slice(a, 1, 2, 0, -1)"));
  CHECK(err.str().find("step -1 at dimension 1 must be positive (negative steps are not supported") !=
        std::string::npos);
}

TEST_CASE("where vs if: the untaken branch's NaN leaks into the unfused reverse sweep only") {
  std::ostringstream out, err;
  Session s(out, err);
  REQUIRE(s.Run("def safe_sqrt(x) = if x > 0 then sqrt(x) else 0"));
  REQUIRE(s.Run("x = [-1, 0, 4]"));
  const std::vector<double> with_if = s.Evaluate("grad(sum(safe_sqrt.(x)), x)").parts[0].to_vector();
  CHECK(with_if == std::vector<double>{0, 0, 0.25});  // d sqrt(4) = 1 / (2 * 2)
  REQUIRE(s.Run(":fusion off"));
  const std::vector<double> with_where =
      s.Evaluate("grad(sum(where(x > 0, sqrt(x), 0)), x)").parts[0].to_vector();
  CHECK(std::isnan(with_where[0]));  // 0 * d sqrt(-1) = 0 * NaN
  CHECK(std::isnan(with_where[1]));  // 0 * d sqrt(0) = 0 * inf
  CHECK(with_where[2] == 0.25);
  REQUIRE(s.Run(":fusion on"));
}

TEST_CASE("an array literal with computed elements is recorded: grad follows the path through each element") {
  std::ostringstream out, err;
  Session s(out, err);
  REQUIRE(s.Run("x = 2"));
  REQUIRE(s.Run("v = [1, 2]"));
  auto values = [&](const char* text) { return s.Evaluate(text).parts[0].to_vector(); };
  for (const char* fusion : {":fusion on", ":fusion off"}) {
    CAPTURE(fusion);
    REQUIRE(s.Run(fusion));
    // By hand at x = 2. A literal made of the elements' numbers was a constant: the
    // first two gave 1 and 4, silently, and the third said x was not used.
    CHECK(values("grad(sum([x, x]) + x, x)") == std::vector<double>{3});                    // d(3x)
    CHECK(values("grad(sum([x, 2 * x] * v) + x * x, x)") == std::vector<double>{9});        // 1 + 4 + 2x
    CHECK(values("grad(sum([x, 3]), x)") == std::vector<double>{1});                        // d(x + 3)
    CHECK(values("grad(sum([[x, 1], [x * x, 4]] * [[1, 2], [3, 4]]), x)") == std::vector<double>{13});  // 1 + 3 * 2x
  }
  // An element may be any one-element array; its gradient keeps its shape: d(u + u^2) = 1 + 2u.
  REQUIRE(s.Run("u = [5]"));
  const Value du = s.Evaluate("grad(sum([u, u * u]), u)");
  CHECK(du.parts[0].shape() == std::vector<int64_t>{1});
  CHECK(du.parts[0].to_vector() == std::vector<double>{11});
  // The values and shape are the plain literal's.
  const Value m = s.Evaluate("[[x, 1], [2, x]]");
  CHECK(m.parts[0].shape() == std::vector<int64_t>{2, 2});
  CHECK(m.parts[0].to_vector() == std::vector<double>{2, 1, 2, 2});
  // A literal assigned before the grad is a value computed from x, and grad says so
  // (as for y = x * 1) instead of treating it as a constant and returning 1.
  REQUIRE(s.Run("y = [x, 1]"));
  CHECK_FALSE(s.Run("grad(sum(y) + x, x)"));
  CHECK(err.str().find("also through a variable computed before this grad") != std::string::npos);
}

TEST_CASE("a statement that fails draws no random seed; a refused name is refused before the value is computed") {
  std::ostringstream out, err;
  Session s(out, err);
  auto seeded = [](uint64_t seed) { return Array<double>::uniform({2}, seed).to_vector(); };
  auto var = [&](const char* name) { return s.variable(name)->parts[0].to_vector(); };
  REQUIRE(s.Run(":seed 1"));
  CHECK_FALSE(s.Run("r = rand(2) + [1, 2, 3]"));  // a shape error after rand ran
  CHECK_FALSE(s.Run("a, b = rand(2)"));           // one value for two names
  CHECK_FALSE(s.Run("sum = rand(2)"));            // a built-in name
  REQUIRE(s.Run("def sq(x) = x * x"));
  CHECK_FALSE(s.Run("sq = rand(2)"));             // a function's name
  REQUIRE(s.Run("r = rand(2)"));
  CHECK(var("r") == seeded(1));  // the k-th random call of the statements that ran
  // The name is refused first: not "unknown name 'nosuch'".
  CHECK_FALSE(s.Run("sum = nosuch"));
  CHECK(err.str().find("'sum' is a built-in name") != std::string::npos);
  CHECK(err.str().find("unknown name 'nosuch'") == std::string::npos);
  // On a line, the statements before the failing one ran, with their seeds.
  REQUIRE(s.Run(":seed 1"));
  CHECK_FALSE(s.Run("p = rand(2); q = rand(2) + [1, 2, 3]"));
  CHECK(var("p") == seeded(1));
  REQUIRE(s.Run("q = rand(2)"));
  CHECK(var("q") == seeded(2));
}

TEST_CASE(":time runs a statement as without it: the same assignments, the same errors, one run's seeds") {
  std::ostringstream out, err;
  Session s(out, err);
  auto seeded = [](uint64_t seed) { return Array<double>::uniform({2}, seed).to_vector(); };
  auto var = [&](const char* name) { return s.variable(name)->parts[0].to_vector(); };
  REQUIRE(s.Run("x = 1"));
  REQUIRE(s.Run(":time a, b = (x, 2 * x)"));  // assigned nothing, silently
  CHECK(out.str().find("median") != std::string::npos);
  REQUIRE(s.variable("a") != nullptr);
  REQUIRE(s.variable("b") != nullptr);
  CHECK(var("a") == std::vector<double>{1});
  CHECK(var("b") == std::vector<double>{2});
  CHECK_FALSE(s.Run(":time sum = 3"));  // was accepted (and ignored), though `sum = 3` is an error
  CHECK(err.str().find("'sum' is a built-in name") != std::string::npos);
  CHECK_FALSE(s.Run(":time c, d = x"));
  CHECK(err.str().find("2 names on the left but the value has 1") != std::string::npos);
  CHECK(s.variable("c") == nullptr);
  // Seeds: a timed random statement draws what one run draws; a failed one draws nothing.
  REQUIRE(s.Run(":seed 1"));
  REQUIRE(s.Run(":time r = rand(2)"));
  CHECK(var("r") == seeded(1));
  CHECK_FALSE(s.Run(":time w = rand(2) + [1, 2, 3]"));
  REQUIRE(s.Run("t = rand(2)"));
  CHECK(var("t") == seeded(2));
}

TEST_CASE("parser: the nesting limit is the stated 200 levels of the source, whatever their kind") {
  // A level is one bracket, parenthesis, call, if, let or unary operator. The limit
  // used to count parser frames: it fired at about 100 parentheses and 67 brackets.
  struct Kind {
    const char* open;
    const char* inner;
    const char* close;
  };
  const Kind kinds[] = {{"(", "1", ")"},       {"[", "1", "]"},         {"sin(", "x", ")"},
                        {"f.(", "x", ")"},     {"not ", "x", ""},       {"- ", "x", ""},
                        {"if 1 then ", "x", " else 0"}, {"let a = 1 in ", "a", ""}};
  auto nested = [](const Kind& k, int levels) {
    std::string text;
    for (int i = 0; i < levels; ++i) text += k.open;
    text += k.inner;
    for (int i = 0; i < levels; ++i) text += k.close;
    return text;
  };
  for (const Kind& k : kinds) {
    CAPTURE(k.open);
    CHECK_NOTHROW(ParseExpression(nested(k, 200)));
    const SourceError e = CatchError([&] { ParseExpression(nested(k, 201)); });
    CHECK(std::string(e.what()) == "expression nested too deeply (more than 200 levels)");
  }
  // 200 levels also evaluate and lower (their recursion is within the stack).
  std::ostringstream out, err;
  Session s(out, err);
  REQUIRE(s.Run("x = 0.5"));
  CHECK(s.Evaluate(nested(kinds[2], 200)).parts[0].item() > 0);
  REQUIRE(s.Run("def deep(x) = " + nested(kinds[2], 200)));
  CHECK(s.Evaluate("deep(x)").parts[0].item() == doctest::Approx(s.Evaluate(nested(kinds[2], 200)).parts[0].item()));
  CHECK(s.Evaluate("sum(" + nested(kinds[1], 199) + ")").parts[0].item() == 1);
}

TEST_CASE("a function of no parameters is a constant: callable at the top level as in a def") {
  std::ostringstream out, err;
  Session s(out, err);
  REQUIRE(s.Run("def eps() = 0.5"));  // was accepted, but eps() was refused ("takes no arguments")
  for (const char* call : {"eps()", "eps.()"}) {
    CAPTURE(call);
    const Value v = s.Evaluate(call);
    CHECK(v.parts[0].rank() == 0);
    CHECK(v.parts[0].item() == 0.5);
  }
  REQUIRE(s.Run("def twice(x) = 2 * x * eps()"));
  CHECK(s.Evaluate("twice.([1, 3])").parts[0].to_vector() == std::vector<double>{1, 3});
  REQUIRE(s.Run("def pair() = (1, eps())"));
  CHECK(s.Evaluate("pair()[2]").parts[0].item() == 0.5);
  REQUIRE(s.Run("x = [1, 2]"));
  CHECK(s.Evaluate("grad(sum(x * eps()), x)").parts[0].to_vector() == std::vector<double>{0.5, 0.5});
  CHECK_FALSE(s.Run("eps(1)"));
  CHECK(err.str().find("'eps' takes no arguments, got 1") != std::string::npos);
}
