// NumPy broadcasting and dim merging (see broadcast_layout.h).
#include "jit/codegen/broadcast_layout.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jit/codegen/element_count.h"
#include "jit/codegen/kernel_abi.h"
#include "jit/error.h"

namespace dualcast::jit {

std::string FormatShape(std::span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::vector<int64_t> ContiguousStrides(std::span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size());
  ContiguousStridesInto(shape, strides);
  return strides;
}

void ContiguousStridesInto(std::span<const int64_t> shape, std::span<int64_t> strides) {
  int64_t step = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = step;
    // A size-0 dim counts as 1 (as in NumPy): no stride of a non-broadcast
    // dim becomes 0, which would read as a broadcast.
    step *= std::max<int64_t>(shape[d], 1);
  }
}

namespace {

// One dim of the padded problem, with what every input does along it.
struct Dim {
  int64_t size;
  std::vector<int64_t> strides;  // per input, 0 where broadcast
  std::vector<bool> broadcast;   // per input
};

absl::Status CheckArguments(std::span<const std::vector<int64_t>> shapes,
                            std::span<const std::vector<int64_t>> strides,
                            const std::string& name) {
  if (!strides.empty() && strides.size() != shapes.size()) {
    return MakeStatus(ErrorKind::kInternal,
                      absl::StrCat(name, ": ", shapes.size(), " shapes but ", strides.size(),
                                   " stride lists were given to the broadcast layout"));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (!strides.empty() && strides[i].size() != shapes[i].size()) {
      return MakeStatus(ErrorKind::kInternal,
                        absl::StrCat(name, ": argument ", i + 1, " has shape ",
                                     FormatShape(shapes[i]), " but ", strides[i].size(),
                                     " strides"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> BroadcastShape(std::span<const std::vector<int64_t>> shapes,
                                                    std::string_view kernel_name) {
  const std::string name(kernel_name);
  for (size_t i = 0; i < shapes.size(); ++i) {
    for (int64_t size : shapes[i]) {
      if (size < 0) {
        return MakeStatus(ErrorKind::kShape,
                          absl::StrCat(name, ": argument ", i + 1, " has a negative size (shape ",
                                       FormatShape(shapes[i]), ")"));
      }
    }
  }
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    int first = -1;  // the first argument with a size other than 1 here
    for (size_t i = 0; i < shapes.size(); ++i) {
      const auto& s = shapes[i];
      if (d + s.size() < rank) continue;  // padded: size 1
      int64_t size = s[d + s.size() - rank];
      if (size == 1) continue;
      if (first < 0) {
        first = static_cast<int>(i);
        out[d] = size;
      } else if (size != out[d]) {
        return MakeStatus(
            ErrorKind::kShape,
            absl::StrCat(name, ": argument ", first + 1, " has size ", out[d], " and argument ",
                         i + 1, " has size ", size, " at dimension ", d, " (shapes ",
                         FormatShape(shapes[first]), " and ", FormatShape(s),
                         "); sizes must match or one must be 1"));
      }
    }
  }
  // Shapes that each fit can broadcast to one that does not: (3, 1) and
  // (1, 6148914691236517206) give 2^64 + 2 elements, which would wrap to 2.
  // Refused here, where every path (eager, lazy, fused, partials, the tape's
  // one-pass plan, which never allocates the result) gets its shape.
  if (!ElementCount(out).has_value()) {
    std::vector<std::string> each;
    for (const auto& s : shapes) each.push_back(FormatShape(s));
    return MakeStatus(ErrorKind::kShape,
                      absl::StrCat(name, ": the arguments (shapes ", absl::StrJoin(each, ", "),
                                   ") broadcast to shape ", FormatShape(out),
                                   ", which has more than 2^63 - 1 elements"));
  }
  return out;
}

absl::StatusOr<BroadcastLayout> MergeBroadcast(std::span<const std::vector<int64_t>> shapes,
                                               std::span<const std::vector<int64_t>> strides,
                                               std::string_view kernel_name) {
  const std::string name(kernel_name);
  if (absl::Status s = CheckArguments(shapes, strides, name); !s.ok()) return s;
  absl::StatusOr<std::vector<int64_t>> full = BroadcastShape(shapes, name);
  if (!full.ok()) return full.status();

  const size_t n = shapes.size();
  const size_t rank = full->size();
  BroadcastLayout layout;
  layout.full_out_shape = *full;
  layout.num_elements = 1;
  for (int64_t size : *full) layout.num_elements *= size;

  if (layout.num_elements == 0) {
    // Nothing is read or written; one dim of size 0 keeps "nothing" explicit.
    layout.out_shape = {0};
    layout.in_strides.assign(n, std::vector<int64_t>{0});
    layout.in_broadcast.assign(n, 0);
    return layout;
  }

  // Pad to the common rank and drop dims of output size 1.
  std::vector<Dim> dims;
  for (size_t d = 0; d < rank; ++d) {
    if ((*full)[d] == 1) continue;
    Dim dim{(*full)[d], std::vector<int64_t>(n, 0), std::vector<bool>(n, false)};
    for (size_t i = 0; i < n; ++i) {
      const auto& s = shapes[i];
      const bool present = d + s.size() >= rank;
      const size_t k = present ? d + s.size() - rank : 0;
      if (!present || s[k] == 1) {
        dim.broadcast[i] = true;
      } else {
        dim.strides[i] = strides.empty() ? ContiguousStrides(s)[k] : strides[i][k];
        // A stride-0 view (e.g. the adjoint of a sum) reads one element along
        // this dim: exactly a broadcast, so compile it as one and keep the
        // inner loop contiguous for the other operands.
        if (dim.strides[i] == 0) dim.broadcast[i] = true;
      }
    }
    dims.push_back(std::move(dim));
  }

  // Merge an inner dim into the current outer group when addressing allows.
  std::vector<Dim> merged;
  for (Dim& dim : dims) {
    if (!merged.empty()) {
      Dim& outer = merged.back();
      bool can_merge = true;
      for (size_t i = 0; i < n && can_merge; ++i) {
        can_merge = outer.broadcast[i] == dim.broadcast[i] &&
                    (dim.broadcast[i] || outer.strides[i] == dim.strides[i] * dim.size);
      }
      if (can_merge) {
        outer.size *= dim.size;
        outer.strides = dim.strides;
        continue;
      }
    }
    merged.push_back(std::move(dim));
  }

  if (merged.size() > static_cast<size_t>(kMaxRank)) {
    return MakeStatus(
        ErrorKind::kShape,
        absl::StrCat(name, ": the broadcast has rank ", merged.size(),
                     " after merging dimensions (result shape ", FormatShape(*full),
                     "), above the limit of ", kMaxRank,
                     " (neighbouring dimensions merge only where every argument is broadcast "
                     "along both or neither, with strides that run on across them); reshape the "
                     "arguments to fewer dimensions, copy() strided ones, or give the arguments "
                     "broadcast in alternating dimensions their full shape"));
  }

  layout.in_strides.assign(n, {});
  layout.in_broadcast.assign(n, 0);
  for (size_t d = 0; d < merged.size(); ++d) {
    layout.out_shape.push_back(merged[d].size);
    for (size_t i = 0; i < n; ++i) {
      layout.in_strides[i].push_back(merged[d].strides[i]);
      if (merged[d].broadcast[i]) layout.in_broadcast[i] |= 1u << d;
    }
  }
  layout.strided_inner.assign(n, false);
  if (!merged.empty()) {
    for (size_t i = 0; i < n; ++i) {
      if (!merged.back().broadcast[i] && merged.back().strides[i] != 1) {
        layout.inner_contiguous = false;
        layout.strided_inner[i] = true;
      }
    }
  }
  return layout;
}

std::vector<int> LoopOrder(std::span<const std::vector<int64_t>> shapes,
                           std::span<const std::vector<int64_t>> strides,
                           const std::vector<bool>& votes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int> order(rank);
  for (size_t d = 0; d < rank; ++d) order[d] = static_cast<int>(d);
  if (rank < 2) return order;
  // |stride| of each voting operand along each padded dim: 0 where it is not
  // read along the dim (padded, size 1, or a stride-0 view), so it has no say.
  struct Voter {
    std::vector<int64_t> stride;  // per padded dim
    double weight = 1;            // elements the operand holds
  };
  std::vector<Voter> voters;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (i >= votes.size() || !votes[i]) continue;
    const auto& s = shapes[i];
    Voter v{std::vector<int64_t>(rank, 0), 1};
    const std::vector<int64_t> own =
        strides.empty() ? ContiguousStrides(s) : std::vector<int64_t>(strides[i]);
    for (size_t k = 0; k < s.size(); ++k) {
      v.weight *= static_cast<double>(s[k]);
      if (s[k] > 1) v.stride[rank - s.size() + k] = own[k] < 0 ? -own[k] : own[k];
    }
    if (v.weight > 0) voters.push_back(std::move(v));
  }
  if (voters.empty()) return order;
  // > 0: `outer` belongs outside `inner` (smaller strides inside), < 0: the
  // other way round, 0 with `informed` false: no operand reads along both.
  auto prefer = [&](int outer, int inner, bool& informed) {
    double balance = 0;
    informed = false;
    for (const Voter& v : voters) {
      const int64_t a = v.stride[static_cast<size_t>(outer)], b = v.stride[static_cast<size_t>(inner)];
      if (a == 0 || b == 0) continue;
      informed = true;
      if (a != b) balance += a > b ? v.weight : -v.weight;
    }
    return balance;
  };
  for (size_t k = 1; k < rank; ++k) {
    const int dim = order[k];
    size_t pos = k;
    for (size_t j = k; j-- > 0;) {
      bool informed = false;
      const double p = prefer(order[j], dim, informed);
      if (!informed) continue;  // no say about this pair: look further out
      if (p < 0) {
        pos = j;  // `dim` belongs outside order[j]
      } else {
        break;
      }
    }
    if (pos != k) {
      std::rotate(order.begin() + static_cast<std::ptrdiff_t>(pos),
                  order.begin() + static_cast<std::ptrdiff_t>(k),
                  order.begin() + static_cast<std::ptrdiff_t>(k) + 1);
    }
  }
  return order;
}

void PermuteDims(std::span<const int> order, std::vector<int64_t>& shape,
                 std::vector<int64_t>& strides) {
  const size_t rank = order.size();
  const size_t pad = rank - std::min(rank, shape.size());
  std::vector<int64_t> padded_shape(rank, 1), padded_strides(rank, 0);
  for (size_t k = 0; k < shape.size() && k < rank; ++k) {
    padded_shape[pad + k] = shape[k];
    padded_strides[pad + k] = strides[k];
  }
  shape.resize(rank);
  strides.resize(rank);
  for (size_t k = 0; k < rank; ++k) {
    shape[k] = padded_shape[static_cast<size_t>(order[k])];
    strides[k] = padded_strides[static_cast<size_t>(order[k])];
  }
}

absl::StatusOr<ReductionLayout> MergeForReduction(std::span<const int64_t> full_shape,
                                                  std::span<const int64_t> input_shape) {
  const size_t rank = full_shape.size();
  auto incompatible = [&] {
    return MakeStatus(ErrorKind::kShape,
                      absl::StrCat("sum_to: cannot reduce shape ", FormatShape(full_shape),
                                   " to shape ", FormatShape(input_shape),
                                   "; every dimension must match or be 1 in the target"));
  };
  if (input_shape.size() > rank) return incompatible();

  ReductionLayout layout;
  bool have_group = false;
  bool group_reduced = false;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t f = full_shape[d];
    const bool present = d + input_shape.size() >= rank;
    const int64_t s = present ? input_shape[d + input_shape.size() - rank] : 1;
    if (s != f && s != 1) return incompatible();
    if (f == 1) continue;
    const bool reduced = s != f;
    if (have_group && reduced == group_reduced) {
      layout.shape.back() *= f;
      if (!reduced) layout.kept_shape.back() *= f;
      continue;
    }
    if (layout.shape.size() >= 32) {
      return MakeStatus(ErrorKind::kShape, absl::StrCat("sum_to: shape ", FormatShape(full_shape),
                                                        " has too many dimensions"));
    }
    layout.shape.push_back(f);
    if (reduced) {
      layout.reduced |= 1u << (layout.shape.size() - 1);
    } else {
      layout.kept_shape.push_back(f);
    }
    have_group = true;
    group_reduced = reduced;
  }
  return layout;
}

}  // namespace dualcast::jit
