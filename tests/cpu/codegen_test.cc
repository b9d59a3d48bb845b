// Tests of the CPU code generator: loop nests, broadcasting, branches, masks and the object store, against the interpreter.
//
// Every kernel is called directly through a hand-filled KernelArgs (sizes and
// strides computed here from shapes, independently of broadcast_layout), and
// every element is compared with Interpret() at the same input values:
// exactly for arithmetic, within 4 ulp where libm / libmvec math is involved.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <fstream>
#include <latch>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "jit/codegen/kernel_abi.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/cpu/cpu_backend.h"
#include "jit/error.h"
#include "jit/ir/hash.h"
#include "jit/ir/interpret.h"
#include "jit/ir/ir.h"
#include "jit/passes/jvp.h"

namespace dualcast::jit {
namespace {

// Distance in units in the last place; NaN matches only NaN.
template <class T>
uint64_t UlpDistance(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) {
    return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<uint64_t>::max();
  }
  using Bits = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  auto ordered = [](T x) {
    Bits bits = std::bit_cast<Bits>(x);
    return bits < 0 ? static_cast<int64_t>(std::numeric_limits<Bits>::min()) - bits
                    : static_cast<int64_t>(bits);
  };
  int64_t d = ordered(a) - ordered(b);
  return static_cast<uint64_t>(d < 0 ? -d : d);
}

constexpr double kSentinel = 1234.5;  // what an output element holds until a kernel writes it

// One kernel launch over hand-made buffers. Shapes are the merged shapes: an
// input broadcast along dim d has extent 1 there (and stride 0).
template <class T>
struct Harness {
  Harness(std::shared_ptr<Function> f, std::vector<int64_t> merged_sizes,
          std::vector<uint32_t> broadcast_bits)
      : function(std::move(f)), sizes(std::move(merged_sizes)), bcast(std::move(broadcast_bits)) {}

  std::shared_ptr<Function> function;
  std::vector<int64_t> sizes;
  std::vector<uint32_t> bcast;  // per input
  std::vector<bool> write;      // per output; empty = all
  int transposed_input = -1;    // this input is stored with its last two dims swapped
  bool strided_per_operand = true;  // the spec names the transposed input alone (else: all strided)
  uint32_t seed = 7;

  std::vector<std::vector<T>> in_data, out_data;
  std::vector<std::vector<int64_t>> in_strides, out_strides;

  int rank() const { return static_cast<int>(sizes.size()); }
  bool Broadcast(size_t i, int d) const { return (bcast[i] >> d) & 1u; }

  KernelSpec Spec() const {
    KernelSpec spec;
    spec.function = function;
    spec.function_hash = StructuralHash(*function);
    spec.dtype = std::is_same_v<T, float> ? Type::kF32 : Type::kF64;
    spec.rank = rank();
    spec.input_broadcast = bcast;
    spec.write = write;
    spec.inner_contiguous = transposed_input < 0;
    if (transposed_input >= 0 && strided_per_operand) {
      const size_t written = write.empty() ? function->num_outputs()
                                           : static_cast<size_t>(std::count(write.begin(), write.end(), true));
      spec.strided_inner.assign(function->num_inputs() + written, false);
      spec.strided_inner[transposed_input] = true;
    }
    return spec;
  }

  static std::vector<int64_t> RowMajor(const std::vector<int64_t>& shape) {
    std::vector<int64_t> strides(shape.size());
    int64_t s = 1;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      strides[d] = s;
      s *= shape[d];
    }
    return strides;
  }
  static int64_t Count(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    return n;
  }

  // Fills inputs with values in [-3, 3] (some exact small integers, so
  // comparisons and branches go both ways) and outputs with the sentinel.
  void Allocate() {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> uniform(-3, 3);
    const int R = rank();
    in_data.clear();
    in_strides.clear();
    for (size_t i = 0; i < function->num_inputs(); ++i) {
      std::vector<int64_t> shape(R);
      for (int d = 0; d < R; ++d) shape[d] = Broadcast(i, d) ? 1 : sizes[d];
      std::vector<int64_t> strides;
      if (static_cast<int>(i) == transposed_input) {
        std::vector<int64_t> physical = shape;
        std::swap(physical[R - 1], physical[R - 2]);
        strides = RowMajor(physical);
        std::swap(strides[R - 1], strides[R - 2]);
      } else {
        strides = RowMajor(shape);
      }
      for (int d = 0; d < R; ++d) {
        if (Broadcast(i, d)) strides[d] = 0;
      }
      std::vector<T> data(Count(shape));
      for (T& v : data) {
        double u = uniform(rng);
        v = static_cast<T>(rng() % 4 == 0 ? std::round(u) : u);
      }
      in_data.push_back(std::move(data));
      in_strides.push_back(std::move(strides));
    }
    out_data.assign(function->num_outputs(), std::vector<T>(Count(sizes), T(kSentinel)));
    out_strides.assign(function->num_outputs(), RowMajor(sizes));
  }

  bool Writes(size_t m) const { return write.empty() || write[m]; }

  void Run(KernelEntry entry, int64_t begin, int64_t end) {
    const int R = rank();
    std::vector<const void*> inputs;
    std::vector<int64_t> flat_in, flat_out;
    for (size_t i = 0; i < in_data.size(); ++i) {
      inputs.push_back(in_data[i].data());
      flat_in.insert(flat_in.end(), in_strides[i].begin(), in_strides[i].end());
    }
    std::vector<void*> outputs;
    for (size_t m = 0; m < out_data.size(); ++m) {
      outputs.push_back(Writes(m) ? out_data[m].data() : nullptr);
      flat_out.insert(flat_out.end(), out_strides[m].begin(), out_strides[m].end());
    }
    (void)R;
    KernelArgs args{sizes.data(), inputs.data(), flat_in.data(), outputs.data(),
                    flat_out.data(), begin, end};
    entry(&args);
  }

  // Compares every element with the interpreter. Elements whose dim-0 index
  // lies outside [done_begin, done_end) must still hold the sentinel.
  // `abs_tol` also accepts results this close in absolute value (for values
  // like 1 - tanh(g)^2 whose cancellation magnifies a 1-ulp tanh difference).
  void Check(uint64_t max_ulp, int64_t done_begin, int64_t done_end, double abs_tol = 0) const {
    const int R = rank();
    const int64_t n = Count(sizes);
    std::vector<int64_t> index(R, 0);
    int mismatches = 0;
    for (int64_t flat = 0; flat < n; ++flat) {
      int64_t rest = flat;
      for (int d = R - 1; d >= 0; --d) {
        index[d] = rest % sizes[d];
        rest /= sizes[d];
      }
      std::vector<double> x;
      for (size_t i = 0; i < in_data.size(); ++i) {
        int64_t off = 0;
        for (int d = 0; d < R; ++d) off += index[d] * in_strides[i][d];
        x.push_back(static_cast<double>(in_data[i][off]));
      }
      const bool done = R == 0 ? (done_begin <= 0 && 0 < done_end)
                               : (index[0] >= done_begin && index[0] < done_end);
      std::vector<double> expected = Interpret(*function, x);
      for (size_t m = 0; m < out_data.size(); ++m) {
        const T got = out_data[m][flat];
        const T want = done && Writes(m) ? static_cast<T>(expected[m]) : T(kSentinel);
        const bool close = done && Writes(m) && std::abs(double(got) - double(want)) <= abs_tol;
        if (!close && UlpDistance(got, want) > (done && Writes(m) ? max_ulp : 0) &&
            ++mismatches <= 5) {
          FAIL_CHECK("output " << m << " at flat index " << flat << ": got " << got
                               << ", want " << want);
        }
      }
    }
    CHECK(mismatches == 0);
  }
};

// A compiled kernel, callable as its entry while this lives (it holds the
// code: cpu_backend.h).
struct HeldKernel {
  CompiledCpuKernel kernel;
  operator KernelEntry() const { return kernel.entry; }
};

template <class T>
HeldKernel Compile(const Harness<T>& h) {
  absl::StatusOr<CompiledCpuKernel> k = CompileCpuKernel(h.Spec(), nullptr);
  REQUIRE_MESSAGE(k.ok(), k.status().ToString());
  REQUIRE(reinterpret_cast<uintptr_t>(k->entry) != 0);
  return HeldKernel{*std::move(k)};
}

// Every arithmetic, comparison, logic, select and cast op, with a bool output.
std::shared_ptr<Function> ArithmeticFunction(Type t) {
  auto f = std::make_shared<Function>("arith");
  Builder b(*f);
  ValueId x = b.Input(t), y = b.Input(t), z = b.Input(t);
  ValueId neg_zero = b.Const(t, -0.0);
  ValueId lt = b.Emit(Op::kLt, {x, y}), ge = b.Emit(Op::kGe, {y, z});
  ValueId logic = b.Emit(Op::kOr, {b.Emit(Op::kAnd, {lt, b.Emit(Op::kNot, {ge})}),
                                   b.Emit(Op::kEq, {x, z})});
  ValueId other = b.Emit(Op::kOr, {b.Emit(Op::kLe, {x, z}),
                                   b.Emit(Op::kAnd, {b.Emit(Op::kGt, {z, y}),
                                                     b.Emit(Op::kNe, {x, y})})});
  const Type narrow = t == Type::kF64 ? Type::kF32 : Type::kF64;
  b.Return({b.Add(b.Mul(x, y), z), b.Div(b.Sub(x, y), z), b.Emit(Op::kFma, {x, y, z}),
            b.Neg(x), b.Select(logic, b.Add(x, neg_zero), y),
            b.Select(other, b.Const(t, 1), b.Const(t, 0)),
            b.Cast(t, b.Cast(narrow, b.Div(x, b.Const(t, 3)))), b.Emit(Op::kEq, {x, y})});
  return f;
}

// Nested ifs with two results each and math in the branches.
std::shared_ptr<Function> BranchyFunction(Type t) {
  auto f = std::make_shared<Function>("branchy cell");
  Builder b(*f);
  ValueId a = b.Input(t), c = b.Input(t), g = b.Input(t);
  b.BeginIf(b.Emit(Op::kGt, {a, b.Const(t, 0)}));
  b.BeginIf(b.Emit(Op::kGt, {c, a}));
  ValueId th = b.Emit(Op::kTanh, {g});
  b.BeginElse({b.Mul(a, th), c});
  auto inner = b.EndIf({b.Add(a, c), b.Emit(Op::kExp, {g})});
  b.BeginElse({inner[0], inner[1]});
  auto outer = b.EndIf({b.Mul(c, c), b.Emit(Op::kSigmoid, {b.Sub(a, g)})});
  b.Return({outer[0], b.Mul(outer[1], b.Const(t, 2)), g});
  return f;
}

TEST_CASE("a kernel asked for again is found linked, not compiled again") {
  // What an evicted kernel's re-request gets (kernel_cache.h): stats count
  // it as a cache miss but not as a compile.
  Harness<double> h{ArithmeticFunction(Type::kF64), {3}, {0, 0, 0}};
  absl::StatusOr<CompiledCpuKernel> first = CompileCpuKernel(h.Spec(), nullptr);
  REQUIRE(first.ok());
  absl::StatusOr<CompiledCpuKernel> again = CompileCpuKernel(h.Spec(), nullptr);
  REQUIRE(again.ok());
  CHECK(again->already_linked);
  CHECK(reinterpret_cast<uintptr_t>(again->entry) == reinterpret_cast<uintptr_t>(first->entry));
}

TEST_CASE("a kernel nobody holds is unlinked; asked for again it is linked afresh and runs") {
  Harness<double> h{ArithmeticFunction(Type::kF64), {37}, {0, 0, 0}};
  h.Allocate();
  {
    absl::StatusOr<CompiledCpuKernel> first = CompileCpuKernel(h.Spec(), nullptr);
    REQUIRE(first.ok());
    absl::StatusOr<CompiledCpuKernel> held = CompileCpuKernel(h.Spec(), nullptr);
    REQUIRE(held.ok());
    CHECK(held->already_linked);
    first = absl::UnknownError("dropped");  // `held` still holds the code
    h.Run(held->entry, 0, 37);
    h.Check(0, 0, 37);
  }
  absl::StatusOr<CompiledCpuKernel> again = CompileCpuKernel(h.Spec(), nullptr);
  REQUIRE(again.ok());
  CHECK_FALSE(again->already_linked);  // compiled and linked again: the old link was removed
  h.Allocate();
  h.Run(again->entry, 0, 37);
  h.Check(0, 0, 37);
}


TEST_CASE("rank 0: the single element is computed only by the chunk that holds it") {
  Harness<double> h{ArithmeticFunction(Type::kF64), {}, {0, 0, 0}};
  const HeldKernel entry = Compile(h);
  h.Allocate();
  h.Run(entry, 1, 2);  // does not hold element 0
  h.Check(0, 0, 0);
  h.Run(entry, 0, 0);  // empty chunk
  h.Check(0, 0, 0);
  h.Run(entry, 0, 1);
  h.Check(0, 0, 1);
}

TEST_CASE("rank 1: arithmetic is exact in f64 and f32, whole and split into two chunks") {
  for (int64_t n : {1, 7, 100, 1037}) {
    CAPTURE(n);
    Harness<double> h{ArithmeticFunction(Type::kF64), {n}, {0, 0, 0}};
    const HeldKernel entry = Compile(h);
    h.Allocate();
    h.Run(entry, 0, n / 3);
    h.Check(0, 0, n / 3);
    h.Run(entry, n / 3, n);
    h.Check(0, 0, n);

    Harness<float> hf{ArithmeticFunction(Type::kF32), {n}, {0, 0, 0}};
    const HeldKernel entry_f = Compile(hf);
    hf.Allocate();
    hf.Run(entry_f, 0, n);
    hf.Check(0, 0, n);
  }
}

TEST_CASE("branches: nested ifs with several results match the interpreter") {
  Harness<float> hf{BranchyFunction(Type::kF32), {2053}, {0, 0, 0}};
  const HeldKernel entry_f = Compile(hf);
  hf.Allocate();
  hf.Run(entry_f, 0, 1000);
  hf.Run(entry_f, 1000, 2053);
  hf.Check(4, 0, 2053);

  Harness<double> hd{BranchyFunction(Type::kF64), {301}, {0, 0, 0}};
  const HeldKernel entry_d = Compile(hd);
  hd.Allocate();
  hd.Run(entry_d, 0, 301);
  hd.Check(4, 0, 301);
}

TEST_CASE("rank 2: inputs broadcast along either dim, both, or none") {
  // Input 0 is a column (n, 1): broadcast along the inner dim 1 -> bit 1.
  // Input 1 is a row (1, m): bit 0. Input 2 is a scalar (1, 1). Input 3 is full.
  auto f = std::make_shared<Function>("bcast2");
  Builder b(*f);
  ValueId col = b.Input(Type::kF32), row = b.Input(Type::kF32);
  ValueId scalar = b.Input(Type::kF32), full = b.Input(Type::kF32);
  b.Return({b.Add(b.Mul(col, row), b.Mul(scalar, full)), b.Sub(col, row)});
  Harness<float> h{f, {13, 37}, {0b10, 0b01, 0b11, 0b00}};
  const HeldKernel entry = Compile(h);
  h.Allocate();
  h.Run(entry, 0, 5);
  h.Run(entry, 5, 13);
  h.Check(0, 0, 13);
}

TEST_CASE("rank 3: a transposed input runs with inner_contiguous = false") {
  auto f = std::make_shared<Function>("transposed");
  Builder b(*f);
  ValueId x = b.Input(Type::kF64), y = b.Input(Type::kF64), z = b.Input(Type::kF64);
  b.BeginIf(b.Emit(Op::kLt, {x, y}));
  b.BeginElse({b.Emit(Op::kSin, {x})});
  auto r = b.EndIf({b.Mul(y, z)});
  b.Return({r[0], b.Emit(Op::kMax, {x, z})});
  // x is stored transposed in its last two dims, y broadcast along dim 1, z along dim 0.
  Harness<double> h{f, {3, 5, 7}, {0b000, 0b010, 0b001}};
  h.transposed_input = 0;
  for (const bool per_operand : {true, false}) {
    CAPTURE(per_operand);
    h.strided_per_operand = per_operand;
    const HeldKernel entry = Compile(h);
    h.Allocate();
    CHECK(h.in_strides[0] == std::vector<int64_t>{35, 1, 5});
    h.Run(entry, 0, 1);
    h.Run(entry, 1, 3);
    h.Check(4, 0, 3);
  }
}

// x.T + y: only the transposed operand is read lane by lane. When the spec
// said "strided" for the whole launch, the contiguous y was gathered and the
// output scattered too (x.T * 2 + 1 at 512^2 f32: 1.07 ms, per operand 0.40).
TEST_CASE("rank 2: a transposed input is gathered alone; the other operands keep vector loads and stores") {
  auto f = std::make_shared<Function>("transposed_plus");
  Builder b(*f);
  ValueId x = b.Input(Type::kF32), y = b.Input(Type::kF32);
  b.Return({b.Add(x, y)});
  Harness<float> h{f, {9, 37}, {0, 0}};
  h.transposed_input = 0;
  const std::string per_operand = CpuKernelIr(h.Spec());
  CHECK_MESSAGE(per_operand.find("masked.gather") != std::string::npos, per_operand);
  CHECK_MESSAGE(per_operand.find("masked.scatter") == std::string::npos, per_operand);
  h.strided_per_operand = false;
  const std::string all = CpuKernelIr(h.Spec());
  CHECK_MESSAGE(all.find("masked.scatter") != std::string::npos, all);
  CHECK(h.Spec().Key() != [&] {
    Harness<float> g = h;
    g.strided_per_operand = true;
    return g.Spec().Key();
  }());
  for (const bool each : {true, false}) {
    CAPTURE(each);
    h.strided_per_operand = each;
    const HeldKernel entry = Compile(h);
    h.Allocate();
    h.Run(entry, 0, 9);
    h.Check(0, 0, 9);
  }
}

TEST_CASE("a size-0 dim runs nothing, and other ranks up to kMaxRank work") {
  auto f = std::make_shared<Function>("sum3");
  Builder b(*f);
  ValueId x = b.Input(Type::kF32), y = b.Input(Type::kF32), z = b.Input(Type::kF32);
  b.Return({b.Add(b.Add(x, y), z)});
  Harness<float> empty{f, {4, 0, 3}, {0, 0b001, 0}};
  const HeldKernel entry = Compile(empty);
  empty.Allocate();
  empty.Run(entry, 0, 4);
  empty.Check(0, 0, 4);  // nothing to compare: no element exists

  Harness<float> inner_empty{f, {4, 3, 0}, {0, 0, 0}};
  const HeldKernel entry2 = Compile(inner_empty);
  inner_empty.Allocate();
  inner_empty.Run(entry2, 0, 4);

  Harness<float> deep{f, {2, 3, 1, 2, 3, 1, 2, 5}, {0b10101010, 0b01010101, 0}};
  const HeldKernel entry3 = Compile(deep);
  deep.Allocate();
  deep.Run(entry3, 0, 2);
  deep.Check(0, 0, 2);
}

TEST_CASE("the write mask skips outputs (null slots are never touched)") {
  Harness<float> h{BranchyFunction(Type::kF32), {64, 9}, {0b01, 0, 0b10}};
  h.write = {true, false, true};
  const HeldKernel entry = Compile(h);
  h.Allocate();
  h.Run(entry, 0, 64);
  h.Check(4, 0, 64);  // output 1 keeps the sentinel
}

// Every math op once, over inputs in [-3, 3] (the accuracy test covers the rest). The fast
// activations, whose accuracy is absolute (docs/accuracy.md), are in their own function.
bool IsFast(Op op) { return op == Op::kFastTanh || op == Op::kFastSigmoid; }
std::shared_ptr<Function> EveryMathOp(Type t, bool fast = false) {
  auto f = std::make_shared<Function>("every_op");
  Builder b(*f);
  ValueId x = b.Input(t), y = b.Input(t);
  std::vector<ValueId> outs;
  for (int op = 0; op < kNumOps; ++op) {
    const OpInfo& info = Info(static_cast<Op>(op));
    if (info.kind != OpKind::Math || IsFast(static_cast<Op>(op)) != fast) continue;
    outs.push_back(info.arity == 1   ? b.Emit(static_cast<Op>(op), {x})
                   : info.arity == 2 ? b.Emit(static_cast<Op>(op), {x, y})
                                     : b.Emit(static_cast<Op>(op), {x, y, b.Add(y, y)}));
  }
  b.Return(outs);
  return f;
}

TEST_CASE("every math op agrees with the interpreter (f32 and f64, 4 ulp)") {
  Harness<float> hf{EveryMathOp(Type::kF32), {517}, {0, 0}};
  const HeldKernel entry_f = Compile(hf);
  hf.Allocate();
  hf.Run(entry_f, 0, 517);
  hf.Check(4, 0, 517);

  Harness<double> hd{EveryMathOp(Type::kF64), {517}, {0, 0}};
  const HeldKernel entry_d = Compile(hd);
  hd.Allocate();
  hd.Run(entry_d, 0, 517);
  hd.Check(4, 0, 517);
}

TEST_CASE("fast_tanh and fast_sigmoid agree with the interpreter within 4 ulp of 1") {
  Harness<float> hf{EveryMathOp(Type::kF32, true), {517}, {0, 0}};
  const HeldKernel entry_f = Compile(hf);
  hf.Allocate();
  hf.Run(entry_f, 0, 517);
  hf.Check(0, 0, 517, 4 * std::numeric_limits<float>::epsilon());

  Harness<double> hd{EveryMathOp(Type::kF64, true), {517}, {0, 0}};
  const HeldKernel entry_d = Compile(hd);
  hd.Allocate();
  hd.Run(entry_d, 0, 517);
  hd.Check(0, 0, 517, 4 * std::numeric_limits<double>::epsilon());
}

// hypot depends on |a| and |b| only; libmvec's vector hypot alone gave
// hypot(a, b) != hypot(b, a) by an ulp for some pairs (found by the
// differential tester: `hypot(x, y) > hypot(y, x)` was true). Each kernel is
// compared with itself, bit for bit, over magnitudes from subnormal to huge
// and the special values, in every lane position and the masked tail.
template <class T>
void CheckHypotSymmetric(Type t) {
  auto f = std::make_shared<Function>("hypot_sym");
  Builder b(*f);
  ValueId x = b.Input(t), y = b.Input(t);
  b.Return({b.Emit(Op::kHypot, {x, y}), b.Emit(Op::kHypot, {y, x}),
            b.Emit(Op::kHypot, {b.Emit(Op::kNeg, {x}), y})});
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  std::vector<T> xs = {T(0.9234792824364586), inf, nan, -inf, nan, T(0), T(-0.0), T(3)},
                 ys = {T(0.27943795070880384), nan, inf, nan, T(1), T(0), T(0), -inf};
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> mantissa(1, 2);
  std::uniform_int_distribution<int> exponent(std::numeric_limits<T>::min_exponent - 20,
                                              std::numeric_limits<T>::max_exponent - 2);
  while (xs.size() < 4001) {  // an odd count: a masked tail too
    xs.push_back(static_cast<T>(std::ldexp(mantissa(rng), exponent(rng)) * (rng() % 2 ? 1 : -1)));
    ys.push_back(rng() % 4 == 0 ? xs.back() * T(0.75) : static_cast<T>(std::ldexp(mantissa(rng), exponent(rng))));
  }
  const int64_t n = static_cast<int64_t>(xs.size());
  Harness<T> h{f, {n}, {0, 0}};
  const HeldKernel entry = Compile(h);
  h.Allocate();
  h.in_data = {xs, ys};
  h.Run(entry, 0, n);
  int asymmetric = 0;
  for (int64_t e = 0; e < n; ++e) {
    const T ab = h.out_data[0][e], ba = h.out_data[1][e], neg = h.out_data[2][e];
    const bool same = std::memcmp(&ab, &ba, sizeof(T)) == 0 && std::memcmp(&ab, &neg, sizeof(T)) == 0;
    if (!same && ++asymmetric <= 5) {
      MESSAGE("hypot(", xs[e], ", ", ys[e], ") = ", ab, " but hypot(y, x) = ", ba, ", hypot(-x, y) = ", neg);
    }
    const T ref = std::hypot(xs[e], ys[e]);
    if (std::isinf(ref) || std::isnan(ref)) {
      CHECK((std::isnan(ref) ? std::isnan(ab) : ab == ref));  // inf beside a NaN stays inf
    } else {
      CHECK(UlpDistance(ab, ref) <= 4);
    }
  }
  CHECK(asymmetric == 0);
}

TEST_CASE("hypot is symmetric in compiled kernels, bit for bit, with IEEE's inf beside a NaN") {
  CheckHypotSymmetric<float>(Type::kF32);
  CheckHypotSymmetric<double>(Type::kF64);
}

TEST_CASE("kernels are written at the host's vector width, with libmvec calls and lane-mask "
          "tests instead of the loop vectoriser") {
  if (!__builtin_cpu_supports("avx2")) {
    MESSAGE("host lacks AVX2: vector-width check skipped");
    return;
  }
  auto f = std::make_shared<Function>("vec_tanh");
  Builder b(*f);
  ValueId x = b.Input(Type::kF32);
  b.BeginIf(b.Emit(Op::kGt, {x, b.Const(Type::kF32, 0)}));
  b.BeginElse({b.Emit(Op::kSin, {x})});  // (tanh is a formula around exp, not a libmvec call)
  auto r = b.EndIf({b.Emit(Op::kExp, {x})});
  b.Return({r[0]});
  Harness<float> h{f, {1000}, {0}};
  std::string ir = CpuKernelIr(h.Spec());
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  CHECK_MESSAGE(ir.find(avx512 ? "<16 x float>" : "<8 x float>") != std::string::npos, ir);
  CHECK(ir.find(avx512 ? "@_ZGVeN16v_sinf" : "@_ZGVdN8v_sinf") != std::string::npos);
  // exp is written out inline (jit/cpu/inline_exp.h), never a call.
  CHECK_MESSAGE(ir.find("@_ZGVeN16v_expf") == std::string::npos, ir);
  CHECK_MESSAGE(ir.find("@_ZGVdN8v_expf") == std::string::npos, ir);
  CHECK_MESSAGE(ir.find("@expf(") == std::string::npos, ir);
  CHECK_MESSAGE(ir.find("vector.body") == std::string::npos, ir);  // no loop vectoriser
  CHECK_MESSAGE(ir.find("masked.load") != std::string::npos, ir);  // the row's tail
  // Both sides stay behind their own branch (not if-converted into selects).
  CHECK_MESSAGE(ir.find("\nthen") != std::string::npos, ir);
  CHECK_MESSAGE(ir.find("\nelse") != std::string::npos, ir);
}

// Lines of `ir` that start with `prefix` (a block label, a definition).
int CountLinesStartingWith(const std::string& ir, const std::string& prefix) {
  int count = 0;
  for (size_t at = 0; at < ir.size();) {
    if (ir.compare(at, prefix.size(), prefix) == 0) ++count;
    const size_t end = ir.find('\n', at);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return count;
}

TEST_CASE("a mixed if tests only the sides that cost more than the test") {
  // if (x > 0) 2x  else { if (x < -1) x + 1  else sin(x) }: the cheap sides run
  // inline and are blended; the outer else is cheap too once its nested sin
  // side, behind its own test, is left out: one test in all (HM-LSTM's FLUSH /
  // COPY / UPDATE shape). vector_test.cc checks the values of such nests.
  auto f = std::make_shared<Function>("one_tested_side");
  Builder b(*f);
  ValueId x = b.Input(Type::kF32);
  b.BeginIf(b.Emit(Op::kGt, {x, b.Const(Type::kF32, 0)}));
  b.BeginElse({b.Mul(x, b.Const(Type::kF32, 2))});
  b.BeginIf(b.Emit(Op::kLt, {x, b.Const(Type::kF32, -1)}));
  b.BeginElse({b.Add(x, b.Const(Type::kF32, 1))});
  auto inner = b.EndIf({b.Emit(Op::kSin, {x})});
  auto outer = b.EndIf({inner[0]});
  b.Return({outer[0]});
  Harness<float> h{f, {1000}, {0}};
  const std::string ir = CpuKernelIr(h.Spec());
  CHECK_MESSAGE(CountLinesStartingWith(ir, "then") == 0, ir);  // no then side is tested
  CHECK_MESSAGE(CountLinesStartingWith(ir, "else") == 1, ir);  // sin's side only
  CHECK_MESSAGE(CountLinesStartingWith(ir, "endif") == 1, ir);
  const HeldKernel entry = Compile(h);
  h.Allocate();  // inputs uniform in [-3, 3): almost every vector mixes all three sides
  h.Run(entry, 0, 1000);
  h.Check(4, 0, 1000);
}

TEST_CASE("a row's tail may run a side that only its padding lanes take, and its elements stay right") {
  // if (x == 0) log(x) * x  else x * 2, on rows of 1003 elements none of which
  // is 0: only the padding lanes of each row's tail vector (inputs read as 0)
  // take the then side, so the tail runs log over its real lanes too (NaN
  // for negative x), and the blend must keep those lanes' else values.
  auto f = std::make_shared<Function>("padding_takes_a_side");
  Builder b(*f);
  ValueId x = b.Input(Type::kF32);
  b.BeginIf(b.Emit(Op::kEq, {x, b.Const(Type::kF32, 0)}));
  b.BeginElse({b.Mul(b.Emit(Op::kLog, {x}), x)});
  auto y = b.EndIf({b.Mul(x, b.Const(Type::kF32, 2))});
  b.Return({y[0]});
  Harness<float> h{f, {5, 1003}, {0}};
  const std::string ir = CpuKernelIr(h.Spec());
  // Branch tests look at every lane: no mask is an AND with the loop's active lanes.
  for (absl::string_view line : absl::StrSplit(ir, '\n')) {
    if (absl::StrContains(line, "%active") && absl::StrContains(line, " = and ")) {
      FAIL_CHECK("a lane mask ANDed with the active lanes: ", line);
    }
  }
  const HeldKernel entry = Compile(h);
  h.Allocate();
  for (float& v : h.in_data[0]) {
    if (v == 0) v = 0.5f;
  }
  h.Run(entry, 0, 5);
  h.Check(4, 0, 5);
}

std::shared_ptr<Function> HmLstmJvp();

TEST_CASE("a kernel is one function whose alias scopes let the pipeline hoist the loads of inputs broadcast "
          "along the inner dim, reads inputs with plain loads and sinks work into uniform "
          "branches") {
  if (!__builtin_cpu_supports("avx2")) {
    MESSAGE("host lacks AVX2: vector-width check skipped");
    return;
  }
  // The HM-LSTM cell in the rows layout: z and zb are broadcast along dim 1,
  // so `z == 1` and `zb == 0` are invariant in the inner loop.
  Harness<float> h{HmLstmJvp(), {64, 128}, {0b10, 0b10, 0, 0, 0, 0}};
  const std::string ir = CpuKernelIr(h.Spec());
  // One kernel function, nothing left to inline. The cold full-range
  // exp/expm1 (inline_exp.h), called where a lane is out of range, is only
  // declared: the JIT links one copy per process.
  CHECK_MESSAGE(CountLinesStartingWith(ir, "define ") == 1, ir);
  // (AVX-512 scales with vscalef and keeps one form: no such call there.)
  if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))) {
    CHECK_MESSAGE(CountLinesStartingWith(ir, "declare preserve_allcc <8 x float> @dualcast.shared.exp.full.v8f32(") == 1, ir);
    CHECK_MESSAGE(CountLinesStartingWith(ir, "declare preserve_allcc <8 x float> @dualcast.shared.expm1.full.v8f32(") == 1, ir);
    CHECK_MESSAGE(ir.find("call preserve_allcc <8 x float> @dualcast.shared.") != std::string::npos, ir);
  }
  CHECK_MESSAGE(ir.find("alwaysinline") == std::string::npos, ir);
  CHECK_MESSAGE(ir.find("!alias.scope") != std::string::npos, ir);
  CHECK_MESSAGE(ir.find("vector.memcheck") == std::string::npos, ir);  // no alias checks
  // z's scalar load sits before the inner loop (dim1), not in it.
  const size_t inner_loop = ir.find("\ndim1.body:");  // the loop, past its preheader
  const size_t z_load = ir.find("load float");
  REQUIRE_MESSAGE(inner_loop != std::string::npos, ir);
  CHECK_MESSAGE(z_load < inner_loop, ir);
  // So does zb's, though only the z != 1 side reads it: loaded in the loop,
  // InstCombine sank it into that side, out of LICM's reach (every iteration
  // reloaded it). No scalar load is left in the loop.
  CHECK_MESSAGE(ir.find("load float", inner_loop) == std::string::npos, ir);
  // `z == 1` is the same in every lane: a plain branch, and the tanh and exp
  // above it moved into the sides that use them (a COPY row computes none).
  // exp is inline (jit/cpu/inline_exp.h): its polynomial's multiply-adds mark it.
  const size_t body = ir.find("\nentry:");
  const size_t first_side = ir.find("\nuthen");
  const size_t first_math_call = ir.find("@llvm.fmuladd", body);
  REQUIRE_MESSAGE(first_side != std::string::npos, ir);
  REQUIRE_MESSAGE(first_math_call != std::string::npos, ir);
  CHECK_MESSAGE(first_math_call > first_side, ir);
  // Contiguous inputs are plain vector loads (masked ones cost several times
  // as much on some CPUs); masked loads only fill the tail's stack copies.
  // Each input is still one load, so the sides read only what they use: no
  // input is read before the first side.
  // The kernel's vector type: 8 floats with AVX2, 16 with AVX-512 (HostVectorBits' rule).
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  const std::string vec = avx512 ? "<16 x float>" : "<8 x float>";
  std::string block;
  int masked_loads = 0;
  for (absl::string_view line : absl::StrSplit(ir, '\n')) {
    const size_t colon = line.find(':');
    if (!line.empty() && line[0] != ' ' && line[0] != ';' && colon != absl::string_view::npos &&
        !absl::StartsWith(line, "define") && !absl::StartsWith(line, "declare")) {
      block = std::string(line.substr(0, colon));
    }
    if (absl::StrContains(line, absl::StrCat("call ", vec, " @llvm.masked.load"))) {
      ++masked_loads;
      CHECK_MESSAGE(absl::StartsWith(block, "tail.copy"), block, ": ", line);
    }
  }
  CHECK_MESSAGE(masked_loads == 4, ir);  // c, f, i, g
  // (Input loads read through a pointer; `@splat...` loads are constants, splat_loads.h.)
  const size_t first_vector_load = ir.find(absl::StrCat(" = load ", vec, ", ptr %"));
  REQUIRE_MESSAGE(first_vector_load != std::string::npos, ir);
  CHECK_MESSAGE(first_vector_load > first_side, ir);
  CHECK_MESSAGE(ir.find("ptr %x5.tail") != std::string::npos, ir);  // the tail's copy, selected
  // The loads move into the sides, the address selects do not: above the
  // branch codegen folds them into the tail test, in a side each is a compare
  // and a cmov on every iteration.
  const std::string select = " = select i1 ";
  for (size_t at = ir.find(select); at != std::string::npos; at = ir.find(select, at + 1)) {
    const std::string line = ir.substr(at, ir.find('\n', at) - at);
    if (absl::StrContains(line, ", ptr ")) CHECK_MESSAGE(at < first_side, line, "\n", ir);
  }
}

// An in-memory ObjectStore that counts what it is asked.
struct MemoryStore : ObjectStore {
  absl::flat_hash_map<std::string, std::string> objects;
  int loads = 0, saves = 0;
  std::optional<std::string> Load(const std::string& key) override {
    ++loads;
    auto it = objects.find(key);
    if (it == objects.end()) return std::nullopt;
    return it->second;
  }
  void Save(const std::string& key, std::string_view bytes) override {
    ++saves;
    objects[key] = std::string(bytes);
  }
};

std::shared_ptr<Function> Affine(const char* name, double slope) {
  auto f = std::make_shared<Function>(name);
  Builder b(*f);
  ValueId x = b.Input(Type::kF64);
  b.Return({b.Add(b.Mul(x, b.Const(Type::kF64, slope)), b.Const(Type::kF64, 1))});
  return f;
}

// The mappings of the process (Linux), or -1 elsewhere.
int64_t MemoryMappings() {
  std::ifstream maps("/proc/self/maps");
  if (!maps) return -1;
  int64_t lines = 0;
  for (std::string line; std::getline(maps, line);) ++lines;
  return lines;
}

TEST_CASE("compiling many kernels that are dropped does not use up memory mappings") {
  // Each linked kernel holds two or three mappings; Linux allows 65,530 per
  // process, and a process that kept every kernel linked died in bad_alloc
  // after ~30,000 (a long difftest run). 600 kernels, each dropped after
  // one run, must leave the mappings where they were, give or take the
  // allocator's own.
  const int64_t before = MemoryMappings();
  if (before < 0) return;  // no /proc: nothing to count
  for (int k = 0; k < 600; ++k) {
    Harness<double> h{Affine(("dropped_" + std::to_string(k)).c_str(), k + 0.5), {5}, {0}};
    absl::StatusOr<CompiledCpuKernel> kernel = CompileCpuKernel(h.Spec(), nullptr);
    REQUIRE(kernel.ok());
    h.Allocate();
    h.Run(kernel->entry, 0, 5);
    if (k % 100 == 0) h.Check(0, 0, 5);
  }
  const int64_t after = MemoryMappings();
  MESSAGE("memory mappings: " << before << " before 600 dropped kernels, " << after << " after");
  CHECK(after - before < 100);
}

TEST_CASE("object store: a miss compiles and saves, a hit links the stored object") {
  MemoryStore store;
  Harness<double> miss{Affine("store_miss", 3), {50}, {0}};
  absl::StatusOr<CompiledCpuKernel> first = CompileCpuKernel(miss.Spec(), &store);
  REQUIRE(first.ok());
  CHECK(!first->from_object_store);
  CHECK(store.saves == 1);
  CHECK(store.objects.count(CpuObjectKey(miss.Spec())) == 1);
  // Same spec again in this process: already linked, no store traffic.
  absl::StatusOr<CompiledCpuKernel> again = CompileCpuKernel(miss.Spec(), &store);
  REQUIRE(again.ok());
  const bool same_entry = again->entry == first->entry;
  CHECK(same_entry);
  CHECK(store.saves == 1);

  // A hit: the object is put in the store before this process ever linked it.
  Harness<double> hit{Affine("store_hit", 5), {50}, {0}};
  absl::StatusOr<std::string> object = CpuKernelObject(hit.Spec());
  REQUIRE(object.ok());
  store.objects[CpuObjectKey(hit.Spec())] = *object;
  absl::StatusOr<CompiledCpuKernel> linked = CompileCpuKernel(hit.Spec(), &store);
  REQUIRE(linked.ok());
  CHECK(linked->from_object_store);
  hit.Allocate();
  hit.Run(linked->entry, 0, 50);
  hit.Check(0, 0, 50);

  // Corrupt bytes are ignored: compiled afresh and the good object saved over them.
  Harness<double> corrupt{Affine("store_corrupt", 7), {50}, {0}};
  store.objects[CpuObjectKey(corrupt.Spec())] = "\x7f" "ELF garbage";
  const int saves_before = store.saves;
  absl::StatusOr<CompiledCpuKernel> fresh = CompileCpuKernel(corrupt.Spec(), &store);
  REQUIRE(fresh.ok());
  CHECK(!fresh->from_object_store);
  CHECK(store.saves == saves_before + 1);
  corrupt.Allocate();
  corrupt.Run(fresh->entry, 0, 50);
  corrupt.Check(0, 0, 50);
}

TEST_CASE("without AVX-512, splat constants are loads of variables (codegen folds them into their users)") {
  if (!__builtin_cpu_supports("avx2")) {
    MESSAGE("host lacks AVX2: check skipped");
    return;
  }
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  Harness<float> h{HmLstmJvp(), {64, 128}, {0, 0, 0, 0, 0, 0}};
  const std::string ir = CpuKernelIr(h.Spec());
  int splat_operands = 0, splat_loads = 0;
  for (absl::string_view line : absl::StrSplit(ir, '\n')) {
    if (!absl::StartsWith(line, "  ")) continue;  // instructions only
    if (absl::StrContains(line, "@llvm.fmuladd") || absl::StrContains(line, " = fmul ") ||
        absl::StrContains(line, " = fadd ")) {
      splat_operands += absl::StrContains(line, " <float ") ? 1 : 0;  // a vector literal operand
    }
    splat_loads += absl::StrContains(line, "ptr @splat") ? 1 : 0;
  }
  if (avx512) {  // embedded broadcasts take constants as memory operands already
    CHECK_MESSAGE(splat_loads == 0, ir);
  } else {
    CHECK_MESSAGE(splat_loads > 20, ir);  // the exp polynomials' coefficients among them
    CHECK_MESSAGE(splat_operands == 0, ir);
  }
  // The values are those of the constants: the kernel against the interpreter.
  const HeldKernel entry = Compile(h);
  h.Allocate();
  h.Run(entry, 0, 64);
  h.Check(8, 0, 64, 1e-6);
}

TEST_CASE("a stored kernel links the shared full-range exp it calls, and its far lanes are right") {
  // exp at 32 lanes of double: a vector type no other test here uses, so this
  // process has not linked its full form yet when the stored object asks for it.
  auto f = std::make_shared<Function>("store_shared_exp");
  Builder b(*f);
  b.Return({b.Emit(Op::kExp, {b.Input(Type::kF64)})});
  Harness<double> h{f, {200}, {0}};
  KernelSpec spec = h.Spec();
  spec.hints.vector_width = 32;
  absl::StatusOr<std::string> object = CpuKernelObject(spec);
  REQUIRE(object.ok());
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  // Called, not defined, by the kernel's object (AVX-512 scales with vscalef: one form, no call).
  const bool calls_shared = object->find("dualcast.shared.exp.full.v32f64") != std::string::npos;
  CHECK((calls_shared || avx512));
  MemoryStore store;
  store.objects[CpuObjectKey(spec)] = *object;
  absl::StatusOr<CompiledCpuKernel> linked = CompileCpuKernel(spec, &store);
  REQUIRE_MESSAGE(linked.ok(), linked.status());
  CHECK(linked->from_object_store);
  h.Allocate();
  // Every 7th element far out: overflow, zero, subnormal results and the
  // infinities, so most vectors take the full form and some do not.
  const double far[] = {800, -800, -740, -710, 709.7, std::numeric_limits<double>::infinity(),
                        -std::numeric_limits<double>::infinity()};
  for (size_t e = 0; e < h.in_data[0].size(); e += 7) h.in_data[0][e] = far[(e / 7) % std::size(far)];
  h.Run(linked->entry, 0, 200);
  h.Check(2, 0, 200);
}

TEST_CASE("concurrent compiles from several threads are safe and share one kernel per spec") {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<uintptr_t> shared_entry(kThreads), own_entry(kThreads);
  std::vector<int> failures(kThreads, 0);
  // Every thread holds its kernels until all have compiled: the common one
  // is then linked once (a kernel nobody holds is unlinked, cpu_backend.h).
  std::latch compiled(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Harness<double> common{Affine("concurrent_common", 11), {33}, {0}};
      Harness<double> own{Affine(("concurrent_" + std::to_string(t)).c_str(), 13 + t), {33}, {0}};
      absl::StatusOr<CompiledCpuKernel> a = CompileCpuKernel(common.Spec(), nullptr);
      absl::StatusOr<CompiledCpuKernel> b = CompileCpuKernel(own.Spec(), nullptr);
      compiled.arrive_and_wait();
      if (!a.ok() || !b.ok()) {
        ++failures[t];
        return;
      }
      shared_entry[t] = reinterpret_cast<uintptr_t>(a->entry);
      own_entry[t] = reinterpret_cast<uintptr_t>(b->entry);
      own.Allocate();
      own.Run(b->entry, 0, 33);
      // Checked on this thread: Interpret is re-entrant; doctest assertions are thread-safe.
      own.Check(0, 0, 33);
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    CHECK(failures[t] == 0);
    CHECK(shared_entry[t] == shared_entry[0]);
    for (int u = 0; u < t; ++u) CHECK(own_entry[t] != own_entry[u]);
  }
}

TEST_CASE("threads that compile, run and drop the same kernels race unlink against relink safely") {
  // A dropped kernel's last holder unlinks it (cpu_backend.h) while another
  // thread may be asking for the same symbol: that one must get working code,
  // linked once, never a removed entry point or a duplicate definition.
  constexpr int kThreads = 4, kRounds = 60;
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  std::latch start(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int r = 0; r < kRounds; ++r) {
        // Two symbols shared by all threads, so holders overlap and part.
        Harness<double> h{Affine(r % 2 == 0 ? "churn_even" : "churn_odd", r % 2 + 2.0), {21}, {0}};
        absl::StatusOr<CompiledCpuKernel> k = CompileCpuKernel(h.Spec(), nullptr);
        if (!k.ok()) {
          ++wrong[t];
          continue;
        }
        h.Allocate();
        h.Run(k->entry, 0, 21);
        h.Check(0, 0, 21);  // against the interpreter (re-entrant; doctest is thread-safe)
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) CHECK(wrong[t] == 0);
}

TEST_CASE("keys and symbols depend on the spec's structure") {
  Harness<float> a{BranchyFunction(Type::kF32), {4, 4}, {0, 0, 0}};
  Harness<float> b = a;
  b.bcast = {0b01, 0, 0};
  Harness<float> c = a;
  c.write = {true, false, true};
  CHECK(CpuKernelSymbol(a.Spec()) == CpuKernelSymbol(a.Spec()));
  CHECK(CpuKernelSymbol(a.Spec()) != CpuKernelSymbol(b.Spec()));
  CHECK(CpuKernelSymbol(a.Spec()) != CpuKernelSymbol(c.Spec()));
  CHECK(CpuKernelSymbol(a.Spec()).rfind("dc_branchy_cell_f32_", 0) == 0);
  CHECK(CpuObjectKey(a.Spec()).find(LlvmVersionString()) != std::string::npos);
  CHECK(!CpuFeaturesString().empty());
}

TEST_CASE("an invalid spec is an error that names the kernel") {
  Harness<float> h{BranchyFunction(Type::kF32), {4}, {0b10, 0, 0}};  // bit above rank 1
  absl::StatusOr<CompiledCpuKernel> k = CompileCpuKernel(h.Spec(), nullptr);
  REQUIRE(!k.ok());
  CHECK(std::string(k.status().message()).find("branchy cell") != std::string::npos);
  CHECK_THROWS_AS(ThrowStatus(k.status()), Error);
  CHECK(CpuKernelIr(h.Spec()).rfind("; error:", 0) == 0);
}

// The HM-LSTM cell of DESIGN.md, with all six partials (Jvp): a realistic kernel size.
std::shared_ptr<Function> HmLstmJvp() {
  Function cell("hmlstm_cell");
  Builder b(cell);
  const Type t = Type::kF32;
  ValueId z = b.Input(t), zb = b.Input(t), c = b.Input(t), f = b.Input(t), i = b.Input(t),
          g = b.Input(t);
  ValueId flush = b.Mul(b.Emit(Op::kSigmoid, {i}), b.Emit(Op::kTanh, {g}));
  b.BeginIf(b.Emit(Op::kEq, {z, b.Const(t, 1)}));
  b.BeginElse({flush});
  b.BeginIf(b.Emit(Op::kEq, {zb, b.Const(t, 0)}));
  b.BeginElse({c});
  auto update = b.EndIf({b.Add(b.Mul(b.Emit(Op::kSigmoid, {f}), c), flush)});
  auto y = b.EndIf({update[0]});
  b.Return({y[0]});
  const int wrt[] = {0, 1, 2, 3, 4, 5};
  return std::make_shared<Function>(Jvp(cell, wrt).function);
}

TEST_CASE("compile time of an HM-LSTM-sized kernel (measured, not asserted)") {
  std::shared_ptr<Function> f = HmLstmJvp();
  Harness<float> h{f, {64, 128}, {0b10, 0b10, 0, 0, 0, 0}};
  auto thread_cpu_ms = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
  };
  const double cpu_start = thread_cpu_ms();
  absl::StatusOr<CompiledCpuKernel> k = CompileCpuKernel(h.Spec(), nullptr);
  const double cpu = thread_cpu_ms() - cpu_start;
  REQUIRE(k.ok());
  // Wall time suffers when other processes share the cores; CPU time does not.
  MESSAGE("HM-LSTM jvp kernel (" << f->insts.size() << " IR values, " << f->num_outputs()
                                 << " outputs, rank 2): compile " << k->compile_ms
                                 << " ms wall, " << cpu << " ms CPU");
  h.Allocate();
  // Make the branches go every way: z and zb take the values 0 and 1.
  for (size_t r = 0; r < h.in_data[0].size(); ++r) {
    h.in_data[0][r] = static_cast<float>(r % 2);
    h.in_data[1][r] = static_cast<float>((r / 2) % 2);
  }
  h.Run(k->entry, 0, 64);
  h.Check(4, 0, 64, 1e-6);
}

}  // namespace
}  // namespace dualcast::jit
