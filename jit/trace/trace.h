// Trace: turns a C++ kernel lambda with real data-dependent branches into a jit::Function.
//
// KERNELS MUST BE PURE. The lambda is called once per path (sequence of branch
// decisions), possibly many times; it must have no side effects and keep no
// state between calls, and it must branch only on its arguments (a Var or
// Bool must not outlive the call that made it). A kernel
// that takes a different branch condition when re-run with the same decisions
// is rejected with Error(kTrace) ("not pure/deterministic").
//
// How: the lambda is called with one jit::Var per input (var.h). Each
// operation records a node in a hash-consed DAG shared by all runs. Each
// `if (traced_bool)` asks the path oracle, which answers from a forced prefix
// of decisions and `true` beyond it; the tracer then explores decision
// sequences depth-first (true first, deterministic) until every path has run.
// A condition already decided on the current path (or its negation) is
// answered without a new decision, and a constant condition never branches.
// The paths form a decision tree. Where paths re-join (the two sides of a
// decision go on doing the same work on different values) the decision
// becomes one structured If yielding the values that differ and the rest is
// emitted once after it, so k sequential `if`s give IR linear in k (though the
// lambda runs 2^k times); paths that do not re-join stay nested if/else
// blocks, each yielding the kernel's M outputs. dc::cond (cond.h) traces both
// sides once into one If, with no re-runs. Operations are placed so
// that every path evaluates each operation it needs exactly once and nothing
// it does not need: work used by both sides of a branch stays above it, work
// used by one side sinks into that side (trace_merge.cc). A decision whose
// two sides do the same thing is dropped. The order of ops within a block
// depends only on the kernel's structure, not on the order in which the C++
// compiler happened to evaluate operands, so the IR (and its hash) is stable.
//
// Limits (TraceOptions) end in Error(kTrace) naming the kernel and the limit:
// a loop whose trip count depends on the data (`while (x > 0) x -= 1;`) hits
// max_decisions_per_path at once instead of hanging; more than max_paths runs
// name dc::cond. Use `select(c, a, b)` for choices that need no branch.
//
// Types: input i is a Var of input_types[i] (f32 or f64). The kernel's
// default type (for constants made from a number alone) is f64 if any input is
// f64, else f32 (f64 with no inputs). All outputs get one type: the widest type
// of any non-constant output on any path (the default type when every output
// is constant); other outputs are converted (constants re-rounded, values cast).
//
// The lambda may return a Var (or a number), a std::tuple of them, or a
// std::array of them; anything else is a compile-time error.
//
// Example:
//   std::vector<Type> f32(2, Type::kF32);
//   Function f = Trace("clip", [](auto x, auto hi) {
//     if (x > hi) return hi;
//     return x * 2;
//   }, f32);
//   // Print(f):                       (the constant sinks into the only side using it)
//   // func clip(%0: f32, %1: f32) -> (f32) {
//   //   %2 = gt %0, %1 : bool
//   //   %3 = if %2 {
//   //     yield %1
//   //   } else {
//   //     %4 = const 2 : f32
//   //     %5 = mul %0, %4 : f32
//   //     yield %5
//   //   }
//   //   return %3
//   // }
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "jit/ir/ir.h"
#include "jit/trace/cond.h"
#include "jit/trace/var.h"

namespace dualcast::jit {

// Set per kernel with dc::kernel(name, f, options).
struct TraceOptions {
  int max_decisions_per_path = 32;  // data-dependent branches along one path
  // Paths (runs of the lambda) in all. A run costs microseconds and re-joining
  // paths are merged (IR linear in the source), so the limit only stops
  // kernels whose paths do not re-join; dc::cond avoids the re-runs altogether.
  int max_paths = 1 << 16;
  // Instructions of the traced function: paths that never re-join (each
  // condition depends on the path before it) duplicate the rest of the kernel
  // per path; this stops such a kernel before it costs minutes to compile.
  int max_insts = 1 << 17;
  // fast_math: tanh and sigmoid trace as fast_tanh and fast_sigmoid, the cheaper
  // forms with absolute rather than relative error bounds (docs/fast-activations.md),
  // as if the lambda called those. Nothing else changes: no reassociation, NaN
  // and infinities as always. Then a backend hint, carried with the kernel's
  // options (Function::hints) and part of the compiled kernel's cache key: the
  // vector width in lanes (0: the backend's choice; else a power of two up to
  // 64; the CPU backend writes its kernels at that width, 2 lanes at least).
  bool fast_math = false;
  int vector_width = 0;
};

// Throws Error(kInvalidArgument) naming the kernel for options out of range.
void ValidateTraceOptions(const std::string& name, const TraceOptions& options);

// The most arguments a traced kernel may take: enough for wide cells (an
// LSTM variant with its weights as scalars), small enough that dispatching on
// the run-time arity stays cheap to compile (one check per arity per kernel).
inline constexpr size_t kMaxTraceArity = 64;

namespace trace_detail {
template <class T>
concept OutputScalar = std::same_as<std::remove_cvref_t<T>, Var> ||
                       TraceScalar<std::remove_cvref_t<T>>;

template <class R>
struct KernelResultTraits : std::bool_constant<OutputScalar<R>> {};
template <class... Ts>
struct KernelResultTraits<std::tuple<Ts...>>
    : std::bool_constant<(sizeof...(Ts) > 0) && (OutputScalar<Ts> && ...)> {};
template <class T, size_t M>
struct KernelResultTraits<std::array<T, M>> : std::bool_constant<(M > 0) && OutputScalar<T>> {};
}  // namespace trace_detail

// What a kernel lambda may return: a scalar (Var or number), a non-empty
// std::tuple of scalars or a non-empty std::array of scalars.
template <class R>
concept KernelResult = trace_detail::KernelResultTraits<std::remove_cvref_t<R>>::value;

namespace trace_detail {

// One trace in progress. While it lives it is the current thread's trace (the
// one Var operations record into); it restores the previous one when destroyed.
class Tracer {
 public:
  Tracer(std::string name, std::span<const Type> input_types, const TraceOptions& options);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  Var Input(size_t i) const;
  void BeginRun();
  void EndRun(const std::vector<ValueId>& outputs);
  bool NextPath();  // false once every path has run
  Function Finish();

  class State;

 private:
  std::unique_ptr<State> state_;
};

template <class T>
ValueId OutputId(const T& value) {
  if constexpr (std::same_as<T, Var>) {
    return value.id();
  } else {
    return DefaultConstant(NumberOf(value));
  }
}

template <class R>
std::vector<ValueId> OutputIds(const R& result) {
  if constexpr (OutputScalar<R>) {
    return {OutputId(result)};
  } else {
    return std::apply(
        [](const auto&... values) {
          return std::vector<ValueId>{OutputId(static_cast<const std::remove_cvref_t<
                                                   decltype(values)>&>(values))...};
        },
        result);
  }
}

template <size_t>
using VarFor = Var;

template <class F, size_t K>
constexpr bool InvocableWith() {
  return []<size_t... I>(std::index_sequence<I...>) {
    return std::is_invocable_v<F&, VarFor<I>...>;
  }(std::make_index_sequence<K>{});
}

template <class F>
constexpr std::array<bool, kMaxTraceArity + 1> InvocableArities() {
  return []<size_t... K>(std::index_sequence<K...>) {
    return std::array<bool, kMaxTraceArity + 1>{InvocableWith<F, K>()...};
  }(std::make_index_sequence<kMaxTraceArity + 1>{});
}

template <class F>
constexpr bool InvocableWithSomeArity() {
  for (bool ok : InvocableArities<F>()) {
    if (ok) return true;
  }
  return false;
}

[[noreturn]] void ThrowArity(const std::string& name, size_t arity,
                             const std::array<bool, kMaxTraceArity + 1>& accepted);

template <class F, class Indices>
struct TracedResult;
template <class F, size_t... I>
struct TracedResult<F, std::index_sequence<I...>> {
  using type = std::remove_cvref_t<std::invoke_result_t<F&, VarFor<I>...>>;
};

template <size_t K, class F>
Function TraceWithArity(std::string name, F& f, std::span<const Type> types,
                        const TraceOptions& options) {
  using R = typename TracedResult<F, std::make_index_sequence<K>>::type;
  static_assert(KernelResult<R>,
                "dualcast kernel must return a scalar, a std::tuple of scalars or a std::array "
                "of scalars");
  if constexpr (KernelResult<R>) {
    Tracer tracer(std::move(name), types, options);
    do {
      tracer.BeginRun();
      [&]<size_t... I>(std::index_sequence<I...>) {
        const R& result = std::invoke(f, tracer.Input(I)...);
        tracer.EndRun(OutputIds(result));
      }(std::make_index_sequence<K>{});
    } while (tracer.NextPath());
    return tracer.Finish();
  } else {
    return Function();
  }
}

template <size_t K, class F>
Function TraceDispatch(std::string& name, F& f, std::span<const Type> types,
                       const TraceOptions& options) {
  if constexpr (K > kMaxTraceArity) {
    ThrowArity(name, types.size(), InvocableArities<F>());
  } else {
    if (types.size() == K) {
      if constexpr (InvocableWith<F, K>()) {
        return TraceWithArity<K>(std::move(name), f, types, options);
      } else {
        ThrowArity(name, K, InvocableArities<F>());
      }
    }
    return TraceDispatch<K + 1>(name, f, types, options);
  }
}

}  // namespace trace_detail

// Traces `f` called with one Var per entry of `input_types`. Throws
// Error(kArity) when f cannot take that many arguments, Error(kType) for a
// non-float input type, Error(kTrace) for impure kernels and exceeded limits.
// The result passes jit::Verify.
template <class F>
Function Trace(std::string name, F&& f, std::span<const Type> input_types,
               TraceOptions options = {}) {
  using Fn = std::remove_reference_t<F>;
  static_assert(trace_detail::InvocableWithSomeArity<Fn>(), "dualcast kernel must be callable with jit::Var arguments: write it as a generic "
       "lambda such as [](auto x, auto y) { ... }");
  return trace_detail::TraceDispatch<0>(name, f, input_types, options);
}

// Like Trace, for callers that learn the arity only at run time (it never
// fails to compile for a callable that takes some number of Vars): a kernel
// that cannot be called with types.size() Vars throws Error(kArity) naming the
// arities it accepts.
template <class F>
Function TraceDynamic(std::string name, F&& f, std::span<const Type> types,
                      TraceOptions options = {}) {
  return trace_detail::TraceDispatch<0>(name, f, types, options);
}

}  // namespace dualcast::jit
