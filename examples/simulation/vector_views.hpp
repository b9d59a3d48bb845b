// In/Out: a solver's std::vector as a 1-D dualcast view, so kernels read and write the solver's own arrays.
#pragma once

#include <cstdint>
#include <vector>

#include <dualcast/dualcast.hpp>

namespace sim {

// Inputs are read-only views; results are written in place (no copy either way).
inline dualcast::Array<double> In(const std::vector<double>& v) {
  return dualcast::Array<double>::view(v.data(), {static_cast<int64_t>(v.size())});
}
inline dualcast::Array<double> Out(std::vector<double>& v) {
  return dualcast::Array<double>::view(v.data(), {static_cast<int64_t>(v.size())});
}

}  // namespace sim
