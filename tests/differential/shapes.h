// Random broadcastable operand layouts for the differential tester: ranks 0-6, size 0/1 dims, strided views.
//
// A kernel's compiled code depends on the broadcast *structure* (merged rank,
// which inputs are stretched where, contiguity), not on sizes. So a
// ShapePattern fixes the structure — rank, which dims each input has and
// which it broadcasts, each input's memory layout (contiguous, transposed,
// padded strides, an expanded stride-0 view) — and DrawShapes picks sizes and
// data for it; several draws of one pattern reuse one compiled kernel. A
// ShapeCase owns its buffers, so a case is a self-contained reproducer.
//
// Example:
//   std::mt19937_64 rng(7);
//   ShapePattern p = RandomPattern(rng, /*num_inputs=*/3);
//   ShapeCase c = DrawShapes(p, rng);
//   double x = c.Value(1, /*out_element=*/5);   // input 1 as seen by output element 5
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace dualcast::difftest {

enum class Layout { kContiguous, kTransposed, kPadded, kExpanded };

struct ShapePattern {
  int rank = 0;                          // of the broadcast result
  std::vector<int> input_rank;           // <= rank (missing leading dims broadcast)
  std::vector<std::vector<bool>> stretched;  // [input][own dim]: size 1 there
  std::vector<Layout> layout;
  int zero_dim = -1;                     // a result dim of size 0, or -1
  std::vector<bool> unit_dim;            // result dims of size 1 (for everyone)
  bool specials = false;                 // NaN, +-Inf, +-0, huge values among the data
};

struct Operand {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // elements; any value on size-1 dims
  int64_t offset = 0;            // first element within `buffer`
  std::vector<double> buffer;    // what the view reads
};

struct ShapeCase {
  std::vector<Operand> inputs;
  std::vector<int64_t> out_shape;

  int64_t num_elements() const;
  // Input i's value at the input element that output element e (row-major) reads.
  double Value(int i, int64_t e) const;
  // Input i's own logical element (row-major over its shape) that output element e reads.
  int64_t InputElement(int i, int64_t e) const;
  // Input i's value at its own logical element k.
  double InputValue(int i, int64_t k) const;
  int64_t InputSize(int i) const;
  // "out [3, 0, 2]; in0 [3, 1, 2] strides [1, 9, 3] +1; ..."
  std::string Describe() const;
};

ShapePattern RandomPattern(std::mt19937_64& rng, int num_inputs);
ShapeCase DrawShapes(const ShapePattern& pattern, std::mt19937_64& rng);

// Every input rank 0 holding the values output element e of `c` reads.
ShapeCase ScalarCase(const ShapeCase& c, int64_t e);
// Smaller variants of `c` (contiguous layouts, sizes cut down, leading dims
// dropped), for shrinking a failing case; the values each reads are kept
// where the element survives.
std::vector<ShapeCase> ShrinkShapes(const ShapeCase& c);


}  // namespace dualcast::difftest
