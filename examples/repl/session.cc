// The REPL session: statements, definitions, printing, and the `:` commands (see session.h).
#include "examples/repl/session.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include <dualcast/device.hpp>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "examples/repl/driver.h"
#include "examples/repl/evaluator.h"
#include "examples/repl/interrupt.h"
#include "examples/repl/parser.h"
#include "jit/codegen/broadcast_layout.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/cpu/cpu_backend.h"
#include "jit/error.h"
#include "jit/ir/print.h"
#include "jit/passes/jvp.h"
#include "jit/passes/compose.h"
#include "jit/passes/optimize.h"
#include "jit/stats.h"

namespace dualcast::repl {
namespace {

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

constexpr const char* kArrayBuiltins[] = {
    "rand", "randn", "zeros", "ones", "range", "bernoulli", "sum", "mean", "matmul",
    "transpose", "reshape", "grad", "partials", "where", "select", "fma", "prod", "logsumexp",
    "var", "norm", "argmax", "argmin", "clip", "concat", "stack", "slice"};

// The `:` commands, for completion (Command() is where they are run).
constexpr const char* kCommands[] = {":ir", ":code", ":device", ":time", ":stats", ":vars", ":seed",
                                     ":fusion", ":load", ":help", ":quit"};

// `:load` inside a loaded file is fine; a file that loads itself is stopped here.
constexpr int kMaxLoadDepth = 16;

bool IsReservedName(const std::string& name) {
  for (const char* b : kArrayBuiltins) {
    if (name == b) return true;
  }
  double ignored;
  return IsScalarBuiltin(name) || BuiltinConstant(name, &ignored);
}

// A failure whose error is already printed: a :load inside a loaded file
// whose file stopped at an error (the outermost :load says it stopped, once).
struct AlreadyReported : std::exception {
  const char* what() const noexcept override { return "already reported"; }
};

void Materialize(const Value& v) {
  for (const A& a : v.parts) a.eval();
}

}  // namespace

std::string FormatArray(const A& a) {
  if (a.rank() == 0) return element_str(a.item());  // the digits an array element would get
  return a.str();  // an empty array of rank > 1 names its shape, as NumPy prints it
}

Session::Session(std::ostream& out, std::ostream& err, Options options)
    : out_(out), err_(err), options_(std::move(options)) {}

Session::~Session() = default;

const Value* Session::variable(const std::string& name) const {
  auto it = variables_.find(name);
  return it == variables_.end() ? nullptr : &it->second;
}

const UserFunction* Session::function(const std::string& name) const {
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : &it->second;
}

Value Session::Evaluate(std::string_view expression) {
  std::unique_ptr<Expr> e = ParseExpression(expression);
  Evaluator ev(*this);
  Value v = ev.Eval(*e);
  Materialize(v);
  return v;
}

bool Session::Run(std::string_view text, int first_line) {
  try {
    const std::string trimmed = Trim(text);
    if (!trimmed.empty() && trimmed[0] == ':') {
      Command(text);
    } else {
      Statement(text);
    }
    out_.flush();
    return true;
  } catch (const Interrupted& error) {
    ClearInterrupt();
    out_.flush();
    err_ << error.what() << ": the statement was cancelled; variables are as before it\n";
  } catch (const SourceError& error) {
    out_.flush();
    err_ << FormatError(options_.origin, first_line, text, error);
  } catch (const Error& error) {
    out_.flush();
    err_ << (options_.origin.empty() ? "" : options_.origin + ":" + std::to_string(first_line) + ": ")
         << "error: " << error.what() << "\n";
  } catch (const AlreadyReported&) {
    out_.flush();
  } catch (const std::exception& error) {
    out_.flush();
    err_ << (options_.origin.empty() ? "" : options_.origin + ":" + std::to_string(first_line) + ": ")
         << "error: internal error (please report): " << error.what() << "\n";
  }
  err_.flush();
  return false;
}

void Session::Statement(std::string_view text) {
  if (Lex(text).size() == 1) return;  // only whitespace and comments
  // In order; one that fails stops the line, those before it have run.
  for (const Stmt& s : ParseStatements(text)) Execute(s, text);
}

void Session::Execute(const Stmt& s, std::string_view text) {
  if (s.kind == Stmt::kDef) {
    Define(s, text);
    return;
  }
  CheckTargets(s);  // before the value: a refused name costs no evaluation and draws no seed
  const uint64_t seed = next_seed_;
  try {
    Evaluator ev(*this);
    Value v = ev.Eval(*s.body);
    Materialize(v);
    CheckArity(s, v);
    Bind(s, std::move(v), !s.quiet);
  } catch (...) {
    // A failed statement leaves the state as before it, the seed counter included,
    // so fixing a typo gives the numbers the script would have given.
    next_seed_ = seed;
    throw;
  }
}

void Session::CheckTargets(const Stmt& s) const {
  for (size_t k = 0; k < s.targets.size(); ++k) {
    const std::string& name = s.targets[k];
    if (IsReservedName(name)) {
      throw SourceError(ErrorCategory::kValue, s.target_spans[k],
                        "'" + name + "' is a built-in name; choose another variable name");
    }
    if (functions_.count(name)) {
      throw SourceError(ErrorCategory::kValue, s.target_spans[k],
                        "'" + name + "' is a function; choose another variable name");
    }
  }
}

void Session::CheckArity(const Stmt& s, const Value& v) const {
  if (s.targets.size() > 1 && v.parts.size() != s.targets.size()) {
    throw SourceError(ErrorCategory::kArity, s.body->span,
                      std::to_string(s.targets.size()) + " names on the left but the value has " +
                          std::to_string(v.parts.size()));
  }
}

void Session::Bind(const Stmt& s, Value v, bool print) {
  if (s.kind == Stmt::kExpr) {
    if (print) Print("", v);
    return;
  }
  if (s.targets.size() == 1) {
    variables_[s.targets[0]] = Value{std::move(v.parts), {}};
    if (print) Print(s.targets[0], variables_[s.targets[0]]);
    return;
  }
  for (size_t k = 0; k < s.targets.size(); ++k) {
    variables_[s.targets[k]] = Value{{v.parts[k]}, {}};
    if (print) Print(s.targets[k], variables_[s.targets[k]]);
  }
}

void Session::Define(const Stmt& s, std::string_view text) {
  if (variables_.count(s.name)) {
    throw SourceError(ErrorCategory::kValue, s.name_span,
                      "'" + s.name + "' is a variable; choose another function name");
  }
  double ignored;
  if (!IsScalarBuiltin(s.name) && !BuiltinConstant(s.name, &ignored) && IsReservedName(s.name)) {
    throw SourceError(ErrorCategory::kValue, s.name_span,
                      "'" + s.name + "' is a built-in array function and cannot be redefined");
  }
  auto is_variable = [this](const std::string& name) { return variables_.count(name) > 0; };
  std::shared_ptr<const FunctionDef> def = MakeFunctionDef(s, defs_, std::string(text), is_variable);
  Kernel kernel(def->name, [def](const std::string& name, std::span<const jit::Type> types) {
    if (types.size() != def->params.size()) {
      throw Error(ErrorKind::kArity, name + " takes " + std::to_string(def->params.size()) +
                                         " arguments, got " + std::to_string(types.size()));
    }
    const jit::Type dtype = types.empty() ? jit::Type::kF64 : types[0];
    for (jit::Type t : types) {
      if (t != dtype) throw Error(ErrorKind::kType, name + ": all arguments must have one element type");
    }
    return LowerFunction(*def, dtype);
  });
  Kernel as_constant;
  if (def->params.empty()) {
    as_constant = Kernel(def->name, [def](const std::string& name, std::span<const jit::Type> types) {
      jit::Function f(name);
      jit::Builder b(f);
      b.Input(types[0]);  // unused: it only gives the broadcast its (rank-0) shape
      b.Return(jit::Inline(b, LowerFunction(*def, types[0]), {}));
      return f;
    });
  }
  const bool redefined = functions_.count(def->name) > 0;
  functions_[def->name] = UserFunction{def, kernel, as_constant};
  defs_[def->name] = def;
  out_ << (redefined ? "redefined " : "defined ") << def->name << "("
       << absl::StrJoin(def->params, ", ") << ")";
  if (def->num_outputs != 1) out_ << " -> " << def->num_outputs << " outputs";
  out_ << "\n";
}

void Session::Print(const std::string& name, const Value& v) {
  auto line = [&](const std::string& label, const A& a) {
    const std::string text = FormatArray(a);
    if (label.empty()) {
      out_ << text << "\n";
    } else if (text.find('\n') != std::string::npos) {
      out_ << label << " =\n" << text << "\n";
    } else {
      out_ << label << " = " << text << "\n";
    }
  };
  if (v.single() && v.labels.empty()) {
    line(name, v.parts[0]);
    return;
  }
  for (size_t k = 0; k < v.parts.size(); ++k) {
    // Outputs are numbered from 1, as `value[k]` picks them.
    std::string label = k < v.labels.size() ? v.labels[k] : "[" + std::to_string(k + 1) + "]";
    if (!name.empty()) label = name + "[" + std::to_string(k + 1) + "]";
    line(label, v.parts[k]);
  }
}

const UserFunction& Session::NamedFunction(const std::string& name) const {
  const UserFunction* f = function(name);
  if (f == nullptr) {
    throw Error(ErrorKind::kInvalidArgument,
                name.empty() ? std::string("this command needs a function name (see :help)")
                             : "unknown function '" + name + "' (define it with def " + name + "(...) = ...)");
  }
  return *f;
}

void Session::Command(std::string_view text) {
  const std::string line = Trim(text);
  const size_t space = line.find_first_of(" \t\n");
  const std::string name = line.substr(1, space == std::string::npos ? std::string::npos : space - 1);
  const std::string rest = space == std::string::npos ? "" : Trim(line.substr(space));
  std::istringstream words(rest);
  std::string word1, word2, word3;
  words >> word1 >> word2 >> word3;
  // A word the command does not take is an error, never ignored (`:seed 1 2` is not seed 1).
  auto at_most = [&](int count, const char* usage) {
    if ((count < 3 && !word3.empty()) || (count < 2 && !word2.empty()) || (count < 1 && !word1.empty())) {
      throw Error(ErrorKind::kInvalidArgument, std::string("usage: ") + usage);
    }
  };

  if (name == "quit" || name == "q" || name == "exit") {
    quit_ = true;
  } else if (name == "help" || name == "h" || name == "?") {
    out_ << HelpText();
  } else if (name == "ir") {
    at_most(1, ":ir f");
    IrCommand(word1);
  } else if (name == "code") {
    at_most(2, ":code f [jvp]");
    if (!word2.empty() && word2 != "jvp") {
      throw Error(ErrorKind::kInvalidArgument, "usage: :code f [jvp]");
    }
    CodeCommand(word1, word2 == "jvp");
  } else if (name == "device") {
    at_most(1, ":device cpu|cuda");
    DeviceCommand(word1);
  } else if (name == "time") {
    if (rest.empty()) throw Error(ErrorKind::kInvalidArgument, "usage: :time <statement>");
    // The statement's spans are relative to `rest`; shift them into the command line.
    const size_t offset = text.find(rest, text.find(':'));
    try {
      TimeCommand(rest);
    } catch (const SourceError& e) {
      throw SourceError(e.category(), {e.span().begin + offset, e.span().end + offset}, e.what());
    }
  } else if (name == "load") {
    if (rest.empty()) throw Error(ErrorKind::kInvalidArgument, "usage: :load <file.dc>");
    LoadCommand(rest);
  } else if (name == "stats") {
    out_ << jit::FormatStats() << "\n";
  } else if (name == "vars") {
    VarsCommand();
  } else if (name == "seed") {
    // from_chars, not strtoull: that takes "-1" as 2^64 - 1 and saturates past 2^64, silently.
    at_most(1, ":seed <n>, n a whole number from 0 to 2^64 - 1");
    unsigned long long seed = 0;
    const auto [end, ec] = std::from_chars(word1.data(), word1.data() + word1.size(), seed);
    if (word1.empty() || ec != std::errc() || end != word1.data() + word1.size()) {
      throw Error(ErrorKind::kInvalidArgument,
                  "usage: :seed <n>, n a whole number from 0 to 2^64 - 1");
    }
    next_seed_ = seed;
    out_ << "the next random call uses seed " << seed << "\n";
  } else if (name == "fusion") {
    at_most(1, ":fusion on|off");
    if (word1 == "off") {
      if (!unfused_) unfused_.emplace();
      out_ << "fusion off: every array operation is its own kernel and tape node (pure reverse mode)\n";
    } else if (word1 == "on") {
      unfused_.reset();
      out_ << "fusion on: consecutive broadcasts in a statement run as one kernel\n";
    } else {
      throw Error(ErrorKind::kInvalidArgument, "usage: :fusion on|off");
    }
  } else {
    throw Error(ErrorKind::kInvalidArgument, "unknown command ':" + name + "' (:help lists them)");
  }
}

void Session::LoadCommand(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw Error(ErrorKind::kInvalidArgument,
                ":load: cannot open '" + path + "': " + std::strerror(errno));
  }
  if (load_depth_ >= kMaxLoadDepth) {
    throw Error(ErrorKind::kInvalidArgument, ":load: files nested more than " +
                                                 std::to_string(kMaxLoadDepth) +
                                                 " deep (does '" + path + "' load itself?)");
  }
  // Errors inside the file name the file and its line; the caller's origin comes back after.
  const std::string outer_origin = options_.origin;
  options_.origin = path;
  ++load_depth_;
  int status = 0;
  try {
    status = RunScript(in, *this, {.strict = true}, out_);
  } catch (...) {
    --load_depth_;
    options_.origin = outer_origin;
    throw;
  }
  --load_depth_;
  options_.origin = outer_origin;
  if (status != 0) {
    if (load_depth_ > 0) throw AlreadyReported();  // a file loading this one says it, once
    throw Error(ErrorKind::kInvalidArgument,
                ":load " + path + " stopped at its first error (above); the statements before it "
                "took effect");
  }
}

std::vector<std::string> Session::CompletionNames() const {
  std::vector<std::string> names;
  for (const auto& [name, value] : variables_) names.push_back(name);
  for (const auto& [name, f] : functions_) names.push_back(name);
  for (const char* b : kArrayBuiltins) names.emplace_back(b);
  for (const char* c : kCommands) names.emplace_back(c);
  for (int op = 0; op < jit::kNumOps; ++op) {
    const std::string spelling = jit::Spelling(static_cast<jit::Op>(op));
    if (IsScalarBuiltin(spelling)) names.push_back(spelling);
  }
  for (const char* constant : {"pi", "inf", "nan"}) names.emplace_back(constant);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

void Session::TimeCommand(std::string_view statement) {
  Stmt s = ParseStatement(statement);
  if (s.kind == Stmt::kDef) throw Error(ErrorKind::kInvalidArgument, ":time runs a statement, not a def");
  // The statement is checked and assigned as without :time (Execute); only its printing is the timing.
  CheckTargets(s);
  const uint64_t seed = next_seed_;
  auto run_once = [&] {
    next_seed_ = seed;  // every run sees the same random numbers
    Evaluator ev(*this);
    Value v = ev.Eval(*s.body);
    Materialize(v);
    return v;
  };
  using Clock = std::chrono::steady_clock;
  try {
    const jit::Stats before = jit::GetStats();
    auto t0 = Clock::now();
    Value first = run_once();
    const double first_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    const jit::Stats after = jit::GetStats();
    CheckArity(s, first);  // before the runs: a statement that cannot assign is not timed
    std::vector<double> times;
    double total = 0;
    while (times.size() < 100 && (times.size() < 5 || total < 1000.0)) {
      ThrowIfInterrupted();
      t0 = Clock::now();
      run_once();
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      times.push_back(ms);
      total += ms;
    }
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];
    out_ << absl::StrFormat("median %.4g ms over %d runs; first run %.4g ms, of which compiling %.4g ms (%d kernel%s)\n",
                            median, times.size(), first_ms, after.compile_ms - before.compile_ms,
                            after.compiles - before.compiles,
                            after.compiles - before.compiles == 1 ? "" : "s");
    Bind(s, std::move(first), /*print=*/false);
  } catch (...) {
    next_seed_ = seed;  // as a failed plain statement: no seed used
    throw;
  }
}

void Session::IrCommand(const std::string& name) {
  const UserFunction& f = NamedFunction(name);
  const int arity = static_cast<int>(f.def->params.size());
  std::shared_ptr<const jit::Function> fn = f.kernel.function(arity, jit::Type::kF64);
  out_ << "; " << name << ": the IR the runtime compiles (float64, optimised)\n" << jit::Print(*fn);
  std::vector<int> wrt(static_cast<size_t>(arity));
  for (int j = 0; j < arity; ++j) wrt[static_cast<size_t>(j)] = j;
  jit::JvpResult jvp = jit::Jvp(*fn, wrt);
  std::vector<std::string> outs;
  const size_t M = fn->num_outputs();
  for (size_t m = 0; m < M; ++m) outs.push_back(M == 1 ? "y" : "y" + std::to_string(m + 1));  // outputs numbered from 1
  for (size_t m = 0; m < M; ++m) {
    for (int j = 0; j < arity; ++j) {
      outs.push_back("d" + outs[m] + "/d" + f.def->params[static_cast<size_t>(j)] +
                     (jvp.structurally_zero[m * static_cast<size_t>(arity) + static_cast<size_t>(j)]
                          ? " (structurally 0)"
                          : ""));
    }
  }
  out_ << "; jvp (forward mode, one tangent lane per input); outputs: " << absl::StrJoin(outs, ", ")
       << "\n"
       << jit::Print(jit::Optimize(jvp.function));
}

void Session::CodeCommand(const std::string& name, bool jvp) {
  const UserFunction& f = NamedFunction(name);
  const int arity = static_cast<int>(f.def->params.size());
  std::shared_ptr<const jit::Function> fn = f.kernel.function(arity, jit::Type::kF64);
  if (jvp) {
    std::vector<int> wrt(static_cast<size_t>(arity));
    for (int j = 0; j < arity; ++j) wrt[static_cast<size_t>(j)] = j;
    fn = std::make_shared<const jit::Function>(jit::Optimize(jit::Jvp(*fn, wrt).function));
  }
  // A representative launch: every argument a contiguous vector of one length.
  std::vector<std::vector<int64_t>> shapes(static_cast<size_t>(arity), std::vector<int64_t>{1024});
  absl::StatusOr<jit::BroadcastLayout> layout = jit::MergeBroadcast(shapes, {}, name);
  ThrowIfError(layout.status());
  jit::KernelSpec spec = jit::KernelSpec::For(fn, jit::Type::kF64, jit::Target::kCpu, *layout);
  if (default_device().is_cuda()) {
    out_ << "; the CUDA C backend is not built into this version; showing the CPU kernel\n";
  }
  out_ << "; " << name << (jvp ? " (values and partials)" : "") << ": LLVM IR for " << spec.Describe()
       << ", every argument a contiguous array of one shape\n"
       << jit::CpuKernelIr(spec);
}

void Session::DeviceCommand(const std::string& device) {
  if (device == "cpu") {
    set_default_device(Device::cpu());
    out_ << "device: cpu\n";
    return;
  }
  if (device == "cuda") {
    Device d = Device::cuda();
    if (!d.available()) {
      std::string reason = d.unavailable_reason();
      if (reason.rfind("no CUDA device", 0) != 0) reason = "no CUDA device: " + reason;
      throw Error(ErrorKind::kDevice, reason + "; staying on the cpu");
    }
    set_default_device(d);
    out_ << "device: " << d.name() << " (new arrays are created there)\n";
    return;
  }
  throw Error(ErrorKind::kInvalidArgument, "usage: :device cpu|cuda");
}

void Session::VarsCommand() {
  for (const auto& [name, f] : functions_) {
    out_ << "def " << name << "(" << absl::StrJoin(f.def->params, ", ") << ")";
    if (f.def->num_outputs != 1) out_ << " -> " << f.def->num_outputs << " outputs";
    out_ << "\n";
  }
  for (const auto& [name, v] : variables_) {
    out_ << name << " :";
    for (const A& a : v.parts) out_ << " " << jit::FormatShape(a.shape());
    out_ << "\n";
  }
}

std::string Session::HelpText() {
  return R"(dualcast REPL: define branchy scalar functions, broadcast them over arrays, differentiate.
Arrays are float64 (double) on the current device. Statements:
  def f(x, y) = expr         a scalar function; becomes dualcast IR (see :ir f)
      expr: numbers, names, + - * / ^, == != < <= > >=, and or not,
            if c then a else b (only the taken branch runs, values and derivatives),
            let x = e in body, (a, b) tuples for several outputs,
            math functions by their dualcast names: exp log sqrt sin tanh sigmoid softplus
            relu abs pow atan2 min max hypot ... (also add, lt, select, where), calls of earlier defs
  x = expr                   assign; a, b = f.(x). End a statement with ';' to not print it;
                             several on a line: a = 1; b = a + 1
  f.(x, y)                   broadcast f elementwise (NumPy rules); f(x, y) does the same
  rand(4, 4) randn(n) zeros(2, 3) ones(3) range(n) range(a, b) [[1, 2], [3, 4]]
  bernoulli(n, 1, p)         0/1 array, 1 with probability p
  sum(x) mean(x) sum(x, axis) matmul(a, b) transpose(x) reshape(x, dims...) where(c, a, b)
  prod(x) logsumexp(x) var(x) norm(x) (axes optional)  max(x) min(x) (all; max(a, b) is elementwise)
  argmax(x) argmin(x) (flat index)  argmax(x, axis) argmin(x, axis)
  slice(x, axis, start, stop, step) (a view, 0-based)  concat(a, b, ...) stack(a, b, ...) (axis 0)
  clip(x, lo, hi)
  grad(loss, x, y)           reverse mode through the tape: d loss / d x, d loss / d y
  partials(f, x, y)          f's values and elementwise partials df/dx, df/dy (forward mode)
Random numbers: the k-th random call of a session uses seed k (:seed n to choose);
  dualcast::Array<double>::uniform(shape, k) / normal(shape, k) give the same numbers in C++.
Commands:
  :ir f            the function's IR and its jvp      :code f [jvp]   its LLVM IR (CPU kernel)
  :device cpu|cuda where new arrays live              :time <stmt>    median of repeated runs
  :stats           compiles, cache hits, launches     :fusion on|off  fuse broadcasts (default on)
  :vars            variables and functions            :seed n         next random seed
  :load file.dc    run a file's statements here       :help           this text
  :quit            leave (also Ctrl-D)
Tab completes names, builtins and commands; Ctrl-C cancels the line or the running statement.
f.(x)[k] picks output k (from 1) of a function with several outputs.
Long definitions continue on the next line after a trailing '\', an open bracket,
an operator, or an 'if' still waiting for its 'else'; an empty line ends a statement.
)";
}

}  // namespace dualcast::repl
