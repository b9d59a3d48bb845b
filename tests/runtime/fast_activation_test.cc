// fast_tanh and fast_sigmoid (activation_steps.hpp): values and slopes within their stated absolute bounds, in every layer.
//
// The reference is long double: tanh and its slope 4e/(1+e)^2 (e = exp(-2|x|)),
// sigmoid and its slope e/(1+e)^2 (e = exp(-|x|)), both free of cancellation.
// Each layer is checked against it, not against another layer: the compiled
// kernel's plain value (the printer's lowering), its partials (the jvp pass),
// the tape's one-pass gradient, the interpreter through dualcast::math, and
// Dual. The bounds are the ones docs/fast-activations.md states.
// A structural case checks that the fast jvp kernel is the cheap one: no
// expm1 and no select, which the accurate tanh needs.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "dualcast/array.hpp"
#include "dualcast/broadcast.hpp"
#include "dualcast/dual.hpp"
#include "dualcast/kernel.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/partials.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "jit/ir/interpret.h"
#include "jit/passes/jvp.h"

namespace dualcast {
namespace {

using LD = long double;

struct Exact {
  LD value, slope;
};
Exact TanhExact(LD x) {
  const LD e = std::exp(-2 * std::fabs(x));
  return {std::tanh(x), 4 * e / ((1 + e) * (1 + e))};
}
Exact SigmoidExact(LD x) {
  const LD e = std::exp(-std::fabs(x));
  return {x < 0 ? e / (1 + e) : 1 / (1 + e), e / ((1 + e) * (1 + e))};
}

// Dense near 0 (where tanh's relative error grows), over the range, and into the tails.
template <class T>
std::vector<T> Points() {
  std::vector<T> x;
  for (int k = -4000; k <= 4000; ++k) x.push_back(static_cast<T>(k * 0.005));
  for (int k = -30; k <= -1; ++k) {
    x.push_back(static_cast<T>(std::ldexp(1.0, k)));
    x.push_back(static_cast<T>(-std::ldexp(1.0, k)));
  }
  for (double t = 20; t <= 800; t *= 1.25) {
    x.push_back(static_cast<T>(t));
    x.push_back(static_cast<T>(-t));
  }
  x.push_back(T(0));
  x.push_back(-T(0));
  return x;
}

// Absolute error bounds (docs/fast-activations.md): a few units of 2^-24 (float) or 2^-53 (double).
template <class T>
LD Bound() {
  return 4 * static_cast<LD>(std::numeric_limits<T>::epsilon());
}

template <class T>
void CheckAgainstExact(const char* what, const std::vector<T>& x, const std::vector<T>& value,
                       const std::vector<T>& slope, bool tanh) {
  REQUIRE(value.size() == x.size());
  LD worst_value = 0, worst_slope = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    const Exact e = tanh ? TanhExact(x[k]) : SigmoidExact(x[k]);
    worst_value = std::max(worst_value, std::fabs(static_cast<LD>(value[k]) - e.value));
    if (!slope.empty()) worst_slope = std::max(worst_slope, std::fabs(static_cast<LD>(slope[k]) - e.slope));
  }
  INFO(what, (tanh ? ": fast_tanh" : ": fast_sigmoid"), ", worst value error ", double(worst_value),
       ", worst slope error ", double(worst_slope), ", bound ", double(Bound<T>()));
  CHECK(worst_value <= Bound<T>());
  CHECK(worst_slope <= Bound<T>());
}

const Kernel& FastTanhKernel() {
  static const Kernel k = kernel("fast_tanh_k", [](auto x) {
    using namespace dualcast::math;
    return fast_tanh(x);
  });
  return k;
}
const Kernel& FastSigmoidKernel() {
  static const Kernel k = kernel("fast_sigmoid_k", [](auto x) {
    using namespace dualcast::math;
    return fast_sigmoid(x);
  });
  return k;
}

template <class T>
void CheckEveryLayer(bool tanh) {
  const Kernel& k = tanh ? FastTanhKernel() : FastSigmoidKernel();
  const std::vector<T> x = Points<T>();
  const Array<T> X = Array<T>::from(x, {static_cast<int64_t>(x.size())});

  // The plain value: the printer's own lowering (no tangent in the kernel).
  CheckAgainstExact<T>("broadcast", x, broadcast(k, X).to_vector(), {}, tanh);

  // partials(): the jvp pass's value and slope.
  const Partials<T> p = partials(k, {X});
  CheckAgainstExact<T>("partials", x, p.value(0).to_vector(), p.d(0, 0).to_vector(), tanh);

  // The tape's one-pass gradient of sum(f(x)): the slope, through another generated kernel.
  {
    Tape tape;
    Array<T> y = broadcast(k, X);
    std::vector<Array<T>> g = tape.gradient(sum(y), {X});
    CheckAgainstExact<T>("tape", x, y.to_vector(), g[0].to_vector(), tanh);
  }

  // dualcast::math on T and on Dual<T, 1> (what the interpreter and a host loop use).
  std::vector<T> scalar, dual_value, dual_slope;
  for (T v : x) {
    using namespace dualcast::math;
    scalar.push_back(tanh ? fast_tanh(v) : fast_sigmoid(v));
    const Dual<T, 1> d = tanh ? fast_tanh(Dual<T, 1>::variable(v, 0)) : fast_sigmoid(Dual<T, 1>::variable(v, 0));
    dual_value.push_back(d.value());
    dual_slope.push_back(d.partial(0));
  }
  CheckAgainstExact<T>("dualcast::math", x, scalar, {}, tanh);
  CheckAgainstExact<T>("Dual", x, dual_value, dual_slope, tanh);
  // The interpreter (the reference every backend test uses) is dualcast::math, bit for bit.
  const std::vector<T> interpreted = [&] {
    std::vector<T> out;
    auto fn = k.function(1, std::is_same_v<T, float> ? jit::Type::kF32 : jit::Type::kF64);
    for (T v : x) out.push_back(static_cast<T>(jit::Interpret(*fn, std::vector<double>{double(v)})[0]));
    return out;
  }();
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("x = ", double(x[i]));
    CHECK(std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(interpreted[i]) ==
          std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(scalar[i]));
  }
}

TEST_CASE("fast_tanh: value and slope within 4 eps of tanh's, compiled, taped, scalar and Dual") {
  CheckEveryLayer<float>(true);
  CheckEveryLayer<double>(true);
}

TEST_CASE("fast_sigmoid: value and slope within 4 eps of sigmoid's, compiled, taped, scalar and Dual") {
  CheckEveryLayer<float>(false);
  CheckEveryLayer<double>(false);
}

TEST_CASE("fast activations at the special values: exact limits, NaN through") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Array<float> X = Array<float>::from({inf, -inf, nan}, {3});
  const Partials<float> t = partials(FastTanhKernel(), {X});
  const Partials<float> s = partials(FastSigmoidKernel(), {X});
  const std::vector<float> tv = t.value(0).to_vector(), ts = t.d(0, 0).to_vector();
  const std::vector<float> sv = s.value(0).to_vector(), ss = s.d(0, 0).to_vector();
  CHECK(tv[0] == 1.0f);
  CHECK(tv[1] == -1.0f);
  CHECK(std::isnan(tv[2]));
  CHECK(ts[0] == 0.0f);
  CHECK(ts[1] == 0.0f);
  CHECK(std::isnan(ts[2]));
  CHECK(sv[0] == 1.0f);
  CHECK(sv[1] == 0.0f);
  CHECK(std::isnan(sv[2]));
  CHECK(ss[0] == 0.0f);
  CHECK(ss[1] == 0.0f);
  CHECK(std::isnan(ss[2]));
}

TEST_CASE("a fast activation fused with accurate kernels stays fast, and its gradient is right") {
  // The HM-LSTM cell with the fast activations, fused with the accurate `c * cbar` operator
  // into one gradient kernel: the gradient equals the same cell run on Dual<double> lanes.
  const Kernel cell = kernel("fast_cell", [](auto z, auto c, auto i, auto g) {
    using namespace dualcast::math;
    if (z == 1) return fast_sigmoid(i) * fast_tanh(g);
    return c + fast_sigmoid(i) * fast_tanh(g);
  });
  const int n = 37;
  std::vector<double> z(n), c(n * n), i(n * n), g(n * n), cbar(n * n);
  for (int r = 0; r < n; ++r) z[r] = r % 2;
  for (int k = 0; k < n * n; ++k) {
    c[k] = std::sin(0.1 * k);
    i[k] = 3 * std::cos(0.37 * k);
    g[k] = 2.5 * std::sin(0.23 * k + 1);
    cbar[k] = 1 + 0.5 * std::cos(0.05 * k);
  }
  auto Z = Array<double>::from(z, {n, 1}), C = Array<double>::from(c, {n, n}),
       I = Array<double>::from(i, {n, n}), G = Array<double>::from(g, {n, n}),
       Cbar = Array<double>::from(cbar, {n, n});
  Tape tape;
  Array<double> out = broadcast(cell, Z, C, I, G);
  std::vector<Array<double>> grads = tape.gradient(sum(out * Cbar), {C, I, G});
  const std::vector<double> gc = grads[0].to_vector(), gi = grads[1].to_vector(), gg = grads[2].to_vector();
  using D = Dual<double, 3>;
  for (int r = 0; r < n; ++r) {
    for (int k = 0; k < n; ++k) {
      const int e = r * n + k;
      using namespace dualcast::math;
      const D ci = D::variable(c[e], 0), ii = D::variable(i[e], 1), gi_ = D::variable(g[e], 2);
      const D y = z[r] == 1 ? fast_sigmoid(ii) * fast_tanh(gi_) : ci + fast_sigmoid(ii) * fast_tanh(gi_);
      INFO("element ", e);
      CHECK(gc[e] == doctest::Approx(cbar[e] * y.partial(0)).epsilon(1e-14));
      CHECK(gi[e] == doctest::Approx(cbar[e] * y.partial(1)).epsilon(1e-14));
      CHECK(gg[e] == doctest::Approx(cbar[e] * y.partial(2)).epsilon(1e-14));
    }
  }
}

TEST_CASE("the fast jvp is the cheap one: no expm1, no select, one exp per activation") {
  for (bool fast : {false, true}) {
    const Kernel k = fast ? kernel("fast_pair", [](auto x, auto y) {
      using namespace dualcast::math;
      return fast_tanh(x) * fast_sigmoid(y);
    })
                          : kernel("accurate_pair", [](auto x, auto y) {
                              using namespace dualcast::math;
                              return tanh(x) * sigmoid(y);
                            });
    const jit::JvpResult jvp = jit::Jvp(*k.function(2, jit::Type::kF32), std::vector<int>{0, 1});
    int expm1 = 0, select = 0, exp = 0;
    for (const jit::Inst& inst : jvp.function.insts) {
      expm1 += inst.op == jit::Op::kExpm1;
      select += inst.op == jit::Op::kSelect;
      exp += inst.op == jit::Op::kExp;
    }
    const std::string which = fast ? "fast" : "accurate";
    INFO(which, ": expm1 ", expm1, ", select ", select, ", exp ", exp);
    if (fast) {
      CHECK(expm1 == 0);
      CHECK(select == 0);
      CHECK(exp == 2);
    } else {
      CHECK(expm1 + select > 0);  // the accurate forms are what the fast ones save
    }
  }
}

TEST_CASE("TraceOptions::fast_math traces tanh and sigmoid as their fast forms, and nothing else") {
  jit::TraceOptions fast;
  fast.fast_math = true;
  const auto lambda = [](auto x, auto y) {
    using namespace dualcast::math;
    return tanh(x) * sigmoid(y) + exp(x);
  };
  const Kernel hinted = kernel("hinted_pair", lambda, fast), plain = kernel("plain_pair", lambda);
  auto count = [](const jit::Function& f, jit::Op op) {
    int n = 0;
    for (const jit::Inst& inst : f.insts) n += inst.op == op;
    return n;
  };
  const auto h = hinted.function(2, jit::Type::kF32), p = plain.function(2, jit::Type::kF32);
  CHECK(count(*h, jit::Op::kFastTanh) == 1);
  CHECK(count(*h, jit::Op::kFastSigmoid) == 1);
  CHECK(count(*h, jit::Op::kTanh) + count(*h, jit::Op::kSigmoid) == 0);
  CHECK(count(*h, jit::Op::kExp) == 1);  // exp is exp
  CHECK(count(*p, jit::Op::kTanh) == 1);
  CHECK(count(*p, jit::Op::kSigmoid) == 1);
  CHECK(count(*p, jit::Op::kFastTanh) + count(*p, jit::Op::kFastSigmoid) == 0);

  // The same bits as the lambda written with fast_tanh and fast_sigmoid, and gradients too.
  const Kernel explicit_fast = kernel("explicit_pair", [](auto x, auto y) {
    using namespace dualcast::math;
    return fast_tanh(x) * fast_sigmoid(y) + exp(x);
  });
  const Array<float> X = Array<float>::from({-3.0f, -0.25f, 1e-4f, 0.5f, 7.0f}, {5});
  const Array<float> Y = Array<float>::from({2.0f, -1.0f, 0.0f, 30.0f, -20.0f}, {5});
  CHECK(broadcast(hinted, X, Y).to_vector() == broadcast(explicit_fast, X, Y).to_vector());
  const Partials<float> a = partials(hinted, {X, Y}), b = partials(explicit_fast, {X, Y});
  CHECK(a.d(0, 0).to_vector() == b.d(0, 0).to_vector());
  CHECK(a.d(0, 1).to_vector() == b.d(0, 1).to_vector());
}

}  // namespace
}  // namespace dualcast
