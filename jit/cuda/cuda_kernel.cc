// Writes a kernel's CUDA C: parameter plan, grid-stride loop, per-operand offsets, the printed body and the stores.
#include "jit/cuda/cuda_kernel.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jit/codegen.h"
#include "jit/cuda/cuda_printer.h"
#include "jit/disk_cache.h"
#include "jit/error.h"
#include "jit/hash.h"
#include "jit/verify.h"

namespace dualcast::jit::cuda {
namespace {

class SourceWriter {
 public:
  explicit SourceWriter(const KernelSpec& spec)
      : spec_(spec), f_(*spec.function), rank_(spec.rank), elem_(CudaType(spec.dtype)) {}

  CudaKernelSource Write() {
    CudaKernelSource out;
    out.symbol = CudaKernelSymbol(spec_);
    PlanParams(out.params);
    std::string& s = out.text;
    absl::StrAppend(&s, "// dualcast CUDA kernel: ", spec_.Describe(), "\n",
                    "// NVRTC has no <cstdint>; indices are long long / unsigned int.\n",
                    "typedef long long dc_i64;\n\n", "template <class I>\n",
                    "__device__ __forceinline__ void ", out.symbol, "_body(", ParamList(out.params),
                    ") {\n");
    absl::StrAppend(&s, "  const I count = (I)n;\n",
                    "  const I step = (I)gridDim.x * (I)blockDim.x;\n",
                    "  for (I idx = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; idx < count; "
                    "idx += step) {\n");
    WriteIndices(s);
    WriteOffsets(s);
    CudaPrinter printer(2, [&](CudaPrinter& p, uint32_t index, Type type) {
      std::string load = absl::StrCat("in", index, "[", Offset("in", index), "]");
      if (type != spec_.dtype) load = absl::StrCat("(", CudaType(type), ")", load);
      return p.Declare(type, load);
    });
    std::vector<std::string> results = CodegenWalk<CudaPrinter>(f_, printer).Run();
    s += printer.text();
    for (size_t m = 0; m < results.size(); ++m) {
      if (!spec_.writes(m)) continue;
      std::string value = results[m];
      if (f_.output_type(m) != spec_.dtype) value = absl::StrCat("(", elem_, ")", value);
      absl::StrAppend(&s, "    out", m, "[", Offset("out", m), "] = ", value, ";\n");
    }
    absl::StrAppend(&s, "  }\n}\n\n");
    std::vector<std::string> names;
    for (const CudaParam& p : out.params) names.push_back(ParamName(p));
    for (const char* variant : {"i32", "i64"}) {
      absl::StrAppend(&s, "extern \"C\" __global__ void ", out.symbol, "_", variant, "(",
                      ParamList(out.params), ") {\n  ", out.symbol, "_body<",
                      variant[1] == '3' ? "unsigned int" : "long long", ">(",
                      absl::StrJoin(names, ", "), ");\n}\n");
    }
    return out;
  }

 private:
  bool Broadcast(size_t input, int dim) const {
    return !spec_.input_broadcast.empty() && ((spec_.input_broadcast[input] >> dim) & 1u);
  }
  bool UnitInner(int dim) const { return spec_.inner_contiguous && dim == rank_ - 1; }

  void PlanParams(std::vector<CudaParam>& params) {
    using K = CudaParam::Kind;
    const int n_in = static_cast<int>(f_.num_inputs()), n_out = static_cast<int>(f_.num_outputs());
    for (int i = 0; i < n_in; ++i) params.push_back({K::kInputPtr, i, 0});
    for (int m = 0; m < n_out; ++m) {
      if (spec_.writes(m)) params.push_back({K::kOutputPtr, m, 0});
    }
    params.push_back({K::kCount, 0, 0});
    for (int d = 1; d < rank_; ++d) params.push_back({K::kSize, 0, d});
    for (int i = 0; i < n_in; ++i) {
      for (int d = 0; d < rank_; ++d) {
        if (!Broadcast(i, d) && !UnitInner(d)) params.push_back({K::kInStride, i, d});
      }
    }
    for (int m = 0; m < n_out; ++m) {
      if (!spec_.writes(m)) continue;
      for (int d = 0; d < rank_; ++d) {
        if (!UnitInner(d)) params.push_back({K::kOutStride, m, d});
      }
    }
  }

  static std::string ParamName(const CudaParam& p) {
    using K = CudaParam::Kind;
    switch (p.kind) {
      case K::kInputPtr: return absl::StrCat("in", p.operand);
      case K::kOutputPtr: return absl::StrCat("out", p.operand);
      case K::kCount: return "n";
      case K::kSize: return absl::StrCat("size", p.dim);
      case K::kInStride: return absl::StrCat("in", p.operand, "_s", p.dim);
      case K::kOutStride: return absl::StrCat("out", p.operand, "_s", p.dim);
    }
    return "?";
  }

  std::string ParamList(const std::vector<CudaParam>& params) const {
    using K = CudaParam::Kind;
    std::vector<std::string> decls;
    for (const CudaParam& p : params) {
      switch (p.kind) {
        case K::kInputPtr:
          decls.push_back(absl::StrCat("const ", elem_, "* __restrict__ ", ParamName(p)));
          break;
        case K::kOutputPtr:
          decls.push_back(absl::StrCat(elem_, "* __restrict__ ", ParamName(p)));
          break;
        default: decls.push_back(absl::StrCat("const dc_i64 ", ParamName(p))); break;
      }
    }
    return absl::StrJoin(decls, ", ");
  }

  // i<d> for every merged dim, inner dim fastest; dim 0 takes what remains.
  void WriteIndices(std::string& s) const {
    if (rank_ == 0) return;
    if (rank_ == 1) {
      s += "    const I i0 = idx;\n";
      return;
    }
    s += "    I rem = idx;\n";
    for (int d = rank_ - 1; d >= 1; --d) {
      absl::StrAppend(&s, "    const I i", d, " = rem % (I)size", d, ";\n", "    rem /= (I)size",
                      d, ";\n");
    }
    s += "    const I i0 = rem;\n";
  }

  // One 64-bit element offset per operand (views may span more than 2^31 elements).
  void WriteOffsets(std::string& s) const {
    auto term = [&](const std::string& stride_name, int d, bool unit) {
      return unit ? absl::StrCat("(dc_i64)i", d)
                  : absl::StrCat("(dc_i64)i", d, " * ", stride_name);
    };
    for (size_t i = 0; i < f_.num_inputs(); ++i) {
      std::vector<std::string> terms;
      for (int d = 0; d < rank_; ++d) {
        if (Broadcast(i, d)) continue;
        terms.push_back(term(absl::StrCat("in", i, "_s", d), d, UnitInner(d)));
      }
      absl::StrAppend(&s, "    const dc_i64 o_in", i, " = ",
                      terms.empty() ? "0" : absl::StrJoin(terms, " + "), ";\n");
    }
    for (size_t m = 0; m < f_.num_outputs(); ++m) {
      if (!spec_.writes(m)) continue;
      std::vector<std::string> terms;
      for (int d = 0; d < rank_; ++d) {
        terms.push_back(term(absl::StrCat("out", m, "_s", d), d, UnitInner(d)));
      }
      absl::StrAppend(&s, "    const dc_i64 o_out", m, " = ",
                      terms.empty() ? "0" : absl::StrJoin(terms, " + "), ";\n");
    }
  }

  static std::string Offset(const char* kind, size_t operand) {
    return absl::StrCat("o_", kind, operand);
  }

  const KernelSpec& spec_;
  const Function& f_;
  int rank_;
  const char* elem_;
};

}  // namespace

std::string CudaKernelSymbol(const KernelSpec& spec) {
  return spec.Symbol(0x64635f637565ull);  // format tag "dc_cud" + 1 (tanh/sigmoid formulas): bump when the source changes meaning
}

CudaLaunchValues MarshalCudaLaunch(const std::vector<CudaParam>& params, int element_bytes,
                                   const KernelArgs& args, int rank) {
  CudaLaunchValues out;
  const int64_t rows = rank == 0 ? (args.begin <= 0 && 0 < args.end ? 1 : 0)
                                 : std::max<int64_t>(0, args.end - args.begin);
  out.n = rows;
  for (int d = 1; d < rank; ++d) out.n *= args.sizes[d];
  out.narrow = out.n < (int64_t{1} << 31);
  const int64_t begin = rank == 0 ? 0 : args.begin;
  const auto shifted = [&](const void* base, const int64_t* strides, int operand) {
    const int64_t stride0 = rank == 0 ? 0 : strides[operand * rank];
    return reinterpret_cast<uint64_t>(base) +
           static_cast<uint64_t>(begin * stride0 * element_bytes);
  };
  out.values.reserve(params.size());
  using K = CudaParam::Kind;
  for (const CudaParam& p : params) {
    switch (p.kind) {
      case K::kInputPtr:
        out.values.push_back(shifted(args.inputs[p.operand], args.in_strides, p.operand));
        break;
      case K::kOutputPtr:
        out.values.push_back(shifted(args.outputs[p.operand], args.out_strides, p.operand));
        break;
      case K::kCount: out.values.push_back(static_cast<uint64_t>(out.n)); break;
      case K::kSize: out.values.push_back(static_cast<uint64_t>(args.sizes[p.dim])); break;
      case K::kInStride:
        out.values.push_back(static_cast<uint64_t>(args.in_strides[p.operand * rank + p.dim]));
        break;
      case K::kOutStride:
        out.values.push_back(static_cast<uint64_t>(args.out_strides[p.operand * rank + p.dim]));
        break;
    }
  }
  return out;
}

int64_t CudaGridSize(int64_t n, int block, int min_grid) {
  const int64_t fill = 4 * int64_t{std::max(1, min_grid)};
  return std::min<int64_t>((n + block - 1) / block, fill);
}

absl::StatusOr<CudaKernelSource> BuildCudaKernelSource(const KernelSpec& spec) {
  if (absl::Status s = spec.Validate("cuda"); !s.ok()) return s;
  return SourceWriter(spec).Write();
}

}  // namespace dualcast::jit::cuda
