// libFuzzer target: bytes -> random IR via Builder -> Verify/Print/StructuralHash/Optimize/Interpret invariants.
//
// There is no IR text parser, so the round trip is through the in-memory
// forms: the bytes drive a Builder (inputs, constants, every op kind, nested
// structured ifs), and the resulting Function must
//   - pass Verify, and print deterministically;
//   - keep its StructuralHash through a Rewriter copy (the rebuild walk every
//     pass derives from);
//   - optimise (simplify + DCE) into a Function that passes Verify and
//     computes bit-identical outputs under the interpreter (NaN matches NaN,
//     and copysign never reads the unspecified sign of a computed NaN);
//   - differentiate (Jvp with respect to every input) into a valid Function.
// Any violation aborts with the printed IR, which libFuzzer saves as a crash.
//
// Example (built and run by tests/fuzz/run_fuzzers.sh):
//   clang++-14 -fsanitize=fuzzer,address ... fuzz_ir_roundtrip.cc jit/*.cc -o fuzz_ir
//   ./fuzz_ir -max_total_time=20 tests/fuzz/corpus/ir_roundtrip
#include <fuzzer/FuzzedDataProvider.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "jit/error.h"
#include "jit/ir/hash.h"
#include "jit/ir/interpret.h"
#include "jit/ir/ir.h"
#include "jit/ir/print.h"
#include "jit/ir/verify.h"
#include "jit/passes/jvp.h"
#include "jit/passes/optimize.h"
#include "jit/passes/rewrite.h"

namespace {

using namespace dualcast::jit;

[[noreturn]] void Fail(const char* what, const Function& f, const std::string& extra = "") {
  std::fprintf(stderr, "fuzz_ir_roundtrip: %s\n%s\n%s\n", what, extra.c_str(), Print(f).c_str());
  std::abort();
}

constexpr Op kUnary[] = {Op::kNeg,   Op::kExp,   Op::kExpm1,   Op::kLog,   Op::kLog1p, Op::kLog2,
                         Op::kLog10, Op::kSqrt,  Op::kCbrt,    Op::kSin,   Op::kCos,   Op::kTan,
                         Op::kAsin,  Op::kAcos,  Op::kAtan,    Op::kSinh,  Op::kCosh,  Op::kTanh,
                         Op::kAsinh, Op::kAcosh, Op::kAtanh,   Op::kErf,   Op::kErfc,  Op::kAbs,
                         Op::kFloor, Op::kCeil,  Op::kRound,   Op::kTrunc, Op::kSigmoid,
                         Op::kSoftplus, Op::kRelu, Op::kRint};
constexpr Op kBinary[] = {Op::kAdd, Op::kSub,  Op::kMul,  Op::kDiv,   Op::kPow,      Op::kAtan2,
                          Op::kMin, Op::kMax,  Op::kFmin, Op::kFmax,  Op::kHypot,    Op::kCopysign,
                          Op::kFdim};
constexpr Op kCompare[] = {Op::kLt, Op::kLe, Op::kGt, Op::kGe, Op::kEq, Op::kNe};

double Interesting(FuzzedDataProvider& in) {
  static const double kValues[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-310, 1e308, -1e308,
                                   INFINITY, -INFINITY, NAN, 3.0, -2.5, 0.1};
  if (in.ConsumeBool()) return kValues[in.ConsumeIntegralInRange<size_t>(0, std::size(kValues) - 1)];
  return in.ConsumeFloatingPoint<double>();
}

struct Open {  // an If being built
  int phase = 0;  // 0: then, 1: else
  int yields = 1;
  size_t floats_mark = 0, bools_mark = 0;  // visible values when it opened
};

class Generator {
 public:
  Generator(FuzzedDataProvider& in, Function& f) : in_(in), b_(f) {}

  void Build() {
    type_ = in_.ConsumeBool() ? Type::kF32 : Type::kF64;
    const int n = in_.ConsumeIntegralInRange(1, 4);
    for (int i = 0; i < n; ++i) floats_.push_back(b_.Input(type_));
    for (int step = 0; step < 64 && in_.remaining_bytes() > 8; ++step) Step();
    while (!open_.empty()) Close();
    std::vector<ValueId> outs;
    const int m = in_.ConsumeIntegralInRange(1, 3);
    for (int i = 0; i < m; ++i) outs.push_back(PickFloat());
    b_.Return(outs);
  }

 private:
  ValueId PickFloat() { return floats_[in_.ConsumeIntegralInRange<size_t>(0, floats_.size() - 1)]; }
  ValueId PickBool() { return bools_[in_.ConsumeIntegralInRange<size_t>(0, bools_.size() - 1)]; }

  void Step() {
    switch (in_.ConsumeIntegralInRange(0, 10)) {
      case 0: {
        double c = Interesting(in_);
        if (type_ == Type::kF32) c = static_cast<float>(c);  // exactly representable
        floats_.push_back(b_.Const(type_, c));
        break;
      }
      case 1:
      case 2:
        floats_.push_back(b_.Emit(kUnary[in_.ConsumeIntegralInRange<size_t>(0, std::size(kUnary) - 1)],
                                  {PickFloat()}));
        break;
      case 3:
      case 4: {
        const Op op = kBinary[in_.ConsumeIntegralInRange<size_t>(0, std::size(kBinary) - 1)];
        const ValueId a = PickFloat();
        ValueId b = PickFloat();
        // The sign of a NaN that arithmetic makes is unspecified (IEEE 754
        // §6.3), so two correct evaluations may disagree on it, and copysign
        // would turn that into a different number (inf against NaN once a
        // fuzz input took inf - inf through fma(x, y, -0) -> x * y). The
        // sign source is therefore NaN-free: select(isnan(b), 1, b).
        if (op == Op::kCopysign) b = b_.Select(b_.Emit(Op::kIsnan, {b}), b_.Const(type_, 1.0), b);
        floats_.push_back(b_.Emit(op, {a, b}));
        break;
      }
      case 5: floats_.push_back(b_.Emit(Op::kFma, {PickFloat(), PickFloat(), PickFloat()})); break;
      case 6:
        bools_.push_back(b_.Emit(kCompare[in_.ConsumeIntegralInRange<size_t>(0, std::size(kCompare) - 1)],
                                 {PickFloat(), PickFloat()}));
        break;
      case 7:
        if (bools_.empty()) break;
        switch (in_.ConsumeIntegralInRange(0, 3)) {
          case 0: bools_.push_back(b_.Emit(Op::kNot, {PickBool()})); break;
          case 1: bools_.push_back(b_.Emit(Op::kAnd, {PickBool(), PickBool()})); break;
          case 2: bools_.push_back(b_.Emit(Op::kOr, {PickBool(), PickBool()})); break;
          default: bools_.push_back(in_.ConsumeBool() ? b_.True() : b_.False()); break;
        }
        break;
      case 8:
        if (bools_.empty()) break;
        floats_.push_back(b_.Select(PickBool(), PickFloat(), PickFloat()));
        break;
      case 9:
        if (bools_.empty() || open_.size() >= 4) break;
        {
          ValueId cond = PickBool();
          Open o;
          o.yields = in_.ConsumeIntegralInRange(1, 3);
          o.floats_mark = floats_.size();
          o.bools_mark = bools_.size();
          b_.BeginIf(cond);
          open_.push_back(o);
        }
        break;
      default:
        if (!open_.empty()) Close();
        break;
    }
  }

  // Ends the innermost If's current side.
  void Close() {
    Open& o = open_.back();
    std::vector<ValueId> yields;
    for (int i = 0; i < o.yields; ++i) yields.push_back(PickFloat());
    // Values made inside the side are not visible after it.
    floats_.resize(o.floats_mark);
    bools_.resize(o.bools_mark);
    if (o.phase == 0) {
      b_.BeginElse(yields);
      o.phase = 1;
      return;
    }
    std::vector<ValueId> results = b_.EndIf(yields);
    open_.pop_back();
    floats_.insert(floats_.end(), results.begin(), results.end());
  }

  FuzzedDataProvider& in_;
  Builder b_;
  Type type_ = Type::kF64;
  std::vector<ValueId> floats_, bools_;
  std::vector<Open> open_;
};

bool SameBits(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Function f("fuzz");
  try {
    Generator(in, f).Build();
  } catch (const dualcast::Error& e) {
    Fail("the Builder rejected IR the generator believes valid", f, e.what());
  }
  if (absl::Status s = Verify(f); !s.ok()) Fail("Verify rejected Builder output", f, std::string(s.message()));
  const std::string printed = Print(f);
  if (Print(f) != printed) Fail("Print is not deterministic", f);
  const uint64_t hash = StructuralHash(f);
  Rewriter copier;
  Function copy = copier.Run(f);
  if (absl::Status s = Verify(copy); !s.ok()) Fail("Verify rejected a Rewriter copy", copy, std::string(s.message()));
  if (StructuralHash(copy) != hash) Fail("StructuralHash changed under a Rewriter copy", copy, printed);
  Function opt = Optimize(f);
  if (absl::Status s = Verify(opt); !s.ok()) Fail("Verify rejected Optimize output", opt, std::string(s.message()));
  if (StructuralHash(Optimize(f)) != StructuralHash(opt)) Fail("Optimize is not deterministic", opt);

  std::vector<double> x(f.num_inputs());
  for (double& v : x) v = Interesting(in);
  std::vector<double> want = Interpret(f, x), got = Interpret(opt, x);
  if (want.size() != got.size()) Fail("Optimize changed the number of outputs", opt, printed);
  for (size_t m = 0; m < want.size(); ++m) {
    if (!SameBits(want[m], got[m])) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "output %zu: original %.17g, optimised %.17g", m, want[m], got[m]);
      Fail("Optimize changed a result", opt, std::string(buf) + "\noriginal:\n" + printed);
    }
  }
  std::vector<int> wrt(f.num_inputs());
  std::iota(wrt.begin(), wrt.end(), 0);
  JvpResult d = Jvp(f, wrt);
  if (absl::Status s = Verify(d.function); !s.ok()) Fail("Verify rejected Jvp output", d.function, std::string(s.message()));
  return 0;
}
