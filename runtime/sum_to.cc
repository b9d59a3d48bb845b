// sum_to and the fused multiply-reduce of the reverse sweep, over the TVM-style merged reduction layout.
//
// Reducing an adjoint of the broadcast shape to an input's shape is, after
// jit::MergeForReduction, a loop nest over alternating kept and reduced dims
// ((n, n) -> (n, 1) is [kept n, reduced n]; -> (1, n) is [reduced n, kept n]).
// Two loop shapes cover every case:
//  - innermost dim kept ("rows"): each output row accumulates whole input
//    rows, a stride-1 loop that vectorises; work splits over output rows and
//    column chunks;
//  - innermost dim reduced ("dots"): each output element is a dot product
//    over contiguous memory; work splits over output elements, or, for a
//    total reduction, over fixed blocks whose partial sums are added in order.
// Operands are read in place with their strides; a group of dims merges only
// where every operand's memory allows, otherwise it is split (never copied).
// All accumulation is in double; block boundaries do not depend on the
// number of threads, so results are reproducible.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dualcast/detail/broadcast_grad.hpp"
#include "jit/broadcast_layout.h"
#include "jit/cpu/thread_pool.h"
#include "jit/error.h"
#include "runtime/cuda_runtime.h"  // [CUDA path]
#include "runtime/grad_kernels.h"

namespace dualcast::detail {
namespace {

constexpr int64_t kParallelGrain = 32768;  // elements per parallel chunk
constexpr int64_t kColumnChunk = 8192;     // row-mode accumulator width
constexpr int64_t kTotalBlock = 16384;     // total-reduction block

struct Dim {
  int64_t size;
  bool reduced;
  std::vector<int64_t> strides;  // per operand (2 per term)
  int64_t out_stride;            // 0 for reduced dims
};

// The merged loop nest for `full` -> `target` with the operands' strides.
std::vector<Dim> PlanDims(const std::vector<const ArrayImpl*>& ops, const std::vector<int64_t>& full,
                          const std::vector<int64_t>& target) {
  jit::ReductionLayout layout = [&] {
    auto l = jit::MergeForReduction(full, target);
    ThrowIfError(l.status());
    return *std::move(l);
  }();
  const size_t rank = full.size();
  // Padded strides of every operand (0 where it is broadcast).
  std::vector<std::vector<int64_t>> padded(ops.size(), std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < ops.size(); ++k) {
    const ArrayImpl& a = *ops[k];
    if (a.shape.size() > rank) {
      throw Error(ErrorKind::kInternal, absl::StrCat("sum_to: operand of rank ", a.shape.size(),
                                                     " exceeds the full rank ", rank));
    }
    for (size_t i = 0; i < a.shape.size(); ++i) {
      size_t d = rank - a.shape.size() + i;
      if (a.shape[i] != full[d] && a.shape[i] != 1) {
        throw Error(ErrorKind::kInternal,
                    absl::StrCat("sum_to: operand shape ", jit::FormatShape(a.shape),
                                 " does not broadcast to ", jit::FormatShape(full)));
      }
      padded[k][d] = a.shape[i] == 1 ? 0 : a.strides[i];
    }
  }
  // MergeForReduction's groups are the maximal runs of equally reduced
  // non-1 dims; split them further where an operand's memory cannot merge.
  std::vector<int64_t> target_padded(rank, 1);
  for (size_t i = 0; i < target.size(); ++i) target_padded[rank - target.size() + i] = target[i];
  std::vector<Dim> dims;
  size_t groups = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (full[d] == 1) continue;
    const bool reduced = target_padded[d] != full[d];
    const bool same_group = !dims.empty() && dims.back().reduced == reduced;
    if (!same_group) ++groups;
    bool extend = same_group;
    for (size_t k = 0; extend && k < ops.size(); ++k) {
      // The outer dim's stride must equal this one's stride * this size.
      extend = dims.back().strides[k] == padded[k][d] * full[d];
    }
    if (extend) {
      dims.back().size *= full[d];
      for (size_t k = 0; k < ops.size(); ++k) dims.back().strides[k] = padded[k][d];
    } else {
      dims.push_back(Dim{full[d], reduced, {}, 0});
      for (size_t k = 0; k < ops.size(); ++k) dims.back().strides.push_back(padded[k][d]);
    }
  }
  if (groups != layout.shape.size()) {
    throw Error(ErrorKind::kInternal, absl::StrCat("sum_to: merged layout of ", jit::FormatShape(full),
                                                   " -> ", jit::FormatShape(target), " disagrees"));
  }
  int64_t out_stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i].reduced) continue;
    dims[i].out_stride = out_stride;
    out_stride *= dims[i].size;
  }
  return dims;
}

// An odometer over a subset of dims: visits every index combination and
// keeps the operands' (and the output's) offsets up to date.
struct Odometer {
  const std::vector<Dim>* dims;
  std::vector<size_t> which;
  std::vector<int64_t> index;
  int64_t count = 1;
  Odometer(const std::vector<Dim>& d, std::vector<size_t> w) : dims(&d), which(std::move(w)) {
    index.assign(which.size(), 0);
    for (size_t i : which) count *= d[i].size;
  }
  // Sets offsets for linear position `pos` (row-major over `which`).
  void Seek(int64_t pos, std::vector<int64_t>& offs, int64_t& out) {
    for (size_t w = which.size(); w-- > 0;) {
      const Dim& dim = (*dims)[which[w]];
      index[w] = pos % dim.size;
      pos /= dim.size;
      for (size_t k = 0; k < offs.size(); ++k) offs[k] += index[w] * dim.strides[k];
      out += index[w] * dim.out_stride;
    }
  }
  // Advances by one, updating offsets.
  void Next(std::vector<int64_t>& offs, int64_t& out) {
    for (size_t w = which.size(); w-- > 0;) {
      const Dim& dim = (*dims)[which[w]];
      if (++index[w] < dim.size) {
        for (size_t k = 0; k < offs.size(); ++k) offs[k] += dim.strides[k];
        out += dim.out_stride;
        return;
      }
      for (size_t k = 0; k < offs.size(); ++k) offs[k] -= (dim.size - 1) * dim.strides[k];
      out -= (dim.size - 1) * dim.out_stride;
      index[w] = 0;
    }
  }
};

template <class T>
struct Operands {
  std::vector<const T*> base;  // 2 per term; null for an absent b
  std::vector<int64_t> inner;  // inner stride per operand
};

// acc[0..len) += Σ_t a_t ⊙ b_t along the inner dim.
template <class T>
void AccumulateRow(double* acc, int64_t len, const Operands<T>& ops, const std::vector<int64_t>& offs) {
  for (size_t t = 0; t * 2 < ops.base.size(); ++t) {
    const T* a = ops.base[2 * t] + offs[2 * t];
    const int64_t sa = ops.inner[2 * t];
    if (ops.base[2 * t + 1] == nullptr) {
      if (sa == 1) {
        for (int64_t k = 0; k < len; ++k) acc[k] += a[k];
      } else {
        for (int64_t k = 0; k < len; ++k) acc[k] += a[k * sa];
      }
      continue;
    }
    const T* b = ops.base[2 * t + 1] + offs[2 * t + 1];
    const int64_t sb = ops.inner[2 * t + 1];
    if (sa == 1 && sb == 1) {
      for (int64_t k = 0; k < len; ++k) acc[k] += double(a[k]) * double(b[k]);
    } else if (sa == 0 && sb == 1) {
      const double av = a[0];
      for (int64_t k = 0; k < len; ++k) acc[k] += av * double(b[k]);
    } else if (sa == 1 && sb == 0) {
      const double bv = b[0];
      for (int64_t k = 0; k < len; ++k) acc[k] += double(a[k]) * bv;
    } else {
      for (int64_t k = 0; k < len; ++k) acc[k] += double(a[k * sa]) * double(b[k * sb]);
    }
  }
}

// out[0..len) = Σ_t a_t ⊙ b_t (no reduction). A single product is rounded
// once in T, exactly as an elementwise kernel would compute it.
template <class T>
void WriteRow(T* out, int64_t len, const Operands<T>& ops, const std::vector<int64_t>& offs,
              double* scratch) {
  if (ops.base.size() == 2) {
    const T* a = ops.base[0] + offs[0];
    const T* b = ops.base[1] == nullptr ? nullptr : ops.base[1] + offs[1];
    const int64_t sa = ops.inner[0], sb = ops.inner[1];
    if (b == nullptr) {
      for (int64_t k = 0; k < len; ++k) out[k] = a[k * sa];
    } else if (sa == 1 && sb == 1) {
      for (int64_t k = 0; k < len; ++k) out[k] = a[k] * b[k];
    } else if (sa == 0 && sb == 1) {
      const T av = a[0];
      for (int64_t k = 0; k < len; ++k) out[k] = av * b[k];
    } else if (sa == 1 && sb == 0) {
      const T bv = b[0];
      for (int64_t k = 0; k < len; ++k) out[k] = a[k] * bv;
    } else {
      for (int64_t k = 0; k < len; ++k) out[k] = a[k * sa] * b[k * sb];
    }
    return;
  }
  std::fill_n(scratch, len, 0.0);
  AccumulateRow(scratch, len, ops, offs);
  for (int64_t k = 0; k < len; ++k) out[k] = static_cast<T>(scratch[k]);
}

// Σ_{k<len} Σ_t a_t ⊙ b_t along the inner dim (four independent partial
// sums where contiguous: faster and slightly more accurate than one).
template <class T>
double DotRow(int64_t len, const Operands<T>& ops, const std::vector<int64_t>& offs) {
  double total = 0;
  for (size_t t = 0; t * 2 < ops.base.size(); ++t) {
    const T* a = ops.base[2 * t] + offs[2 * t];
    const int64_t sa = ops.inner[2 * t];
    const T* b = ops.base[2 * t + 1] == nullptr ? nullptr : ops.base[2 * t + 1] + offs[2 * t + 1];
    const int64_t sb = ops.inner[2 * t + 1];
    double s[4] = {0, 0, 0, 0};
    int64_t k = 0;
    if (b == nullptr && sa == 1) {
      for (; k + 4 <= len; k += 4) {
        for (int l = 0; l < 4; ++l) s[l] += a[k + l];
      }
    } else if (b != nullptr && sa == 1 && sb == 1) {
      for (; k + 4 <= len; k += 4) {
        for (int l = 0; l < 4; ++l) s[l] += double(a[k + l]) * double(b[k + l]);
      }
    }
    for (; k < len; ++k) s[k & 3] += b == nullptr ? double(a[k * sa]) : double(a[k * sa]) * double(b[k * sb]);
    total += (s[0] + s[1]) + (s[2] + s[3]);
  }
  return total;
}

template <class T>
void ReduceTyped(const std::vector<ProductTerm>& terms, const std::vector<Dim>& dims, T* out) {
  const size_t nops = terms.size() * 2;
  Operands<T> ops;
  for (const ProductTerm& t : terms) {
    ops.base.push_back(static_cast<const T*>(t.a->data()));
    ops.base.push_back(t.b == nullptr ? nullptr : static_cast<const T*>(t.b->data()));
  }
  if (dims.empty()) {  // every dim has size 1: one element
    double scratch[1];
    ops.inner.assign(nops, 0);
    WriteRow<T>(out, 1, ops, std::vector<int64_t>(nops, 0), scratch);
    return;
  }
  const Dim& inner = dims.back();
  ops.inner = inner.strides;
  std::vector<size_t> kept, reduced;
  for (size_t i = 0; i + 1 < dims.size(); ++i) (dims[i].reduced ? reduced : kept).push_back(i);
  const int64_t len = inner.size;
  Odometer kept_odo(dims, kept), reduced_odo(dims, reduced);
  const int64_t num_kept = kept_odo.count, num_reduced = reduced_odo.count;

  if (!inner.reduced) {
    // Rows: unit = (outer kept position, column chunk).
    const int64_t chunk = std::min(len, num_reduced == 1 ? kParallelGrain : kColumnChunk);
    const int64_t chunks = (len + chunk - 1) / chunk;
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, chunk * num_reduced));
    jit::ParallelFor(num_kept * chunks, grain, [&](int64_t begin, int64_t end) {
      std::vector<double> acc(static_cast<size_t>(std::min(len, chunk)));
      Odometer ko(dims, kept), ro(dims, reduced);
      for (int64_t u = begin; u < end; ++u) {
        const int64_t c0 = (u % chunks) * chunk, n = std::min(chunk, len - c0);
        std::vector<int64_t> offs(nops, 0);
        int64_t out_off = c0 * inner.out_stride;
        for (size_t k = 0; k < nops; ++k) offs[k] = c0 * inner.strides[k];
        ko.Seek(u / chunks, offs, out_off);
        if (num_reduced == 1) {
          WriteRow<T>(out + out_off, n, ops, offs, acc.data());
          continue;
        }
        std::fill_n(acc.data(), n, 0.0);
        int64_t ignored = 0;
        ro.Seek(0, offs, ignored);
        for (int64_t r = 0; r < num_reduced; ++r) {
          AccumulateRow(acc.data(), n, ops, offs);
          ro.Next(offs, ignored);
        }
        for (int64_t k = 0; k < n; ++k) out[out_off + k] = static_cast<T>(acc[k]);
      }
    });
    return;
  }

  if (num_kept == 1) {
    // Total reduction: fixed blocks, partial sums added in order.
    const int64_t blocks_per_row = (len + kTotalBlock - 1) / kTotalBlock;
    const int64_t units = num_reduced * blocks_per_row;
    std::vector<double> partial(static_cast<size_t>(std::max<int64_t>(units, 1)), 0.0);
    jit::ParallelFor(units, std::max<int64_t>(1, kParallelGrain / kTotalBlock),
                     [&](int64_t begin, int64_t end) {
                       Odometer ro(dims, reduced);
                       for (int64_t u = begin; u < end; ++u) {
                         const int64_t c0 = (u % blocks_per_row) * kTotalBlock;
                         std::vector<int64_t> offs(nops, 0);
                         for (size_t k = 0; k < nops; ++k) offs[k] = c0 * inner.strides[k];
                         int64_t ignored = 0;
                         ro.Seek(u / blocks_per_row, offs, ignored);
                         partial[static_cast<size_t>(u)] =
                             DotRow<T>(std::min(kTotalBlock, len - c0), ops, offs);
                       }
                     });
    double total = 0;
    for (double p : partial) total += p;
    out[0] = static_cast<T>(total);
    return;
  }

  // Dots: one unit per output element.
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, len * num_reduced));
  jit::ParallelFor(num_kept, grain, [&](int64_t begin, int64_t end) {
    Odometer ko(dims, kept), ro(dims, reduced);
    for (int64_t u = begin; u < end; ++u) {
      std::vector<int64_t> offs(nops, 0);
      int64_t out_off = 0;
      ko.Seek(u, offs, out_off);
      int64_t ignored = 0;
      ro.Seek(0, offs, ignored);
      double total = 0;
      for (int64_t r = 0; r < num_reduced; ++r) {
        total += DotRow<T>(len, ops, offs);
        ro.Next(offs, ignored);
      }
      out[out_off] = static_cast<T>(total);
    }
  });
}

}  // namespace

std::shared_ptr<ArrayImpl> ReduceProducts(DType dtype, const std::vector<ProductTerm>& terms,
                                          const std::vector<int64_t>& full,
                                          const std::vector<int64_t>& target) {
  for (const ProductTerm& t : terms) {  // [CUDA path] one generated reduction on the device
    if (t.a != nullptr && t.a->device.is_cuda()) {
      return CudaReduceProducts(dtype, terms, full, target, t.a->device);
    }
  }
  std::vector<const ArrayImpl*> ops;
  for (const ProductTerm& t : terms) {
    for (const ArrayImpl* a : {t.a, t.b}) {
      if (a == nullptr) {
        if (ops.size() % 2 == 0) throw Error(ErrorKind::kInternal, "sum_to: a term without operand");
        ops.push_back(a);
        continue;
      }
      CheckHostArray(*a, "sum_to");
      if (a->dtype != dtype) {
        throw Error(ErrorKind::kInternal, absl::StrCat("sum_to: operand is ", DTypeName(a->dtype),
                                                       ", expected ", DTypeName(dtype)));
      }
      ops.push_back(a);
    }
  }
  // Absent second factors still take a stride slot; give them a dummy layout.
  ArrayImpl dummy;
  std::vector<const ArrayImpl*> layout_ops = ops;
  for (const ArrayImpl*& a : layout_ops) {
    if (a == nullptr) a = &dummy;
  }
  std::vector<Dim> dims = PlanDims(layout_ops, full, target);
  auto out = NewArray(dtype, target, Device::cpu());
  int64_t total = 1;
  for (int64_t s : full) total *= s;
  if (terms.empty() || total == 0) {
    // A size-0 target has no storage at all (data() is null): nothing to clear.
    if (out->size() > 0) std::memset(out->data(), 0, static_cast<size_t>(out->size()) * SizeOf(dtype));
    return out;
  }
  if (dtype == DType::kF32) {
    ReduceTyped<float>(terms, dims, static_cast<float*>(out->data()));
  } else {
    ReduceTyped<double>(terms, dims, static_cast<double*>(out->data()));
  }
  return out;
}

std::shared_ptr<ArrayImpl> SumTo(const ArrayImpl& full, const std::vector<int64_t>& shape) {
  if (full.device.is_cpu()) CheckHostArray(full, "sum_to");  // [CUDA path] device: ReduceProducts
  if (full.shape == shape) return ViewOf(full, full.shape, full.strides);
  return ReduceProducts(full.dtype, {ProductTerm{&full, nullptr}}, full.shape, shape);
}

}  // namespace dualcast::detail
