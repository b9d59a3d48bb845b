// The internal side of dualcast::Error: absl::Status carrying an ErrorKind, and the conversion at the API boundary.
//
// dualcast::Error and ErrorKind are public (runtime/include/dualcast/error.hpp,
// installed); internal code includes this header, which forwards to it and adds
// the absl::Status helpers consumers never need.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "dualcast/error.hpp"

namespace dualcast {

// Internals return absl::Status; the API boundary turns a failed one into an
// Error. The category travels in the status code (see error.cc for the map).
absl::Status MakeStatus(ErrorKind kind, const std::string& message);
[[noreturn]] void ThrowStatus(const absl::Status& status);
inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) ThrowStatus(status);
}

}  // namespace dualcast
