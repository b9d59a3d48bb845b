// Tests of Simplify and Optimize: each rule's resulting IR, bitwise equivalence at special points, and the rules we refuse.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "jit/ir/interpret.h"
#include "jit/ir/ir.h"
#include "jit/ir/print.h"
#include "jit/ir/verify.h"
#include "jit/passes/dce.h"
#include "jit/passes/optimize.h"
#include "jit/passes/simplify.h"

namespace dualcast::jit {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// NaNs are equal whatever their payload or sign; everything else bit for bit (so -0 != +0).
bool SameBits(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

using Body = std::function<std::vector<ValueId>(Builder&, const std::vector<ValueId>&)>;

Function Make(const std::vector<Type>& input_types, const Body& body) {
  Function f("t");
  Builder b(f);
  std::vector<ValueId> in;
  for (Type t : input_types) in.push_back(b.Input(t));
  b.Return(body(b, in));
  return f;
}

// Special values (signed zeros, infinities, NaN, subnormals, extremes) and a few random ones.
std::vector<double> Points(Type t) {
  if (t == Type::kBool) return {0, 1};
  const bool f32 = t == Type::kF32;
  const double tiny = f32 ? std::numeric_limits<float>::denorm_min()
                          : std::numeric_limits<double>::denorm_min();
  const double big = f32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
  std::vector<double> p = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, kInf, -kInf, kNaN,
                           tiny, -tiny, 3 * tiny, big, -big};
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-20, 20);
  for (int i = 0; i < 5; ++i) p.push_back(std::ldexp(mantissa(rng), exponent(rng)));
  return p;
}

// Interprets both functions on the product of Points over their inputs
// (a random sample of it beyond two inputs) and counts bitwise differences.
void CheckSameEverywhere(const Function& before, const Function& after) {
  REQUIRE(Verify(after).ok());
  REQUIRE(before.num_inputs() == after.num_inputs());
  std::vector<std::vector<double>> points;
  size_t combos = 1;
  for (size_t i = 0; i < before.num_inputs(); ++i) {
    points.push_back(Points(before.input_type(i)));
    combos *= points.back().size();
  }
  std::mt19937_64 rng(7);
  const bool sample = combos > 2000;
  int mismatches = 0;
  for (size_t c = 0; c < (sample ? 2000 : combos); ++c) {
    std::vector<double> in;
    size_t rest = c;
    for (const auto& p : points) {
      in.push_back(p[sample ? rng() % p.size() : rest % p.size()]);
      rest /= p.size();
    }
    std::vector<double> want = Interpret(before, in), got = Interpret(after, in);
    for (size_t m = 0; m < want.size(); ++m) {
      if (!SameBits(want[m], got[m]) && ++mismatches <= 3) {
        std::string at;
        for (double x : in) at += std::to_string(x) + " ";
        FAIL_CHECK("output ", m, " differs at (", at, "): ", want[m], " vs ", got[m]);
      }
    }
  }
  CHECK(mismatches == 0);
}

int Count(const Function& f, Op op) {
  int n = 0;
  for (const Inst& inst : f.insts) n += inst.op == op;
  return n;
}

std::string Identity(Type t) {
  const std::string name = TypeName(t);
  return "func t(%0: " + name + ") -> (" + name + ") {\n  return %0\n}\n";
}

TEST_CASE("exact identities reduce to their operand, in f32 and f64") {
  struct Rule {
    const char* name;
    std::function<ValueId(Builder&, ValueId, Type)> build;
  };
  const std::vector<Rule> rules = {
      {"x*1", [](Builder& b, ValueId x, Type t) { return b.Mul(x, b.Const(t, 1)); }},
      {"1*x", [](Builder& b, ValueId x, Type t) { return b.Mul(b.Const(t, 1), x); }},
      {"x/1", [](Builder& b, ValueId x, Type t) { return b.Div(x, b.Const(t, 1)); }},
      {"x-0", [](Builder& b, ValueId x, Type t) { return b.Sub(x, b.Const(t, 0.0)); }},
      {"x+(-0)", [](Builder& b, ValueId x, Type t) { return b.Add(x, b.Const(t, -0.0)); }},
      {"(-0)+x", [](Builder& b, ValueId x, Type t) { return b.Add(b.Const(t, -0.0), x); }},
      {"-(-x)", [](Builder& b, ValueId x, Type) { return b.Neg(b.Neg(x)); }},
      {"min(x,x)", [](Builder& b, ValueId x, Type) { return b.Emit(Op::kMin, {x, x}); }},
      {"max(x,x)", [](Builder& b, ValueId x, Type) { return b.Emit(Op::kMax, {x, x}); }},
      {"fmin(x,x)", [](Builder& b, ValueId x, Type) { return b.Emit(Op::kFmin, {x, x}); }},
      {"fmax(x,x)", [](Builder& b, ValueId x, Type) { return b.Emit(Op::kFmax, {x, x}); }},
      {"select(true,x,1)",
       [](Builder& b, ValueId x, Type t) { return b.Select(b.True(), x, b.Const(t, 1)); }},
      {"select(false,1,x)",
       [](Builder& b, ValueId x, Type t) { return b.Select(b.False(), b.Const(t, 1), x); }},
      {"select(x<1,x,x)",
       [](Builder& b, ValueId x, Type t) {
         return b.Select(b.Emit(Op::kLt, {x, b.Const(t, 1)}), x, x);
       }},
      {"x*1*1/1-0", [](Builder& b, ValueId x, Type t) {
         ValueId one = b.Const(t, 1);
         return b.Sub(b.Div(b.Mul(b.Mul(x, one), one), one), b.Const(t, 0.0));
       }},
  };
  for (Type t : {Type::kF32, Type::kF64}) {
    for (const Rule& rule : rules) {
      CAPTURE(rule.name);
      CAPTURE(TypeName(t));
      Function f = Make({t}, [&](Builder& b, const std::vector<ValueId>& in) {
        return std::vector<ValueId>{rule.build(b, in[0], t)};
      });
      Function s = Simplify(f);
      CHECK(Verify(s).ok());
      CHECK(s.outputs()[0] == s.inputs[0]);  // the pass alone, before DCE
      Function g = Optimize(f);
      CHECK(Print(g) == Identity(t));
      CheckSameEverywhere(f, g);
    }
  }
}

TEST_CASE("sign and rounding rules keep one op") {
  struct Rule {
    const char* name;
    std::function<ValueId(Builder&, ValueId)> build;
    const char* expected_line;
  };
  const std::vector<Rule> rules = {
      {"(-0)-x", [](Builder& b, ValueId x) { return b.Sub(b.Const(Type::kF64, -0.0), x); },
       "%1 = neg %0 : f64"},
      {"abs(abs x)", [](Builder& b, ValueId x) {
         return b.Emit(Op::kAbs, {b.Emit(Op::kAbs, {x})});
       }, "%1 = abs %0 : f64"},
      {"abs(-x)", [](Builder& b, ValueId x) { return b.Emit(Op::kAbs, {b.Neg(x)}); },
       "%1 = abs %0 : f64"},
      {"floor(ceil x)", [](Builder& b, ValueId x) {
         return b.Emit(Op::kFloor, {b.Emit(Op::kCeil, {x})});
       }, "%1 = ceil %0 : f64"},
      {"trunc(round(floor x))", [](Builder& b, ValueId x) {
         return b.Emit(Op::kTrunc, {b.Emit(Op::kRound, {b.Emit(Op::kFloor, {x})})});
       }, "%1 = floor %0 : f64"},
  };
  for (const Rule& rule : rules) {
    CAPTURE(rule.name);
    Function f = Make({Type::kF64}, [&](Builder& b, const std::vector<ValueId>& in) {
      return std::vector<ValueId>{rule.build(b, in[0])};
    });
    Function g = Optimize(f);
    CHECK(Print(g) == std::string("func t(%0: f64) -> (f64) {\n  ") + rule.expected_line +
                          "\n  return %1\n}\n");
    CheckSameEverywhere(f, g);
  }
}

TEST_CASE("fma with a unit factor or a -0 addend becomes one add or mul") {
  struct Rule {
    const char* name;
    std::function<ValueId(Builder&, ValueId, ValueId)> build;
    const char* expected_line;
  };
  const std::vector<Rule> rules = {
      {"fma(1,b,c)", [](Builder& b, ValueId x, ValueId y) {
         return b.Emit(Op::kFma, {b.Const(Type::kF64, 1), x, y});
       }, "%2 = add %0, %1 : f64"},
      {"fma(a,1,c)", [](Builder& b, ValueId x, ValueId y) {
         return b.Emit(Op::kFma, {x, b.Const(Type::kF64, 1), y});
       }, "%2 = add %0, %1 : f64"},
      {"fma(a,b,-0)", [](Builder& b, ValueId x, ValueId y) {
         return b.Emit(Op::kFma, {x, y, b.Const(Type::kF64, -0.0)});
       }, "%2 = mul %0, %1 : f64"},
  };
  for (const Rule& rule : rules) {
    CAPTURE(rule.name);
    Function f = Make({Type::kF64, Type::kF64}, [&](Builder& b, const std::vector<ValueId>& in) {
      return std::vector<ValueId>{rule.build(b, in[0], in[1])};
    });
    Function g = Optimize(f);
    CHECK(Print(g) == std::string("func t(%0: f64, %1: f64) -> (f64) {\n  ") +
                          rule.expected_line + "\n  return %2\n}\n");
    CheckSameEverywhere(f, g);
  }
}

TEST_CASE("boolean rules: select, not, and, or") {
  struct Rule {
    const char* name;
    std::function<ValueId(Builder&, ValueId)> build;
    const char* expected_body;  // between the signature and the closing brace
  };
  const std::vector<Rule> rules = {
      {"select(c,true,false)", [](Builder& b, ValueId c) { return b.Select(c, b.True(), b.False()); },
       "  return %0\n"},
      {"select(c,false,true)", [](Builder& b, ValueId c) { return b.Select(c, b.False(), b.True()); },
       "  %1 = not %0 : bool\n  return %1\n"},
      {"not(not c)", [](Builder& b, ValueId c) {
         return b.Emit(Op::kNot, {b.Emit(Op::kNot, {c})});
       }, "  return %0\n"},
      {"and(c,true)", [](Builder& b, ValueId c) { return b.Emit(Op::kAnd, {c, b.True()}); },
       "  return %0\n"},
      {"and(false,c)", [](Builder& b, ValueId c) { return b.Emit(Op::kAnd, {b.False(), c}); },
       "  %1 = const false : bool\n  return %1\n"},
      {"or(c,true)", [](Builder& b, ValueId c) { return b.Emit(Op::kOr, {c, b.True()}); },
       "  %1 = const true : bool\n  return %1\n"},
      {"or(false,c)", [](Builder& b, ValueId c) { return b.Emit(Op::kOr, {b.False(), c}); },
       "  return %0\n"},
      {"and(c,c)", [](Builder& b, ValueId c) { return b.Emit(Op::kAnd, {c, c}); }, "  return %0\n"},
      {"or(c,c)", [](Builder& b, ValueId c) { return b.Emit(Op::kOr, {c, c}); }, "  return %0\n"},
  };
  for (const Rule& rule : rules) {
    CAPTURE(rule.name);
    Function f = Make({Type::kBool}, [&](Builder& b, const std::vector<ValueId>& in) {
      return std::vector<ValueId>{rule.build(b, in[0])};
    });
    Function g = Optimize(f);
    CHECK(Print(g) == std::string("func t(%0: bool) -> (bool) {\n") + rule.expected_body + "}\n");
    CheckSameEverywhere(f, g);
  }
}

TEST_CASE("casts: same type and the exact f32 -> f64 -> f32 round trip vanish") {
  Function round_trip = Make({Type::kF32}, [](Builder& b, const std::vector<ValueId>& in) {
    return std::vector<ValueId>{b.Cast(Type::kF32, b.Cast(Type::kF64, in[0]))};
  });
  Function g = Optimize(round_trip);
  CHECK(Print(g) == Identity(Type::kF32));
  CheckSameEverywhere(round_trip, g);

  // The builder never emits a same-type cast; one written by hand must still go.
  Function same("t");
  {
    Builder b(same);
    ValueId x = b.Input(Type::kF64);
    Inst cast;
    cast.op = Op::kCast;
    cast.type = Type::kF64;
    cast.num_args = 1;
    cast.args[0] = x;
    same.insts.push_back(cast);
    same.blocks[0].body.push_back(1);
    b.Return({1});
  }
  REQUIRE(Verify(same).ok());
  CHECK(Print(Optimize(same)) == Identity(Type::kF64));

  // f64 -> f32 -> f64 rounds: both casts stay, and 0.1 does not come back.
  Function lossy = Make({Type::kF64}, [](Builder& b, const std::vector<ValueId>& in) {
    return std::vector<ValueId>{b.Cast(Type::kF64, b.Cast(Type::kF32, in[0]))};
  });
  Function h = Optimize(lossy);
  CHECK(Count(h, Op::kCast) == 2);
  CHECK(Interpret(h, std::vector<double>{0.1})[0] == static_cast<double>(0.1f));
}

// Each forbidden rule: the op survives, and a hand-computed IEEE value shows why it must.
TEST_CASE("rules that are not exact in IEEE-754 are not applied") {
  auto unary = [](const std::function<ValueId(Builder&, ValueId)>& build) {
    return Make({Type::kF64}, [&](Builder& b, const std::vector<ValueId>& in) {
      return std::vector<ValueId>{build(b, in[0])};
    });
  };
  auto at = [](const Function& f, std::vector<double> in) { return Interpret(f, in)[0]; };
  auto c = [](Builder& b, double v) { return b.Const(Type::kF64, v); };

  SUBCASE("x*0 and 0*x: inf*0 is NaN, -1*0 is -0") {
    for (bool zero_first : {false, true}) {
      Function f = unary([&](Builder& b, ValueId x) {
        return zero_first ? b.Mul(c(b, 0), x) : b.Mul(x, c(b, 0));
      });
      Function g = Optimize(f);
      CHECK(Count(g, Op::kMul) == 1);
      CHECK(std::isnan(at(g, {kInf})));
      CHECK(std::isnan(at(g, {kNaN})));
      CHECK(std::signbit(at(g, {-1.0})));
      CheckSameEverywhere(f, g);
    }
  }
  SUBCASE("x+0 and 0+x: -0 + 0 is +0") {
    for (bool zero_first : {false, true}) {
      Function f = unary([&](Builder& b, ValueId x) {
        return zero_first ? b.Add(c(b, 0), x) : b.Add(x, c(b, 0));
      });
      Function g = Optimize(f);
      CHECK(Count(g, Op::kAdd) == 1);
      double y = at(g, {-0.0});
      CHECK(y == 0.0);
      CHECK_FALSE(std::signbit(y));
      CheckSameEverywhere(f, g);
    }
  }
  SUBCASE("0-x: 0 - 0 is +0, not -0") {
    Function g = Optimize(unary([&](Builder& b, ValueId x) { return b.Sub(c(b, 0), x); }));
    CHECK(Count(g, Op::kSub) == 1);
    CHECK(Count(g, Op::kNeg) == 0);
    CHECK_FALSE(std::signbit(at(g, {0.0})));
  }
  SUBCASE("x-x and x/x: inf and NaN give NaN, 0/0 is NaN") {
    Function sub = Optimize(unary([](Builder& b, ValueId x) { return b.Sub(x, x); }));
    Function div = Optimize(unary([](Builder& b, ValueId x) { return b.Div(x, x); }));
    CHECK(Count(sub, Op::kSub) == 1);
    CHECK(Count(div, Op::kDiv) == 1);
    CHECK(std::isnan(at(sub, {kInf})));
    CHECK(std::isnan(at(div, {0.0})));
    CHECK(std::isnan(at(div, {-kInf})));
  }
  SUBCASE("x==x, x<x, x!=x: NaN compares unordered") {
    for (Op op : {Op::kEq, Op::kLt, Op::kNe, Op::kGe}) {
      Function f = Make({Type::kF64}, [&](Builder& b, const std::vector<ValueId>& in) {
        return std::vector<ValueId>{b.Emit(op, {in[0], in[0]})};
      });
      Function g = Optimize(f);
      CHECK(Count(g, op) == 1);
      CheckSameEverywhere(f, g);
    }
    Function eq = Optimize(Make({Type::kF64}, [](Builder& b, const std::vector<ValueId>& in) {
      return std::vector<ValueId>{b.Emit(Op::kEq, {in[0], in[0]})};
    }));
    CHECK(at(eq, {kNaN}) == 0);
    CHECK(at(eq, {1.0}) == 1);
  }
  SUBCASE("not(a<b) is not a>=b: both are false at NaN") {
    Function f = Make({Type::kF64, Type::kF64}, [](Builder& b, const std::vector<ValueId>& in) {
      return std::vector<ValueId>{b.Emit(Op::kNot, {b.Emit(Op::kLt, {in[0], in[1]})})};
    });
    Function g = Optimize(f);
    CHECK(Count(g, Op::kNot) == 1);
    CHECK(Count(g, Op::kLt) == 1);
    CHECK(Interpret(g, std::vector<double>{kNaN, 1.0})[0] == 1);
    CheckSameEverywhere(f, g);
  }
  SUBCASE("fma(0,b,c) and fma(a,b,+0): inf*0 is NaN, -0 + +0 is +0") {
    Function zero_factor =
        Make({Type::kF64, Type::kF64}, [&](Builder& b, const std::vector<ValueId>& in) {
          return std::vector<ValueId>{b.Emit(Op::kFma, {c(b, 0), in[0], in[1]})};
        });
    Function plus_zero =
        Make({Type::kF64, Type::kF64}, [&](Builder& b, const std::vector<ValueId>& in) {
          return std::vector<ValueId>{b.Emit(Op::kFma, {in[0], in[1], c(b, 0)})};
        });
    Function g1 = Optimize(zero_factor), g2 = Optimize(plus_zero);
    CHECK(Count(g1, Op::kFma) == 1);
    CHECK(Count(g2, Op::kFma) == 1);
    CHECK(std::isnan(Interpret(g1, std::vector<double>{kInf, 2.0})[0]));
    double y = Interpret(g2, std::vector<double>{-1.0, 0.0})[0];
    CHECK(y == 0.0);
    CHECK_FALSE(std::signbit(y));  // a*b alone would be -0
    CheckSameEverywhere(zero_factor, g1);
    CheckSameEverywhere(plus_zero, g2);
  }
}

TEST_CASE("constant folding evaluates in the instruction's precision") {
  SUBCASE("f64 math on constants becomes one constant") {
    Function f = Make({Type::kF64}, [](Builder& b, const std::vector<ValueId>& in) {
      ValueId k = b.Add(b.Emit(Op::kExp, {b.Const(Type::kF64, 1)}), b.Const(Type::kF64, 2));
      return std::vector<ValueId>{b.Mul(in[0], k)};
    });
    Function g = Optimize(f);
    CHECK(Count(g, Op::kExp) == 0);
    CHECK(Count(g, Op::kAdd) == 0);
    REQUIRE(Count(g, Op::kConst) == 1);
    const Inst& k = g.inst(g.inst(g.outputs()[0]).args[1]);
    CHECK(SameBits(k.imm, std::exp(1.0) + 2.0));
    CheckSameEverywhere(f, g);
  }
  SUBCASE("f32 folding rounds like float arithmetic") {
    Function f = Make({}, [](Builder& b, const std::vector<ValueId>&) {
      ValueId half = b.Const(Type::kF32, 0.5);
      return std::vector<ValueId>{b.Emit(Op::kTanh, {half}),
                                  b.Div(b.Const(Type::kF32, 1), b.Const(Type::kF32, 3)),
                                  b.Cast(Type::kF32, b.Const(Type::kF64, 0.1))};
    });
    Function g = Optimize(f);
    CHECK(Count(g, Op::kTanh) + Count(g, Op::kDiv) + Count(g, Op::kCast) == 0);
    CHECK(SameBits(g.inst(g.outputs()[0]).imm, static_cast<double>(std::tanh(0.5f))));
    CHECK(SameBits(g.inst(g.outputs()[1]).imm, static_cast<double>(1.0f / 3.0f)));
    CHECK(SameBits(g.inst(g.outputs()[2]).imm, static_cast<double>(0.1f)));
  }
  SUBCASE("signed zeros and infinities fold; NaN results stay computed") {
    Function f = Make({}, [](Builder& b, const std::vector<ValueId>&) {
      ValueId zero = b.Const(Type::kF64, 0);
      return std::vector<ValueId>{b.Div(zero, zero), b.Neg(zero),
                                  b.Div(b.Const(Type::kF64, -1), zero),
                                  b.Emit(Op::kSqrt, {b.Const(Type::kF64, -1)})};
    });
    Function g = Optimize(f);
    CHECK(Print(g) ==
          "func t() -> (f64, f64, f64, f64) {\n"
          "  %0 = const 0 : f64\n"
          "  %1 = div %0, %0 : f64\n"
          "  %2 = const -0 : f64\n"
          "  %3 = const -1 : f64\n"
          "  %4 = const -inf : f64\n"
          "  %5 = sqrt %3 : f64\n"
          "  return %1, %2, %4, %5\n"
          "}\n");
  }
  SUBCASE("the sign of a computed NaN survives: copysign(1, -nan) is -1") {
    Function f = Make({}, [](Builder& b, const std::vector<ValueId>&) {
      ValueId minus_nan = b.Neg(b.Const(Type::kF64, kNaN));
      return std::vector<ValueId>{b.Emit(Op::kCopysign, {b.Const(Type::kF64, 1), minus_nan})};
    });
    Function g = Optimize(f);
    CHECK(Interpret(g, std::vector<double>{})[0] == -1.0);
    CHECK(Count(g, Op::kNeg) == 1);
  }
  SUBCASE("comparisons and selects of constants pick a value") {
    Function f = Make({Type::kF64, Type::kF64}, [](Builder& b, const std::vector<ValueId>& in) {
      ValueId lt = b.Emit(Op::kLt, {b.Const(Type::kF64, 1), b.Const(Type::kF64, 2)});
      ValueId nan_eq = b.Emit(Op::kEq, {b.Const(Type::kF64, kNaN), b.Const(Type::kF64, kNaN)});
      return std::vector<ValueId>{b.Select(lt, in[0], in[1]), b.Select(nan_eq, in[0], in[1])};
    });
    Function g = Optimize(f);
    CHECK(Print(g) == "func t(%0: f64, %1: f64) -> (f64, f64) {\n  return %0, %1\n}\n");
  }
}

TEST_CASE("an if on a constant condition becomes its taken branch") {
  for (double literal : {1.0, 3.0}) {
    // 2 > literal ? tanh(x) : y
    Function f = Make({Type::kF64, Type::kF64}, [&](Builder& b, const std::vector<ValueId>& in) {
      b.BeginIf(b.Emit(Op::kGt, {b.Const(Type::kF64, 2), b.Const(Type::kF64, literal)}));
      ValueId t = b.Emit(Op::kTanh, {in[0]});
      b.BeginElse({t});
      return b.EndIf({in[1]});
    });
    Function g = Optimize(f);
    CAPTURE(literal);
    CHECK(Count(g, Op::kIf) == 0);
    if (literal < 2) {
      CHECK(Print(g) ==
            "func t(%0: f64, %1: f64) -> (f64) {\n  %2 = tanh %0 : f64\n  return %2\n}\n");
    } else {
      CHECK(Print(g) == "func t(%0: f64, %1: f64) -> (f64) {\n  return %1\n}\n");
    }
    CheckSameEverywhere(f, g);
  }
}

TEST_CASE("a nested if survives inside an inlined branch") {
  Function f = Make({Type::kF64, Type::kF64}, [](Builder& b, const std::vector<ValueId>& in) {
    b.BeginIf(b.True());
    b.BeginIf(b.Emit(Op::kLt, {in[0], in[1]}));
    ValueId s = b.Emit(Op::kSin, {in[0]});
    b.BeginElse({s});
    ValueId inner = b.EndIf({in[1]})[0];
    b.BeginElse({inner});
    return b.EndIf({in[0]});
  });
  Function g = Optimize(f);
  CHECK(Print(g) ==
        "func t(%0: f64, %1: f64) -> (f64) {\n"
        "  %2 = lt %0, %1 : bool\n"
        "  %3 = if %2 {\n"
        "    %4 = sin %0 : f64\n"
        "    yield %4\n"
        "  } else {\n"
        "    yield %1\n"
        "  }\n"
        "  return %3\n"
        "}\n");
  CheckSameEverywhere(f, g);
}

TEST_CASE("if results both branches agree on become that value") {
  SUBCASE("one of two results") {
    Function f = Make({Type::kF64, Type::kF64}, [](Builder& b, const std::vector<ValueId>& in) {
      ValueId e = b.Emit(Op::kExp, {in[0]});
      b.BeginIf(b.Emit(Op::kLt, {in[0], in[1]}));
      ValueId s = b.Emit(Op::kSin, {in[0]});
      b.BeginElse({e, s});
      ValueId one = b.Const(Type::kF64, 1);
      std::vector<ValueId> r = b.EndIf({b.Mul(e, one), b.Emit(Op::kCos, {in[0]})});
      return std::vector<ValueId>{r[0], r[1]};
    });
    Function g = Optimize(f);
    CHECK(Print(g) ==
          "func t(%0: f64, %1: f64) -> (f64, f64) {\n"
          "  %2 = exp %0 : f64\n"
          "  %3 = lt %0, %1 : bool\n"
          "  %4 = if %3 {\n"
          "    %5 = sin %0 : f64\n"
          "    yield %5\n"
          "  } else {\n"
          "    %6 = cos %0 : f64\n"
          "    yield %6\n"
          "  }\n"
          "  return %2, %4\n"
          "}\n");
    CheckSameEverywhere(f, g);
  }
  SUBCASE("equal constants, created separately in each branch") {
    Function f = Make({Type::kF32, Type::kF32}, [](Builder& b, const std::vector<ValueId>& in) {
      b.BeginIf(b.Emit(Op::kLt, {in[0], in[1]}));
      ValueId then_zero = b.Const(Type::kF32, -0.0);
      b.BeginElse({b.Const(Type::kF32, 2), then_zero, in[0]});
      return b.EndIf({b.Const(Type::kF32, 2), b.Const(Type::kF32, 0.0), in[1]});
    });
    Function g = Optimize(f);
    CHECK(Print(g) ==
          "func t(%0: f32, %1: f32) -> (f32, f32, f32) {\n"
          "  %2 = lt %0, %1 : bool\n"
          "  %3, %4 = if %2 {\n"
          "    %5 = const -0 : f32\n"
          "    yield %5, %0\n"
          "  } else {\n"
          "    %6 = const 0 : f32\n"
          "    yield %6, %1\n"
          "  }\n"
          "  %7 = const 2 : f32\n"
          "  return %7, %3, %4\n"
          "}\n");
    CheckSameEverywhere(f, g);
  }
  SUBCASE("all results: the if and its condition disappear") {
    Function f = Make({Type::kF64, Type::kF64}, [](Builder& b, const std::vector<ValueId>& in) {
      b.BeginIf(b.Emit(Op::kLt, {in[0], in[1]}));
      b.BeginElse({in[0]});
      return b.EndIf({b.Mul(in[0], b.Const(Type::kF64, 1))});
    });
    Function g = Optimize(f);
    CHECK(Print(g) == "func t(%0: f64, %1: f64) -> (f64) {\n  return %0\n}\n");
    CheckSameEverywhere(f, g);
  }
}

TEST_CASE("rewritten values are hash-consed with existing ones") {
  Function f = Make({Type::kF64}, [](Builder& b, const std::vector<ValueId>& in) {
    ValueId x1 = b.Mul(in[0], b.Const(Type::kF64, 1));
    return std::vector<ValueId>{b.Add(b.Emit(Op::kExp, {x1}), b.Emit(Op::kExp, {in[0]}))};
  });
  Function g = Optimize(f);
  CHECK(Print(g) ==
        "func t(%0: f64) -> (f64) {\n"
        "  %1 = exp %0 : f64\n"
        "  %2 = add %1, %1 : f64\n"
        "  return %2\n"
        "}\n");
  CheckSameEverywhere(f, g);
}

// Random branchy functions over the special constants, with boolean logic,
// casts and constant conditions: whatever rules fire, the optimised function
// must agree bit for bit. (Raise kTrials locally to fuzz harder.)
TEST_CASE("optimize preserves every bit on random functions") {
  constexpr int kTrials = 12;
  std::mt19937_64 rng(2024);
  const double constants[] = {0.0, -0.0, 1.0, -1.0, 2.0, kInf, -kInf, kNaN, 0.5};
  const Op binary[] = {Op::kAdd, Op::kSub, Op::kMul, Op::kDiv, Op::kMin,
                       Op::kMax, Op::kFmin, Op::kFmax, Op::kCopysign};
  const Op unary[] = {Op::kNeg, Op::kAbs, Op::kFloor, Op::kCeil, Op::kExp, Op::kSqrt};
  const Op compare[] = {Op::kLt, Op::kLe, Op::kEq, Op::kNe};
  for (Type t : {Type::kF32, Type::kF64}) {
    const Type other = t == Type::kF32 ? Type::kF64 : Type::kF32;
    for (int trial = 0; trial < kTrials; ++trial) {
      CAPTURE(trial);
      Function f = Make({t, t, Type::kBool}, [&](Builder& b, const std::vector<ValueId>& in) {
        std::vector<ValueId> pool = {in[0], in[1]};
        auto pick = [&]() -> ValueId {
          if (rng() % 3 == 0) return b.Const(t, constants[rng() % std::size(constants)]);
          return pool[rng() % pool.size()];
        };
        auto condition = [&]() -> ValueId {
          ValueId c = rng() % 4 == 0 ? b.Const(Type::kBool, rng() % 2)
                      : rng() % 3 == 0 ? in[2]
                                       : b.Emit(compare[rng() % std::size(compare)], {pick(), pick()});
          switch (rng() % 4) {
            case 0: return b.Emit(Op::kNot, {c});
            case 1: return b.Emit(rng() % 2 ? Op::kAnd : Op::kOr,
                                  {c, rng() % 2 ? b.Const(Type::kBool, rng() % 2) : in[2]});
            default: return c;
          }
        };
        for (int step = 0; step < 14; ++step) {
          switch (rng() % 7) {
            case 0: pool.push_back(b.Emit(unary[rng() % std::size(unary)], {pick()})); break;
            case 1: pool.push_back(b.Emit(Op::kFma, {pick(), pick(), pick()})); break;
            case 2: pool.push_back(b.Select(condition(), pick(), pick())); break;
            case 3: pool.push_back(b.Cast(t, b.Cast(other, pick()))); break;
            case 4: {
              b.BeginIf(condition());
              ValueId then_value = b.Emit(binary[rng() % std::size(binary)], {pick(), pick()});
              b.BeginElse({then_value});
              pool.push_back(b.EndIf({pick()})[0]);
              break;
            }
            default: pool.push_back(b.Emit(binary[rng() % std::size(binary)], {pick(), pick()}));
          }
        }
        return std::vector<ValueId>{pool.back(), pool[pool.size() / 2], condition()};
      });
      REQUIRE(Verify(f).ok());
      Function g = Optimize(f);
      CHECK(g.insts.size() <= f.insts.size());
      CheckSameEverywhere(f, g);
      CHECK(Print(Optimize(g)) == Print(g));  // a fixpoint
    }
  }
}

}  // namespace
}  // namespace dualcast::jit
