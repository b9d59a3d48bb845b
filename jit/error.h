// dualcast::Error: the one exception type of the public API, with a category tests can assert.
#pragma once

#include <stdexcept>
#include <string>

#include "absl/status/status.h"

namespace dualcast {

// Why a call failed. Tests assert the category; users read the message, which
// names the kernel, the argument, the sizes and what to do.
enum class ErrorKind {
  kShape,       // broadcast/shape mismatch, bad rank
  kType,        // wrong dtype or a kernel returning a non-float
  kArity,       // wrong number of arguments
  kTrace,       // tracer limits (too many branches or paths), impure kernels
  kCompile,     // LLVM or NVRTC failed on generated code
  kDevice,      // no CUDA device, driver errors
  kMemory,      // allocation failed
  kCache,       // on-disk cache problems that could not be worked around
  kInvalidArgument,
  kInternal,    // a bug in dualcast: please report
};

const char* ErrorKindName(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Internals return absl::Status; the API boundary turns a failed one into an
// Error. The category travels in the status code (see error.cc for the map).
absl::Status MakeStatus(ErrorKind kind, const std::string& message);
[[noreturn]] void ThrowStatus(const absl::Status& status);
inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) ThrowStatus(status);
}

}  // namespace dualcast
