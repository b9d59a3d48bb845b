// Strided elementwise helpers of the reverse sweep (views; copies, in-place adds, scaling and fills as generated kernels).
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "dualcast/detail/execute.hpp"
#include "jit/codegen/broadcast_layout.h"
#include "jit/error.h"
#include "runtime/grad_kernels.h"

namespace dualcast::detail {
namespace {

enum class Elementwise { kCopy, kAdd, kMul, kDiv };

// The one-op IR functions behind the helpers below, per dtype (built once).
std::shared_ptr<const jit::Function> ElementwiseFunction(Elementwise op, DType dtype) {
  auto make = [](Elementwise op, jit::Type t) {
    static const char* const kNames[] = {"copy", "add", "scale", "divide"};
    auto f = std::make_shared<jit::Function>(kNames[static_cast<int>(op)]);
    jit::Builder b(*f);
    jit::ValueId x = b.Input(t);
    if (op == Elementwise::kAdd) x = b.Add(x, b.Input(t));
    if (op == Elementwise::kMul) x = b.Mul(x, b.Input(t));
    if (op == Elementwise::kDiv) x = b.Div(x, b.Input(t));
    b.Return({x});
    return std::shared_ptr<const jit::Function>(std::move(f));
  };
  static const std::shared_ptr<const jit::Function> kFunctions[2][4] = {
      {make(Elementwise::kCopy, jit::Type::kF32), make(Elementwise::kAdd, jit::Type::kF32),
       make(Elementwise::kMul, jit::Type::kF32), make(Elementwise::kDiv, jit::Type::kF32)},
      {make(Elementwise::kCopy, jit::Type::kF64), make(Elementwise::kAdd, jit::Type::kF64),
       make(Elementwise::kMul, jit::Type::kF64), make(Elementwise::kDiv, jit::Type::kF64)}};
  return kFunctions[dtype == DType::kF32 ? 0 : 1][static_cast<int>(op)];
}

// A non-owning handle on `a` for Execute (the caller keeps `a` alive).
std::shared_ptr<ArrayImpl> Borrow(const ArrayImpl& a) {
  return std::shared_ptr<ArrayImpl>(std::shared_ptr<ArrayImpl>(), const_cast<ArrayImpl*>(&a));
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

// The helpers below run generated kernels (Execute), on any device.
void CheckComputed(const ArrayImpl& a, const char* what) {
  if (a.storage == nullptr) {
    throw Error(ErrorKind::kInternal, absl::StrCat(what, ": array is not computed yet"));
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
  CheckComputed(a, "copy");
  return Execute("copy", ElementwiseFunction(Elementwise::kCopy, a.dtype), {Borrow(a)})[0];
}

namespace {
bool ViewOfWritableUserMemory(const ArrayImpl& a) {
  return a.storage != nullptr && !a.storage->owning && !a.read_only;
}

// This thread's last copy of each contiguous writable view, by address (its
// type and shape checked), held weakly: while the nodes holding it live, a view of
// the same memory whose bytes still equal it shares it instead of copying
// again. A loop that views one unchanged buffer every step (a forcing term)
// then keeps one copy, not one per step, and compares instead of writing:
// 100 steps over 10^5 doubles took 1.6x the const-view time with a copy each.
struct UserMemoryCopies {
  absl::flat_hash_map<const void*, std::weak_ptr<ArrayImpl>> by_address;
  size_t prune_at = 64;  // entries whose copies died are dropped when the map reaches this
};
thread_local UserMemoryCopies t_user_memory_copies;

std::shared_ptr<ArrayImpl> SharedCopyOf(const ArrayImpl& a) {
  UserMemoryCopies& copies = t_user_memory_copies;
  std::weak_ptr<ArrayImpl>& entry = copies.by_address[a.data()];
  if (std::shared_ptr<ArrayImpl> copy = entry.lock();
      copy != nullptr && copy->dtype == a.dtype && copy->shape == a.shape &&
      std::memcmp(copy->data(), a.data(), static_cast<size_t>(a.size()) * SizeOf(a.dtype)) == 0) {
    return copy;
  }
  std::shared_ptr<ArrayImpl> copy = CopyArray(a);
  entry = copy;
  if (copies.by_address.size() >= copies.prune_at) {
    absl::erase_if(copies.by_address, [](const auto& e) { return e.second.expired(); });
    copies.prune_at = std::max<size_t>(64, 2 * copies.by_address.size());
  }
  return copy;
}
}  // namespace

std::shared_ptr<ArrayImpl> CopyIfUserMemory(const std::shared_ptr<ArrayImpl>& a) {
  if (a == nullptr || !ViewOfWritableUserMemory(*a)) return nullptr;
  return a->contiguous() && a->size() > 0 ? SharedCopyOf(*a) : CopyArray(*a);
}

std::shared_ptr<ArrayImpl> Contiguous(const std::shared_ptr<ArrayImpl>& a) {
  CheckComputed(*a, "contiguous");
  return Dense(*a) ? a : CopyArray(*a);
}

namespace {
// dst = src, or dst += src: one strided pass either way.
void WriteInto(ArrayImpl& dst, const ArrayImpl& src, bool add, const char* what) {
  CheckSameShape(dst, src, what);
  CheckComputed(dst, what);
  CheckComputed(src, what);
  ExecuteOptions options;
  options.destinations = {Borrow(dst)};
  options.accumulate = {add};
  Execute(add ? "add_into" : "copy_into", ElementwiseFunction(Elementwise::kCopy, dst.dtype),
          {Borrow(src)}, options);
}
}  // namespace

void AddInto(ArrayImpl& dst, const ArrayImpl& src) { WriteInto(dst, src, true, "gradient accumulation"); }

void CopyInto(ArrayImpl& dst, const ArrayImpl& src) { WriteInto(dst, src, false, "copy into"); }

void CopyEachInto(const std::vector<std::shared_ptr<ArrayImpl>>& dsts,
                  const std::vector<std::shared_ptr<ArrayImpl>>& srcs) {
  constexpr size_t kMaxTogether = 16;
  bool together = dsts.size() >= 2 && dsts.size() <= kMaxTogether;
  for (size_t k = 0; together && k < dsts.size(); ++k) {
    together = dsts[k]->shape == dsts[0]->shape && srcs[k]->shape == dsts[0]->shape &&
               srcs[k]->dtype == dsts[0]->dtype;
  }
  if (!together) {
    for (size_t k = 0; k < dsts.size(); ++k) CopyInto(*dsts[k], *srcs[k]);
    return;
  }
  // k inputs to k outputs unchanged, per type and count (built once).
  static const auto* identities = [] {
    auto* table = new std::array<std::shared_ptr<const jit::Function>, 2 * (kMaxTogether + 1)>();
    for (size_t k = 0; k < table->size(); ++k) {
      auto f = std::make_shared<jit::Function>("copy_into");
      jit::Builder b(*f);
      std::vector<jit::ValueId> values;
      for (size_t v = 0; v < k % (kMaxTogether + 1); ++v) {
        values.push_back(b.Input(k <= kMaxTogether ? jit::Type::kF32 : jit::Type::kF64));
      }
      b.Return(values);
      (*table)[k] = std::move(f);
    }
    return table;
  }();
  const std::shared_ptr<const jit::Function>& fn =
      (*identities)[(dsts[0]->dtype == DType::kF32 ? 0 : kMaxTogether + 1) + dsts.size()];
  ExecuteOptions options;
  for (size_t k = 0; k < dsts.size(); ++k) {
    CheckComputed(*srcs[k], "copy into");
    options.destinations.push_back(dsts[k]);
  }
  Execute("copy_into", fn, srcs, options);
}

std::shared_ptr<ArrayImpl> AddArrays(const ArrayImpl& a, const ArrayImpl& b) {
  CheckSameShape(a, b, "gradient accumulation");
  CheckComputed(a, "gradient accumulation");
  CheckComputed(b, "gradient accumulation");
  return Execute("add", ElementwiseFunction(Elementwise::kAdd, a.dtype), {Borrow(a), Borrow(b)})[0];
}

std::shared_ptr<ArrayImpl> Scaled(const ArrayImpl& a, double factor) {
  CheckComputed(a, "scale");
  return Execute("scale", ElementwiseFunction(Elementwise::kMul, a.dtype),
                 {Borrow(a), NumberArray(factor, a.dtype, a.device)})[0];
}

std::shared_ptr<ArrayImpl> Divided(const ArrayImpl& a, double divisor) {
  CheckComputed(a, "divide");
  return Execute("divide", ElementwiseFunction(Elementwise::kDiv, a.dtype),
                 {Borrow(a), NumberArray(divisor, a.dtype, a.device)})[0];
}

std::shared_ptr<ArrayImpl> Filled(DType dtype, const std::vector<int64_t>& shape, double value,
                                  Device device) {
  ExecuteOptions options;
  options.iteration_shape = shape;
  return Execute("fill", ElementwiseFunction(Elementwise::kCopy, dtype), {NumberArray(value, dtype, device)},
                 options)[0];
}

}  // namespace dualcast::detail
