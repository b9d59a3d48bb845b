// The implementations the benchmark compares, behind one interface: prepare (untimed), run (timed), collect.
#pragma once

#include <memory>
#include <string>
#include <vector>

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

// handwritten, dualcast-fused, dualcast-recompute (full only), reverse-where.
std::vector<std::unique_ptr<Implementation>> MakeImplementations(Variant variant);

}  // namespace dualcast::bench
