// Peers (PyTorch, torch.compile, JAX) run by bench/peers/hmlstm_peers.py on the same inputs, merged as rows.
//
// The inputs are handed over as raw float32 files so both sides compute on
// identical data; the script checks its own results against a float64
// reference and reports "not installed" for frameworks it cannot import —
// never a made-up number.
#pragma once

#include <vector>

#include "bench/hmlstm/report.h"

namespace dualcast::bench {

std::vector<Row> RunPeers(const std::vector<long>& sizes, int reps, int warmup);

}  // namespace dualcast::bench
