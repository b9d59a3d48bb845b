// Random broadcastable operand layouts (see shapes.h).
#include "differential/shapes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dualcast/detail/array_impl.hpp"

namespace dualcast::difftest {

namespace {

int64_t Product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// Buffer length a view needs (at least one element, so its pointer is real).
int64_t Extent(const Operand& op) {
  int64_t last = op.offset;
  for (size_t d = 0; d < op.shape.size(); ++d) {
    if (op.shape[d] == 0) return op.offset + 1;
    last += (op.shape[d] - 1) * op.strides[d];
  }
  return last + 1;
}

double SpecialValue(std::mt19937_64& rng) {
  static const double kSpecials[] = {std::numeric_limits<double>::quiet_NaN(),
                                     std::numeric_limits<double>::infinity(),
                                     -std::numeric_limits<double>::infinity(),
                                     0.0, -0.0, 1e300, -1e300, 1e-310};
  return kSpecials[rng() % std::size(kSpecials)];
}

// A contiguous operand holding `values` (row-major over `shape`).
Operand Contiguous(std::vector<int64_t> shape, std::vector<double> values) {
  Operand op;
  op.strides = dualcast::detail::ContiguousStrides(shape);
  op.shape = std::move(shape);
  op.buffer = std::move(values);
  if (op.buffer.empty()) op.buffer.push_back(0);
  return op;
}

std::vector<double> LogicalValues(const ShapeCase& c, int i) {
  std::vector<double> v(c.InputSize(i));
  for (int64_t k = 0; k < static_cast<int64_t>(v.size()); ++k) v[k] = c.InputValue(i, k);
  return v;
}

}  // namespace

int64_t ShapeCase::num_elements() const { return Product(out_shape); }

int64_t ShapeCase::InputSize(int i) const { return Product(inputs[i].shape); }

int64_t ShapeCase::InputElement(int i, int64_t e) const {
  const Operand& op = inputs[i];
  const int R = static_cast<int>(out_shape.size()), r = static_cast<int>(op.shape.size());
  int64_t k = 0, scale = 1;
  for (int d = R - 1; d >= 0; --d) {
    int64_t idx = e % out_shape[d];
    e /= out_shape[d];
    int own = d - (R - r);
    if (own < 0) continue;
    if (op.shape[own] != 1) k += idx * scale;
    scale *= op.shape[own];
  }
  return k;
}

double ShapeCase::InputValue(int i, int64_t k) const {
  const Operand& op = inputs[i];
  int64_t addr = op.offset;
  for (size_t d = op.shape.size(); d-- > 0;) {
    int64_t idx = k % op.shape[d];
    k /= op.shape[d];
    addr += idx * op.strides[d];
  }
  return op.buffer[addr];
}

double ShapeCase::Value(int i, int64_t e) const { return InputValue(i, InputElement(i, e)); }

std::string ShapeCase::Describe() const {
  std::string s = absl::StrCat("out [", absl::StrJoin(out_shape, ", "), "]");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Operand& op = inputs[i];
    absl::StrAppend(&s, "; in", i, " [", absl::StrJoin(op.shape, ", "), "] strides [",
                    absl::StrJoin(op.strides, ", "), "]");
    if (op.offset) absl::StrAppend(&s, " +", op.offset);
  }
  return s;
}

ShapePattern RandomPattern(std::mt19937_64& rng, int num_inputs) {
  std::uniform_int_distribution<int> pct(0, 99);
  ShapePattern p;
  static const int kRankWeights[] = {8, 20, 27, 20, 10, 8, 7};  // ranks 0..6
  int r = pct(rng), acc = 0;
  for (p.rank = 0; p.rank < 6; ++p.rank) {
    acc += kRankWeights[p.rank];
    if (r < acc) break;
  }
  p.unit_dim.assign(p.rank, false);
  for (int d = 0; d < p.rank; ++d) p.unit_dim[d] = pct(rng) < 8;
  if (p.rank > 0 && pct(rng) < 7) p.zero_dim = static_cast<int>(rng() % p.rank);
  p.specials = pct(rng) < 8;
  for (int i = 0; i < num_inputs; ++i) {
    // Input 0 has the full rank, so the result keeps it.
    int own = i == 0 || pct(rng) < 65 ? p.rank : static_cast<int>(rng() % (p.rank + 1));
    p.input_rank.push_back(own);
    std::vector<bool> stretched(own);
    for (int d = 0; d < own; ++d) stretched[d] = pct(rng) < 25;
    p.stretched.push_back(stretched);
    int l = pct(rng);
    p.layout.push_back(l < 50 ? Layout::kContiguous
                       : l < 72 ? Layout::kTransposed
                       : l < 92 ? Layout::kPadded
                                : Layout::kExpanded);
  }
  return p;
}

ShapeCase DrawShapes(const ShapePattern& p, std::mt19937_64& rng) {
  ShapeCase c;
  const int R = p.rank;
  const int64_t max_size = R <= 2 ? 7 : R == 3 ? 5 : 3;
  std::uniform_int_distribution<int64_t> size(2, max_size);
  c.out_shape.assign(R, 1);
  for (int d = 0; d < R; ++d) {
    if (!p.unit_dim[d]) c.out_shape[d] = size(rng);
  }
  while (Product(c.out_shape) > 300) {
    auto big = std::max_element(c.out_shape.begin(), c.out_shape.end());
    *big -= 1;
  }
  if (p.zero_dim >= 0) c.out_shape[p.zero_dim] = 0;
  std::uniform_real_distribution<double> value(-2, 2);
  std::uniform_int_distribution<int> pct(0, 99);
  for (size_t i = 0; i < p.input_rank.size(); ++i) {
    Operand op;
    const int r = p.input_rank[i];
    for (int d = 0; d < r; ++d) op.shape.push_back(p.stretched[i][d] ? 1 : c.out_shape[R - r + d]);
    op.strides = dualcast::detail::ContiguousStrides(op.shape);
    switch (p.layout[i]) {
      case Layout::kContiguous: break;
      case Layout::kTransposed: {  // memory holds the dims in a shuffled order
        std::vector<int> perm(r);
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        std::vector<int64_t> mem_shape(r);
        for (int k = 0; k < r; ++k) mem_shape[k] = op.shape[perm[k]];
        std::vector<int64_t> mem_strides = dualcast::detail::ContiguousStrides(mem_shape);
        for (int k = 0; k < r; ++k) op.strides[perm[k]] = mem_strides[k];
        break;
      }
      case Layout::kPadded: {  // rows longer than the view: gaps between elements
        std::vector<int64_t> padded = op.shape;
        for (int64_t& s : padded) s += static_cast<int64_t>(rng() % 3);
        op.strides = dualcast::detail::ContiguousStrides(padded);
        break;
      }
      case Layout::kExpanded: {  // one dim re-reads the same memory (stride 0)
        for (int d = 0; d < r; ++d) {
          if (op.shape[d] > 1) {
            op.strides[d] = 0;
            break;
          }
        }
        break;
      }
    }
    for (int d = 0; d < r; ++d) {
      if (op.shape[d] == 1) op.strides[d] = static_cast<int64_t>(rng() % 10);  // never read
    }
    op.offset = static_cast<int64_t>(rng() % 3);
    op.buffer.resize(Extent(op));
    for (double& v : op.buffer) v = p.specials && pct(rng) < 15 ? SpecialValue(rng) : value(rng);
    c.inputs.push_back(std::move(op));
  }
  // The result is what NumPy makes of the inputs: a dim no input has is gone,
  // a dim every input stretches has size 1.
  size_t rank = 0;
  for (const Operand& op : c.inputs) rank = std::max(rank, op.shape.size());
  std::vector<int64_t> out(rank, 1);
  for (const Operand& op : c.inputs) {
    for (size_t d = 0; d < op.shape.size(); ++d) {
      if (op.shape[d] != 1) out[rank - op.shape.size() + d] = op.shape[d];
    }
  }
  c.out_shape = std::move(out);
  return c;
}

ShapeCase ScalarCase(const ShapeCase& c, int64_t e) {
  ShapeCase s;
  for (int i = 0; i < static_cast<int>(c.inputs.size()); ++i) {
    s.inputs.push_back(Contiguous({}, {c.Value(i, e)}));
  }
  return s;
}

std::vector<ShapeCase> ShrinkShapes(const ShapeCase& c) {
  std::vector<ShapeCase> out;
  const int R = static_cast<int>(c.out_shape.size());
  const int n = static_cast<int>(c.inputs.size());
  // Same values, every input contiguous.
  {
    ShapeCase s = c;
    bool changed = false;
    for (int i = 0; i < n; ++i) {
      Operand flat = Contiguous(c.inputs[i].shape, LogicalValues(c, i));
      changed |= flat.strides != c.inputs[i].strides || c.inputs[i].offset != 0;
      s.inputs[i] = std::move(flat);
    }
    if (changed) out.push_back(std::move(s));
  }
  // One result dim cut down to its first index (or its first half).
  for (int d = 0; d < R; ++d) {
    for (int64_t keep : {int64_t{1}, c.out_shape[d] / 2}) {
      if (keep < 1 || keep >= c.out_shape[d]) continue;
      ShapeCase s;
      s.out_shape = c.out_shape;
      s.out_shape[d] = keep;
      for (int i = 0; i < n; ++i) {
        const Operand& op = c.inputs[i];
        const int own = d - (R - static_cast<int>(op.shape.size()));
        std::vector<int64_t> shape = op.shape;
        if (own >= 0 && shape[own] != 1) shape[own] = keep;
        // Logical values of the kept sub-box, row-major.
        std::vector<double> values(std::max<int64_t>(Product(shape), 0));
        for (int64_t k = 0; k < static_cast<int64_t>(values.size()); ++k) {
          int64_t rest = k, src = 0, scale = 1;
          for (size_t dd = shape.size(); dd-- > 0;) {
            int64_t idx = rest % shape[dd];
            rest /= shape[dd];
            src += idx * scale;
            scale *= op.shape[dd];
          }
          values[k] = c.InputValue(i, src);
        }
        s.inputs.push_back(Contiguous(shape, std::move(values)));
      }
      out.push_back(std::move(s));
    }
  }
  // A leading result dim of size 1 dropped.
  if (R > 0 && c.out_shape[0] == 1) {
    ShapeCase s = c;
    s.out_shape.erase(s.out_shape.begin());
    for (Operand& op : s.inputs) {
      if (static_cast<int>(op.shape.size()) == R) {
        op.shape.erase(op.shape.begin());
        op.strides.erase(op.strides.begin());
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace dualcast::difftest
