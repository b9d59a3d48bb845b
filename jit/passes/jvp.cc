// Forward mode as an IR pass (see jvp.h): a sparsity pre-pass, then one walk emitting primal and tangents.
#include "jit/passes/jvp.h"

#include <concepts>
#include <limits>
#include <numbers>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dualcast/activation_steps.hpp"
#include "jit/ir/activation.h"
#include "dualcast/digamma_steps.hpp"
#include "dualcast/hypot_steps.hpp"
#include "jit/error.h"
#include "jit/passes/rewrite.h"

namespace dualcast::jit {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One tangent value per differentiated input; kNoValue marks a lane that is
// structurally zero (never emitted, never multiplied).
using Lanes = std::vector<ValueId>;

// The rounding ops and sign: derivative 0 wherever it exists, NaN at a NaN input.
bool IsPiecewiseConstant(Op op) {
  return op == Op::kFloor || op == Op::kCeil || op == Op::kRound || op == Op::kTrunc ||
         op == Op::kRint || op == Op::kSign;
}

// Which operands' tangents can reach the result (bit k = operand k). This is
// the sparsity pattern of the rule table below; the pre-pass uses it to decide
// which lanes an If must carry before either branch has been emitted.
unsigned TangentCarryingOperands(const Inst& inst) {
  if (!IsFloat(inst.type)) return 0;  // bools have no tangents
  switch (Info(inst.op).kind) {
    case OpKind::Leaf:
    case OpKind::Compare:
    case OpKind::Logic:
    case OpKind::Control: return 0;
    case OpKind::Select: return 0b110;  // the condition is not differentiated
    case OpKind::Cast: return 0b1;
    case OpKind::Arith:
    case OpKind::Math: break;
  }
  switch (inst.op) {
    case Op::kCopysign: return 0b01;  // only the sign of the second operand is read
    case Op::kLdexp: return 0b01;     // the count is an integer
    default: return (1u << inst.num_args) - 1;
  }
}

// The arithmetic of dualcast/activation_steps.hpp as IR instructions of one type.
struct IrSteps {
  using V = ValueId;
  Builder& b;
  Type type;
  V Const(double c) { return b.Const(type, c); }
  V Add(V x, V y) { return b.Add(x, y); }
  V Sub(V x, V y) { return b.Sub(x, y); }
  V Mul(V x, V y) { return b.Mul(x, y); }
  V Div(V x, V y) { return b.Div(x, y); }
  V Neg(V x) { return b.Neg(x); }
  V Abs(V x) { return b.Emit(Op::kAbs, {x}); }
  V Exp(V x) { return b.Emit(Op::kExp, {x}); }
  V Expm1(V x) { return b.Emit(Op::kExpm1, {x}); }
  V Copysign(V x, V y) { return b.Emit(Op::kCopysign, {x, y}); }
  V Hypot(V x, V y) { return b.Emit(Op::kHypot, {x, y}); }
  V Lt(V x, V y) { return b.Emit(Op::kLt, {x, y}); }
  V Eq(V x, V y) { return b.Emit(Op::kEq, {x, y}); }
  V Select(V c, V x, V y) { return b.Select(c, x, y); }
  V Log(V x) { return b.Emit(Op::kLog, {x}); }
  V Floor(V x) { return b.Emit(Op::kFloor, {x}); }
  V Fma(V x, V y, V z) { return b.Emit(Op::kFma, {x, y, z}); }
  V Log2(V x) { return b.Emit(Op::kLog2, {x}); }
  V Ldexp(V x, V n) { return b.Emit(Op::kLdexp, {x, n}); }
};

class ForwardMode {
 public:
  ForwardMode(const Function& in, std::span<const int> wrt)
      : in_(in), wrt_(wrt.begin(), wrt.end()), lanes_(wrt.size()), out_(in.name), b_(out_),
        may_be_nonzero_(in.insts.size() * lanes_, false),
        primal_(in.insts.size(), kNoValue), tangent_(in.insts.size(), None()) {
    out_.hints = in.hints;
  }

  JvpResult Run() {
    for (ValueId v : in_.inputs) {
      const Inst& input = in_.inst(v);
      primal_[v] = b_.Input(input.type);
      for (size_t j = 0; j < lanes_; ++j) {
        if (wrt_[j] != static_cast<int>(input.index)) continue;
        tangent_[v][j] = b_.Const(input.type, 1);  // the seed: ∂x_i/∂x_i = 1
        may_be_nonzero_[v * lanes_ + j] = true;
      }
    }
    FindNonzeroLanes(0);
    Walk(0);

    JvpResult result;
    std::vector<ValueId> outputs;
    for (ValueId y : in_.outputs()) outputs.push_back(primal_[y]);
    for (ValueId y : in_.outputs()) {
      for (size_t j = 0; j < lanes_; ++j) {
        ValueId d = tangent_[y][j];
        result.structurally_zero.push_back(d == kNoValue);
        outputs.push_back(d == kNoValue ? b_.Const(in_.type(y), 0) : d);
      }
    }
    b_.Return(outputs);
    result.function = std::move(out_);
    return result;
  }

 private:
  Lanes None() const { return Lanes(lanes_, kNoValue); }
  static bool Any(const Lanes& d) {
    for (ValueId v : d) {
      if (v != kNoValue) return true;
    }
    return false;
  }
  bool MayBeNonzero(ValueId old, size_t j) const { return may_be_nonzero_[old * lanes_ + j]; }

  // --- The sparsity pre-pass: which lanes of which old values can be non-zero.

  void FindNonzeroLanes(BlockId block) {
    for (ValueId v : in_.blocks[block].body) {
      const Inst& inst = in_.inst(v);
      if (inst.op == Op::kInput) continue;  // seeded in Run
      if (inst.op == Op::kIf) {
        FindNonzeroLanes(inst.then_block);
        FindNonzeroLanes(inst.else_block);
        continue;
      }
      for (size_t j = 0; j < lanes_; ++j) {
        bool nonzero = false;
        if (inst.op == Op::kResult) {
          const Inst& if_inst = in_.inst(inst.args[0]);
          nonzero = MayBeNonzero(in_.blocks[if_inst.then_block].yields[inst.index], j) ||
                    MayBeNonzero(in_.blocks[if_inst.else_block].yields[inst.index], j);
        } else {
          unsigned carrying = TangentCarryingOperands(inst);
          for (int k = 0; k < inst.num_args; ++k) {
            if ((carrying >> k & 1) && MayBeNonzero(inst.args[k], j)) nonzero = true;
          }
        }
        may_be_nonzero_[v * lanes_ + j] = nonzero;
      }
    }
  }

  // --- The emitting walk.

  void Walk(BlockId block) {
    const std::vector<ValueId>& body = in_.blocks[block].body;
    for (size_t i = 0; i < body.size(); ++i) {
      ValueId v = body[i];
      const Inst& inst = in_.inst(v);
      switch (inst.op) {
        case Op::kInput: break;   // mapped in Run
        case Op::kResult: break;  // mapped by its If
        case Op::kIf: {
          std::vector<ValueId> results;  // the old results directly follow their If
          for (size_t k = i + 1; k < body.size() && in_.inst(body[k]).op == Op::kResult &&
                                 in_.inst(body[k]).args[0] == v;
               ++k) {
            results.push_back(body[k]);
          }
          DifferentiateIf(inst, results);
          break;
        }
        default: {
          ValueId args[3];
          for (int k = 0; k < inst.num_args; ++k) args[k] = primal_[inst.args[k]];
          const auto activation = ActivationOf(inst.op);
          if (activation && Any(tangent_[inst.args[0]])) {
            // Value and derivative from one exp (activation_steps.hpp): the printers lower
            // a plain tanh/sigmoid (fast or not) to the same steps, so the primal keeps its bits.
            IrSteps m{b_, inst.type};
            const auto r = ::dualcast::detail::activation_steps(*activation, m, args[0]);
            primal_[v] = r.value;
            tangent_[v] = Scale(tangent_[inst.args[0]], r.slope);
            break;
          }
          ValueId y = CloneInst(inst, std::span<const ValueId>(args, inst.num_args), b_);
          primal_[v] = y;
          tangent_[v] = Differentiate(inst, y);
        }
      }
    }
  }

  // The new If yields the primal results, then one value per carried lane
  // (k, j): those some branch may make non-zero. A branch in which such a lane
  // is structurally zero yields the constant 0; a lane zero in both branches
  // is not carried and stays structurally zero after the If.
  void DifferentiateIf(const Inst& inst, const std::vector<ValueId>& old_results) {
    const Block& then_block = in_.blocks[inst.then_block];
    const Block& else_block = in_.blocks[inst.else_block];
    std::vector<std::pair<size_t, size_t>> carried;
    for (size_t k = 0; k < then_block.yields.size(); ++k) {
      for (size_t j = 0; j < lanes_; ++j) {
        if (MayBeNonzero(then_block.yields[k], j) || MayBeNonzero(else_block.yields[k], j)) {
          carried.emplace_back(k, j);
        }
      }
    }
    b_.BeginIf(primal_[inst.args[0]]);
    Walk(inst.then_block);
    b_.BeginElse(BranchYields(then_block, carried));
    Walk(inst.else_block);
    std::vector<ValueId> results = b_.EndIf(BranchYields(else_block, carried));
    for (ValueId r : old_results) {
      primal_[r] = results[in_.inst(r).index];
      tangent_[r] = None();
    }
    const size_t num_primal = then_block.yields.size();
    for (size_t n = 0; n < carried.size(); ++n) {
      auto [k, j] = carried[n];
      for (ValueId r : old_results) {
        if (in_.inst(r).index == k) tangent_[r][j] = results[num_primal + n];
      }
    }
  }

  std::vector<ValueId> BranchYields(const Block& block,
                                    const std::vector<std::pair<size_t, size_t>>& carried) {
    std::vector<ValueId> yields;
    for (ValueId y : block.yields) yields.push_back(primal_[y]);
    for (auto [k, j] : carried) {
      ValueId old = block.yields[k];
      ValueId d = tangent_[old][j];
      yields.push_back(d != kNoValue ? d : b_.Const(in_.type(old), 0));
    }
    for (size_t k = 0; k < block.yields.size(); ++k) {
      for (size_t j = 0; j < lanes_; ++j) {
        if (tangent_[block.yields[k]][j] != kNoValue && !MayBeNonzero(block.yields[k], j)) {
          throw Error(ErrorKind::kInternal, "Jvp: a lane the sparsity pre-pass calls zero was "
                                            "emitted (TangentCarryingOperands is out of date)");
        }
      }
    }
    return yields;
  }

  // --- THE RULE TABLE: the tangent lanes of `inst`, whose new primal is `y`.
  // Conventions are the Dual library's (dual/include/dualcast); a rule only
  // combines the lane algebra below, so structural zeros propagate by itself.
  Lanes Differentiate(const Inst& inst, ValueId y) {
    const unsigned carrying = TangentCarryingOperands(inst);
    bool any = false;
    for (int k = 0; k < inst.num_args; ++k) {
      if (carrying >> k & 1) any = any || Any(tangent_[inst.args[k]]);
    }
    if (!any) return None();

    const Type t = inst.type;
    const Lanes none = None();
    const Lanes& da = tangent_[inst.args[0]];
    const Lanes& db = inst.num_args > 1 ? tangent_[inst.args[1]] : none;
    const Lanes& dc = inst.num_args > 2 ? tangent_[inst.args[2]] : none;
    const ValueId a = primal_[inst.args[0]];
    const ValueId b = inst.num_args > 1 ? primal_[inst.args[1]] : kNoValue;
    auto k = [&](double value) { return b_.Const(t, value); };
    auto op = [&](Op o, std::initializer_list<ValueId> args) { return b_.Emit(o, args); };
    auto mul = [&](ValueId p, ValueId q) { return b_.Mul(p, q); };
    auto div = [&](ValueId p, ValueId q) { return b_.Div(p, q); };
    auto add = [&](ValueId p, ValueId q) { return b_.Add(p, q); };
    auto sub = [&](ValueId p, ValueId q) { return b_.Sub(p, q); };
    const double two_over_sqrt_pi = 2 * std::numbers::inv_sqrtpi;

    // Piecewise constant: 0, except NaN at a NaN input (Dual's "NaN value => NaN partials"; a
    // structural zero would turn it into 0). isnan(y) rather than x - x, which is NaN at +-inf.
    if (IsPiecewiseConstant(inst.op)) return Scale(da, [&] { return NanGuard(y, k(0)); });
    switch (inst.op) {
      // Arithmetic.
      case Op::kNeg: return Negated(da);
      case Op::kAdd: return Plus(da, db);
      case Op::kSub: return Minus(da, db);
      case Op::kMul: return Plus(Scale(da, b), Scale(db, a));
      // (da - y db) / b; 0/0 and inf/inf give NaN partials with their NaN value.
      // (+, -, * and fma keep their plain partials: inf - inf or 0 * inf is NaN in
      // the value itself, and a guard on every product would cost the hot paths.)
      case Op::kDiv: return GuardLanes(y, Quotient(Minus(da, Scale(db, y)), b));
      case Op::kFma: return Plus(Plus(Scale(da, b), Scale(db, a)), dc);

      // Exponentials and logarithms.
      // A NaN value (log(-1), atanh(2), fmod(x, 0)) gets NaN partials (NanGuard), so
      // a reverse sweep cannot hide it; a finite formula would otherwise win.
      case Op::kExp: return Scale(da, y);
      case Op::kExp2: return Scale(da, [&] { return mul(y, k(std::numbers::ln2)); });
      // exp(x), not y + 1: y + 1 cancels to nothing for x below about -5 (f32).
      case Op::kExpm1: return Scale(da, [&] { return op(Op::kExp, {a}); });
      case Op::kLog: return Scale(da, [&] { return NanGuard(y, div(k(1), a)); });
      case Op::kLog1p: return Scale(da, [&] { return NanGuard(y, div(k(1), add(k(1), a))); });
      // (1/ln b) / x: x ln b would overflow where the exact derivative is subnormal.
      case Op::kLog2:
        return Scale(da, [&] { return NanGuard(y, div(k(1 / std::numbers::ln2), a)); });
      case Op::kLog10:
        return Scale(da, [&] { return NanGuard(y, div(k(1 / std::numbers::ln10), a)); });
      case Op::kSqrt: return Scale(da, [&] { return div(k(0.5), y); });
      case Op::kCbrt: return Scale(da, [&] { return div(k(1), mul(mul(k(3), y), y)); });

      // Trigonometric and hyperbolic.
      case Op::kSin: return Scale(da, [&] { return op(Op::kCos, {a}); });
      case Op::kCos: return Scale(da, [&] { return b_.Neg(op(Op::kSin, {a})); });
      case Op::kTan: return Scale(da, [&] { return add(k(1), mul(y, y)); });
      // (1 - x)(1 + x) rather than 1 - x²: no cancellation near |x| = 1.
      case Op::kAsin: return Scale(da, [&] { return InvSqrt(OneMinusSquare(a)); });
      case Op::kAcos: return Scale(da, [&] { return div(k(-1), op(Op::kSqrt, {OneMinusSquare(a)})); });
      // 1/(1+x^2); for |x| > 1 as t^2/(1+t^2) with t = 1/x, since x^2 overflows first.
      case Op::kAtan:
        return Scale(da, [&] {
          ValueId t = div(k(1), a), t2 = mul(t, t);
          return b_.Select(op(Op::kGt, {op(Op::kAbs, {a}), k(1)}), div(t2, add(k(1), t2)),
                           div(k(1), add(k(1), mul(a, a))));
        });
      case Op::kSinh: return Scale(da, [&] { return op(Op::kCosh, {a}); });
      case Op::kCosh: return Scale(da, [&] { return op(Op::kSinh, {a}); });
      // kTanh, kSigmoid and their fast variants: value and tangent together, in Walk (IrSteps).
      case Op::kAsinh: return Scale(da, [&] { return div(k(1), op(Op::kHypot, {a, k(1)})); });
      case Op::kAcosh:  // 1 / (sqrt(x - 1) sqrt(x + 1)): x² - 1 would overflow first
        return Scale(da, [&] {
          return div(k(1), mul(op(Op::kSqrt, {sub(a, k(1))}), op(Op::kSqrt, {add(a, k(1))})));
        });
      case Op::kAtanh: return Scale(da, [&] { return NanGuard(y, div(k(1), OneMinusSquare(a))); });

      // Special functions.
      case Op::kErf:
        return Scale(da, [&] { return mul(k(two_over_sqrt_pi), ExpNegSquare(a)); });
      case Op::kErfc:
        return Scale(da, [&] { return mul(k(-two_over_sqrt_pi), ExpNegSquare(a)); });
      // erfinv' = sqrt(pi)/2 exp(erfinv(x)^2), from a more precise erfinv(x) than y (ErfinvSlope).
      case Op::kErfinv: return Scale(da, [&] { return NanGuard(y, ErfinvSlope(a, y)); });
      // lgamma' = digamma; tgamma' = tgamma digamma.
      case Op::kLgamma: return Scale(da, [&] { return NanGuard(y, Digamma(a)); });
      case Op::kTgamma: return Scale(da, [&] { return NanGuard(y, mul(y, Digamma(a))); });

      // Kinks: abs' = sign(x) with sign(0) = 0 and sign(NaN) = NaN; relu takes the
      // tangent where x > 0, elsewhere y times it: y is +0 there (relu'(0) = 0, also at
      // -inf) and NaN at a NaN input, as in Dual.
      case Op::kAbs:
        return Scale(da, [&] {
          ValueId zero_or_nan = b_.Select(op(Op::kEq, {a, a}), k(0), a);
          return b_.Select(op(Op::kGt, {a, k(0)}), k(1),
                           b_.Select(op(Op::kLt, {a, k(0)}), k(-1), zero_or_nan));
        });
      case Op::kRelu: {
        const ValueId positive = op(Op::kGt, {a, k(0)});
        Lanes r = None();
        for (size_t j = 0; j < lanes_; ++j) {
          if (da[j] != kNoValue) r[j] = b_.Select(positive, da[j], IsOne(da[j]) ? y : mul(y, da[j]));
        }
        return r;
      }
      case Op::kSquare: return Scale(da, [&] { return mul(k(2), a); });
      // rsqrt' = (-0.5 y) / x (dual_cmath.hpp's order): one division, no y^3 to overflow.
      case Op::kRsqrt: return Scale(da, [&] { return NanGuard(y, div(mul(k(-0.5), y), a)); });

      // softplus' from e = exp(-|x|): 1/(1+e) for x > 0, e/(1+e) otherwise (dual_math.hpp).
      case Op::kSoftplus:
        return Scale(da, [&] {
          ValueId e = op(Op::kExp, {b_.Neg(op(Op::kAbs, {a}))});
          ValueId one_plus_e = add(k(1), e);
          return NanGuard(y, b_.Select(op(Op::kGt, {a, k(0)}), div(k(1), one_plus_e),
                                       div(e, one_plus_e)));
        });

      // pow, the Dual library's rule (dual_math.hpp) in the same operation order, so
      // that both agree bit for bit. dx: 0 when p == 0; f64: p (y / x) where y is a
      // normal finite number and x != 0 ((p y) / x if y / x overflows), else
      // p x^(p-1); f32: in f64, p (x^p / x) for a finite x != 0, else p x^(p-1), rounded
      // once (p - 1 rounds to p for |p| >= 2^53, which would flip the sign at x = -1).
      // dp: 0 when x == 0 && p > 0; f64: log(x) y; f32: log(x) x^p in f64. NaN value =>
      // NaN partials.
      case Op::kPow: {
        auto dbase = [&] {
          if (t == Type::kF32) {
            auto k64 = [&](double v) { return b_.Const(Type::kF64, v); };
            ValueId a64 = b_.Cast(Type::kF64, a), b64 = b_.Cast(Type::kF64, b);
            ValueId divide = op(Op::kAnd, {op(Op::kIsfinite, {a64}), op(Op::kNe, {a64, k64(0)})});
            ValueId w = op(Op::kPow, {a64, b_.Select(divide, b64, sub(b64, k64(1)))});
            ValueId d64 = mul(b64, b_.Select(divide, div(w, a64), w));
            return b_.Cast(Type::kF32, d64);
          }
          ValueId ay = op(Op::kAbs, {y});
          ValueId normal = op(Op::kAnd, {op(Op::kGe, {ay, k(std::numeric_limits<double>::min())}),
                                         op(Op::kIsfinite, {y})});
          ValueId use_q = op(Op::kAnd, {normal, op(Op::kNot, {op(Op::kEq, {a, k(0)})})});
          ValueId q = div(y, a);
          ValueId inside = b_.Select(op(Op::kIsfinite, {q}), mul(b, q), div(mul(b, y), a));
          return b_.Select(use_q, inside, mul(b, op(Op::kPow, {a, sub(b, k(1))})));
        };
        auto dexp = [&] {
          if (t == Type::kF32) {
            ValueId a64 = b_.Cast(Type::kF64, a), b64 = b_.Cast(Type::kF64, b);
            return b_.Cast(Type::kF32, mul(op(Op::kLog, {a64}), op(Op::kPow, {a64, b64})));
          }
          return mul(op(Op::kLog, {a}), y);
        };
        return Plus(Scale(da,
                          [&] {
                            return NanGuard(y, b_.Select(op(Op::kEq, {b, k(0)}), k(0), dbase()));
                          }),
                    Scale(db, [&] {
                      ValueId x_zero_p_positive =
                          op(Op::kAnd, {op(Op::kEq, {a, k(0)}), op(Op::kGt, {b, k(0)})});
                      return NanGuard(y, b_.Select(x_zero_p_positive, k(0), dexp()));
                    }));
      }

      // atan2(a, b) = angle of (b, a): d/da = b / r², d/db = -a / r², with r = hypot(a, b)
      // divided twice so that r² neither overflows nor underflows.
      // At an infinite argument both partials tend to 0 (the one-sided limit).
      case Op::kAtan2: {
        auto r = [&] { return op(Op::kHypot, {a, b}); };
        auto finite = [&](ValueId v) {
          return NanGuard(y, b_.Select(op(Op::kEq, {r(), k(kInf)}), k(0), v));
        };
        return Plus(Scale(da, [&] { return finite(div(div(b, r()), r())); }),
                    Scale(db, [&] { return finite(b_.Neg(div(div(a, r()), r()))); }));
      }
      // hypot: d/da = a / h, d/db = b / h; the rule (origin, infinite arguments, an h that
      // overflowed or is subnormal) is hypot_steps.hpp's, shared with Dual.
      case Op::kHypot: {
        namespace dd = ::dualcast::detail;
        std::optional<dd::HypotPartials<ValueId>> p;  // built once, for the lanes that need it
        auto partials = [&]() -> const dd::HypotPartials<ValueId>& {
          if (!p) {
            IrSteps m{b_, t};
            const bool f32 = t == Type::kF32;
            const ValueId up = k(f32 ? dd::hypot_scale<float>() : dd::hypot_scale<double>());
            const ValueId least =
                k(f32 ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min());
            p = dd::hypot_partials_steps(m, a, b, y, up, least);
          }
          return *p;
        };
        return Plus(Scale(da, [&] { return NanGuard(y, partials().da); }),
                    Scale(db, [&] { return NanGuard(y, partials().db); }));
      }
      // fmod/remainder: y = a - n b with n an integer, so d/da = 1 and d/db = -n,
      // n recovered from the value (a - y is n b up to rounding, and n is whole).
      case Op::kFmod:
      case Op::kRemainder: {
        return Plus(Scale(da, [&] { return NanGuard(y, k(1)); }),
                    Scale(db, [&] {
                      return NanGuard(y, b_.Neg(op(Op::kRound, {div(sub(a, y), b)})));
                    }));
      }
      case Op::kLdexp: return Scale(da, [&] { return op(Op::kLdexp, {k(1), b}); });
      // fdim(a, b) = a - b above the kink, +0 at and below it (dual_math.hpp's rule: the
      // kink takes the flat side's 0, like abs'(0)); NaN value => NaN partials.
      case Op::kFdim: {
        auto above = [&] { return op(Op::kGt, {a, b}); };
        return Plus(Scale(da, [&] { return NanGuard(y, b_.Select(above(), k(1), k(0))); }),
                    Scale(db, [&] { return NanGuard(y, b_.Select(above(), k(-1), k(0))); }));
      }
      // logaddexp (dual_cmath.hpp's rule, same operations): d/da = 1/(1+e), d/db = e/(1+e)
      // for a > b, mirrored otherwise, (1/2, 1/2) on a tie; e = exp(-|a - b|) corrected by
      // the rounding error lo of s = a - b (TwoSum): e - e lo for s > 0, e + e lo otherwise.
      case Op::kLogaddexp: {
        ValueId s_ab = sub(a, b);
        ValueId e0 = op(Op::kExp, {b_.Neg(op(Op::kAbs, {s_ab}))});
        ValueId bb = sub(s_ab, a);
        ValueId lo = sub(sub(a, sub(s_ab, bb)), add(b, bb));
        // An infinite argument makes lo NaN; e0 is then exact (0) and kept.
        ValueId e = b_.Select(op(Op::kIsfinite, {lo}),
                              b_.Select(op(Op::kGt, {s_ab, k(0)}), sub(e0, mul(e0, lo)),
                                        add(e0, mul(e0, lo))),
                              e0);
        ValueId one_plus_e = add(k(1), e);
        ValueId big = div(k(1), one_plus_e), small = div(e, one_plus_e);
        ValueId tie = op(Op::kEq, {a, b});
        ValueId a_wins = op(Op::kGt, {a, b});
        auto coef = [&](ValueId if_wins, ValueId if_loses) {
          return NanGuard(y, b_.Select(tie, k(0.5), b_.Select(a_wins, if_wins, if_loses)));
        };
        return Plus(Scale(da, [&] { return coef(big, small); }),
                    Scale(db, [&] { return coef(small, big); }));
      }
      // clamp takes the tangent of the value it returns (x at either bound).
      case Op::kClamp: {
        const ValueId x = a, lo = b, hi = primal_[inst.args[2]];
        return Choose(op(Op::kLt, {x, lo}), db,
                      Choose(op(Op::kLt, {hi, x}), dc, da, t), t);
      }

      // Choices take the tangent of the operand whose value they take, decided
      // by the primal's own comparison (a tie takes the first argument).
      case Op::kMin: return Choose(op(Op::kLt, {b, a}), db, da, t);  // (b < a) ? b : a
      case Op::kMax: return Choose(op(Op::kLt, {a, b}), db, da, t);  // (a < b) ? b : a
      case Op::kFmin:  // a NaN loses: b is taken when a is NaN or b < a
        return Choose(op(Op::kOr, {op(Op::kNe, {a, a}), op(Op::kLt, {b, a})}), db, da, t);
      case Op::kFmax:
        return Choose(op(Op::kOr, {op(Op::kNe, {a, a}), op(Op::kLt, {a, b})}), db, da, t);
      case Op::kCopysign:  // d/da = (signbit(a) == signbit(b) ? 1 : -1), d/db = 0
        return Scale(da, [&] {
          ValueId same_sign = op(Op::kEq, {op(Op::kCopysign, {k(1), a}),
                                           op(Op::kCopysign, {k(1), b})});
          return b_.Select(same_sign, k(1), k(-1));
        });

      // Structure: select picks tangents with the primal's condition; cast casts them.
      case Op::kSelect: return Choose(a, db, dc, t);
      case Op::kCast: return CastLanes(t, da);

      default: break;
    }
    throw Error(ErrorKind::kInternal,
                absl::StrCat("Jvp: no derivative rule for ", Spelling(inst.op)));
  }

  ValueId InvSqrt(ValueId v) {
    Type t = out_.type(v);
    return b_.Div(b_.Const(t, 1), b_.Emit(Op::kSqrt, {v}));
  }
  ValueId OneMinusSquare(ValueId v) {
    ValueId one = b_.Const(out_.type(v), 1);
    return b_.Mul(b_.Sub(one, v), b_.Add(one, v));
  }
  // exp(-v^2) with v^2 = hi + lo split exactly by an fma: exp(-hi) (1 - lo). The
  // rounding error of v^2 alone would cost up to v^2 ulp (25 at v = 5).
  ValueId ExpNegSquare(ValueId v) {
    Type t = out_.type(v);
    ValueId hi = b_.Mul(v, v);
    ValueId lo = b_.Emit(Op::kFma, {v, v, b_.Neg(hi)});
    ValueId e = b_.Emit(Op::kExp, {b_.Neg(hi)});
    // A NaN lo (v infinite) would poison exp(-inf) = 0.
    ValueId safe_lo = b_.Select(b_.Emit(Op::kIsfinite, {lo}), lo, b_.Const(t, 0));
    return b_.Emit(Op::kFma, {b_.Neg(safe_lo), e, e});
  }
  // `value` unless the op's own value y is NaN; then y (NaN value => NaN partial).
  ValueId NanGuard(ValueId y, ValueId value) {
    return b_.Select(b_.Emit(Op::kIsnan, {y}), y, value);
  }
  // erfinv'(x) = sqrt(pi)/2 exp(z^2), z = erfinv(x). From the rounded y = z(1 + d) it would
  // be off by 2 y^2 d relative (22 ulp in f32 and 36 in f64 near the tails, |y| ~ 4 and 6):
  // f32 computes z and the slope in double; f64 adds one Newton correction lo (z ~ y + lo)
  // from the residual of erf (|x| <= 1/2) or of erfc on 1 - |x| (exact there, so the
  // residual keeps its digits), as special::erfinv's derivative does, and exp(y^2) with
  // y^2's rounding error restored (fma). +-inf at x = +-1.
  ValueId ErfinvSlope(ValueId x, ValueId y) {
    const Type t = out_.type(x);
    constexpr double c = 0.886226925452758013649083741671139;  // sqrt(pi) / 2
    if (t != Type::kF64) {
      const ValueId z = b_.Emit(Op::kErfinv, {b_.Cast(Type::kF64, x)});
      return b_.Cast(t, b_.Mul(b_.Const(Type::kF64, c), b_.Emit(Op::kExp, {b_.Mul(z, z)})));
    }
    auto k = [&](double v) { return b_.Const(t, v); };
    const ValueId s = b_.Mul(y, y);
    const ValueId e = b_.Emit(Op::kExp, {s});
    const ValueId ax = b_.Emit(Op::kAbs, {x}), ay = b_.Emit(Op::kAbs, {y});
    // Residuals, each times 1/erf'(y) = c e: the step from y towards z.
    const ValueId inv_slope = b_.Mul(k(c), e);
    const ValueId mid = b_.Mul(b_.Sub(x, b_.Emit(Op::kErf, {y})), inv_slope);
    const ValueId tail_mag = b_.Mul(b_.Sub(b_.Emit(Op::kErfc, {ay}), b_.Sub(k(1), ax)), inv_slope);
    const ValueId tail = b_.Select(b_.Emit(Op::kLt, {y, k(0)}), b_.Neg(tail_mag), tail_mag);  // the step on |y|
    const ValueId lo = b_.Select(b_.Emit(Op::kLt, {k(0.5), ax}), tail, mid);
    // exp((y + lo)^2) = e exp(s_lo), s_lo = (y^2 - s) + 2 y lo (both tiny).
    const ValueId s_lo = b_.Add(b_.Emit(Op::kFma, {y, y, b_.Neg(s)}), b_.Mul(b_.Mul(k(2), y), lo));
    const ValueId slope = b_.Mul(k(c), b_.Add(e, b_.Mul(e, s_lo)));
    return b_.Select(b_.Emit(Op::kIsfinite, {y}), slope, k(std::numeric_limits<double>::infinity()));
  }

  // digamma(x): digamma_steps.hpp's steps, in double (a float converted and
  // rounded back once, as Dual<float> does), so lgamma' and tgamma' take the
  // same steps as Dual's; poles give NaN.
  // The two sides under an If (x > 0; NaN goes to the other side, which passes it on): vector
  // code runs the double-double reflection only when some lane is <= 0.
  ValueId Digamma(ValueId x) {
    const Type t = out_.type(x);
    IrSteps m{b_, Type::kF64};
    const ValueId xd = t == Type::kF64 ? x : b_.Cast(Type::kF64, x);
    b_.BeginIf(b_.Emit(Op::kLt, {b_.Const(Type::kF64, 0), xd}));
    const ValueId positive = ::dualcast::detail::digamma_positive_steps(m, xd);
    b_.BeginElse({positive});
    const ValueId rest = ::dualcast::detail::digamma_nonpositive_steps(m, xd);
    const ValueId psi = b_.EndIf({rest})[0];
    return t == Type::kF64 ? psi : b_.Cast(t, psi);
  }

  // --- Lane algebra: structural zeros in, structural zeros out.

  bool IsConst(ValueId v) const { return out_.inst(v).op == Op::kConst; }
  bool IsOne(ValueId v) const { return IsConst(v) && out_.inst(v).imm == 1.0; }

  // coefficient * lane for every non-zero lane; the coefficient is emitted only
  // when some lane needs it (a seed lane of 1 takes the coefficient itself).
  template <std::invocable F>
  Lanes Scale(const Lanes& d, F&& coefficient) {
    if (!Any(d)) return None();
    ValueId c = coefficient();
    Lanes r = None();
    for (size_t j = 0; j < lanes_; ++j) {
      if (d[j] != kNoValue) r[j] = IsOne(d[j]) ? c : b_.Mul(c, d[j]);
    }
    return r;
  }
  Lanes Scale(const Lanes& d, ValueId coefficient) {
    return Scale(d, [coefficient] { return coefficient; });
  }

  Lanes Plus(const Lanes& p, const Lanes& q) {
    Lanes r = None();
    for (size_t j = 0; j < lanes_; ++j) {
      if (p[j] == kNoValue) r[j] = q[j];
      else if (q[j] == kNoValue) r[j] = p[j];
      else r[j] = b_.Add(p[j], q[j]);
    }
    return r;
  }

  Lanes Negated(const Lanes& p) {
    Lanes r = None();
    for (size_t j = 0; j < lanes_; ++j) {
      if (p[j] == kNoValue) continue;
      r[j] = IsConst(p[j]) ? b_.Const(out_.type(p[j]), -out_.inst(p[j]).imm) : b_.Neg(p[j]);
    }
    return r;
  }

  Lanes Minus(const Lanes& p, const Lanes& q) {
    Lanes negated_q = Negated(q);
    Lanes r = None();
    for (size_t j = 0; j < lanes_; ++j) {
      if (p[j] == kNoValue) r[j] = negated_q[j];
      else if (q[j] == kNoValue) r[j] = p[j];
      else r[j] = b_.Sub(p[j], q[j]);
    }
    return r;
  }

  // NanGuard on every lane (the guard's condition emitted once).
  Lanes GuardLanes(ValueId y, const Lanes& p) {
    if (!Any(p)) return p;
    ValueId nan = b_.Emit(Op::kIsnan, {y});
    Lanes r = None();
    for (size_t j = 0; j < lanes_; ++j) {
      if (p[j] != kNoValue) r[j] = b_.Select(nan, y, p[j]);
    }
    return r;
  }

  Lanes Quotient(const Lanes& p, ValueId denominator) {
    Lanes r = None();
    for (size_t j = 0; j < lanes_; ++j) {
      if (p[j] != kNoValue) r[j] = b_.Div(p[j], denominator);
    }
    return r;
  }

  // cond ? p : q lane by lane; only a lane non-zero on one side needs a 0.
  Lanes Choose(ValueId cond, const Lanes& p, const Lanes& q, Type t) {
    Lanes r = None();
    for (size_t j = 0; j < lanes_; ++j) {
      if (p[j] == q[j]) {
        r[j] = p[j];
        continue;
      }
      ValueId zero = b_.Const(t, 0);
      r[j] = b_.Select(cond, p[j] != kNoValue ? p[j] : zero, q[j] != kNoValue ? q[j] : zero);
    }
    return r;
  }

  Lanes CastLanes(Type to, const Lanes& p) {
    Lanes r = None();
    for (size_t j = 0; j < lanes_; ++j) {
      if (p[j] == kNoValue) continue;
      r[j] = IsConst(p[j]) ? b_.Const(to, out_.inst(p[j]).imm) : b_.Cast(to, p[j]);
    }
    return r;
  }

  const Function& in_;
  const std::vector<int> wrt_;
  const size_t lanes_;
  Function out_;
  Builder b_;
  std::vector<bool> may_be_nonzero_;  // [old value * lanes_ + lane]
  std::vector<ValueId> primal_;        // old value -> new value
  std::vector<Lanes> tangent_;         // old value -> its lanes in the new function
};

}  // namespace

JvpResult Jvp(const Function& f, std::span<const int> wrt) {
  for (size_t j = 0; j < wrt.size(); ++j) {
    if (wrt[j] < 0 || static_cast<size_t>(wrt[j]) >= f.num_inputs()) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrFormat("Jvp: kernel '%s' has %d inputs; cannot differentiate with "
                                  "respect to input %d (wrt[%d]); use positions 0..%d",
                                  f.name, f.num_inputs(), wrt[j], j, int(f.num_inputs()) - 1));
    }
    if (!IsFloat(f.input_type(wrt[j]))) {
      throw Error(ErrorKind::kType,
                  absl::StrFormat("Jvp: kernel '%s': input %d is %s and has no derivative; "
                                  "differentiate only float inputs",
                                  f.name, wrt[j], TypeName(f.input_type(wrt[j]))));
    }
  }
  return ForwardMode(f, wrt).Run();
}

}  // namespace dualcast::jit
