// What a result file must say about its run: revision, versions, compiler, machine, bandwidth, timing settings.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/hmlstm/roofline.h"

namespace dualcast::bench {

struct Metadata {
  std::string git_revision;      // "abc1234" or "abc1234-dirty"; "unknown" outside a checkout
  std::string dualcast_version;
  std::string compiler;          // of this binary (and the handwritten loop)
  std::string llvm_version;      // dualcast's JIT
  std::string cpu_model;         // /proc/cpuinfo
  std::string handwritten_isa;   // what the hand loop dispatched to: avx512, avx2, generic
  std::string date_utc;
  std::string command_line;
  int threads = 0;
  Bandwidth stream;  // best of a probe before and after the rows
  int reps = 0, warmup = 0, rounds = 0;
  double settle_ms = 0;  // untimed calls opening each row's share of a round (CPU run)
  std::string dtype = "float32";
  std::string device;
  std::vector<std::pair<std::string, std::string>> peer_versions;  // python, numpy, torch, ...
  std::string notes;
  // /proc/loadavg (1, 5, 15 min) when the run started and ended: how shared the machine was.
  std::string load_start, load_end;
  // "5 compiled, 0 loaded from the disk cache": an A/B of two builds (or of an environment
  // switch) that loads kernels from DUALCAST_CACHE_DIR compares a kernel with itself.
  std::string dualcast_kernels;
};

// "1.23 0.98 0.50", or "unknown".
std::string LoadAverage();

// Everything that can be read off this process and its checkout.
Metadata CollectMetadata(const std::string& command_line);

}  // namespace dualcast::bench
