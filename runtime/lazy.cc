// The lazy broadcast graph: pending arrays are computed here, fused with the broadcasts they need.
#include "dualcast/detail/array_impl.hpp"
#include "jit/error.h"

namespace dualcast::detail {

void Materialize(ArrayImpl& impl) {
  if (impl.pending == nullptr) return;
  throw Error(ErrorKind::kInternal, "lazy evaluation is not implemented yet");
}

}  // namespace dualcast::detail
