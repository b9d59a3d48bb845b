// Walks jit/ir/ops.def and checks that every op exists in every layer: traced overload, jvp rule, interpreter, CPU and CUDA printers; regenerates docs/ops.md.
//
// The REPL's builtins come from ops.def by construction (examples/repl/lower.cc
// LookupOp) and are checked in tests/repl/builtins_test.cc.
// To rewrite docs/ops.md after changing ops.def: DUALCAST_WRITE_DOCS=1 jit_tests -tc='*ops.md*'.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "jit/codegen/kernel_spec.h"
#include "jit/cpu/cpu_backend.h"
#include "jit/cuda/cuda_printer.h"
#include "jit/error.h"
#include "jit/ir/interpret.h"
#include "jit/ir/ir.h"
#include "jit/ir/scalar_ops.h"
#include "jit/ir/verify.h"
#include "jit/passes/compose.h"
#include "jit/passes/jvp.h"
#include "jit/trace/trace.h"
#ifdef DUALCAST_HAVE_NVRTC
#include "jit/cuda/cuda_kernel.h"
#include "jit/cuda/nvrtc_compile.h"
#endif

namespace dualcast::jit {
namespace {

bool HasScalarMeaning(Op op) {
  const OpKind kind = Info(op).kind;
  return kind != OpKind::Leaf && kind != OpKind::Control;
}

// A point inside every op's domain (operands 0.75, 0.5, 1.5: clamp's bounds ordered).
const double kPoint[3] = {0.75, 0.5, 1.5};

Function OneOp(Op op, Type type) {
  Function f(Spelling(op));
  Builder b(f);
  std::vector<ValueId> args;
  const OpKind kind = Info(op).kind;
  for (int k = 0; k < Info(op).arity; ++k) {
    const bool boolean = kind == OpKind::Logic || (kind == OpKind::Select && k == 0);
    ValueId in = b.Input(type);
    args.push_back(boolean ? b.Emit(Op::kGt, {in, b.Const(type, 0)}) : in);
  }
  ValueId y = op == Op::kCast ? b.Cast(type == Type::kF32 ? Type::kF64 : Type::kF32, args[0])
                              : b.Emit(op, args);
  b.Return({y});
  return f;
}

// ---- The traced overloads: one lambda per Math / unary Compare row, generated
// from ops.def exactly as jit/trace/var.h generates the overloads, so a row without
// an overload does not compile.

struct TracedCase {
  Op op;
  Function (*trace)();
};

#define DUALCAST_COV_MATH_1(name, op)                                                     \
  {Op::k##op, [] {                                                                         \
     return Trace(#name, [](auto x) { return name(x); }, std::vector<Type>{Type::kF64});   \
   }},
#define DUALCAST_COV_MATH_2(name, op)                                                      \
  {Op::k##op, [] {                                                                          \
     return Trace(#name, [](auto x, auto y) { return name(x, y); },                         \
                  std::vector<Type>(2, Type::kF64));                                        \
   }},
#define DUALCAST_COV_MATH_3(name, op)                                                      \
  {Op::k##op, [] {                                                                          \
     return Trace(#name, [](auto x, auto y, auto z) { return name(x, y, z); },              \
                  std::vector<Type>(3, Type::kF64));                                        \
   }},
// A test yields a Bool; the kernel returns it as a select so it has a float output.
#define DUALCAST_COV_TEST_1(name, op)                                                      \
  {Op::k##op, [] {                                                                          \
     return Trace(#name, [](auto x) { return select(name(x), x, x + 1); },                  \
                  std::vector<Type>{Type::kF64});                                           \
   }},
#define DUALCAST_COV_NONE(name, op)
#define DUALCAST_COV_Math_1 DUALCAST_COV_MATH_1
#define DUALCAST_COV_Math_2 DUALCAST_COV_MATH_2
#define DUALCAST_COV_Math_3 DUALCAST_COV_MATH_3
#define DUALCAST_COV_Compare_1 DUALCAST_COV_TEST_1
#define DUALCAST_COV_Compare_2 DUALCAST_COV_NONE
#define DUALCAST_COV_Leaf_0 DUALCAST_COV_NONE
#define DUALCAST_COV_Arith_1 DUALCAST_COV_NONE
#define DUALCAST_COV_Arith_2 DUALCAST_COV_NONE
#define DUALCAST_COV_Arith_3 DUALCAST_COV_NONE
#define DUALCAST_COV_Logic_1 DUALCAST_COV_NONE
#define DUALCAST_COV_Logic_2 DUALCAST_COV_NONE
#define DUALCAST_COV_Select_3 DUALCAST_COV_NONE
#define DUALCAST_COV_Cast_1 DUALCAST_COV_NONE
#define DUALCAST_COV_Control_1 DUALCAST_COV_NONE

const std::vector<TracedCase>& TracedCases() {
  static const std::vector<TracedCase> cases = {
#define DUALCAST_OP(name, spelling, arity, kind) DUALCAST_COV_##kind##_##arity(spelling, name)
#include "jit/ir/ops.def"
#undef DUALCAST_OP
  };
  return cases;
}

bool Contains(const Function& f, Op op) {
  for (const Inst& inst : f.insts) {
    if (inst.op == op) return true;
  }
  return false;
}

TEST_CASE("every math row of ops.def has a traced overload that records its op") {
  std::set<Op> traced;
  for (const TracedCase& c : TracedCases()) {
    const std::string op_name = Spelling(c.op);
    CAPTURE(op_name);
    Function f = c.trace();
    CHECK(Verify(f).ok());
    CHECK(Contains(f, c.op));
    traced.insert(c.op);
  }
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    const bool is_function = Info(op).kind == OpKind::Math ||
                             (Info(op).kind == OpKind::Compare && Info(op).arity == 1);
    if (!is_function) continue;
    const std::string op_name = Spelling(op);
    CAPTURE(op_name);
    CHECK(traced.count(op) == 1);
  }
}

TEST_CASE("every op has an interpreter meaning and a jvp rule") {
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    if (!HasScalarMeaning(op)) continue;
    const std::string op_name = Spelling(op);
    CAPTURE(op_name);
    for (Type type : {Type::kF32, Type::kF64}) {
      Function f = OneOp(op, type);
      REQUIRE(Verify(f).ok());
      std::vector<double> in(kPoint, kPoint + f.num_inputs());
      CHECK_NOTHROW(Interpret(f, std::span<const double>(in)));
      std::vector<int> wrt;
      for (size_t k = 0; k < f.num_inputs(); ++k) wrt.push_back(static_cast<int>(k));
      // Jvp throws kInternal for an op without a rule.
      JvpResult r;
      CHECK_NOTHROW(r = Jvp(f, wrt));
      CHECK(Verify(r.function).ok());
    }
  }
}

// OneOp with a float result of `type`, as a kernel output must be: a bool
// becomes select(b, 1, 0) and a cast is cast back.
std::shared_ptr<Function> OneOpShared(Op op, Type type) {
  auto f = std::make_shared<Function>(Spelling(op));
  Builder b(*f);
  Function one = OneOp(op, type);
  std::vector<ValueId> ins;
  for (size_t k = 0; k < one.num_inputs(); ++k) ins.push_back(b.Input(type));
  ValueId y = Inline(b, one, ins)[0];
  if (b.function().type(y) == Type::kBool) y = b.Select(y, b.Const(type, 1), b.Const(type, 0));
  if (b.function().type(y) != type) y = b.Cast(type, y);
  b.Return({y});
  return f;
}

KernelSpec SpecOf(std::shared_ptr<Function> f, Type type) {
  KernelSpec spec;
  spec.dtype = type;
  spec.rank = 1;
  spec.input_broadcast.assign(f->num_inputs(), 0);
  spec.function = std::move(f);
  return spec;
}

TEST_CASE("every op has a CPU lowering that agrees with the interpreter at one point") {
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    if (!HasScalarMeaning(op)) continue;
    const std::string op_name = Spelling(op);
    CAPTURE(op_name);
    for (Type type : {Type::kF32, Type::kF64}) {
      auto f = OneOpShared(op, type);
      const KernelSpec spec = SpecOf(f, type);
      // The CPU printer's fallback for an op it does not know is a call to
      // dualcast_unlowered_<op> (vector IR holds legitimate poison operands).
      CHECK(CpuKernelIr(spec).find("dualcast_unlowered_") == std::string::npos);
      absl::StatusOr<CompiledCpuKernel> k = CompileCpuKernel(spec, nullptr);
      REQUIRE_MESSAGE(k.ok(), k.status().ToString());
      const int64_t n = 1;
      std::vector<std::vector<double>> in64(f->num_inputs());
      std::vector<std::vector<float>> in32(f->num_inputs());
      std::vector<const void*> inputs;
      for (size_t k2 = 0; k2 < f->num_inputs(); ++k2) {
        in64[k2] = {kPoint[k2]};
        in32[k2] = {static_cast<float>(kPoint[k2])};
        inputs.push_back(type == Type::kF32 ? static_cast<const void*>(in32[k2].data())
                                            : static_cast<const void*>(in64[k2].data()));
      }
      double out64 = -1;
      float out32 = -1;
      void* outputs[] = {type == Type::kF32 ? static_cast<void*>(&out32) : static_cast<void*>(&out64)};
      const int64_t strides[] = {1, 1, 1}, out_strides[] = {1};
      KernelArgs args{&n, inputs.data(), strides, outputs, out_strides, 0, n};
      k->entry(&args);
      std::vector<double> point(kPoint, kPoint + f->num_inputs());
      const double want = Interpret(*f, std::span<const double>(point))[0];
      const double got = type == Type::kF32 ? double(out32) : out64;
      if (std::isnan(want)) {
        CHECK(std::isnan(got));  // acosh(0.75)
      } else {
        CHECK(std::abs(got - want) <= 4 * std::abs(want) * (type == Type::kF32 ? 1.2e-7 : 2.3e-16));
      }
    }
  }
}

// The CUDA spelling of every op, through the printer alone (no NVRTC needed).
TEST_CASE("every op has a CUDA spelling") {
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    if (!HasScalarMeaning(op)) continue;
    const std::string op_name = Spelling(op);
    CAPTURE(op_name);
    for (Type type : {Type::kF32, Type::kF64}) {
      cuda::CudaPrinter printer(0, [](cuda::CudaPrinter&, uint32_t index, Type) {
        return "in" + std::to_string(index);
      });
      std::vector<Type> arg_types(Info(op).arity, type);
      if (Info(op).kind == OpKind::Logic) arg_types.assign(Info(op).arity, Type::kBool);
      if (Info(op).kind == OpKind::Select) arg_types[0] = Type::kBool;
      std::vector<std::string> args;
      for (int k = 0; k < Info(op).arity; ++k) args.push_back("in" + std::to_string(k));
      const Type result = Info(op).kind == OpKind::Compare || Info(op).kind == OpKind::Logic
                              ? Type::kBool
                              : op == Op::kCast ? Type::kBool : type;
      printer.Emit(op, result, arg_types, args);
      CAPTURE(printer.text());
      CHECK(printer.text().find("unsupported") == std::string::npos);
    }
  }
}

#ifdef DUALCAST_HAVE_NVRTC
// Every math op and its jvp in one kernel, compiled to PTX: the spellings are real CUDA.
TEST_CASE("a kernel holding every math op and its derivatives compiles with NVRTC") {
  for (Type type : {Type::kF32, Type::kF64}) {
    Function f("every_op");
    Builder b(f);
    ValueId x = b.Input(type), y = b.Input(type);
    std::vector<ValueId> outs;
    for (int i = 0; i < kNumOps; ++i) {
      const Op op = static_cast<Op>(i);
      if (Info(op).kind == OpKind::Math) {
        std::vector<ValueId> args = {x, y, b.Add(y, y)};
        args.resize(Info(op).arity);
        outs.push_back(b.Emit(op, args));
      } else if (Info(op).kind == OpKind::Compare && Info(op).arity == 1) {
        outs.push_back(b.Select(b.Emit(op, {x}), x, y));
      }
    }
    b.Return(outs);
    auto jvp = std::make_shared<Function>(Jvp(f, std::vector<int>{0, 1}).function);
    absl::StatusOr<cuda::CudaKernelSource> src = cuda::BuildCudaKernelSource(SpecOf(jvp, type));
    REQUIRE_MESSAGE(src.ok(), src.status().message());
    absl::StatusOr<cuda::NvrtcImage> image =
        cuda::NvrtcCompile(src->text, src->symbol, {90, cuda::NvrtcKind::kPtx});
    CHECK_MESSAGE(image.ok(), image.status().message(), "\nsource:\n", src->text);
  }
}
#endif

// ---- docs/ops.md, generated from ops.def.

const char* KindText(OpKind kind) {
  switch (kind) {
    case OpKind::Arith: return "arithmetic";
    case OpKind::Math: return "math function";
    case OpKind::Compare: return "comparison / test (-> bool)";
    case OpKind::Logic: return "logic (bool)";
    case OpKind::Select: return "choice";
    case OpKind::Cast: return "conversion";
    default: return "structure";
  }
}

// The conventions worth a line in the table (value and derivative), as jit/passes/jvp.cc,
// jit/ir/scalar_ops.cc and jit/ir/staple_math.h implement them.
const char* Note(Op op) {
  switch (op) {
    case Op::kAbs: return "abs'(0) = 0; also `fabs`";
    case Op::kRelu: return "relu(-0) = +0, NaN stays NaN; relu'(0) = 0, NaN at NaN";
    case Op::kFloor: case Op::kCeil: case Op::kRound: case Op::kTrunc: case Op::kRint:
      return "derivative 0 (piecewise constant; NaN at NaN); round: halves away from zero, rint: to even";
    case Op::kFdim: return "a - b if a > b, else +0; partials (1, -1) above the kink, (0, 0) at and below it";
    case Op::kSignbit: return "the sign bit: true for -0 and negative NaNs; no derivative (bool)";
    case Op::kSign: return "sign(+-0) = +-0, sign(NaN) = NaN; derivative 0 (NaN at NaN)";
    case Op::kMin:
      return "std::min, (b < a) ? b : a: ties and a NaN first argument return the first argument, whose "
             "tangent is taken; a NaN second argument is dropped (NumPy's minimum and the reduction "
             "`dc::min(A)` propagate NaN; fmin drops it on either side)";
    case Op::kMax:
      return "std::max, (a < b) ? b : a: ties and a NaN first argument return the first argument, whose "
             "tangent is taken; a NaN second argument is dropped (NumPy's maximum and the reduction "
             "`dc::max(A)` propagate NaN; fmax drops it on either side)";
    case Op::kFmin: case Op::kFmax: return "IEEE: a NaN operand loses; ties take the first";
    case Op::kClamp: return "std::clamp: lo if x < lo, hi if hi < x, else x (x's tangent at a bound)";
    case Op::kPow: return "d/dx = p x^p / x (0 when p = 0); d/dp = log(x) x^p (0 at x = 0, p > 0); integer p: `pow(x, 3)`";
    case Op::kAtan2: return "partials -> 0 at an infinite argument";
    case Op::kHypot:
      return "partials a/h, b/h, also where h overflows or is subnormal (taken from scaled arguments); 0 at the "
             "origin; with an infinite argument sign(arg) for it, 0 for a finite or NaN one";
    case Op::kTanh: return "fdlibm's formula around t = expm1(+-2|x|) (glibc's bits); tanh' = 4e/(1+e)^2 from the same t";
    case Op::kSigmoid: return "t = exp(-|x|): t/(1+t) (x < 0) or 1/(1+t); sigmoid' = t/(1+t)/(1+t): one exp for both";
    case Op::kFastTanh: return "1 - 2/(1 + exp(2x)), slope 1 - y^2: one exp, no selects; absolute error <= 4 eps (docs/fast-activations.md)";
    case Op::kFastSigmoid: return "1/(1 + exp(-x)), slope y(1 - y): one exp; absolute error <= 4 eps (docs/fast-activations.md)";
    case Op::kSoftplus: return "softplus' = sigmoid";
    case Op::kExpm1: return "expm1' = exp(x)";
    case Op::kErf: case Op::kErfc: return "derivative with exp(-x^2) from an exact split of x^2";
    case Op::kErfinv: return "erfinv(+-1) = +-inf; |y| > 1 is NaN; erfinv' = sqrt(pi)/2 exp(y^2)";
    case Op::kLgamma: case Op::kTgamma: return "derivative via digamma (series at x + 10; for x < 0 a reflection in double-double, -1/x - gamma above -2^-60)";
    case Op::kFmod: case Op::kRemainder: return "d/da = 1, d/db = -n (the integer quotient); NaN where the value is";
    case Op::kLdexp: return "ldexp(x, n): n truncated to an integer; d/dn = 0";
    case Op::kLogaddexp: return "log(exp a + exp b) without overflow; partials 1/2 each at a = b";
    case Op::kCopysign: return "d/da = +-1 (sign agreement), d/db = 0";
    case Op::kLog: case Op::kLog1p: case Op::kLog2: case Op::kLog10: case Op::kAtanh:
      return "outside the domain: NaN value and NaN partials";
    case Op::kDiv: return "0/0, inf/inf: NaN value and NaN partials";
    case Op::kIsnan: case Op::kIsfinite: case Op::kIsinf: return "no derivative (bool)";
    case Op::kSelect: return "`select(c, a, b)` (REPL: also `where`); the taken side's tangent";
    default: return "";
  }
}

std::string OpsMarkdown() {
  std::ostringstream md;
  md << "# Supported ops\n\n"
     << "Generated from `jit/ir/ops.def` by `tests/jit/ops_coverage_test.cc` (do not edit; run\n"
     << "`DUALCAST_WRITE_DOCS=1 build/tests/jit_tests -tc='*ops.md*'`). Every row is an IR op with\n"
     << "a traced overload on `jit::Var` (math functions by the name shown, called unqualified\n"
     << "after `using namespace dc::math;` or spelled out, `dc::math::sin(x)`; the whole-array\n"
     << "`dc::sin(Array)` is another function), a forward-mode derivative rule, an interpreter\n"
     << "meaning, a CPU (LLVM)\n"
     << "and a CUDA lowering, and is callable in the REPL by its name (`and`, `or`, `not` as the\n"
     << "REPL's operators `a and b`, `a or b`, `not a`; not `cast`: every REPL array is float64,\n"
     << "so there is nothing to convert to); the same test checks all of that.\n"
     << "Arithmetic and comparisons are operators (`+ - * / < <= > >= == !=`, `&& || !`).\n"
     << "Kernels and the REPL also accept `fabs` (= `abs`) and `nearbyint` (= `rint`: kernels run\n"
     << "in the default rounding mode). Of `<cmath>`'s real functions, kernels do not have `logb`,\n"
     << "`ilogb`, `scalbn` (use `ldexp`), `nextafter`, `isnormal`, the integer-valued\n"
     << "`lround`/`lrint` family, and the\n"
     << "ones with several or pointer results (`frexp`, `modf`, `remquo`); `Dual` has them all\n"
     << "(`dual/include/dualcast/dual_cmath.hpp`).\n\n"
     << "| op | arity | kind | conventions |\n|---|---|---|---|\n";
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    if (!HasScalarMeaning(op)) continue;
    md << "| `" << Spelling(op) << "` | " << Info(op).arity << " | " << KindText(Info(op).kind)
       << " | " << Note(op) << " |\n";
  }
  return md.str();
}

TEST_CASE("docs/ops.md is generated from ops.def and up to date") {
  const std::string path = std::string(DUALCAST_SOURCE_DIR) + "/docs/ops.md";
  const std::string text = OpsMarkdown();
  if (const char* write = std::getenv("DUALCAST_WRITE_DOCS"); write != nullptr && write[0] == '1') {
    std::ofstream(path) << text;
  }
  std::ifstream in(path);
  std::stringstream committed;
  committed << in.rdbuf();
  CHECK_MESSAGE(committed.str() == text,
                "docs/ops.md is out of date: DUALCAST_WRITE_DOCS=1 build/tests/jit_tests -tc='*ops.md*'");
}

}  // namespace
}  // namespace dualcast::jit
