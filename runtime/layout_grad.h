// Tape records for the layout operations (reshape, transpose, copy, assign): one identity for arrays however they are written.
//
// The Array methods (`x.reshape(...)`, `x.transpose()`, `x.copy()`) and the
// free functions (dualcast::reshape / transpose) are the same operations: the
// methods record these nodes, the free functions call the methods, so a
// gradient flows through every spelling. Each also notes its Origin.
#pragma once

#include <memory>
#include <vector>

#include "dualcast/detail/array_impl.hpp"

namespace dualcast::detail {

// `out` is `in` with a new shape (same elements, row-major order).
void RecordReshape(const std::shared_ptr<ArrayImpl>& in, const std::shared_ptr<ArrayImpl>& out);
// `out` is `in` with axes permuted: out dim d is input dim perm[d].
void RecordTranspose(const std::shared_ptr<ArrayImpl>& in, const std::shared_ptr<ArrayImpl>& out,
                     const std::vector<int>& perm);
// `out` holds the same values as `in` (a copy: the adjoint passes unchanged).
void RecordCopy(const std::shared_ptr<ArrayImpl>& in, const std::shared_ptr<ArrayImpl>& out);
// `out` was just overwritten with `in` broadcast to its shape (Array::assign):
// the adjoint passes back summed over the broadcast axes.
void RecordAssign(const std::shared_ptr<ArrayImpl>& in, const std::shared_ptr<ArrayImpl>& out);

}  // namespace dualcast::detail
