// The HM-LSTM cell-update problem of Revels et al. 2018: inputs, the float64 reference, result checks.
//
// Everything an implementation needs to be run and judged on identical data
// (see /shared/HMLSTM.md): z and zb are 0/1 vectors broadcast per row
// ("rows", shape (n, 1)) or per column ("columns", shape (1, n)); rows/columns
// 0, 1, 2 are forced to FLUSH, COPY, UPDATE so every branch is exercised.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dualcast::bench {

enum class Layout { kRows, kColumns };
const char* LayoutName(Layout layout);

struct Problem {
  int64_t n = 0;
  Layout layout = Layout::kRows;
  // float32 inputs, row-major n x n, and the n-element z, zb.
  std::vector<float> c_prev, f, i, g, cbar, z, zb;
  // Index into z/zb for element (r, k).
  int64_t flag_index(int64_t r, int64_t k) const { return layout == Layout::kRows ? r : k; }
  std::vector<int64_t> flag_shape() const {
    return layout == Layout::kRows ? std::vector<int64_t>{n, 1} : std::vector<int64_t>{1, n};
  }
};

Problem MakeProblem(int64_t n, Layout layout, uint64_t seed = 2018);

// What an implementation produces. The paper variant fills only d_*; the full
// variant fills c and the six gradients of sum(cbar .* c).
struct Results {
  std::vector<float> c;                              // value (full)
  std::vector<float> d_cprev, d_f, d_i, d_g;         // paper: dc/dx; full: x̄
  std::vector<float> d_z, d_zb;                      // full: n-element gradients of z, zb
};

enum class Variant { kPaper, kFull };
const char* VariantName(Variant variant);

// The float64 reference of `variant`, computed from the float32 inputs.
struct Reference {
  std::vector<double> c, d_cprev, d_f, d_i, d_g, d_z, d_zb;
};
Reference ComputeReference(const Problem& p, Variant variant);

// max over every produced element of |got - ref| / max(|ref|, 1): relative
// error, absolute below 1 (partials are O(1)); +inf when a result is missing.
double MaxError(const Results& got, const Reference& ref, Variant variant);

// The byte floor of HMLSTM.md: paper 32 n², full (read c_prev, f, i, g, cbar;
// write c and four n x n gradients) 40 n², plus the z/zb vectors.
double FloorBytes(int64_t n, Variant variant);

}  // namespace dualcast::bench
