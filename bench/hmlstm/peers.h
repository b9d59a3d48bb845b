// The framework peers (PyTorch, JAX, Dr.Jit): bench/peers/hmlstm_peers.py kept running as a child process.
//
// The child is started once and driven over a line protocol (documented in
// the script), so peer timing rounds interleave with dualcast's rows. Inputs
// go over as raw float32 files, so every side computes on identical data;
// the child's results come back as files and are checked here against the
// same float64 reference as dualcast's rows, before anything is timed.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/hmlstm/problem.h"

namespace dualcast::bench {

// One peer after a case was set up: verified results or why not.
struct PeerCase {
  std::string impl;
  std::string status = "ok";  // ok, or "not installed: ...", "error: ..."
  double first_call_ms = 0;
  Results results;            // what its first call computed
};

class PeerProcess {
 public:
  // Starts `python` on the peer script. On failure returns nullptr and sets
  // `why` to a message that says how to get the peers.
  static std::unique_ptr<PeerProcess> Start(const std::string& python, int threads, std::string* why);
  ~PeerProcess();
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  // python, numpy, torch, jax, jaxlib, drjit versions ("missing:..." when absent).
  const std::vector<std::pair<std::string, std::string>>& versions() const { return versions_; }

  // Hands over the inputs and runs each peer once (cold): its status, first
  // call time and results.
  std::vector<PeerCase> SetUp(const Problem& p, Variant variant);
  // Untimed calls; false when the child broke.
  bool Warmup(const std::string& impl, int k);
  // k timed calls, ms each; empty when the child broke.
  std::vector<double> Time(const std::string& impl, int k);

  // Where the child's stderr goes (named in error rows).
  const std::string& log_path() const { return log_; }

 private:
  PeerProcess() = default;
  bool Send(const std::string& line);
  bool ReadLine(std::string* line);

  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
  std::string dir_, log_;
  std::vector<std::pair<std::string, std::string>> versions_;
};

// The interpreter the peers run with: `flag` if given, else
// $DUALCAST_PEERS_PYTHON, else $DUALCAST_PEERS_VENV/bin/python, else
// <build>/peers-venv/bin/python, else <source>/build/peers-venv/bin/python
// (scripts/peers' default) when only that one exists.
std::string PeersPython(const std::string& flag);

}  // namespace dualcast::bench
