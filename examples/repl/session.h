// The REPL session: variables (float64 arrays), user functions (as dualcast::Kernels), and the `:` commands.
//
// A Session runs one complete statement at a time (the line reader decides
// when a statement is complete) and writes results to `out` and errors, with
// a caret under the offending column, to `err`. No mistake ends the session:
// Run() reports it and returns false, and the session state is as it was
// before the statement (a failed assignment assigns nothing).
//
// Everything numeric goes through the dualcast runtime: a `def` becomes a
// dualcast::Kernel whose IR comes from lower.h (no tracing, no C++
// generated), `f.(x, y)` is dualcast::broadcast_n, `x + y` the runtime's
// fused operators, `sum`/`mean`/`matmul` its reductions, `grad(...)` a
// dualcast::Tape, `partials(...)` dualcast::partials. Arrays are float64.
//
// Random numbers: rand/randn/bernoulli draw from the runtime's seeded
// generator (Array::uniform/normal, xoshiro256**). The k-th random call of a
// session uses seed k (1, 2, 3, ...), so a script always sees the same
// numbers and the C++ API reproduces them with Array<double>::uniform(shape,
// k); `:seed n` makes the next call use seed n. `:time stmt` advances it as
// one run of stmt does (every run sees the same numbers); a statement that
// fails does not advance it.
//
// Example:
//   Session s(std::cout, std::cerr);
//   s.Run("def sq(x) = x * x");
//   s.Run("y = sq.([1, 2, 3])");   // prints y = array([1, 4, 9], dtype=float64)
//   s.Run("grad(sum(sq.(y)), y)"); // prints d/dy = array([2, 8, 18], dtype=float64)
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <dualcast/array.hpp>
#include <dualcast/broadcast.hpp>
#include <dualcast/kernel.hpp>

#include "examples/repl/ast.h"
#include "examples/repl/lower.h"

namespace dualcast::repl {

using A = Array<double>;

// What an expression evaluates to: one array, or a tuple of them (a function
// with several outputs, grad with several variables, partials).
struct Value {
  std::vector<A> parts;
  std::vector<std::string> labels;  // optional, one per part, for printing
  bool single() const { return parts.size() == 1; }
};

// A user function: its checked definition and the kernel the runtime runs.
struct UserFunction {
  std::shared_ptr<const FunctionDef> def;
  Kernel kernel;
  // Only for a function of no parameters (a constant, `def eps() = 1e-8`): the
  // same body with one unused input, since a broadcast needs an argument;
  // eps() runs it on a scalar.
  Kernel as_constant;
};

class Session {
 public:
  struct Options {
    std::string origin;  // file name shown in errors ("" interactively)
  };

  Session(std::ostream& out, std::ostream& err, Options options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs one statement or command (`text` may span several lines; its first
  // line is line `first_line` of the input). Returns false after printing an error.
  bool Run(std::string_view text, int first_line = 1);

  bool quit_requested() const { return quit_; }

  // For tests and embedding: a variable's value, or null.
  const Value* variable(const std::string& name) const;
  // A user function, or null.
  const UserFunction* function(const std::string& name) const;
  // Evaluates an expression without printing it (throws SourceError).
  Value Evaluate(std::string_view expression);

  // Every name Tab can complete: variables, functions, builtins, constants, `:` commands.
  std::vector<std::string> CompletionNames() const;

  // The help text (also printed by `:help`).
  static std::string HelpText();

 private:
  friend class Evaluator;

  void Statement(std::string_view text);
  void Execute(const Stmt& s, std::string_view text);  // `text`: the whole line, which s's spans index
  void Command(std::string_view text);
  void Define(const Stmt& s, std::string_view text);
  // The parts of an assignment or expression statement, shared with `:time`:
  // refuse a target name (before evaluating), refuse a value with the wrong
  // number of parts, then assign (and print when `print`).
  void CheckTargets(const Stmt& s) const;
  void CheckArity(const Stmt& s, const Value& v) const;
  void Bind(const Stmt& s, Value v, bool print);
  void Print(const std::string& name, const Value& value);
  void TimeCommand(std::string_view statement);
  void LoadCommand(const std::string& path);
  void IrCommand(const std::string& name);
  void CodeCommand(const std::string& name, bool jvp);
  void DeviceCommand(const std::string& device);
  void VarsCommand();
  const UserFunction& NamedFunction(const std::string& name) const;

  std::ostream& out_;
  std::ostream& err_;
  Options options_;
  std::map<std::string, Value> variables_;
  std::map<std::string, UserFunction> functions_;
  FunctionTable defs_;
  uint64_t next_seed_ = 1;
  std::optional<Unfused> unfused_;  // set while `:fusion off`
  bool quit_ = false;
  int load_depth_ = 0;  // `:load` nesting
};

// Formats a value the way the REPL prints it: a rank-0 array as a plain
// number (element_str: every digit of a whole number below 1e16, else up to 8
// significant digits), others as the runtime's Array::str().
std::string FormatArray(const A& a);

}  // namespace dualcast::repl
