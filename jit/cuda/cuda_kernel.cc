// Writes a kernel's CUDA C: parameter plan, grid-stride loop, per-operand offsets, the printed body and the stores.
#include "jit/cuda/cuda_kernel.h"

#include <algorithm>
#include <bit>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jit/codegen/codegen.h"
#include "jit/codegen/disk_cache.h"
#include "jit/cuda/cuda_printer.h"
#include "jit/env.h"
#include "jit/error.h"
#include "jit/ir/hash.h"
#include "jit/ir/verify.h"

namespace dualcast::jit::cuda {
namespace {

class SourceWriter {
 public:
  explicit SourceWriter(const KernelSpec& spec)
      : spec_(spec), f_(*spec.function), rank_(spec.rank), elem_(CudaType(spec.dtype)) {
    for (size_t m = 0; m < f_.num_outputs(); ++m) reduce_.push_back(Reduced(m) ? spec.reduces(m) : 0);
    any_reduced_ = std::any_of(reduce_.begin(), reduce_.end(), [](uint32_t b) { return b != 0; });
  }

  CudaKernelSource Write() {
    CudaKernelSource out;
    out.symbol = CudaKernelSymbol(spec_);
    out.output_reduce = reduce_;
    out.has_finish = any_reduced_;
    PlanParams(out.params);
    std::string& s = out.text;
    absl::StrAppend(&s, "// dualcast CUDA kernel: ", spec_.Describe(), "\n",
                    "// NVRTC has no <cstdint>; indices are long long / unsigned int.\n",
                    "typedef long long dc_i64;\n\n", "template <class I>\n",
                    "__device__ __forceinline__ void ", out.symbol, "_body(", ParamList(out.params),
                    ") {\n");
    absl::StrAppend(&s, "  const I count = (I)n;\n",
                    "  const I step = (I)gridDim.x * (I)blockDim.x;\n");
    const std::vector<size_t> full = FullReductions();
    if (!full.empty()) {
      WriteFullReducePass(s, full);  // the elementwise stores too
    } else if (AnyElementwiseStore()) {
      WriteElementwisePass(s);
    }
    for (size_t m = 0; m < reduce_.size(); ++m) {
      if (reduce_[m] != 0 && std::find(full.begin(), full.end(), m) == full.end()) WriteReducePass(s, m);
    }
    absl::StrAppend(&s, "}\n\n");
    std::vector<std::string> names;
    for (const CudaParam& p : out.params) names.push_back(ParamName(p));
    for (const char* variant : {"i32", "i64"}) {
      absl::StrAppend(&s, "extern \"C\" __global__ void ", out.symbol, "_", variant, "(",
                      ParamList(out.params), ") {\n  ", out.symbol, "_body<",
                      variant[1] == '3' ? "unsigned int" : "long long", ">(",
                      absl::StrJoin(names, ", "), ");\n}\n");
    }
    if (any_reduced_) WriteFinish(s, out);
    return out;
  }

 private:
  bool Broadcast(size_t input, int dim) const {
    return !spec_.input_broadcast.empty() && ((spec_.input_broadcast[input] >> dim) & 1u);
  }
  bool UnitInner(int dim) const { return spec_.inner_contiguous && dim == rank_ - 1; }
  bool Reduced(size_t m) const { return spec_.writes(m) && spec_.reduces(m) != 0; }
  bool ReducedAlong(size_t m, int d) const { return (reduce_[m] >> d) & 1u; }
  bool AnyElementwiseStore() const {
    for (size_t m = 0; m < f_.num_outputs(); ++m) {
      if (spec_.writes(m) && reduce_[m] == 0) return true;
    }
    return false;
  }

  void PlanParams(std::vector<CudaParam>& params) {
    using K = CudaParam::Kind;
    const int n_in = static_cast<int>(f_.num_inputs()), n_out = static_cast<int>(f_.num_outputs());
    for (int i = 0; i < n_in; ++i) params.push_back({K::kInputPtr, i, 0});
    for (int m = 0; m < n_out; ++m) {
      if (spec_.writes(m)) params.push_back({K::kOutputPtr, m, 0});
    }
    params.push_back({K::kCount, 0, 0});
    // After every pointer: the launcher decides `vec` from their marshalled values.
    if (Vectorizable()) params.push_back({K::kVectorized, 0, 0});
    // Reductions split the space into kept x reduced dims, so they need dim 0's size too.
    for (int d = any_reduced_ ? 0 : 1; d < rank_; ++d) params.push_back({K::kSize, 0, d});
    for (int i = 0; i < n_in; ++i) {
      for (int d = 0; d < rank_; ++d) {
        if (!Broadcast(i, d) && !UnitInner(d)) params.push_back({K::kInStride, i, d});
      }
    }
    for (int m = 0; m < n_out; ++m) {
      if (!spec_.writes(m)) continue;
      for (int d = 0; d < rank_; ++d) {
        if (!UnitInner(d) && !ReducedAlong(m, d)) params.push_back({K::kOutStride, m, d});
      }
    }
    if (!any_reduced_) return;
    params.push_back({K::kScratch, 0, 0});
    for (int m = 0; m < n_out; ++m) {
      if (reduce_[m] == 0) continue;
      params.push_back({K::kSplits, m, 0});
      params.push_back({K::kScratchBase, m, 0});
      params.push_back({K::kDivisor, m, 0});
    }
  }

  static std::string ParamName(const CudaParam& p) {
    using K = CudaParam::Kind;
    switch (p.kind) {
      case K::kInputPtr: return absl::StrCat("in", p.operand);
      case K::kOutputPtr: return absl::StrCat("out", p.operand);
      case K::kCount: return "n";
      case K::kVectorized: return "vec";
      case K::kSize: return absl::StrCat("size", p.dim);
      case K::kInStride: return absl::StrCat("in", p.operand, "_s", p.dim);
      case K::kOutStride: return absl::StrCat("out", p.operand, "_s", p.dim);
      case K::kScratch: return "scratch";
      case K::kSplits: return absl::StrCat("red", p.operand, "_splits");
      case K::kScratchBase: return absl::StrCat("red", p.operand, "_base");
      case K::kDivisor: return absl::StrCat("red", p.operand, "_div");
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
        case K::kScratch: decls.push_back("double* __restrict__ scratch"); break;
        case K::kDivisor: decls.push_back(absl::StrCat("const double ", ParamName(p))); break;
        default: decls.push_back(absl::StrCat("const dc_i64 ", ParamName(p))); break;
      }
    }
    return absl::StrJoin(decls, ", ");
  }

  // i<d> for every merged dim from the linear idx, inner dim fastest; dim 0 takes what remains.
  void WriteIndices(std::string& s, const std::string& pad) const {
    if (rank_ == 0) return;
    if (rank_ == 1) {
      absl::StrAppend(&s, pad, "const I i0 = idx;\n");
      return;
    }
    absl::StrAppend(&s, pad, "I rem = idx;\n");
    for (int d = rank_ - 1; d >= 1; --d) {
      absl::StrAppend(&s, pad, "const I i", d, " = rem % (I)size", d, ";\n", pad,
                      "rem /= (I)size", d, ";\n");
    }
    absl::StrAppend(&s, pad, "const I i0 = rem;\n");
  }

  // i<d> for the dims in `dims` (outer first) from the linear `from`, the last dim fastest.
  void WriteSplitIndices(std::string& s, const std::string& pad, const std::vector<int>& dims,
                         const std::string& from) const {
    if (dims.empty()) return;
    const std::string rem = from + "_rem";
    absl::StrAppend(&s, pad, "I ", rem, " = ", from, ";\n");
    for (size_t k = dims.size(); k-- > 0;) {
      const int d = dims[k];
      if (k == 0) {
        absl::StrAppend(&s, pad, "const I i", d, " = ", rem, ";\n");
      } else {
        absl::StrAppend(&s, pad, "const I i", d, " = ", rem, " % (I)size", d, ";\n", pad, rem,
                        " /= (I)size", d, ";\n");
      }
    }
  }

  std::string Term(const std::string& stride_name, int d) const {
    return UnitInner(d) ? absl::StrCat("(dc_i64)i", d)
                        : absl::StrCat("(dc_i64)i", d, " * ", stride_name);
  }

  // One 64-bit element offset per input (views may span more than 2^31 elements).
  void WriteInputOffsets(std::string& s, const std::string& pad) const {
    for (size_t i = 0; i < f_.num_inputs(); ++i) {
      std::vector<std::string> terms;
      for (int d = 0; d < rank_; ++d) {
        if (!Broadcast(i, d)) terms.push_back(Term(absl::StrCat("in", i, "_s", d), d));
      }
      absl::StrAppend(&s, pad, "const dc_i64 o_in", i, " = ",
                      terms.empty() ? "0" : absl::StrJoin(terms, " + "), ";\n");
    }
  }

  // Output m's offset over its kept dims (a reduced output has no stride along the others).
  std::string OutputOffset(size_t m) const {
    std::vector<std::string> terms;
    for (int d = 0; d < rank_; ++d) {
      if (!ReducedAlong(m, d)) terms.push_back(Term(absl::StrCat("out", m, "_s", d), d));
    }
    return terms.empty() ? "0" : absl::StrJoin(terms, " + ");
  }

  // The printed Function at the current indices; returns its output values.
  // `input` names input i's element (default: loaded at its offset).
  std::vector<std::string> WriteBody(
      std::string& s, int indent,
      const std::function<std::string(uint32_t)>& input = [](uint32_t i) {
        return absl::StrCat("in", i, "[o_in", i, "]");
      }) const {
    CudaPrinter printer(indent, [&](CudaPrinter& p, uint32_t index, Type type) {
      std::string load = input(index);
      if (type != spec_.dtype) load = absl::StrCat("(", CudaType(type), ")", load);
      return p.Declare(type, load);
    });
    std::vector<std::string> results = CodegenWalk<CudaPrinter>(f_, printer).Run();
    s += printer.text();
    return results;
  }

  std::string AsElement(size_t m, const std::string& value) const {
    return f_.output_type(m) != spec_.dtype ? absl::StrCat("(", elem_, ")", value) : value;
  }

  // dest = value, or dest = dest + value for an accumulating output.
  std::string Store(size_t m, const std::string& dest, const std::string& value) const {
    return spec_.accumulates(m) ? absl::StrCat(dest, " = ", dest, " + ", value, ";\n")
                                : absl::StrCat(dest, " = ", value, ";\n");
  }

  // Grid-stride loop over every element; stores the outputs that are not reduced.
  // A vectorisable kernel first offers the 16-byte loop (WriteVectorLoop), which
  // the launcher turns on for aligned operands; the element loop then runs only
  // where it is off.
  void WriteElementwisePass(std::string& s) const {
    std::string pad = "  ";
    if (Vectorizable()) {
      WriteVectorLoop(s);
      absl::StrAppend(&s, "  else {\n");
      pad = "    ";
    }
    absl::StrAppend(&s, pad,
                    "for (I idx = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; idx < count; "
                    "idx += step) {\n");
    WriteIndices(s, pad + "  ");
    WriteInputOffsets(s, pad + "  ");
    WriteElementwiseStores(s, pad + "  ", WriteBody(s, static_cast<int>(pad.size() / 2) + 1));
    absl::StrAppend(&s, pad, "}\n");
    if (Vectorizable()) absl::StrAppend(&s, "  }\n");
  }

  // Elements per 16-byte access: 4 floats or 2 doubles.
  int VectorWidth() const { return spec_.dtype == Type::kF64 ? 2 : 4; }
  const char* VectorType() const { return spec_.dtype == Type::kF64 ? "double2" : "float4"; }
  // Elementwise kernels over unit-stride rows: the launcher may run them V
  // elements per thread and iteration. Reduced specs keep their own loops.
  bool Vectorizable() const {
    return !any_reduced_ && rank_ >= 1 && spec_.inner_contiguous &&
           (spec_.dtype == Type::kF32 || spec_.dtype == Type::kF64);
  }

  // Why: the element loop spends most of a memory-bound kernel's issue slots on
  // index arithmetic (a division per element and a 64-bit offset per operand)
  // and moves 4 bytes per load. Here a thread takes V consecutive elements of
  // one row (the launcher checks that rows hold whole groups and that every
  // operand's rows start 16-byte aligned): one index split and one offset per
  // operand for V elements, one 16-byte load per input that varies along the
  // row (an input broadcast along it is one scalar load), and one 16-byte
  // store per output. The body is the same printed Function, once per lane in
  // an unrolled loop, so each element still takes its own branch. 32-bit
  // indices only (the _i64 entry compiles the test away).
  void WriteVectorLoop(std::string& s) const {
    const int v = VectorWidth();
    const char* vt = VectorType();
    const char* lanes[] = {"x", "y", "z", "w"};
    const auto all_lanes = [&](const std::string& prefix, const std::string& suffix) {
      std::vector<std::string> parts;
      for (int j = 0; j < v; ++j) parts.push_back(absl::StrCat(prefix, lanes[j], suffix));
      return absl::StrJoin(parts, ", ");
    };
    absl::StrAppend(&s, "  if (sizeof(I) == 4 && vec != 0) {  // ", v,
                    " elements per iteration, 16-byte loads and stores\n",
                    "    for (I group = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; group < count / ", v,
                    "; group += step) {\n", "      const I idx = group * ", v, ";\n");
    WriteIndices(s, "      ");
    WriteInputOffsets(s, "      ");
    for (size_t i = 0; i < f_.num_inputs(); ++i) {
      if (Broadcast(i, rank_ - 1)) {
        absl::StrAppend(&s, "      const ", elem_, " in", i, "_one = in", i, "[o_in", i, "];\n");
      } else {
        absl::StrAppend(&s, "      const ", vt, " in", i, "_vec = *(const ", vt, "*)(in", i, " + o_in",
                        i, ");\n", "      const ", elem_, " in", i, "_lane[", v, "] = {",
                        all_lanes(absl::StrCat("in", i, "_vec."), ""), "};\n");
      }
    }
    for (size_t m = 0; m < f_.num_outputs(); ++m) {
      if (spec_.writes(m)) absl::StrAppend(&s, "      ", elem_, " out", m, "_lane[", v, "];\n");
    }
    absl::StrAppend(&s, "#pragma unroll\n", "      for (int lane = 0; lane < ", v, "; ++lane) {\n");
    const std::vector<std::string> results = WriteBody(s, 4, [&](uint32_t i) {
      return Broadcast(i, rank_ - 1) ? absl::StrCat("in", i, "_one") : absl::StrCat("in", i, "_lane[lane]");
    });
    for (size_t m = 0; m < results.size(); ++m) {
      if (spec_.writes(m)) {
        absl::StrAppend(&s, "        out", m, "_lane[lane] = ", AsElement(m, results[m]), ";\n");
      }
    }
    absl::StrAppend(&s, "      }\n");
    for (size_t m = 0; m < f_.num_outputs(); ++m) {
      if (!spec_.writes(m)) continue;
      const std::string dest = absl::StrCat("*(", vt, "*)(out", m, " + o_out", m, ")");
      std::vector<std::string> parts;
      for (int j = 0; j < v; ++j) {
        const std::string lane = absl::StrCat("out", m, "_lane[", j, "]");
        parts.push_back(spec_.accumulates(m) ? absl::StrCat("old", m, ".", lanes[j], " + ", lane)
                                             : lane);
      }
      absl::StrAppend(&s, "      const dc_i64 o_out", m, " = ", OutputOffset(m), ";\n");
      if (spec_.accumulates(m)) {
        absl::StrAppend(&s, "      const ", vt, " old", m, " = ", dest, ";\n");
      }
      absl::StrAppend(&s, "      ", dest, " = make_", vt, "(", absl::StrJoin(parts, ", "), ");\n");
    }
    absl::StrAppend(&s, "    }\n  }\n");
  }

  // The stores of the outputs that are written and not reduced, at the current indices.
  void WriteElementwiseStores(std::string& s, const std::string& pad,
                              const std::vector<std::string>& results) const {
    for (size_t m = 0; m < results.size(); ++m) {
      if (!spec_.writes(m) || reduce_[m] != 0) continue;
      absl::StrAppend(&s, pad, "const dc_i64 o_out", m, " = ", OutputOffset(m), ";\n", pad,
                      Store(m, absl::StrCat("out", m, "[o_out", m, "]"), AsElement(m, results[m])));
    }
  }

  std::string Product(const std::vector<int>& dims) const {
    if (dims.empty()) return "(I)1";
    std::vector<std::string> f;
    for (int d : dims) f.push_back(absl::StrCat("(I)size", d));
    return absl::StrJoin(f, " * ");
  }
  std::vector<int> Dims(size_t m, bool reduced) const {
    std::vector<int> dims;
    for (int d = 0; d < rank_; ++d) {
      if (ReducedAlong(m, d) == reduced) dims.push_back(d);
    }
    return dims;
  }

  // The outputs reduced over every dim (a loss's sum): they share one traversal
  // of the whole range, which also covers every element once in linear order.
  std::vector<size_t> FullReductions() const {
    std::vector<size_t> full;
    if (rank_ == 0) return full;
    for (size_t m = 0; m < reduce_.size(); ++m) {
      if (reduce_[m] != 0 && Dims(m, false).empty()) full.push_back(m);
    }
    return full;
  }

  // The outputs reduced over every dim and the elementwise stores in ONE pass:
  // a separate reduce pass would read every input and run the body a second
  // time (the one-pass gradient's loss sum doubled its memory traffic). The
  // traversal is WriteReducePass's for a full reduction (one warp per split of
  // the range, lanes striding it), so each partial still depends on the split
  // and the sizes only: the same sums, bit for bit, for any grid.
  void WriteFullReducePass(std::string& s, const std::vector<size_t>& full) const {
    const std::vector<int> all = Dims(full[0], true);
    absl::StrAppend(&s, "  {  // elementwise stores and outputs ", absl::StrJoin(full, ", "),
                    " (reduced over every dim): one pass, lanes over the whole range\n",
                    "    const I lane = (I)threadIdx.x % 32;\n", "    const I red = ", Product(all), ";\n",
                    "    const I splits = (I)red", full[0], "_splits;\n",
                    "    const I chunk = splits == 0 ? 0 : (red + splits - 1) / splits;\n",
                    "    for (I split = ((I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x) / 32; split < "
                    "splits; split += step / 32) {\n",
                    "      const I stop = (split + 1) * chunk < red ? (split + 1) * chunk : red;\n");
    for (size_t m : full) absl::StrAppend(&s, "      double acc", m, " = ", Identity(m), ";\n");
    absl::StrAppend(&s, "      for (I r = split * chunk + lane; r < stop; r += 32) {\n");
    WriteSplitIndices(s, "        ", all, "r");
    WriteInputOffsets(s, "        ");
    const std::vector<std::string> results = WriteBody(s, 4);
    WriteElementwiseStores(s, "        ", results);
    for (size_t m : full) {
      absl::StrAppend(&s, "        ", Fold(m, absl::StrCat("acc", m), absl::StrCat("(double)", results[m])),
                      "\n");
    }
    absl::StrAppend(&s, "      }\n");
    for (size_t m : full) {
      const std::string acc = absl::StrCat("acc", m);
      absl::StrAppend(&s, "      ", WarpFold(m, acc), "      if (lane == 0) scratch[red", m,
                      "_base + (dc_i64)split] = ", acc, ";\n");
    }
    absl::StrAppend(&s, "    }\n", "  }\n");
  }

  // Output m's partial sums into scratch, one per (kept element k, split s of
  // the reduced range), wherever the work runs: each partial depends on (k, s)
  // and the sizes only, never on the grid, so sums are the same run to run.
  // Inner dim REDUCED (row sums): one warp per item; lanes stride the split
  // (consecutive lanes, consecutive addresses), summing in double, then fold
  // with shuffles in a fixed tree. Inner dim KEPT (column sums): one warp per
  // (32 consecutive kept elements, split); each lane sums its own element's
  // split in order, so a warp reads 32 consecutive addresses per step.
  void WriteReducePass(std::string& s, size_t m) const {
    const std::vector<int> kept = Dims(m, false), red = Dims(m, true);
    const bool lanes_over_kept = CudaReductionLanesOverKept(reduce_[m], rank_);
    absl::StrAppend(
        &s, "  {  // output ", m, ": partial sums over its reduced dims into scratch (",
        lanes_over_kept ? "lanes over kept elements" : "lanes over the reduced range", ")\n",
        "    const I lane = (I)threadIdx.x % 32;\n", "    const I kept = ", Product(kept), ";\n",
        "    const I red = ", Product(red), ";\n", "    const I splits = (I)red", m, "_splits;\n",
        "    const I chunk = splits == 0 ? 0 : (red + splits - 1) / splits;\n",
        "    const I groups = ", lanes_over_kept ? "(kept + 31) / 32" : "kept", ";\n",
        "    for (I item = ((I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x) / 32; item < groups * "
        "splits; item += step / 32) {\n",
        "      const I group = item % groups, split = item / groups;\n",
        "      const I stop = (split + 1) * chunk < red ? (split + 1) * chunk : red;\n");
    if (lanes_over_kept) {
      absl::StrAppend(&s, "      const I k = group * 32 + lane;\n",
                      "      if (k >= kept) continue;\n", "      double acc = ", Identity(m), ";\n",
                      "      for (I r = split * chunk; r < stop; ++r) {\n");
    } else {
      absl::StrAppend(&s, "      const I k = group;\n", "      double acc = ", Identity(m), ";\n",
                      "      for (I r = split * chunk + lane; r < stop; r += 32) {\n");
    }
    WriteSplitIndices(s, "        ", kept, "k");
    WriteSplitIndices(s, "        ", red, "r");
    WriteInputOffsets(s, "        ");
    std::vector<std::string> results = WriteBody(s, 4);
    absl::StrAppend(&s, "        ", Fold(m, "acc", absl::StrCat("(double)", results[m])), "\n",
                    "      }\n");
    if (!lanes_over_kept) {
      absl::StrAppend(&s, "      ", WarpFold(m, "acc"), "      if (lane != 0) continue;\n");
    }
    absl::StrAppend(&s, "      scratch[red", m, "_base + (dc_i64)split * (dc_i64)kept + ",
                    "(dc_i64)k] = acc;\n", "    }\n", "  }\n");
  }

  // Output m's reduce op as CUDA C: its identity, and `acc = acc (op) x` (max
  // and min let a NaN through, as ReduceCombine does on the host).
  std::string Identity(size_t m) const {
    switch (spec_.reduce_op(m)) {
      case ReduceOp::kSum: return "0.0";
      case ReduceOp::kProd: return "1.0";
      case ReduceOp::kMax: return "__longlong_as_double(0xfff0000000000000ll)";  // -inf
      case ReduceOp::kMin: return "__longlong_as_double(0x7ff0000000000000ll)";  // +inf
    }
    return "0.0";
  }
  std::string Fold(size_t m, const std::string& acc, const std::string& x) const {
    switch (spec_.reduce_op(m)) {
      case ReduceOp::kSum: return absl::StrCat(acc, " += ", x, ";");
      case ReduceOp::kProd: return absl::StrCat(acc, " *= ", x, ";");
      case ReduceOp::kMax:
        return absl::StrCat("{ const double v = ", x, "; if (v > ", acc, " || v != v) ", acc,
                            " = v; }");
      case ReduceOp::kMin:
        return absl::StrCat("{ const double v = ", x, "; if (v < ", acc, " || v != v) ", acc,
                            " = v; }");
    }
    return absl::StrCat(acc, " += ", x, ";");
  }

  // Folds `acc` over a warp's 32 lanes in a fixed shuffle tree (lane 0 ends
  // with the total); one line, its indent the caller's.
  std::string WarpFold(size_t m, const std::string& acc) const {
    return absl::StrCat("for (int d = 16; d > 0; d /= 2) { const double o = "
                        "__shfl_down_sync(0xffffffffu, ", acc, ", d); ",
                        Fold(m, acc, "o"), " }\n");
  }

  // <symbol>_fin: adds each reduced output's partials in split order and
  // stores (or accumulates) the element-type result. Few splits: one thread
  // per output element, sequentially. Many: one block per element, threads
  // striding the splits, shuffles, then warp totals in shared memory added
  // by thread 0 in warp order (the order depends on blockDim, which the
  // launcher fixes at kCudaFinishBlock).
  void WriteFinish(std::string& s, const CudaKernelSource& out) const {
    absl::StrAppend(&s, "\nextern \"C\" __global__ void ", out.symbol, "_fin(",
                    ParamList(out.params), ") {\n", "  typedef long long I;\n",
                    "  __shared__ double warp_total[32];\n");
    for (size_t m = 0; m < reduce_.size(); ++m) {
      if (reduce_[m] == 0) continue;
      const std::vector<int> kept = Dims(m, false);
      auto store = [&](const std::string& pad, const std::string& total) {
        std::string t;
        WriteSplitIndices(t, pad, kept, "k");
        absl::StrAppend(&t, pad, "const dc_i64 o_out", m, " = ", OutputOffset(m), ";\n", pad,
                        Store(m, absl::StrCat("out", m, "[o_out", m, "]"),
                              absl::StrCat("(", elem_, ")(", total, " / red", m, "_div)")));
        return t;
      };
      absl::StrAppend(&s, "  {  // output ", m, "\n", "    const I kept = ", Product(kept), ";\n",
                      "    const I splits = red", m, "_splits;\n",
                      "    const double* part = scratch + red", m, "_base;\n",
                      "    if (splits <= ", kCudaFinishSerialSplits, ") {\n",
                      "      for (I k = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; k < kept; "
                      "k += (I)gridDim.x * (I)blockDim.x) {\n",
                      "        double total = ", Identity(m), ";\n",
                      "        for (I split = 0; split < splits; ++split) { ",
                      Fold(m, "total", "part[split * kept + k]"), " }\n",
                      store("        ", "total"), "      }\n", "    } else {\n",
                      "      for (I k = blockIdx.x; k < kept; k += gridDim.x) {\n",
                      "        double acc = ", Identity(m), ";\n",
                      "        for (I split = threadIdx.x; split < splits; split += blockDim.x) { ",
                      Fold(m, "acc", "part[split * kept + k]"), " }\n",
                      "        ", WarpFold(m, "acc"),
                      "        if (threadIdx.x % 32 == 0) warp_total[threadIdx.x / 32] = acc;\n",
                      "        __syncthreads();\n", "        if (threadIdx.x == 0) {\n",
                      "          double total = ", Identity(m), ";\n",
                      "          for (unsigned w = 0; w < blockDim.x / 32; ++w) { ",
                      Fold(m, "total", "warp_total[w]"), " }\n",
                      store("          ", "total"), "        }\n", "        __syncthreads();\n",
                      "      }\n", "    }\n", "  }\n");
    }
    absl::StrAppend(&s, "}\n");
  }

  const KernelSpec& spec_;
  const Function& f_;
  int rank_;
  const char* elem_;
  std::vector<uint32_t> reduce_;  // per output: reduce bits when written and reduced, else 0
  bool any_reduced_ = false;
};

}  // namespace

std::string CudaKernelSymbol(const KernelSpec& spec) {
  // Format tag "dc_cud" + 5, bumped whenever the source changes meaning (1: tanh/sigmoid
  // formulas; 2: ops renumbered by rint, fdim, isinf, signbit; 3: by fast_tanh,
  // fast_sigmoid; 4: full reductions share the elementwise pass; 5: the `vec`
  // parameter of elementwise kernels), so a cached module of an older layout is never reused.
  return spec.Symbol(0x64635f637569ull);
}

bool CudaReductionLanesOverKept(uint32_t reduce_bits, int rank) {
  return rank > 0 && ((reduce_bits >> (rank - 1)) & 1u) == 0;
}

int64_t CudaReductionSplits(int64_t red, bool lanes_over_kept) {
  if (red <= 0) return 0;
  // A lane sums its chunk alone when lanes run over kept elements: shorter chunks.
  const int64_t chunk = std::max<int64_t>(lanes_over_kept ? 64 : 1024, (red + 8191) / 8192);
  return (red + chunk - 1) / chunk;
}

CudaReductionPlan PlanCudaReduction(const std::vector<uint32_t>& output_reduce,
                                    const int64_t* sizes, int rank) {
  CudaReductionPlan plan;
  plan.splits.assign(output_reduce.size(), 0);
  plan.base.assign(output_reduce.size(), 0);
  for (size_t m = 0; m < output_reduce.size(); ++m) {
    if (output_reduce[m] == 0) continue;
    int64_t kept = 1, red = 1;
    for (int d = 0; d < rank; ++d) ((output_reduce[m] >> d) & 1u ? red : kept) *= sizes[d];
    plan.splits[m] = CudaReductionSplits(red, CudaReductionLanesOverKept(output_reduce[m], rank));
    plan.base[m] = plan.scratch_doubles;
    plan.scratch_doubles += plan.splits[m] * kept;
    plan.max_kept = std::max(plan.max_kept, kept);
  }
  return plan;
}

namespace {

// CudaLaunchValues::vector_width for a spec with a kVectorized parameter: 16
// bytes per access when every group of V elements lies in one row and every
// operand that varies along the rows has 16-byte aligned rows (its base as
// marshalled, i.e. shifted to row `begin`, and each of its outer strides). An
// input broadcast along the rows (inner stride 0) is read one element per group
// instead. `values` holds the values marshalled so far: the plan puts every
// pointer before `vec` (PlanParams), so each pointer's is there.
int VectorWidthFor(const std::vector<CudaParam>& params, const std::vector<uint64_t>& values,
                   int element_bytes, const KernelArgs& args, int rank, const CudaLaunchValues& launch) {
  // DUALCAST_CUDA_VECTOR=0: the element loop everywhere (to rule the 16-byte loop out, or time it).
  static const bool enabled = EnvSwitch("DUALCAST_CUDA_VECTOR", true);
  const int v = 16 / element_bytes;
  if (!enabled || rank < 1 || !launch.narrow) return 1;
  // A row's length in this launch: with rank 1 the launch's share of dim 0.
  if ((rank == 1 ? launch.n : args.sizes[rank - 1]) % v != 0) return 1;
  const auto aligned = [&](uint64_t base, const int64_t* strides) {
    if (strides[rank - 1] == 0) return true;  // one element per group
    if (strides[rank - 1] != 1 || base % 16 != 0) return false;
    for (int d = 0; d < rank - 1; ++d) {
      if (strides[d] % v != 0) return false;
    }
    return true;
  };
  using K = CudaParam::Kind;
  for (size_t k = 0; k < values.size(); ++k) {
    const CudaParam& p = params[k];
    if (p.kind == K::kInputPtr) {
      if (!aligned(values[k], args.in_strides + p.operand * rank)) return 1;
    } else if (p.kind == K::kOutputPtr) {
      const int64_t* strides = args.out_strides + p.operand * rank;
      if (strides[rank - 1] != 1) return 1;  // outputs are stored 16 bytes at a time
      if (!aligned(values[k], strides)) return 1;
    }
  }
  return v;
}

}  // namespace

CudaLaunchValues MarshalCudaLaunch(const std::vector<CudaParam>& params, int element_bytes,
                                   const KernelArgs& args, int rank,
                                   const CudaReductionPlan* plan, uint64_t scratch) {
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
      case K::kVectorized:
        out.vector_width = VectorWidthFor(params, out.values, element_bytes, args, rank, out);
        out.values.push_back(out.vector_width > 1 ? 1 : 0);
        break;
      case K::kSize: out.values.push_back(static_cast<uint64_t>(args.sizes[p.dim])); break;
      case K::kInStride:
        out.values.push_back(static_cast<uint64_t>(args.in_strides[p.operand * rank + p.dim]));
        break;
      case K::kOutStride:
        out.values.push_back(static_cast<uint64_t>(args.out_strides[p.operand * rank + p.dim]));
        break;
      case K::kScratch: out.values.push_back(scratch); break;
      case K::kSplits:
        out.values.push_back(plan ? static_cast<uint64_t>(plan->splits[p.operand]) : 0);
        break;
      case K::kScratchBase:
        out.values.push_back(plan ? static_cast<uint64_t>(plan->base[p.operand]) : 0);
        break;
      case K::kDivisor: {
        const bool given = plan != nullptr && static_cast<size_t>(p.operand) < plan->divisors.size();
        out.values.push_back(std::bit_cast<uint64_t>(given ? plan->divisors[p.operand] : 1.0));
        break;
      }
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
