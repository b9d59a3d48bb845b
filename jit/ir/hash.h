// A structural hash of a Function: equal for equal structure, stable across runs and machines.
//
// It ignores the function's name and its internal value numbering (values are
// numbered in execution order, as the printer does), so tracing the same
// lambda twice gives the same hash. It is part of the kernel cache key, in
// memory and on disk, so it must not use a per-process seed (absl::Hash does).
#pragma once

#include <cstdint>

#include "jit/ir/ir.h"

namespace dualcast::jit {

uint64_t StructuralHash(const Function& f);

// The seedless 64-bit mixer behind StructuralHash and KernelSpec::Key
// (splitmix64-style): the same words give the same hash in every process and
// on every machine, so it may key caches on disk.
class StableMixer {
 public:
  void Mix(uint64_t x) {
    h_ ^= x + 0x9e3779b97f4a7c15ULL + (h_ << 6) + (h_ >> 2);
    h_ *= 0xbf58476d1ce4e5b9ULL;
    h_ ^= h_ >> 31;
  }
  uint64_t Finish() const {
    uint64_t z = h_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t h_ = 0x6475616c63617374ULL;  // "dualcast"
};

}  // namespace dualcast::jit
