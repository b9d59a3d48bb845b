// Per-thread recycling of ArrayImpl objects and their reference-count blocks (see array_pool.h).
#include "runtime/array_pool.h"

#include <utility>
#include <vector>

#include "jit/codegen/broadcast_layout.h"

namespace dualcast::detail {
namespace {

// Dropped arrays of this thread, reset, ready to hand out again.
void DeleteArray(ArrayImpl* a) { delete a; }
using Spares = ThreadFreeList<ArrayImpl, ArrayImpl*, &DeleteArray>;

// The deleter: every field back to its default (releasing the storage, the
// pending node, the tape node and the origin it held, which may drop further
// arrays and come back here), the shape and strides emptied, then kept.
struct Recycle {
  void operator()(ArrayImpl* a) const noexcept {
    std::vector<int64_t> shape = std::move(a->shape), strides = std::move(a->strides);
    *a = ArrayImpl();
    shape.clear();
    strides.clear();
    a->shape = std::move(shape);
    a->strides = std::move(strides);
    if (!Spares::Give(a)) delete a;
  }
};

}  // namespace

std::shared_ptr<ArrayImpl> PooledArrayImpl() {
  if constexpr (!kPoolBlocks) return std::make_shared<ArrayImpl>();
  ArrayImpl* a = Spares::Take();
  if (a == nullptr) a = new ArrayImpl();
  return std::shared_ptr<ArrayImpl>(a, Recycle{}, BlockAllocator<ArrayImpl>{});
}

void SetContiguousShape(ArrayImpl& a, std::span<const int64_t> shape) {
  a.shape.assign(shape.begin(), shape.end());
  a.strides.resize(shape.size());
  jit::ContiguousStridesInto(shape, a.strides);
}

}  // namespace dualcast::detail
