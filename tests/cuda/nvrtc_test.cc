// CUDA code generation without a GPU: emitted source checked for structure, every suite kernel and fused runtime-style kernels compiled by NVRTC (PTX + CUBIN) and the PTX checked by ptxas.
#include <doctest/doctest.h>

#ifdef DUALCAST_HAVE_NVRTC

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>

#include "cuda/cuda_test_support.h"
#include "jit/codegen/object_store.h"
#include "jit/cuda/cuda_backend.h"
#include "jit/cuda/cuda_kernel.h"
#include "jit/cuda/cuda_printer.h"
#include "jit/cuda/nvrtc_compile.h"
#include "jit/error.h"
#include "jit/passes/compose.h"

namespace dualcast::testing {
namespace {

using jit::Function;
using jit::Type;
using jit::cuda::NvrtcKind;
using jit::cuda::NvrtcTarget;

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// Compiles `spec` for each target; a failure shows the source and NVRTC's log.
void CompileEverywhere(const jit::KernelSpec& spec, const std::vector<NvrtcTarget>& targets) {
  absl::StatusOr<jit::cuda::CudaKernelSource> src = jit::cuda::BuildCudaKernelSource(spec);
  REQUIRE_MESSAGE(src.ok(), src.status().message());
  for (const NvrtcTarget& target : targets) {
    CAPTURE(target.Name());
    absl::StatusOr<jit::cuda::NvrtcImage> image =
        jit::cuda::NvrtcCompile(src->text, src->symbol, target);
    REQUIRE_MESSAGE(image.ok(), spec.Describe(), "\n", image.status().message(), "\nsource:\n",
                    src->text);
    CHECK(!image->bytes.empty());
    if (target.kind == NvrtcKind::kCubin) {
      CHECK(image->bytes.compare(0, 4, "\x7f" "ELF") == 0);  // an ELF object
    } else {
      CHECK(Has(image->bytes, ".entry " + src->symbol + "_i32"));
      CHECK(Has(image->bytes, ".entry " + src->symbol + "_i64"));
      if (src->has_finish) CHECK(Has(image->bytes, ".entry " + src->symbol + "_fin"));
      bool ran = false;
      const std::string ptxas = PtxasCheck(image->bytes, "sm_" + std::to_string(target.arch), &ran);
      CHECK_MESSAGE(ptxas.empty(), spec.Describe(), "\n", ptxas, "\nsource:\n", src->text);
    }
  }
}

const std::vector<NvrtcTarget> kAllTargets = {
    {90, NvrtcKind::kPtx}, {90, NvrtcKind::kCubin}, {80, NvrtcKind::kCubin}};

// Each kernel meets every target once across its two variants (keeps the
// binary fast: a CUBIN costs ~2.5x a PTX, and ptxas checks the PTX for sm_90).
template <class K>
void CompileSuiteKernel() {
  CAPTURE(std::string(K::name));
  constexpr size_t N = Arity<K>();
  // Input 0 broadcast along the inner dim, input 1 (if any) along the outer one.
  std::vector<uint32_t> bcast(N, 0);
  bcast[0] = 0b10;
  if (N > 1) bcast[1] = 0b01;
  CompileEverywhere(MakeSpec(SuiteJvp<K>(Type::kF32), Type::kF32, 2, bcast),
                    {{90, NvrtcKind::kPtx}, {80, NvrtcKind::kCubin}});
  // Doubles, rank 3, not inner-contiguous: every stride a parameter.
  CompileEverywhere(MakeSpec(SuiteJvp<K>(Type::kF64), Type::kF64, 3, {}, false),
                    {{90, NvrtcKind::kCubin}});
}

TEST_CASE("every suite kernel (jvp wrt all inputs) compiles to PTX compute_90 (ptxas-checked), CUBIN sm_80 and sm_90") {
  CHECK(std::tuple_size_v<AllKernels> >= 29);
  std::apply([](auto... k) { (CompileSuiteKernel<decltype(k)>(), ...); }, AllKernels{});
}

// y = cell(z, zb, c, f, i, g); loss_terms = y * ybar; also (c - y): a fused chain as the runtime builds it.
std::shared_ptr<Function> FusedCellChain(Type t) {
  auto cell = std::make_shared<Function>(
      jit::Trace("hmlstm_cell", HmLstmCell::fn, std::vector<Type>(6, t)));
  auto mul = std::make_shared<Function>(
      jit::Trace("mul", [](auto a, auto b) { return a * b; }, std::vector<Type>(2, t)));
  auto sub = std::make_shared<Function>(
      jit::Trace("sub", [](auto a, auto b) { return a - b; }, std::vector<Type>(2, t)));
  using S = jit::FusionSource;
  std::vector<jit::FusionNode> nodes = {
      {cell, {{S::kLeaf, 0}, {S::kLeaf, 1}, {S::kLeaf, 2}, {S::kLeaf, 3}, {S::kLeaf, 4}, {S::kLeaf, 5}}},
      {mul, {{S::kNode, 0}, {S::kLeaf, 6}}},
      {sub, {{S::kLeaf, 2}, {S::kNode, 0}}}};
  std::vector<S> outs = {{S::kNode, 1}, {S::kNode, 2}, {S::kNode, 0}};
  Function fused = jit::Compose("fused_cell_loss", std::vector<Type>(7, t), nodes, outs);
  std::vector<int> wrt = {2, 3, 4, 5, 6};
  return std::make_shared<Function>(jit::Optimize(jit::Jvp(fused, wrt).function));
}

TEST_CASE("fused runtime-style kernels compile for every target, with outputs masked off") {
  for (Type t : {Type::kF32, Type::kF64}) {
    std::shared_ptr<Function> f = FusedCellChain(t);
    // z, zb: [n, 1] (broadcast along the inner dim); ybar: [1, n]; the rest [n, n].
    jit::KernelSpec spec = MakeSpec(f, t, 2, {0b10, 0b10, 0, 0, 0, 0, 0b01});
    CompileEverywhere(spec, kAllTargets);
    // Values only (the forward of an inference step), then partials only.
    for (size_t m = 0; m < spec.write.size(); ++m) spec.write[m] = m < 3;
    CompileEverywhere(spec, {{90, NvrtcKind::kPtx}});
    for (size_t m = 0; m < spec.write.size(); ++m) spec.write[m] = m >= 3;
    CompileEverywhere(spec, {{90, NvrtcKind::kCubin}});
  }
  // A built-in operator chain: ((a + b) * c) / d over rank 1 and rank 0.
  auto chain = std::make_shared<Function>(jit::Optimize(jit::Jvp(
      jit::Trace("chain", [](auto a, auto b, auto c, auto d) { return (a + b) * c / d; },
                 std::vector<Type>(4, Type::kF32)),
      std::vector<int>{0, 1, 2, 3}).function));
  CompileEverywhere(MakeSpec(chain, Type::kF32, 1, {}), kAllTargets);
  CompileEverywhere(MakeSpec(chain, Type::kF32, 0, {}), {{90, NvrtcKind::kPtx}});
}

TEST_CASE("reduced and accumulating outputs compile for every target: every axes combination of rank 1-3, f32 and f64") {
  for (Type t : {Type::kF32, Type::kF64}) {
    CAPTURE(jit::TypeName(t));
    // One-pass-gradient-like: values elementwise, two partials times an adjoint, reduced.
    auto f = std::make_shared<Function>(jit::Optimize(jit::Trace(
        "onepass_like",
        [](auto x, auto y, auto ybar) {
          using namespace dualcast::math;
          return std::tuple{x * y + sin(x), ybar * (y + cos(x)), ybar * x};
        },
        std::vector<Type>(3, t))));
    for (int rank = 1; rank <= 3; ++rank) {
      const uint32_t all = (1u << rank) - 1;
      for (uint32_t axes = 1; axes <= all; ++axes) {
        CAPTURE(rank);
        CAPTURE(axes);
        jit::KernelSpec spec = MakeSpec(f, t, rank, {axes, all & ~axes, 0}, axes % 2 == 0);
        spec.output_reduce = {0, axes, all & ~axes};
        spec.accumulate = {false, axes % 2 == 1, true};
        // Each combination meets one target (CUBIN costs ~2.5x a PTX); all meet compute_90 PTX.
        CompileEverywhere(spec, {{90, NvrtcKind::kPtx}});
        if (axes == all) CompileEverywhere(spec, {{90, NvrtcKind::kCubin}, {80, NvrtcKind::kCubin}});
      }
    }
    // Accumulate without any reduction: no finish kernel.
    jit::KernelSpec acc = MakeSpec(f, t, 2, {0b10, 0b01, 0});
    acc.accumulate = {true, true, false};
    absl::StatusOr<jit::cuda::CudaKernelSource> src = jit::cuda::BuildCudaKernelSource(acc);
    REQUIRE(src.ok());
    CHECK(!src->has_finish);
    CHECK(Has(src->text, "out0[o_out0] = out0[o_out0] + "));
    CompileEverywhere(acc, {{90, NvrtcKind::kPtx}});
  }
}

TEST_CASE("the emitted source has the grid-stride loop, the strides, the broadcast bits and real branches") {
  // A branchy kernel with 2 outputs; input 0 broadcast along dim 1 (inner), input 1 along dim 0.
  Function f = jit::Trace(
      "branchy",
      [](auto x, auto y, auto z) {
        using namespace dualcast::math;
        if (x > 0) return std::tuple{exp(y) * z, y};
        return std::tuple{sin(z), x + y};
      },
      std::vector<Type>(3, Type::kF32));
  jit::KernelSpec spec = MakeSpec(std::make_shared<Function>(f), Type::kF32, 2, {0b10, 0b01, 0});
  spec.write = {true, false};
  absl::StatusOr<jit::cuda::CudaKernelSource> src = jit::cuda::BuildCudaKernelSource(spec);
  REQUIRE(src.ok());
  const std::string& s = src->text;
  INFO(s);
  // One thread per element, grid-stride.
  CHECK(Has(s, "idx = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; idx < count; idx += step"));
  CHECK(Has(s, "step = (I)gridDim.x * (I)blockDim.x"));
  // Indices: the inner dim fastest.
  CHECK(Has(s, "const I i1 = rem % (I)size1;"));
  // Input 0 is broadcast along dim 1: only the outer index, with its stride.
  CHECK(Has(s, "o_in0 = (dc_i64)i0 * in0_s0;"));
  // Input 1 is broadcast along dim 0 and contiguous along dim 1: stride 1 compiled in.
  CHECK(Has(s, "o_in1 = (dc_i64)i1;"));
  CHECK(Has(s, "o_in2 = (dc_i64)i0 * in2_s0 + (dc_i64)i1;"));
  CHECK(!Has(s, "in0_s1"));
  CHECK(!Has(s, "in1_s0"));
  CHECK(!Has(s, "in2_s1"));
  // A real branch: a declared result, if and else.
  CHECK(Has(s, "if (t"));
  CHECK(Has(s, "} else {"));
  CHECK(Has(s, "expf("));
  CHECK(Has(s, "sinf("));
  CHECK(!Has(s, "__expf"));
  // Output 0 is stored, output 1 is masked off (no pointer parameter, no store).
  CHECK(Has(s, "out0[o_out0] = "));
  CHECK(!Has(s, "out1"));
  CHECK(Has(s, "extern \"C\" __global__ void " + src->symbol + "_i32("));
  CHECK(Has(s, "extern \"C\" __global__ void " + src->symbol + "_i64("));
  CHECK(Has(s, "const float* __restrict__ in0"));
  // The plan matches: 3 inputs, 1 output, n, vec, size1, in0_s0, in2_s0, out0_s0.
  CHECK(src->params.size() == 10);
  // The 16-byte loop (unit-stride rows): input 0 is broadcast along the rows,
  // one scalar per group of 4; inputs 1 and 2 vary along them, one float4 each;
  // the output is one float4 store.
  CHECK(Has(s, "if (sizeof(I) == 4 && vec != 0) {"));
  CHECK(Has(s, "const float in0_one = in0[o_in0];"));
  CHECK(Has(s, "const float4 in1_vec = *(const float4*)(in1 + o_in1);"));
  CHECK(Has(s, "const float4 in2_vec = *(const float4*)(in2 + o_in2);"));
  CHECK(Has(s, "*(float4*)(out0 + o_out0) = make_float4(out0_lane[0], out0_lane[1], out0_lane[2], "
               "out0_lane[3]);"));
  // Not for rows of non-unit stride: the element loop alone, and no `vec`.
  jit::KernelSpec strided = spec;
  strided.inner_contiguous = false;
  absl::StatusOr<jit::cuda::CudaKernelSource> plain = jit::cuda::BuildCudaKernelSource(strided);
  REQUIRE(plain.ok());
  CHECK(!Has(plain->text, "float4"));
  CHECK(!Has(plain->text, "vec"));
  // NVRTC keeps the 16-byte accesses 16 bytes wide (v4 loads and a v4 store in the PTX).
  absl::StatusOr<jit::cuda::NvrtcImage> ptx =
      jit::cuda::NvrtcCompile(s, src->symbol, {90, NvrtcKind::kPtx});
  REQUIRE_MESSAGE(ptx.ok(), ptx.status().message());
  CHECK(Has(ptx->bytes, "ld.global.nc.v4.f32"));
  CHECK(Has(ptx->bytes, "st.global.v4.f32"));
}

TEST_CASE("literals are exact: hex floats, and bit patterns for NaN and infinities") {
  using jit::cuda::CudaLiteral;
  CHECK(CudaLiteral(Type::kF32, 0.1f) == "(0x1.99999ap-4f)");
  CHECK(CudaLiteral(Type::kF64, 0.1) == "(0x1.999999999999ap-4)");
  CHECK(CudaLiteral(Type::kF32, -0.0) == "(-0x0p+0f)");
  CHECK(CudaLiteral(Type::kF32, INFINITY) == "__int_as_float(0x7f800000)");
  CHECK(CudaLiteral(Type::kF64, -INFINITY) == "__longlong_as_double(0xfff0000000000000LL)");
  CHECK(CudaLiteral(Type::kBool, 1) == "true");
}

TEST_CASE("NVRTC options are fixed, keep IEEE semantics, and enter the object key") {
  const std::vector<std::string> opts = jit::cuda::NvrtcOptions({90, NvrtcKind::kCubin});
  auto has = [&](const std::string& o) { return std::find(opts.begin(), opts.end(), o) != opts.end(); };
  CHECK(has("--gpu-architecture=sm_90"));
  CHECK(has("--fmad=false"));
  CHECK(has("--prec-div=true"));
  CHECK(has("--prec-sqrt=true"));
  CHECK(has("--ftz=false"));
  CHECK(!has("--use_fast_math"));
  CHECK(jit::cuda::NvrtcOptions({90, NvrtcKind::kPtx})[0] == "--gpu-architecture=compute_90");
  auto f = SuiteJvp<HmLstmCell>(Type::kF32);
  jit::KernelSpec spec = MakeSpec(f, Type::kF32, 2, {});
  const std::string k90 = jit::cuda::CudaObjectKey(spec, {90, NvrtcKind::kCubin});
  CHECK(Has(k90, jit::cuda::NvrtcVersionString()));
  CHECK(Has(k90, "sm_90"));
  CHECK(k90 != jit::cuda::CudaObjectKey(spec, {80, NvrtcKind::kCubin}));
  CHECK(k90 != jit::cuda::CudaObjectKey(spec, {90, NvrtcKind::kPtx}));
  jit::KernelSpec other = spec;
  other.input_broadcast[0] = 0b10;
  CHECK(k90 != jit::cuda::CudaObjectKey(other, {90, NvrtcKind::kCubin}));
}

TEST_CASE("device targets: CUBIN for a supported arch, PTX for a newer one") {
  const std::vector<int> archs = jit::cuda::NvrtcSupportedArchs();
  REQUIRE(!archs.empty());
  CHECK(std::find(archs.begin(), archs.end(), 90) != archs.end());
  CHECK(std::find(archs.begin(), archs.end(), 80) != archs.end());
  NvrtcTarget h100 = jit::cuda::TargetForDevice(9, 0);
  CHECK(h100.kind == NvrtcKind::kCubin);
  CHECK(h100.arch == 90);
  NvrtcTarget future = jit::cuda::TargetForDevice(99, 0);
  CHECK(future.kind == NvrtcKind::kPtx);
  CHECK(future.arch == archs.back());
}

TEST_CASE("an NVRTC failure is kCompile with the log, the target and the saved source") {
  const std::string bad = "extern \"C\" __global__ void broken(float* p) { p[0] = undefined_name; }\n";
  absl::StatusOr<jit::cuda::NvrtcImage> r =
      jit::cuda::NvrtcCompile(bad, "broken_kernel", {90, NvrtcKind::kPtx});
  REQUIRE(!r.ok());
  const std::string msg(r.status().message());
  INFO(msg);
  CHECK(Has(msg, "broken_kernel"));
  CHECK(Has(msg, "compute_90"));
  CHECK(Has(msg, "undefined_name"));  // from NVRTC's log
  const std::string path = jit::cuda::FailedSourcePath("broken_kernel");
  CHECK(Has(msg, path));
  std::ifstream saved(path);
  std::stringstream text;
  text << saved.rdbuf();
  CHECK(text.str() == bad);
  std::remove(path.c_str());
  try {
    ThrowStatus(r.status());
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kCompile);
  }
}

class MemoryStore : public jit::ObjectStore {
 public:
  std::optional<std::string> Load(const std::string& key) override {
    auto it = bytes.find(key);
    if (it == bytes.end()) return std::nullopt;
    return it->second;
  }
  void Save(const std::string& key, std::string_view b) override { bytes[key] = std::string(b); }
  std::map<std::string, std::string> bytes;
};

TEST_CASE("images go through the object store: a miss compiles and saves, a hit skips NVRTC") {
  MemoryStore store;
  jit::KernelSpec spec = MakeSpec(SuiteJvp<Nested3>(Type::kF32), Type::kF32, 1, {});
  absl::StatusOr<jit::cuda::CudaImage> first =
      jit::cuda::CompileCudaImage(spec, {90, NvrtcKind::kCubin}, &store);
  REQUIRE(first.ok());
  CHECK(!first->from_object_store);
  CHECK(!first->source.empty());
  REQUIRE(store.bytes.size() == 1);
  CHECK(store.bytes.begin()->first == jit::cuda::CudaObjectKey(spec, {90, NvrtcKind::kCubin}));
  absl::StatusOr<jit::cuda::CudaImage> second =
      jit::cuda::CompileCudaImage(spec, {90, NvrtcKind::kCubin}, &store);
  REQUIRE(second.ok());
  CHECK(second->from_object_store);
  CHECK(second->bytes == first->bytes);
  CHECK(second->symbol == first->symbol);
  CHECK(second->params.size() == first->params.size());
}

TEST_CASE("an invalid spec is kInternal naming the kernel") {
  jit::KernelSpec spec = MakeSpec(SuiteJvp<SqrtGuard>(Type::kF32), Type::kF32, 1, {0b10});
  absl::StatusOr<jit::cuda::CudaKernelSource> src = jit::cuda::BuildCudaKernelSource(spec);
  REQUIRE(!src.ok());
  CHECK(Has(std::string(src.status().message()), "sqrt_guard"));
}

TEST_CASE("NVRTC compile time of the HM-LSTM jvp kernel (measured, not asserted)") {
  auto f = SuiteJvp<HmLstmCell>(Type::kF32);
  jit::KernelSpec spec = MakeSpec(f, Type::kF32, 2, {0b10, 0b10, 0, 0, 0, 0});
  absl::StatusOr<jit::cuda::CudaKernelSource> src = jit::cuda::BuildCudaKernelSource(spec);
  REQUIRE(src.ok());
  for (NvrtcTarget target : {NvrtcTarget{90, NvrtcKind::kPtx}, NvrtcTarget{90, NvrtcKind::kCubin}}) {
    double best = 1e30, total = 0;
    constexpr int kRuns = 3;
    for (int run = 0; run < kRuns; ++run) {
      absl::StatusOr<jit::cuda::NvrtcImage> image =
          jit::cuda::NvrtcCompile(src->text, src->symbol, target);
      REQUIRE(image.ok());
      best = std::min(best, image->compile_ms);
      total += image->compile_ms;
    }
    MESSAGE("HM-LSTM jvp kernel (" << f->insts.size() << " IR values, " << f->num_outputs()
                                   << " outputs, " << src->text.size() << " bytes of CUDA C) -> "
                                   << target.Name() << ": NVRTC " << best << " ms best, "
                                   << total / kRuns << " ms mean of " << kRuns << " ("
                                   << jit::cuda::NvrtcVersionString() << ")");
  }
}

}  // namespace
}  // namespace dualcast::testing

#else
TEST_CASE("CUDA backend not built (no CUDA toolkit with NVRTC)") { MESSAGE("SKIPPED: no NVRTC"); }
#endif  // DUALCAST_HAVE_NVRTC
