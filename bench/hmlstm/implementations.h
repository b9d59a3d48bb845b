// The implementations the benchmark compares, behind one interface: prepare (untimed), run (timed), collect.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <dualcast/kernel.hpp>

#include "bench/hmlstm/problem.h"

namespace dualcast::bench {

class Implementation {
 public:
  virtual ~Implementation() = default;
  virtual std::string name() const = 0;
  // Empty when it can run here; otherwise why not ("not installed", ...).
  virtual std::string unavailable() const { return ""; }
  virtual void Prepare(const Problem& p) = 0;
  virtual void Run() = 0;
  virtual Results Collect() = 0;
};

// The HM-LSTM cell as a user registers it (one kernel per process).
Kernel HmlstmCell();
// The same cell traced with TraceOptions::fast_math (fast_sigmoid, fast_tanh): the hand loop's math.
Kernel HmlstmCellFast();

// paper: handwritten, dualcast-fused (partials), reverse-where;
// full: handwritten, dualcast (default Tape), dualcast-fused, dualcast-recompute, reverse-where.
std::vector<std::unique_ptr<Implementation>> MakeImplementations(Variant variant);

}  // namespace dualcast::bench
