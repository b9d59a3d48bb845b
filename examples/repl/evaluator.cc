// Top-level expression evaluation through the dualcast runtime (see evaluator.h).
#include "examples/repl/evaluator.h"

#include <cmath>
#include <functional>
#include <map>
#include <mutex>

#include <dualcast/array_ops.hpp>
#include <dualcast/broadcast.hpp>
#include <dualcast/operators.hpp>
#include <dualcast/partials.hpp>
#include <dualcast/reductions.hpp>
#include <dualcast/tape.hpp>

#include "absl/strings/str_format.h"
#include "examples/repl/interrupt.h"
#include "jit/codegen/broadcast_layout.h"
#include "jit/error.h"
#include "jit/ir/ir.h"

namespace dualcast::repl {
namespace {

ErrorCategory CategoryOf(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kShape: return ErrorCategory::kShape;
    case ErrorKind::kArity: return ErrorCategory::kArity;
    case ErrorKind::kType: return ErrorCategory::kType;
    case ErrorKind::kInvalidArgument: return ErrorCategory::kValue;
    default: return ErrorCategory::kRuntime;
  }
}

using Unary = std::function<A(const A&)>;
using BinaryFn = std::function<A(const A&, const A&)>;

// The runtime's math functions by their ops.def spelling (the X-macros of operators.hpp).
const std::map<std::string, Unary>& UnaryMath() {
  static const auto* table = new std::map<std::string, Unary>{
#define DC_REPL_UNARY(name) {#name, [](const A& x) { return dualcast::name(x); }},
      DUALCAST_UNARY_MATH(DC_REPL_UNARY)
#undef DC_REPL_UNARY
      {"neg", [](const A& x) { return -x; }},
      {"not", [](const A& x) { return x == 0.0; }},
  };
  return *table;
}

const std::map<std::string, BinaryFn>& BinaryMath() {
  static const auto* table = new std::map<std::string, BinaryFn>{
#define DC_REPL_BINARY(name) {#name, [](const A& a, const A& b) { return dualcast::name(a, b); }},
      DUALCAST_BINARY_MATH(DC_REPL_BINARY)
#undef DC_REPL_BINARY
      {"add", [](const A& a, const A& b) { return a + b; }},
      {"sub", [](const A& a, const A& b) { return a - b; }},
      {"mul", [](const A& a, const A& b) { return a * b; }},
      {"div", [](const A& a, const A& b) { return a / b; }},
      {"eq", [](const A& a, const A& b) { return a == b; }},
      {"ne", [](const A& a, const A& b) { return a != b; }},
      {"lt", [](const A& a, const A& b) { return a < b; }},
      {"le", [](const A& a, const A& b) { return a <= b; }},
      {"gt", [](const A& a, const A& b) { return a > b; }},
      {"ge", [](const A& a, const A& b) { return a >= b; }},
      // On 0/1 arrays (what comparisons give): nonzero is true.
      {"and", [](const A& a, const A& b) { return dualcast::where(a, b != 0.0, 0.0); }},
      {"or", [](const A& a, const A& b) { return dualcast::where(a, 1.0, b != 0.0); }},
  };
  return *table;
}

std::string ShapeText(const A& a) { return jit::FormatShape(a.shape()); }

// Every other math function and unary test of ops.def (exp2, lgamma, sign,
// clamp, isnan, ...) on arrays: a one-op Kernel broadcast like a user function,
// so ops.def alone makes a new op usable at the top level (with gradients).
// A test's bool result becomes 0/1, as comparisons do here.
const Kernel* OpKernel(const std::string& requested, int* arity) {
  static std::mutex mutex;
  static auto* kernels = new std::map<std::string, Kernel>;
  // C's name that kernels accept too (jit/trace/var.h); fabs is a runtime function already.
  const std::string name = requested == "nearbyint" ? "rint" : requested;
  for (int i = 0; i < jit::kNumOps; ++i) {
    const jit::Op op = static_cast<jit::Op>(i);
    const jit::OpInfo& info = jit::Info(op);
    const bool usable = info.kind == jit::OpKind::Math ||
                        (info.kind == jit::OpKind::Compare && info.arity == 1);
    if (!usable || name != info.spelling) continue;
    *arity = info.arity;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = kernels->find(name);
    if (it == kernels->end()) {
      Kernel k(name, [op](const std::string& kernel_name, std::span<const jit::Type> types) {
        jit::Function f(kernel_name);
        jit::Builder b(f);
        std::vector<jit::ValueId> args;
        for (jit::Type t : types) args.push_back(b.Input(t));
        jit::ValueId y = b.Emit(op, args);
        if (f.type(y) == jit::Type::kBool) {
          y = b.Select(y, b.Const(types[0], 1), b.Const(types[0], 0));
        }
        b.Return({y});
        return f;
      });
      it = kernels->emplace(name, std::move(k)).first;
    }
    return &it->second;
  }
  return nullptr;
}

// "that is N elements; the REPL allows at most 1e9", for any count of elements: a product
// of sizes past 2^63 (zeros(1e12, 1e12)) was cast to long long and printed as negative.
std::string TooManyElements(double count) {
  const std::string n = count < 9e18 ? std::to_string(static_cast<long long>(count))
                                     : absl::StrFormat("%g", count);
  return "that is " + n + " elements; the REPL allows at most 1e9";
}

}  // namespace

template <class F>
auto AtSpan(Span span, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& error) {
    throw SourceError(CategoryOf(error.kind()), span, error.what());
  }
}

A Evaluator::Array(const Expr& e) {
  Value v = Eval(e);
  if (!v.single()) {
    throw SourceError(ErrorCategory::kArity, e.span,
                      "expected one array here, but this gives a tuple of " +
                          std::to_string(v.parts.size()));
  }
  return v.parts[0];
}

Value Evaluator::Eval(const Expr& e) {
  ThrowIfInterrupted();  // Ctrl-C: unwind before the next array operation
  switch (e.kind) {
    case Expr::kNumber: return {{A::scalar(e.number)}, {}};
    case Expr::kName: return Name(e);
    case Expr::kCall: return Call(e);
    case Expr::kUnary: return {{Unary(e)}, {}};
    case Expr::kBinary: return {{Binary(e)}, {}};
    case Expr::kIf:
      throw SourceError(ErrorCategory::kType, e.op_span,
                        "'if' works inside a def (one element at a time); on arrays use "
                        "where(cond, a, b), or define a function and broadcast it with f.(...)");
    case Expr::kLet: {
      Value value = Eval(*e.args[0]);
      const size_t n = e.names.size();
      if (n > 1 && value.parts.size() != n) {
        throw SourceError(ErrorCategory::kArity, e.args[0]->span,
                          "'let' binds " + std::to_string(n) + " names but the value has " +
                              std::to_string(value.parts.size()));
      }
      const size_t mark = locals_.size();
      if (n == 1) {
        locals_.emplace_back(e.names[0], value);
      } else {
        for (size_t k = 0; k < n; ++k) locals_.emplace_back(e.names[k], Value{{value.parts[k]}, {}});
      }
      Value out = Eval(*e.args[1]);
      locals_.resize(mark);
      return out;
    }
    case Expr::kTuple: {
      Value out;
      for (const auto& a : e.args) out.parts.push_back(Array(*a));
      return out;
    }
    case Expr::kArray: return {{Literal(e)}, {}};
    case Expr::kIndex: {
      Value v = Eval(*e.args[0]);
      return {{v.parts[PartIndex(e, v.parts.size())]}, {}};
    }
  }
  return {};
}

Value Evaluator::Name(const Expr& e) {
  for (auto it = locals_.rbegin(); it != locals_.rend(); ++it) {
    if (it->first == e.name) return it->second;
  }
  if (const Value* v = s_.variable(e.name)) return *v;
  double constant = 0;
  if (BuiltinConstant(e.name, &constant)) return {{A::scalar(constant)}, {}};
  std::string hint;
  if (s_.function(e.name) != nullptr || IsScalarBuiltin(e.name)) {
    hint = " ('" + e.name + "' is a function: call it as " + e.name + ".(...))";
  } else if (e.name == "help" || e.name == "quit" || e.name == "exit" || e.name == "vars") {
    hint = std::string(" (commands start with ':': :") + (e.name == "exit" ? "quit" : e.name) + ")";
  }
  throw SourceError(ErrorCategory::kUnknownName, e.span, "unknown name '" + e.name + "'" + hint);
}

Value Evaluator::Call(const Expr& e) {
  if (const UserFunction* f = s_.function(e.name)) return UserCall(e, *f);
  bool found = false;
  Value v = Builtin(e, &found);
  if (found) return v;
  std::string hint;
  if (s_.variable(e.name) != nullptr) hint = " ('" + e.name + "' is a variable, not a function)";
  else if (e.name == "cast") hint = kCastHint;
  throw SourceError(ErrorCategory::kUnknownName, e.op_span, "unknown function '" + e.name + "'" + hint);
}

Value Evaluator::UserCall(const Expr& e, const UserFunction& f) {
  const size_t arity = f.def->params.size();
  if (e.args.size() != arity) {
    std::string params;
    for (const auto& p : f.def->params) params += (params.empty() ? "" : ", ") + p;
    throw SourceError(ErrorCategory::kArity, e.op_span,
                      "'" + e.name + "' takes " +
                          (arity == 0 ? std::string("no arguments")
                                      : std::to_string(arity) + " argument" + (arity == 1 ? "" : "s") + " (" +
                                            params + ")") +
                          ", got " + std::to_string(e.args.size()));
  }
  std::vector<A> args;
  for (const auto& a : e.args) args.push_back(Array(*a));
  Value out;
  if (args.empty()) {  // a constant: its one-input form on a scalar gives one number
    out.parts = AtSpan(e.span, [&] { return broadcast_n(f.as_constant, std::vector<A>{A::scalar(0)}); });
    return out;
  }
  out.parts = AtSpan(e.span, [&] { return broadcast_n(f.kernel, args); });
  return out;
}

int64_t Evaluator::Integer(const Expr& e, const std::string& what, bool allow_negative) {
  A a = Array(e);
  if (a.size() != 1) {
    throw SourceError(ErrorCategory::kValue, e.span,
                      what + " must be a number, not an array of shape " + ShapeText(a));
  }
  const double v = a.item();
  if (v != std::floor(v) || std::isinf(v) || (!allow_negative && v < 0)) {
    throw SourceError(ErrorCategory::kValue, e.span,
                      what + (allow_negative ? " must be a whole number" : " must be a whole number >= 0") +
                          ", got " + FormatArray(a));
  }
  // A whole number can still be too large: say so, not that it is not whole (1e15 was "not whole").
  if (v > 1e12 || v < -1e12) {
    throw SourceError(ErrorCategory::kValue, e.span,
                      what + (allow_negative ? " must be between -1e12 and 1e12" : " must be at most 1e12") +
                          ", got " + FormatArray(a));
  }
  return static_cast<int64_t>(v);
}

int Evaluator::Axis(const Expr& e, const A& x) {
  A a = Array(e);
  if (a.size() != 1) {
    throw SourceError(ErrorCategory::kValue, e.span, "an axis must be a number, not an array of shape " + ShapeText(a));
  }
  // The range is checked on the double, before any conversion to int: inf or 1e10 do
  // not fit (the conversion is undefined), and the runtime would report some other number.
  const double v = a.item();
  if (v != std::floor(v) || std::isinf(v)) {
    throw SourceError(ErrorCategory::kValue, e.span, "an axis must be a whole number, got " + FormatArray(a));
  }
  const int rank = x.rank();
  if (v < -rank || v >= rank) {
    throw SourceError(ErrorCategory::kValue, e.span,
                      "axis " + FormatArray(a) + " is out of range for an array of shape " + ShapeText(x) +
                          (rank == 0 ? std::string(" (it has no axes)")
                                     : " (valid axes are " + std::to_string(-rank) + ".." +
                                           std::to_string(rank - 1) + "; negative ones count from the end)"));
  }
  return static_cast<int>(v);
}

std::vector<int64_t> Evaluator::Dims(const Expr& call, size_t first, size_t count,
                                     const std::string& what) {
  std::vector<int64_t> dims;
  double total = 1;
  for (size_t k = first; k < first + count; ++k) {
    dims.push_back(Integer(*call.args[k], what));
    total *= static_cast<double>(dims.back());
  }
  if (total > 1e9) {
    throw SourceError(ErrorCategory::kValue, call.span, TooManyElements(total));
  }
  return dims;
}

Value Evaluator::Builtin(const Expr& e, bool* found) {
  *found = true;
  const std::string& n = e.name;
  const size_t argc = e.args.size();
  auto arity = [&](size_t lo, size_t hi, const char* usage) {
    if (argc < lo || argc > hi) {
      throw SourceError(ErrorCategory::kArity, e.op_span,
                        "'" + n + "' takes " +
                            (lo == hi         ? std::to_string(lo)
                             : hi == SIZE_MAX ? std::to_string(lo) + " or more"
                             : hi == lo + 1   ? std::to_string(lo) + " or " + std::to_string(hi)
                                              : std::to_string(lo) + " to " + std::to_string(hi)) +
                            " argument" + (hi == 1 ? "" : "s") + ", got " + std::to_string(argc) +
                            " (usage: " + usage + ")");
    }
  };
  auto one = [](A a) { return Value{{std::move(a)}, {}}; };

  if (n == "rand" || n == "randn") {
    std::vector<int64_t> dims = Dims(e, 0, argc);
    const uint64_t seed = s_.next_seed_++;
    return one(AtSpan(e.span, [&] {
      return n == "rand" ? A::uniform(dims, seed) : A::normal(dims, seed);
    }));
  }
  if (n == "zeros" || n == "ones") {
    std::vector<int64_t> dims = Dims(e, 0, argc);
    return one(AtSpan(e.span, [&] { return n == "zeros" ? A::zeros(dims) : A::ones(dims); }));
  }
  if (n == "bernoulli") {
    arity(1, SIZE_MAX, "bernoulli(dims..., p): 1 with probability p, else 0");
    A p = Array(*e.args[argc - 1]);
    if (p.size() != 1 || !(p.item() >= 0 && p.item() <= 1)) {
      throw SourceError(ErrorCategory::kValue, e.args[argc - 1]->span,
                        "the probability (last argument of bernoulli) must be one number in [0, 1]");
    }
    std::vector<int64_t> dims = Dims(e, 0, argc - 1);
    const uint64_t seed = s_.next_seed_++;
    return one(AtSpan(e.span, [&] { return A::uniform(dims, seed) < p.item(); }));
  }
  if (n == "range") {
    arity(1, 2, "range(n) = 0..n-1, range(a, b) = a..b-1");
    if (argc == 1) {
      // Through Dims, like every other constructor: range(1e12) tried to allocate 8 TB.
      const int64_t count = Dims(e, 0, 1, "the length of range")[0];
      return one(AtSpan(e.span, [&] { return A::arange(count); }));
    }
    A a = Array(*e.args[0]), b = Array(*e.args[1]);
    if (a.size() != 1 || b.size() != 1 || a.item() != std::floor(a.item()) ||
        b.item() != std::floor(b.item()) || !(b.item() >= a.item()) || std::isinf(a.item()) ||
        std::isinf(b.item())) {
      throw SourceError(ErrorCategory::kValue, e.span,
                        "range(a, b) needs whole numbers a <= b (it gives a, a+1, ..., b-1)");
    }
    if (b.item() - a.item() > 1e9) {  // valid, only too long: Dims' message
      throw SourceError(ErrorCategory::kValue, e.span, TooManyElements(b.item() - a.item()));
    }
    const double lo = a.item();
    return one(AtSpan(e.span, [&] {
      A r = A::arange(static_cast<int64_t>(b.item() - lo)) + lo;
      r.eval();
      return r;
    }));
  }
  if (n == "sum" || n == "mean") {
    arity(1, SIZE_MAX, "sum(x) or sum(x, axis, ...)");
    A x = Array(*e.args[0]);
    std::vector<int> axes;
    for (size_t k = 1; k < argc; ++k) axes.push_back(Axis(*e.args[k], x));
    Value result = one(AtSpan(e.span, [&] {
      if (axes.empty()) return n == "sum" ? dualcast::sum(x) : dualcast::mean(x);
      return n == "sum" ? dualcast::sum(x, axes) : dualcast::mean(x, axes);
    }));
    // NumPy's convention: the mean over no elements is nan (0/0), with a warning, never silently.
    if (n == "mean" && result.parts[0].size() > 0 && x.size() == 0) {
      s_.err_ << "warning: mean of an empty array (shape " << ShapeText(x)
              << ") is nan: there are no elements to average\n";
    }
    return result;
  }
  // The other reductions (array_ops.hpp); max/min with one argument reduce, with two they are elementwise.
  const bool extreme = (n == "max" || n == "min") && argc == 1;
  if (extreme || n == "prod" || n == "logsumexp" || n == "var" || n == "norm") {
    arity(1, SIZE_MAX, (n + "(x) or " + n + "(x, axis, ...)").c_str());
    A x = Array(*e.args[0]);
    std::vector<int> axes;
    for (size_t k = 1; k < argc; ++k) axes.push_back(Axis(*e.args[k], x));
    return one(AtSpan(e.span, [&] {
      if (axes.empty()) {  // every axis; an empty list would reduce over none
        if (n == "max") return dualcast::max(x);
        if (n == "min") return dualcast::min(x);
        if (n == "prod") return dualcast::prod(x);
        if (n == "logsumexp") return dualcast::logsumexp(x);
        if (n == "var") return dualcast::var(x);
        return dualcast::norm(x);
      }
      if (n == "max") return dualcast::max(x, axes);
      if (n == "min") return dualcast::min(x, axes);
      if (n == "prod") return dualcast::prod(x, axes);
      if (n == "logsumexp") return dualcast::logsumexp(x, axes);
      if (n == "var") return dualcast::var(x, axes);
      return dualcast::norm(x, axes);
    }));
  }
  if (n == "argmax" || n == "argmin") {
    arity(1, 2, (n + "(x) over all elements, or " + n + "(x, axis)").c_str());
    A x = Array(*e.args[0]);
    return one(AtSpan(e.span, [&] {
      if (argc == 1) return n == "argmax" ? dualcast::argmax(x) : dualcast::argmin(x);
      const int axis = Axis(*e.args[1], x);
      return n == "argmax" ? dualcast::argmax(x, axis) : dualcast::argmin(x, axis);
    }));
  }
  if (n == "matmul") {
    arity(2, 2, "matmul(a, b) for (m, k) x (k, n) matrices");
    A a = Array(*e.args[0]), b = Array(*e.args[1]);
    return one(AtSpan(e.span, [&] { return dualcast::matmul(a, b); }));
  }
  if (n == "transpose") {
    arity(1, 1, "transpose(x) reverses the axes");
    A x = Array(*e.args[0]);
    return one(AtSpan(e.span, [&] { return dualcast::transpose(x); }));
  }
  if (n == "reshape") {
    arity(2, SIZE_MAX, "reshape(x, dims...)");
    A x = Array(*e.args[0]);
    std::vector<int64_t> dims = Dims(e, 1, argc - 1);
    return one(AtSpan(e.span, [&] { return dualcast::reshape(x, dims); }));
  }
  if (n == "where" || n == "select") {
    arity(3, 3, "where(cond, a, b): a where cond != 0, else b; both are computed");
    A c = Array(*e.args[0]), a = Array(*e.args[1]), b = Array(*e.args[2]);
    return one(AtSpan(e.span, [&] { return dualcast::where(c, a, b); }));
  }
  if (n == "clip") {
    arity(3, 3, "clip(x, lo, hi): x clamped into [lo, hi] elementwise");
    A x = Array(*e.args[0]), lo = Array(*e.args[1]), hi = Array(*e.args[2]);
    return one(AtSpan(e.span, [&] { return dualcast::clip(x, lo, hi); }));
  }
  if (n == "concat" || n == "stack") {
    arity(1, SIZE_MAX, n == "concat" ? "concat(a, b, ...) joins along axis 0"
                                     : "stack(a, b, ...) joins along a new axis 0");
    std::vector<A> parts;
    for (const auto& a : e.args) parts.push_back(Array(*a));
    return one(AtSpan(e.span, [&] { return n == "concat" ? dualcast::concat(parts) : dualcast::stack(parts); }));
  }
  if (n == "slice") {
    arity(4, 5, "slice(x, axis, start, stop) or slice(x, axis, start, stop, step): a view, 0-based, "
                "stop excluded, as NumPy's x[..., start:stop:step]");
    A x = Array(*e.args[0]);
    const int64_t axis = Integer(*e.args[1], "the axis of slice");
    // start and stop may be negative: they count from the end, as in NumPy.
    dualcast::Slice dim{Integer(*e.args[2], "the start of slice", /*allow_negative=*/true),
                        Integer(*e.args[3], "the stop of slice", /*allow_negative=*/true), 1};
    // A step <= 0 gets the library's own error (which says what to do instead).
    if (argc == 5) dim.step = Integer(*e.args[4], "the step of slice", /*allow_negative=*/true);
    if (static_cast<size_t>(axis) >= x.shape().size()) {
      throw SourceError(ErrorCategory::kValue, e.args[1]->span,
                        "axis " + std::to_string(axis) + " is out of range for an array of shape " + ShapeText(x) +
                            " (axes are numbered from 0)");
    }
    std::vector<dualcast::Slice> dims(static_cast<size_t>(axis) + 1);
    dims.back() = dim;
    return one(AtSpan(e.span, [&] { return dualcast::slice(x, dims); }));
  }
  if (n == "fma") {
    arity(3, 3, "fma(a, b, c) = a*b + c, one rounding");
    A a = Array(*e.args[0]), b = Array(*e.args[1]), c = Array(*e.args[2]);
    return one(AtSpan(e.span, [&] { return dualcast::fma(a, b, c); }));
  }
  if (n == "grad") return Grad(e);
  if (n == "partials") return PartialsCall(e);
  if (auto it = UnaryMath().find(n); it != UnaryMath().end()) {
    arity(1, 1, (n + "(x), elementwise").c_str());
    A x = Array(*e.args[0]);
    return one(AtSpan(e.span, [&] { return it->second(x); }));
  }
  if (auto it = BinaryMath().find(n); it != BinaryMath().end()) {
    arity(2, 2, (n + "(a, b), elementwise").c_str());
    A a = Array(*e.args[0]), b = Array(*e.args[1]);
    return one(AtSpan(e.span, [&] { return it->second(a, b); }));
  }
  int op_arity = 0;
  if (const Kernel* k = OpKernel(n, &op_arity)) {
    arity(op_arity, op_arity, (n + "(...), elementwise").c_str());
    std::vector<A> args;
    for (const auto& a : e.args) args.push_back(Array(*a));
    return one(AtSpan(e.span, [&] { return broadcast_n(*k, args)[0]; }));
  }
  *found = false;
  return {};
}

Value Evaluator::Grad(const Expr& e) {
  if (e.args.size() < 2) {
    throw SourceError(ErrorCategory::kArity, e.op_span,
                      "'grad' takes a scalar expression and one or more variables: grad(loss, x, y)");
  }
  std::vector<A> inputs;
  std::vector<std::string> labels;
  for (size_t k = 1; k < e.args.size(); ++k) {
    const Expr& arg = *e.args[k];
    if (arg.kind != Expr::kName) {
      throw SourceError(ErrorCategory::kValue, arg.span,
                        "grad differentiates with respect to variables: write a variable's name here");
    }
    inputs.push_back(Array(arg));
    labels.push_back("d/d" + arg.name);
  }
  // The tape records what the loss expression does from here on; the
  // variables are leaves, so their adjoints are the gradient.
  Tape tape;
  A loss = Array(*e.args[0]);
  if (loss.size() != 1) {
    throw SourceError(ErrorCategory::kShape, e.args[0]->span,
                      "grad needs a scalar loss (one element), but this has shape " + ShapeText(loss) +
                          "; wrap it in sum(...) or mean(...)");
  }
  Value out;
  try {
    out.parts = tape.gradient(loss, inputs);
  } catch (const Error& error) {
    // A variable the loss does not reach: say it in the REPL's terms (grad
    // records only what its first argument computes), never give zeros.
    const std::string what = error.what();
    for (size_t k = 0; k < inputs.size(); ++k) {
      const std::string needle = "input " + std::to_string(k + 1) + " (shape";
      if (const size_t at = what.find("reaches the loss only through '");
          at != std::string::npos && what.find(needle) != std::string::npos) {
        // Only through argmax/argmin: the op has no gradient (its name is quoted).
        const size_t from = what.find('\'', at) + 1;
        const std::string op = what.substr(from, what.find('\'', from) - from);
        const std::string& name = e.args[k + 1]->name;
        throw SourceError(ErrorCategory::kValue, e.args[k + 1]->span,
                          "the loss depends on '" + name + "' only through " + op +
                              ", which has no gradient (its value is piecewise constant): d loss / d " +
                              name + " is 0 wherever it exists. Differentiate a smooth surrogate "
                              "instead (e.g. softmax weights in place of " + op + ")");
      }
      const bool partly = what.find("but also through") != std::string::npos;
      if (what.find(needle) == std::string::npos ||
          (!partly && what.find("does not reach the loss") == std::string::npos)) {
        continue;
      }
      const std::string& name = e.args[k + 1]->name;
      if (what.find("(a reverse sweep") != std::string::npos) {
        throw SourceError(ErrorCategory::kValue, e.args[k + 1]->span,
                          "the loss depends on '" + name + "' also through a gradient an earlier grad "
                          "computed, which this grad would treat as a constant: dualcast "
                          "differentiates once. For a second derivative, write the first one as a "
                          "function (def d(x) = 3 * x * x for x * x * x) and take grad(sum(d.(" +
                              name + ")), " + name + ")");
      }
      const bool earlier = what.find("before this Tape was opened") != std::string::npos;
      const std::string advice =
          ", which grad treats as a constant. grad records only what its first argument "
          "computes: write the computation inside it, e.g. grad(sum(f.(a, b)), a)";
      throw SourceError(
          ErrorCategory::kValue, e.args[k + 1]->span,
          partly ? "the loss depends on '" + name +
                       "' also through a variable computed before this grad (such as y = f.(a, b))" +
                       advice + " (the gradient would miss that path)"
          : earlier ? "the loss does not depend on '" + name + "' as grad sees it: it reaches '" + name +
                          "' only through a variable computed before this grad (such as y = f.(a, b))" +
                          advice
                    : "the loss does not depend on '" + name + "' as grad sees it: '" + name +
                          "' is not used by the loss expression (nor by what it was computed from "
                          "inside this grad)");
    }
    throw SourceError(CategoryOf(error.kind()), e.span, what);
  }
  out.labels = std::move(labels);
  return out;
}

Value Evaluator::PartialsCall(const Expr& e) {
  if (e.args.empty() || e.args[0]->kind != Expr::kName || s_.function(e.args[0]->name) == nullptr) {
    throw SourceError(ErrorCategory::kValue, e.args.empty() ? e.op_span : e.args[0]->span,
                      "partials takes a user function (defined with def) and its arguments: "
                      "partials(f, x, y)");
  }
  const UserFunction& f = *s_.function(e.args[0]->name);
  const size_t arity = f.def->params.size();
  if (e.args.size() - 1 != arity) {
    throw SourceError(ErrorCategory::kArity, e.op_span,
                      "'" + f.def->name + "' takes " + std::to_string(arity) + " argument" +
                          (arity == 1 ? "" : "s") + ", partials got " + std::to_string(e.args.size() - 1));
  }
  std::vector<A> args;
  for (size_t k = 1; k < e.args.size(); ++k) args.push_back(Array(*e.args[k]));
  Partials<double> p = AtSpan(e.span, [&] { return dualcast::partials(f.kernel, args); });
  Value out;
  const int M = p.num_outputs();
  for (int m = 0; m < M; ++m) {
    out.parts.push_back(p.value(m));
    out.labels.push_back(M == 1 ? f.def->name : f.def->name + "[" + std::to_string(m + 1) + "]");
  }
  for (int m = 0; m < M; ++m) {
    for (size_t j = 0; j < arity; ++j) {
      out.parts.push_back(p.d(m, static_cast<int>(j)));
      out.labels.push_back("d" + (M == 1 ? f.def->name : f.def->name + "[" + std::to_string(m + 1) + "]") +
                           "/d" + f.def->params[j]);
    }
  }
  return out;
}

A Evaluator::Literal(const Expr& e) {
  // Shape from the first element at each level; every element must agree.
  std::vector<int64_t> shape;
  std::vector<A> items;
  bool all_numbers = true;  // every element written as a number (the parser folds "-3")
  std::function<void(const Expr&, size_t)> walk = [&](const Expr& node, size_t depth) {
    if (node.kind == Expr::kArray) {
      const int64_t count = static_cast<int64_t>(node.args.size());
      if (depth == shape.size()) {
        if (!items.empty()) {
          throw SourceError(ErrorCategory::kValue, node.span,
                            "ragged array literal: a list where the others have numbers");
        }
        shape.push_back(count);
      } else if (shape[depth] != count) {
        throw SourceError(ErrorCategory::kValue, node.span,
                          "ragged array literal: this row has " + std::to_string(count) +
                              (count == 1 ? " element" : " elements") + ", the first one has " + std::to_string(shape[depth]));
      }
      for (const auto& child : node.args) walk(*child, depth + 1);
      return;
    }
    if (depth != shape.size()) {
      throw SourceError(ErrorCategory::kValue, node.span,
                        "ragged array literal: a number where the others have lists");
    }
    A item = Array(node);
    if (item.size() != 1) {
      throw SourceError(ErrorCategory::kValue, node.span,
                        "an array literal holds numbers; this is an array of shape " + ShapeText(item));
    }
    all_numbers = all_numbers && node.kind == Expr::kNumber;
    items.push_back(std::move(item));
  };
  walk(e, 0);
  if (all_numbers) {
    std::vector<double> values;
    for (const A& item : items) values.push_back(item.item());
    return AtSpan(e.span, [&] { return A::from(values, shape); });
  }
  // An element computed from something (a variable, a call) may be on a
  // grad's tape, or be a value computed from one before it: build the array
  // with the runtime's recorded stack and reshape, so grad follows the path
  // through each element (a constant made of their numbers would drop it,
  // silently), and so does the check for values computed before a grad.
  return AtSpan(e.span, [&] {
    for (A& item : items) {
      if (item.rank() != 0) item = dualcast::reshape(item, Shape{});
    }
    A flat = dualcast::stack(items);
    return shape.size() == 1 ? flat : dualcast::reshape(flat, shape);
  });
}

A Evaluator::Unary(const Expr& e) {
  A x = Array(*e.args[0]);
  return AtSpan(e.span, [&] { return e.op == Tok::kNot ? A(x == 0.0) : A(-x); });
}

A Evaluator::Binary(const Expr& e) {
  A a = Array(*e.args[0]);
  A b = Array(*e.args[1]);
  return AtSpan(e.span, [&]() -> A {
    switch (e.op) {
      case Tok::kPlus: return a + b;
      case Tok::kMinus: return a - b;
      case Tok::kStar: return a * b;
      case Tok::kSlash: return a / b;
      case Tok::kCaret: return dualcast::pow(a, b);
      case Tok::kEq: return a == b;
      case Tok::kNe: return a != b;
      case Tok::kLt: return a < b;
      case Tok::kLe: return a <= b;
      case Tok::kGt: return a > b;
      case Tok::kGe: return a >= b;
      case Tok::kAnd: return dualcast::where(a, b != 0.0, 0.0);
      case Tok::kOr: return dualcast::where(a, 1.0, b != 0.0);
      default: return a;
    }
  });
}

}  // namespace dualcast::repl
