// Strided elementwise helpers of the reverse sweep: views, contiguous copies, in-place adds, scaling.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "jit/broadcast_layout.h"
#include "jit/cpu/thread_pool.h"
#include "jit/error.h"
#include "runtime/cuda_runtime.h"  // [CUDA path]
#include "runtime/grad_kernels.h"

namespace dualcast::detail {
namespace {

constexpr int64_t kSegment = 16384;  // elements per parallel unit

// Calls fn(offsets, len, inner_strides) over rows of `shape` (the innermost
// dim, cut in segments), in parallel. offsets[k] is operand k's element
// offset of the segment start; strides[k] its strides.
template <class Fn>
void ForEachSegment(const std::vector<int64_t>& shape, const std::vector<std::vector<int64_t>>& strides,
                    Fn&& fn) {
  int64_t total = 1;
  for (int64_t s : shape) total *= s;
  if (total == 0) return;
  const size_t nops = strides.size();
  const int64_t len = shape.empty() ? 1 : shape.back();
  const int64_t rows = total / len;
  const int64_t segs = (len + kSegment - 1) / kSegment;
  std::vector<int64_t> inner(nops, 0);
  for (size_t k = 0; k < nops; ++k) inner[k] = shape.empty() ? 0 : strides[k].back();
  const int64_t grain = std::max<int64_t>(1, kSegment / std::max<int64_t>(len, 1));
  jit::ParallelFor(rows * segs, grain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> offs(nops);
    for (int64_t u = begin; u < end; ++u) {
      const int64_t c0 = (u % segs) * kSegment;
      int64_t row = u / segs;
      for (size_t k = 0; k < nops; ++k) offs[k] = c0 * inner[k];
      for (size_t d = shape.size() - (shape.empty() ? 0 : 1); d-- > 0;) {
        const int64_t i = row % shape[d];
        row /= shape[d];
        for (size_t k = 0; k < nops; ++k) offs[k] += i * strides[k][d];
      }
      fn(offs.data(), std::min(kSegment, len - c0), inner.data());
    }
  });
}

template <class T>
T* At(const ArrayImpl& a, int64_t off) {
  return static_cast<T*>(a.data()) + off;
}

template <class T>
void CopyTyped(const ArrayImpl& src, ArrayImpl& dst) {
  ForEachSegment(src.shape, {src.strides, dst.strides}, [&](const int64_t* o, int64_t n, const int64_t* s) {
    const T* a = At<T>(src, o[0]);
    T* b = At<T>(dst, o[1]);
    if (s[0] == 1) {
      std::memcpy(b, a, static_cast<size_t>(n) * sizeof(T));
    } else {
      for (int64_t k = 0; k < n; ++k) b[k] = a[k * s[0]];
    }
  });
}

template <class T>
void AddTyped(const ArrayImpl& a, const ArrayImpl& b, ArrayImpl& out) {
  ForEachSegment(out.shape, {a.strides, b.strides, out.strides},
                 [&](const int64_t* o, int64_t n, const int64_t* s) {
                   const T* x = At<T>(a, o[0]);
                   const T* y = At<T>(b, o[1]);
                   T* z = At<T>(out, o[2]);
                   if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
                     for (int64_t k = 0; k < n; ++k) z[k] = x[k] + y[k];
                   } else {
                     for (int64_t k = 0; k < n; ++k) z[k * s[2]] = x[k * s[0]] + y[k * s[1]];
                   }
                 });
}

template <class T>
void ScaleTyped(const ArrayImpl& a, double factor, ArrayImpl& out) {
  const T f = static_cast<T>(factor);
  ForEachSegment(a.shape, {a.strides, out.strides}, [&](const int64_t* o, int64_t n, const int64_t* s) {
    const T* x = At<T>(a, o[0]);
    T* z = At<T>(out, o[1]);
    for (int64_t k = 0; k < n; ++k) z[k] = x[k * s[0]] * f;
  });
}

bool Dense(const ArrayImpl& a) {
  return a.storage != nullptr && a.storage->owning && a.contiguous();
}

void CheckSameShape(const ArrayImpl& a, const ArrayImpl& b, const char* what) {
  if (a.shape != b.shape || a.dtype != b.dtype) {
    throw Error(ErrorKind::kInternal,
                absl::StrCat(what, ": ", jit::FormatShape(a.shape), " ", DTypeName(a.dtype), " vs ",
                             jit::FormatShape(b.shape), " ", DTypeName(b.dtype)));
  }
}

}  // namespace

void CheckHostArray(const ArrayImpl& a, const char* what) {
  if (a.storage == nullptr) {
    throw Error(ErrorKind::kInternal, absl::StrCat(what, ": array is not computed yet"));
  }
  if (!a.device.is_cpu()) {
    throw Error(ErrorKind::kDevice, absl::StrCat(what, ": the reverse sweep runs on the CPU only in "
                                                 "this version; the array lives on ",
                                                 a.device.name()));
  }
}

std::shared_ptr<ArrayImpl> ViewOf(const ArrayImpl& a, std::vector<int64_t> shape,
                                  std::vector<int64_t> strides) {
  auto v = std::make_shared<ArrayImpl>();
  v->dtype = a.dtype;
  v->device = a.device;
  v->shape = std::move(shape);
  v->strides = std::move(strides);
  v->offset = a.offset;
  v->storage = a.storage;
  v->read_only = a.read_only;
  return v;
}

std::shared_ptr<ArrayImpl> BroadcastView(const ArrayImpl& a, const std::vector<int64_t>& shape) {
  if (a.shape.size() > shape.size()) {
    throw Error(ErrorKind::kInternal, absl::StrCat("broadcast view: ", jit::FormatShape(a.shape),
                                                   " to ", jit::FormatShape(shape)));
  }
  std::vector<int64_t> strides(shape.size(), 0);
  const size_t lead = shape.size() - a.shape.size();
  for (size_t i = 0; i < a.shape.size(); ++i) {
    if (a.shape[i] == shape[lead + i]) {
      strides[lead + i] = a.strides[i];
    } else if (a.shape[i] != 1) {
      throw Error(ErrorKind::kInternal, absl::StrCat("broadcast view: ", jit::FormatShape(a.shape),
                                                     " to ", jit::FormatShape(shape)));
    }
  }
  return ViewOf(a, shape, std::move(strides));
}

std::shared_ptr<ArrayImpl> CopyArray(const ArrayImpl& a) {
  if (a.device.is_cuda()) return CudaCopy(a);  // [CUDA path]
  CheckHostArray(a, "copy");
  auto out = NewArray(a.dtype, a.shape, a.device);
  if (a.dtype == DType::kF32) {
    CopyTyped<float>(a, *out);
  } else {
    CopyTyped<double>(a, *out);
  }
  return out;
}

std::shared_ptr<ArrayImpl> Contiguous(const std::shared_ptr<ArrayImpl>& a) {
  if (a->device.is_cuda()) return Dense(*a) ? a : CudaCopy(*a);  // [CUDA path]
  CheckHostArray(*a, "contiguous");
  return Dense(*a) ? a : CopyArray(*a);
}

void AddInto(ArrayImpl& dst, const ArrayImpl& src) {
  CheckSameShape(dst, src, "gradient accumulation");
  if (dst.device.is_cuda() || src.device.is_cuda()) return CudaAddInto(dst, src);  // [CUDA path]
  CheckHostArray(dst, "gradient accumulation");
  CheckHostArray(src, "gradient accumulation");
  if (dst.dtype == DType::kF32) {
    AddTyped<float>(dst, src, dst);
  } else {
    AddTyped<double>(dst, src, dst);
  }
}

std::shared_ptr<ArrayImpl> AddArrays(const ArrayImpl& a, const ArrayImpl& b) {
  CheckSameShape(a, b, "gradient accumulation");
  if (a.device.is_cuda() || b.device.is_cuda()) return CudaAdd(a, b);  // [CUDA path]
  CheckHostArray(a, "gradient accumulation");
  CheckHostArray(b, "gradient accumulation");
  auto out = NewArray(a.dtype, a.shape, a.device);
  if (a.dtype == DType::kF32) {
    AddTyped<float>(a, b, *out);
  } else {
    AddTyped<double>(a, b, *out);
  }
  return out;
}

std::shared_ptr<ArrayImpl> Scaled(const ArrayImpl& a, double factor) {
  if (a.device.is_cuda()) return CudaScaled(a, factor);  // [CUDA path]
  CheckHostArray(a, "scale");
  auto out = NewArray(a.dtype, a.shape, a.device);
  if (a.dtype == DType::kF32) {
    ScaleTyped<float>(a, factor, *out);
  } else {
    ScaleTyped<double>(a, factor, *out);
  }
  return out;
}

std::shared_ptr<ArrayImpl> Filled(DType dtype, const std::vector<int64_t>& shape, double value) {
  auto out = NewArray(dtype, shape, Device::cpu());
  if (dtype == DType::kF32) {
    std::fill_n(static_cast<float*>(out->data()), out->size(), static_cast<float>(value));
  } else {
    std::fill_n(static_cast<double*>(out->data()), out->size(), value);
  }
  return out;
}

}  // namespace dualcast::detail
