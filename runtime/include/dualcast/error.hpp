// dualcast::Error: the one exception type of the public API, with a category tests can assert.
//
// Every failure a user can cause or meet (bad shapes, a kernel the tracer
// rejects, no CUDA device, a compiler error) is thrown as an Error whose
// message names the kernel, the argument and the sizes and says what to do;
// kind() is the category. This header needs nothing but the standard library.
//
// Example:
//   try {
//     auto y = dualcast::broadcast(k, x, z).eval();
//   } catch (const dualcast::Error& e) {
//     if (e.kind() == dualcast::ErrorKind::kShape) std::puts(e.what());
//   }
#pragma once

#include <stdexcept>
#include <string>

namespace dualcast {

// Why a call failed. Tests assert the category; users read the message, which
// names the kernel, the argument, the sizes and what to do.
enum class ErrorKind {
  kShape,       // broadcast/shape mismatch, bad rank
  kType,        // wrong dtype or a kernel returning a non-float
  kArity,       // wrong number of arguments
  kTrace,       // tracer limits (too many branches or paths), impure kernels
  kCompile,     // LLVM or NVRTC failed on generated code
  kDevice,      // no CUDA device, driver errors, NVRTC missing
  kMemory,      // allocation failed
  kCache,       // on-disk cache problems that could not be worked around
  kInvalidArgument,
  kInternal,    // a bug in dualcast: please report
};

// "shape", "type", ... (lower case, for messages and logs).
const char* ErrorKindName(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace dualcast
