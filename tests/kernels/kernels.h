// The shared kernel suite: branchy generic lambdas every executor (Dual, interpreter, CPU, GPU) is checked on.
//
// Each kernel is a struct with a name, an arity, an input domain that reaches
// every path with useful probability, and `fn`, a generic lambda written the
// way a user would write it (plain `if`, early returns, dualcast::math). The
// same lambda runs on double, Dual<double, N>, float and the tracer's Var.
#pragma once

#include <array>
#include <tuple>
#include <utility>
#include <vector>

#include <dualcast/dual.hpp>

namespace dualcast::testing {

struct Domain {
  double lo, hi;
  bool binary = false;  // draws exactly 0 or 1 (boundary flags)
};

#define DUALCAST_KERNEL(NAME, ...)                   \
  static constexpr const char* name = NAME;         \
  static std::vector<Domain> domain() { return {__VA_ARGS__}; }

struct HmLstmCell {
  DUALCAST_KERNEL("hmlstm_cell", {0, 1, true}, {0, 1, true}, {-2, 2}, {-3, 3}, {-3, 3}, {-3, 3})
  static constexpr auto fn = [](auto z, auto zb, auto c, auto f, auto i, auto g) {
    using namespace dualcast::math;
    if (z == 1) return sigmoid(i) * tanh(g);
    if (zb == 0) return c;
    return sigmoid(f) * c + sigmoid(i) * tanh(g);
  };
};

struct Nested3 {
  DUALCAST_KERNEL("nested3", {-1, 1}, {-1, 1}, {-1, 1})
  static constexpr auto fn = [](auto x, auto y, auto z) {
    using namespace dualcast::math;
    if (x > 0) {
      if (y > 0) {
        if (z > 0) return x * y * z;
        return exp(x) - z;
      }
      return sin(y) * x;
    }
    if (z < 0.5) return x + y + z;
    return cos(x * z);
  };
};

struct BranchOnIntermediate {
  DUALCAST_KERNEL("branch_on_intermediate", {-1, 1}, {0, 2})
  static constexpr auto fn = [](auto x, auto y) {
    using namespace dualcast::math;
    auto e = exp(x) - y;
    if (e > 0.5) return log1p(x * x) * y + e;
    return sin(x) * cos(y);
  };
};

struct SqrtGuard {
  DUALCAST_KERNEL("sqrt_guard", {-1, 1})
  static constexpr auto fn = [](auto x) {
    using namespace dualcast::math;
    if (x > 0) return sqrt(x);
    return x * 0;  // the untaken side would be NaN-producing sqrt(x < 0)
  };
};

struct EarlyReturns {
  DUALCAST_KERNEL("early_returns", {-2, 2}, {0.5, 2})
  static constexpr auto fn = [](auto x, auto y) {
    using namespace dualcast::math;
    if (x < -1) return y;
    if (x < 0) return x * y;
    if (x < 1) return exp(x) * y;
    return x / y;
  };
};

struct Tuple3 {
  DUALCAST_KERNEL("tuple3", {-1, 1}, {-1, 1})
  static constexpr auto fn = [](auto x, auto y) {
    using namespace dualcast::math;
    auto m = x > y ? x : y;
    return std::tuple{x * y, sin(x) + y, m * m};
  };
};

struct ArrayOut {
  DUALCAST_KERNEL("array_out", {-1, 1}, {-1, 1}, {-1, 1})
  static constexpr auto fn = [](auto x, auto y, auto z) {
    using namespace dualcast::math;
    if (z > 0) return std::array{x + y, y * z};
    return std::array{x - y, tanh(z)};
  };
};

struct IgnoresInputs {
  DUALCAST_KERNEL("ignores_inputs", {-1, 1}, {-1, 1}, {-1, 1}, {-1, 1})
  static constexpr auto fn = [](auto x, auto, auto z, auto) { return x * x + z; };
};

struct SelectKernel {
  DUALCAST_KERNEL("select", {-1, 1}, {-1, 1})
  static constexpr auto fn = [](auto x, auto y) {
    using namespace dualcast::math;
    return select(x > y, x * x, exp(y));
  };
};

struct ExpLog {
  DUALCAST_KERNEL("exp_log", {0.1, 3})
  static constexpr auto fn = [](auto x) {
    using namespace dualcast::math;
    return exp(x) * log(x) + expm1(x) - log1p(x);
  };
};

struct Log2Log10Cbrt {
  DUALCAST_KERNEL("log2_log10_cbrt", {0.1, 5})
  static constexpr auto fn = [](auto x) {
    using namespace dualcast::math;
    return log2(x) + log10(x) * cbrt(x);
  };
};

struct Trig {
  DUALCAST_KERNEL("trig", {-1, 1}, {-3, 3})
  static constexpr auto fn = [](auto x, auto y) {
    using namespace dualcast::math;
    return sin(x) * cos(y) + tan(x);
  };
};

struct InverseTrig {
  DUALCAST_KERNEL("inverse_trig", {-0.9, 0.9}, {-3, 3})
  static constexpr auto fn = [](auto x, auto y) {
    using namespace dualcast::math;
    return asin(x) + acos(x) * atan(y) + atan2(y, x + 2);
  };
};

struct Hyperbolic {
  DUALCAST_KERNEL("hyperbolic", {-2, 2})
  static constexpr auto fn = [](auto x) {
    using namespace dualcast::math;
    return sinh(x) + cosh(x) * tanh(x);
  };
};

struct InverseHyperbolic {
  DUALCAST_KERNEL("inverse_hyperbolic", {1.1, 3}, {-0.9, 0.9})
  static constexpr auto fn = [](auto x, auto y) {
    using namespace dualcast::math;
    return asinh(x) + acosh(x) * atanh(y);
  };
};

struct ErrorFunctions {
  DUALCAST_KERNEL("erf_erfc", {-2, 2})
  static constexpr auto fn = [](auto x) {
    using namespace dualcast::math;
    return erf(x) * erfc(x);
  };
};

// lgamma' and tgamma' are digamma, whose reflection for x < 0 runs in double-double
// (digamma_steps.hpp): the largest derivative rule, and the one whose steps must agree bit for
// bit across Dual, the interpreter and both printers.
struct Gamma {
  DUALCAST_KERNEL("gamma", {-6, 3})
  static constexpr auto fn = [](auto x) {
    using namespace dualcast::math;
    if (x < 0) return lgamma(x) + tgamma(x);
    return lgamma(x + 1);
  };
};

struct Rounding {
  DUALCAST_KERNEL("rounding", {-3, 3}, {-3, 3})
  static constexpr auto fn = [](auto x, auto y) {
    using namespace dualcast::math;
    return floor(x) * y + ceil(x) - round(x) * trunc(y) * y;
  };
};

struct MinMax {
  DUALCAST_KERNEL("min_max", {-1, 1}, {-1, 1})
  static constexpr auto fn = [](auto x, auto y) {
    using namespace dualcast::math;
    return min(x, y) * max(x, y) + fmin(x, y * 2) - fmax(x, y);
  };
};

struct HypotCopysign {
  DUALCAST_KERNEL("hypot_copysign", {-2, 2}, {-2, 2})
  static constexpr auto fn = [](auto x, auto y) {
    using namespace dualcast::math;
    return hypot(x, y) + copysign(x, y) * x;
  };
};

struct Powers {
  DUALCAST_KERNEL("powers", {0.5, 2}, {-2, 2})
  static constexpr auto fn = [](auto x, auto y) {
    using namespace dualcast::math;
    return pow(x, y) + pow(x, 3) + pow(2.0, y);
  };
};

struct FusedMultiplyAdd {
  DUALCAST_KERNEL("fma", {-2, 2}, {-2, 2}, {-2, 2})
  static constexpr auto fn = [](auto x, auto y, auto z) {
    using namespace dualcast::math;
    return fma(x, y, z) * z;
  };
};

struct Activations {
  DUALCAST_KERNEL("activations", {-4, 4})
  static constexpr auto fn = [](auto x) {
    using namespace dualcast::math;
    return sigmoid(x) + softplus(x) * relu(x);
  };
};

struct Absolute {
  DUALCAST_KERNEL("absolute", {-2, 2}, {-2, 2})
  static constexpr auto fn = [](auto x, auto y) {
    using namespace dualcast::math;
    return abs(x) * y + fabs(y);
  };
};

struct LogicalConditions {
  DUALCAST_KERNEL("logical_conditions", {-1, 1}, {-1, 1})
  static constexpr auto fn = [](auto x, auto y) {
    if (x > 0 && y > 0) return x * y;
    if (x > 0 || y > 0) return x + y;
    return -x;
  };
};

// A loop unrolled by the tracer: 4 independent decisions, 16 paths.
struct UnrolledLoop {
  DUALCAST_KERNEL("unrolled_loop", {-1, 1}, {-1, 1}, {-1, 1}, {-1, 1})
  static constexpr auto fn = [](auto a, auto b, auto c, auto d) {
    std::array v{a, b, c, d};
    auto acc = a * 0 + 1;
    for (int k = 0; k < 4; ++k) {
      if (v[k] > 0) {
        acc = acc * v[k] + 1;
      } else {
        acc = acc - v[k] * 0.5;
      }
    }
    return acc;
  };
};

struct Division {
  DUALCAST_KERNEL("division", {0.5, 2}, {-2, 2})
  static constexpr auto fn = [](auto x, auto y) { return x / (y * y + 1) - y / x; };
};

// A 1-D return-mapping law of a simulation code (elastoplastic, linear hardening).
struct ReturnMapping {
  DUALCAST_KERNEL("return_mapping", {-0.02, 0.02}, {-0.005, 0.005}, {0, 0.01}, {150, 250},
                  {0.1, 0.3}, {5, 20})
  static constexpr auto fn = [](auto eps, auto ep, auto alpha, auto E, auto sy, auto H) {
    using namespace dualcast::math;
    auto trial = E * (eps - ep);
    auto f = abs(trial) - (sy + H * alpha);
    if (f <= 0) return trial;
    auto dgamma = f / (E + H);
    return trial - E * dgamma * (trial / abs(trial));
  };
};

struct ReluChain {
  DUALCAST_KERNEL("relu_chain", {-1, 1}, {-1, 1})
  static constexpr auto fn = [](auto x, auto y) {
    using namespace dualcast::math;
    return relu(x - y) * relu(y - x + 1);
  };
};

struct Deep6 {
  DUALCAST_KERNEL("deep6", {-3, 3})
  static constexpr auto fn = [](auto x) {
    using namespace dualcast::math;
    if (x > -2) {
      if (x > -1) {
        if (x > 0) {
          if (x > 1) {
            if (x > 2) {
              if (x > 2.5) return exp(x);
              return x * x;
            }
            return sin(x);
          }
          return cos(x);
        }
        return tanh(x);
      }
      return sigmoid(x);
    }
    return x;
  };
};

#undef DUALCAST_KERNEL

// Calls K::fn with the elements of `args` (all of one type T).
template <class K, class T, size_t N>
auto CallKernel(const std::array<T, N>& args) {
  return [&]<size_t... I>(std::index_sequence<I...>) { return K::fn(args[I]...); }(
      std::make_index_sequence<N>{});
}

// The kernel's outputs as a vector whatever the lambda returned.
template <class R>
auto OutputsOf(const R& r) {
  if constexpr (requires { std::tuple_size<R>::value; }) {
    using E = std::remove_cvref_t<decltype(std::get<0>(r))>;
    return std::apply([](const auto&... e) { return std::vector<E>{E(e)...}; }, r);
  } else {
    return std::vector<R>{r};
  }
}

// The number of arguments K::fn takes (probed with doubles, 0..8).
template <class K, size_t N = 0>
constexpr size_t Arity() {
  if constexpr (N > 8) {
    static_assert(N <= 8, "kernel arity above 8");
    return 0;
  } else if constexpr ([]<size_t... I>(std::index_sequence<I...>) {
                         return std::is_invocable_v<decltype(K::fn), decltype(double(I))...>;
                       }(std::make_index_sequence<N>{})) {
    return N;
  } else {
    return Arity<K, N + 1>();
  }
}

using AllKernels =
    std::tuple<HmLstmCell, Nested3, BranchOnIntermediate, SqrtGuard, EarlyReturns, Tuple3,
               ArrayOut, IgnoresInputs, SelectKernel, ExpLog, Log2Log10Cbrt, Trig, InverseTrig,
               Hyperbolic, InverseHyperbolic, ErrorFunctions, Gamma, Rounding, MinMax, HypotCopysign,
               Powers, FusedMultiplyAdd, Activations, Absolute, LogicalConditions, UnrolledLoop,
               Division, ReturnMapping, ReluChain, Deep6>;

}  // namespace dualcast::testing
