// dualcast-hmlstm's command line: the options, their parsing, and the usage text (exit 0 for --help, 2 for errors).
#pragma once

#include <string>
#include <vector>

#include "bench/hmlstm/problem.h"

namespace dualcast::bench {

struct Options {
  std::vector<long> sizes = {512, 1024, 2048};
  int reps = 20, warmup = 2;
  std::vector<Layout> layouts = {Layout::kRows, Layout::kColumns};
  std::vector<Variant> variants = {Variant::kPaper, Variant::kFull};
  std::vector<std::string> impls;  // empty: all that apply
  std::string json, csv, plot;
  bool roofline = false;  // print the STREAM figures (they are always measured for the metadata)
  bool peers = false;     // run the framework peers (needs scripts/peers)
  std::string python;     // the peers' interpreter; empty: DUALCAST_PEERS_PYTHON or the build's venv
  std::string device = "cpu";
  std::string command_line;
};

// The implementation names --impls accepts, dualcast's side then the peers.
const std::vector<std::string>& CppImplNames();
const std::vector<std::string>& PeerImplNames();

// Parses argv; prints usage and exits 0 on --help, prints the problem and the
// valid values and exits 2 on any bad option.
Options ParseOptions(int argc, char** argv);

}  // namespace dualcast::bench
