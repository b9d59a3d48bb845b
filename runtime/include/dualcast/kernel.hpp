// dualcast::Kernel: a named scalar C++ lambda that broadcasts can run, traced lazily per arity and dtype.
//
// `kernel(name, lambda)` only stores the lambda; nothing is traced until a
// broadcast (or partials(), or a built-in operator) asks for the kernel's IR
// at some arity and element type. Each (arity, dtype) is traced once with
// jit::TraceDynamic, optimised (jit::Optimize) and kept for the life of the
// Kernel, so a training loop pays for tracing once. Copies share that cache
// (a Kernel is a cheap handle), and it is safe to use one Kernel from several
// threads at once.
//
// The lambda must be a pure generic lambda (see jit/trace/trace.h): it is re-run
// once per branch path while tracing, and also runs on float, double and
// Dual<...> in tests, so write it with `dualcast::math` functions and plain
// `if`s on the data.
//
// No captures: a kernel is traced once and the trace is kept, so a captured
// variable would be frozen at the value it had when first traced (a later
// change silently ignored). `kernel()` refuses, at compile time, any callable
// with state (std::is_empty_v: a lambda with a capture of any kind); pass the
// value as an argument instead — `broadcast(k, x, Array<float>::scalar(s))`
// costs nothing, a rank-0 argument is broadcast. A callable whose state is
// truly immutable (a program tree held by value) may construct
// Kernel(name, trace_fn) itself, taking that responsibility.
//
// Example:
//   dualcast::Kernel clip = dualcast::kernel("clip", [](auto x, auto hi) {
//     if (x > hi) return hi;
//     return x * 2;
//   });
//   auto fn = clip.function(2, jit::Type::kF32);  // traced now; cached afterwards
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "dualcast/math.hpp"  // so that kernels can say `using namespace dualcast::math`

#include "dualcast/detail/array_impl.hpp"
#include "jit/ir/ir.h"
#include "jit/trace/trace.h"

namespace dualcast {

class Kernel {
 public:
  // Traces the lambda with `types.size()` inputs of the given types.
  using TraceFn = std::function<jit::Function(const std::string& name,
                                              std::span<const jit::Type> types)>;

  // An empty handle; using it throws Error(kInvalidArgument).
  Kernel() = default;
  Kernel(std::string name, TraceFn trace);

  bool valid() const { return state_ != nullptr; }
  const std::string& name() const;

  // The traced, optimised function for `arity` inputs of `dtype` (f32 or
  // f64), traced on first use. Throws Error(kArity) when the lambda cannot
  // take `arity` arguments, Error(kTrace) for impure kernels or exceeded
  // tracer limits (the message names the kernel).
  std::shared_ptr<const jit::Function> function(int arity, jit::Type dtype) const;
  std::shared_ptr<const jit::Function> function(int arity, detail::DType dtype) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// Makes a Kernel from a generic lambda; `name` appears in errors, logs and
// kernel symbols. `options` (jit::TraceOptions): the path limit and per-path
// decision limit, fast-math activations and the vector width; options out of
// range throw Error(kInvalidArgument) here, naming the kernel.
template <class F>
Kernel kernel(std::string name, F f, jit::TraceOptions options = {}) {
  static_assert(jit::trace_detail::InvocableWithSomeArity<F>(),
                "dualcast::kernel needs a generic lambda callable with jit::Var arguments, "
                "such as [](auto x, auto y) { ... }. If it is one, a call inside it does not take "
                "a traced value (the compiler's first error names it): kernel math is "
                "dualcast::math's, dc::math::sin(x) or sin(x) after `using namespace dc::math;`, "
                "not the whole-array functions dc::sin(Array) nor std::; docs/ops.md lists what "
                "a kernel can call");
  static_assert(std::is_empty_v<F>,
                "dualcast::kernel: the lambda captures state. A kernel is traced once and the trace "
                "is reused, so a captured variable would be frozen at its first value. Remove the "
                "capture and pass the value as an argument instead (a scalar is a free rank-0 "
                "broadcast: dualcast::broadcast(k, x, Array<float>::scalar(v)))");
  jit::ValidateTraceOptions(name, options);
  return Kernel(std::move(name), [f = std::move(f), options](
                                     const std::string& n, std::span<const jit::Type> types) mutable {
    return jit::TraceDynamic(n, f, types, options);
  });
}

namespace detail {
inline jit::Type JitType(DType t) { return t == DType::kF32 ? jit::Type::kF32 : jit::Type::kF64; }
}  // namespace detail

}  // namespace dualcast
