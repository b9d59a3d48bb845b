// The GPU run's hand-written comparator: the paper variant's four partials in one CUDA kernel a person would write.
//
// What the `handwritten` row is on the CPU, on the GPU: the same four partial
// arrays dc/dc_prev, dc/df, dc/di, dc/dg, written by plain CUDA C (one thread
// per 4 consecutive elements of a row, 16-byte loads and stores, the branch
// taken per element, CUDA's expf/tanhf, slopes s(1 - s) and 1 - t^2), compiled
// by the same NVRTC with the same options as dualcast's kernels and queued on
// the same stream, so `slower than hand` on the GPU compares code generation
// with what a performance engineer writes by hand. Rows and columns layouts;
// n must be a multiple of 4 (else the row says why it was not run).
//
// Example:
//   absl::StatusOr<std::unique_ptr<HandwrittenCuda>> hand = HandwrittenCuda::Create(problem);
//   (*hand)->Launch();                 // queue one call
//   Results got = (*hand)->Collect();  // waits, copies the partials back
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "bench/hmlstm/problem.h"

namespace dualcast::bench {

class HandwrittenCuda {
 public:
  // Compiles the kernel (once per process), allocates and uploads `p` on cuda:0.
  static absl::StatusOr<std::unique_ptr<HandwrittenCuda>> Create(const Problem& p);
  ~HandwrittenCuda();
  HandwrittenCuda(const HandwrittenCuda&) = delete;
  HandwrittenCuda& operator=(const HandwrittenCuda&) = delete;

  absl::Status Launch();
  absl::Status Wait();  // until the queued launches have run
  absl::StatusOr<Results> Collect();

 private:
  HandwrittenCuda() = default;
  int64_t n_ = 0;
  bool columns_ = false;
  // z, zb (n each), then c_prev, f, i, g and the four partials (n x n each).
  uint64_t z_ = 0, zb_ = 0, in_[4] = {}, out_[4] = {};
};

}  // namespace dualcast::bench
