// Tests of NumPy broadcasting, dim merging and the sum_to reduction merge (broadcast_layout.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "jit/codegen/broadcast_layout.h"
#include "jit/error.h"

namespace dualcast::jit {
namespace {

using Shapes = std::vector<std::vector<int64_t>>;
using V = std::vector<int64_t>;

BroadcastLayout Merge(const Shapes& shapes, const Shapes& strides = {}) {
  absl::StatusOr<BroadcastLayout> l = MergeBroadcast(shapes, strides, "k");
  REQUIRE_MESSAGE(l.ok(), l.status().ToString());
  return *l;
}

ErrorKind KindOf(const absl::Status& s) {
  try {
    ThrowStatus(s);
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::kInternal;
}

// Offset of input `i` at full index `idx`, straight from NumPy's rule
// (right-aligned, size-1 dims read index 0), with the unmerged strides.
int64_t UnmergedOffset(const V& shape, const V& strides, const V& full, const V& idx) {
  int64_t off = 0;
  const size_t pad = full.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != 1) off += idx[d + pad] * strides[d];
  }
  return off;
}

// Checks that the merged layout addresses every input element exactly as the
// unmerged broadcast does, by walking the full index space in row-major order
// (which is also the merged space's row-major order).
void CheckAddressing(const Shapes& shapes, const Shapes& strides) {
  BroadcastLayout l = Merge(shapes, strides);
  const V& full = l.full_out_shape;
  int64_t total = 1;
  for (int64_t s : full) total *= s;
  REQUIRE(total == l.num_elements);
  V idx(full.size(), 0);
  V midx(l.out_shape.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      int64_t merged = 0;
      for (size_t d = 0; d < midx.size(); ++d) merged += midx[d] * l.in_strides[i][d];
      CHECK(merged == UnmergedOffset(shapes[i], strides[i], full, idx));
    }
    for (size_t d = full.size(); d-- > 0;) {
      if (++idx[d] < full[d]) break;
      idx[d] = 0;
    }
    for (size_t d = midx.size(); d-- > 0;) {
      if (++midx[d] < l.out_shape[d]) break;
      midx[d] = 0;
    }
  }
}

TEST_CASE("the TVM example: (2,2,1,2,2) x (1,1,2,2,1)") {
  BroadcastLayout l = Merge({{2, 2, 1, 2, 2}, {1, 1, 2, 2, 1}});
  CHECK(l.full_out_shape == V{2, 2, 2, 2, 2});
  // Per-dim broadcast bits x: 00100, y: 11001. Only dims 0 and 1 agree for both.
  CHECK(l.out_shape == V{4, 2, 2, 2});
  CHECK(l.in_broadcast == std::vector<uint32_t>{0b0010, 0b1001});
  CHECK(l.in_strides[0] == V{4, 0, 2, 1});  // x contiguous: strides (8,4,4,2,1)
  CHECK(l.in_strides[1] == V{0, 2, 1, 0});  // y contiguous: strides (4,4,2,1,1)
  CHECK(l.inner_contiguous);
  CHECK(l.num_elements == 32);

  ReductionLayout rx = MergeForReduction(l.full_out_shape, V{2, 2, 1, 2, 2}).value();
  CHECK(rx.shape == V{4, 2, 4});  // pattern 00100
  CHECK(rx.reduced == 0b010);
  CHECK(rx.kept_shape == V{4, 4});
  ReductionLayout ry = MergeForReduction(l.full_out_shape, V{1, 1, 2, 2, 1}).value();
  CHECK(ry.shape == V{4, 4, 2});  // pattern 11001
  CHECK(ry.reduced == 0b101);
  CHECK(ry.kept_shape == V{4});
}

TEST_CASE("(5,1,7) x (1,3,1) x scalar does not merge") {
  BroadcastLayout l = Merge({{5, 1, 7}, {1, 3, 1}, {}});
  CHECK(l.out_shape == V{5, 3, 7});
  CHECK(l.in_broadcast == std::vector<uint32_t>{0b010, 0b101, 0b111});
  CHECK(l.in_strides[0] == V{7, 0, 1});
  CHECK(l.in_strides[1] == V{0, 1, 0});
  CHECK(l.in_strides[2] == V{0, 0, 0});
  CHECK(l.inner_contiguous);
  CHECK(l.num_elements == 105);
}

TEST_CASE("(n,1) x (n,n): rank 2, the column broadcast along the inner dim") {
  const int64_t n = 5;
  BroadcastLayout l = Merge({{n, 1}, {n, n}});
  CHECK(l.rank() == 2);
  CHECK(l.out_shape == V{n, n});
  CHECK(l.in_broadcast == std::vector<uint32_t>{0b10, 0b00});  // "01" and "00" outer-first
  CHECK(l.in_strides[0] == V{1, 0});
  CHECK(l.in_strides[1] == V{n, 1});
}

TEST_CASE("same-shape contiguous inputs merge to rank 1, whatever the rank") {
  BroadcastLayout l = Merge({{2, 3, 1, 4, 2, 2, 3, 1, 2, 2}, {2, 3, 1, 4, 2, 2, 3, 1, 2, 2}});
  CHECK(l.out_shape == V{2 * 3 * 4 * 2 * 2 * 3 * 2 * 2});
  CHECK(l.in_strides[0] == V{1});
  CHECK(l.in_broadcast == std::vector<uint32_t>{0, 0});
}

TEST_CASE("views merge only where their memory allows") {
  // A transposed (4,3) matrix seen as (3,4): strides (1,3).
  BroadcastLayout t = Merge({{3, 4}, {3, 4}}, {{1, 3}, {4, 1}});
  CHECK(t.out_shape == V{3, 4});
  CHECK(t.in_strides[0] == V{1, 3});
  CHECK_FALSE(t.inner_contiguous);
  // The first 4 columns of a (3,8) matrix: rows do not touch, inner stride 1.
  BroadcastLayout s = Merge({{3, 4}, {3, 4}}, {{8, 1}, {4, 1}});
  CHECK(s.out_shape == V{3, 4});
  CHECK(s.inner_contiguous);
  // Every other row of a contiguous (6,4): stride 8 along rows, still no merge.
  BroadcastLayout r = Merge({{3, 4}}, {{8, 1}});
  CHECK(r.out_shape == V{3, 4});
  // Every other element of a (12,) vector seen as (3,4): strides (8,2) merge.
  BroadcastLayout e = Merge({{3, 4}}, {{8, 2}});
  CHECK(e.out_shape == V{12});
  CHECK(e.in_strides[0] == V{2});
  CHECK_FALSE(e.inner_contiguous);
}

TEST_CASE("merged addressing equals NumPy addressing") {
  CheckAddressing({{2, 2, 1, 2, 2}, {1, 1, 2, 2, 1}}, {{8, 4, 4, 2, 1}, {4, 4, 2, 1, 1}});
  CheckAddressing({{5, 1, 7}, {1, 3, 1}, {}}, {{7, 7, 1}, {3, 1, 1}, {}});
  CheckAddressing({{3, 4, 2}, {4, 1}}, {{1, 3, 12}, {1, 1}});       // permuted view
  CheckAddressing({{2, 3, 4}, {2, 3, 4}}, {{24, 8, 2}, {12, 4, 1}});  // strided, mergeable
  CheckAddressing({{1, 6, 1, 5}, {6, 1}}, {{30, 5, 5, 1}, {1, 1}});
}

TEST_CASE("rank 0: scalars and all-ones shapes") {
  BroadcastLayout a = Merge({{}, {}});
  CHECK(a.rank() == 0);
  CHECK(a.num_elements == 1);
  CHECK(a.in_broadcast == std::vector<uint32_t>{0, 0});
  CHECK(a.full_out_shape.empty());
  BroadcastLayout b = Merge({{1, 1}, {}});
  CHECK(b.rank() == 0);
  CHECK(b.full_out_shape == V{1, 1});
  CHECK(b.num_elements == 1);
  CHECK(b.inner_contiguous);
}

TEST_CASE("size 0 is valid and empty; 0 against 2 is a mismatch") {
  BroadcastLayout l = Merge({{0, 3}, {1, 3}, {}});
  CHECK(l.num_elements == 0);
  CHECK(l.full_out_shape == V{0, 3});
  CHECK(l.out_shape == V{0});
  CHECK(l.in_strides.size() == 3);
  absl::StatusOr<BroadcastLayout> bad = MergeBroadcast(Shapes{{0, 3}, {2, 3}}, {}, "k");
  CHECK_FALSE(bad.ok());
}

TEST_CASE("a mismatch names the kernel, both arguments, sizes, dimension and shapes") {
  Shapes shapes = {{1}, {2, 1}, {2, 4}, {}, {2, 3}};
  absl::StatusOr<BroadcastLayout> l = MergeBroadcast(shapes, {}, "hmlstm_cell");
  REQUIRE_FALSE(l.ok());
  CHECK(KindOf(l.status()) == ErrorKind::kShape);
  CHECK(std::string(l.status().message()) ==
        "hmlstm_cell: argument 3 has size 4 and argument 5 has size 3 at dimension 1 "
        "(shapes [2, 4] and [2, 3]); sizes must match or one must be 1");

  // Dimensions are numbered in the result: a (3,) is right-aligned to dim 1.
  absl::StatusOr<BroadcastLayout> m = MergeBroadcast(Shapes{{3}, {2, 4}}, {}, "f");
  REQUIRE_FALSE(m.ok());
  CHECK(std::string(m.status().message()) ==
        "f: argument 1 has size 3 and argument 2 has size 4 at dimension 1 "
        "(shapes [3] and [2, 4]); sizes must match or one must be 1");
}

TEST_CASE("more than kMaxRank merged dims is a shape error naming rank and limit") {
  absl::StatusOr<BroadcastLayout> l = MergeBroadcast(
      Shapes{{2, 1, 2, 1, 2, 1, 2, 1, 2}, {1, 2, 1, 2, 1, 2, 1, 2, 1}}, {}, "deep");
  REQUIRE_FALSE(l.ok());
  CHECK(KindOf(l.status()) == ErrorKind::kShape);
  const std::string msg(l.status().message());
  CHECK(msg.find("deep") == 0);
  CHECK(msg.find("rank 9") != std::string::npos);
  CHECK(msg.find("limit of 8") != std::string::npos);
  // Eight alternating dims fit.
  CHECK(MergeBroadcast(Shapes{{2, 1, 2, 1, 2, 1, 2, 1}, {1, 2, 1, 2, 1, 2, 1, 2}}, {}, "ok").ok());
}

TEST_CASE("sum_to merge: kept/reduced runs, leading dims, size-1 dims, errors") {
  ReductionLayout r = MergeForReduction(V{3, 4, 5}, V{5}).value();
  CHECK(r.shape == V{12, 5});
  CHECK(r.reduced == 0b01);
  CHECK(r.kept_shape == V{5});
  ReductionLayout s = MergeForReduction(V{3, 1, 4}, V{3, 1, 1}).value();
  CHECK(s.shape == V{3, 4});
  CHECK(s.reduced == 0b10);
  ReductionLayout all = MergeForReduction(V{3, 4}, V{}).value();
  CHECK(all.shape == V{12});
  CHECK(all.reduced == 0b1);
  CHECK(all.kept_shape.empty());
  ReductionLayout none = MergeForReduction(V{3, 4}, V{3, 4}).value();
  CHECK(none.shape == V{12});
  CHECK(none.reduced == 0);
  CHECK_FALSE(MergeForReduction(V{3, 4}, V{2, 4}).ok());
  CHECK_FALSE(MergeForReduction(V{4}, V{2, 4}).ok());
}

TEST_CASE("ContiguousStrides and FormatShape") {
  CHECK(ContiguousStrides(V{2, 3, 4}) == V{12, 4, 1});
  CHECK(ContiguousStrides(V{}).empty());
  CHECK(FormatShape(V{2, 3}) == "[2, 3]");
  CHECK(FormatShape(V{}) == "[]");
}

}  // namespace
}  // namespace dualcast::jit

namespace dualcast::jit {
namespace {

TEST_CASE("a stride-0 view is compiled as a broadcast, keeping the inner loop contiguous") {
  // (4, 6) operand next to a (4, 6) view of one element (strides 0, 0).
  std::vector<std::vector<int64_t>> shapes = {{4, 6}, {4, 6}};
  std::vector<std::vector<int64_t>> strides = {{6, 1}, {0, 0}};
  BroadcastLayout layout = MergeBroadcast(shapes, strides, "k").value();
  CHECK(layout.out_shape == std::vector<int64_t>{24});
  CHECK(layout.in_broadcast == std::vector<uint32_t>{0b0, 0b1});
  CHECK(layout.inner_contiguous);
}

}  // namespace
}  // namespace dualcast::jit

namespace dualcast::jit {
namespace {

using Order = std::vector<int>;

TEST_CASE("LoopOrder: a transposed operand is walked in memory order, a contiguous one logically") {
  // (3, 4) read through strides (1, 3): the transpose of a contiguous (4, 3).
  CHECK(LoopOrder(std::vector<std::vector<int64_t>>{{3, 4}}, std::vector<std::vector<int64_t>>{{1, 3}}, {true}) ==
        Order{1, 0});
  CHECK(LoopOrder(std::vector<std::vector<int64_t>>{{3, 4}}, {}, {true}) == Order{0, 1});
  // Every permutation of a contiguous (2, 3, 5): the loop undoes it.
  const std::vector<int64_t> base_strides = {15, 5, 1};
  std::vector<int> perm = {0, 1, 2};
  do {
    std::vector<int64_t> shape, strides;
    for (int p : perm) {
      shape.push_back(std::vector<int64_t>{2, 3, 5}[static_cast<size_t>(p)]);
      strides.push_back(base_strides[static_cast<size_t>(p)]);
    }
    Order order = LoopOrder(std::vector<std::vector<int64_t>>{shape}, std::vector<std::vector<int64_t>>{strides},
                            {true});
    // Outer first: the dims of shape sorted by decreasing stride, i.e. perm's inverse.
    Order inverse(3);
    for (int k = 0; k < 3; ++k) inverse[static_cast<size_t>(perm[static_cast<size_t>(k)])] = k;
    CHECK(order == inverse);
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST_CASE("LoopOrder: ties keep the logical order; weights, stride-0 and silent operands") {
  using Shapes = std::vector<std::vector<int64_t>>;
  // A transposed and a contiguous operand of one size: a tie.
  CHECK(LoopOrder(Shapes{{3, 4}, {3, 4}}, Shapes{{1, 3}, {4, 1}}, {true, true}) == Order{0, 1});
  // Two transposed outweigh one contiguous.
  CHECK(LoopOrder(Shapes{{3, 4}, {3, 4}, {3, 4}}, Shapes{{1, 3}, {4, 1}, {1, 3}}, {true, true, true}) == Order{1, 0});
  // Votes count elements: a (5, 3, 4) operand transposed in its last two dims
  // outweighs a contiguous (3, 4) one.
  CHECK(LoopOrder(Shapes{{5, 3, 4}, {3, 4}}, Shapes{{12, 1, 3}, {4, 1}}, {true, true}) == Order{0, 2, 1});
  // A row broadcast (size 1 or stride 0 along a dim) has no say about that dim.
  CHECK(LoopOrder(Shapes{{3, 4}, {1, 4}, {3, 4}}, Shapes{{1, 3}, {4, 1}, {0, 1}}, {true, true, true}) == Order{1, 0});
  // An operand without a vote (a summed output's scratch) follows.
  CHECK(LoopOrder(Shapes{{3, 4}, {3, 1}}, Shapes{{1, 3}, {1, 1}}, {true, false}) == Order{1, 0});
  CHECK(LoopOrder(Shapes{{3, 4}, {3, 4}}, Shapes{{1, 3}, {4, 1}}, {false, true}) == Order{0, 1});
  // Shapes of other ranks are right-aligned: the (3, 4) operand votes on dims 1
  // and 2 only, where the larger one outweighs it.
  CHECK(LoopOrder(Shapes{{2, 3, 4}, {3, 4}}, Shapes{{1, 8, 2}, {1, 3}}, {true, true}) == Order{1, 2, 0});
  // Rank 0 and 1: nothing to order.
  CHECK(LoopOrder(Shapes{{}}, Shapes{{}}, {true}).empty());
  CHECK(LoopOrder(Shapes{{7}}, Shapes{{3}}, {true}) == Order{0});
}

TEST_CASE("PermuteDims pads to the order's rank, then permutes") {
  std::vector<int64_t> shape = {3, 4}, strides = {4, 1};
  PermuteDims(Order{2, 0, 1}, shape, strides);
  CHECK(shape == std::vector<int64_t>{4, 1, 3});
  CHECK(strides == std::vector<int64_t>{1, 0, 4});
  // A permuted layout merges where memory allows: the transpose of a
  // contiguous (4, 3) walked in loop order is one dim of 12.
  std::vector<int64_t> t_shape = {3, 4}, t_strides = {1, 3};
  PermuteDims(Order{1, 0}, t_shape, t_strides);
  BroadcastLayout l = MergeBroadcast(std::vector<std::vector<int64_t>>{t_shape},
                                     std::vector<std::vector<int64_t>>{t_strides}, "k")
                          .value();
  CHECK(l.out_shape == std::vector<int64_t>{12});
  CHECK(l.in_strides[0] == std::vector<int64_t>{1});
}

}  // namespace
}  // namespace dualcast::jit
