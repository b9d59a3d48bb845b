// Conversions between absl::Status (internal) and dualcast::Error (public API).
#include "jit/error.h"

#include <string>

namespace dualcast {

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kShape: return "shape";
    case ErrorKind::kType: return "type";
    case ErrorKind::kArity: return "arity";
    case ErrorKind::kTrace: return "trace";
    case ErrorKind::kCompile: return "compile";
    case ErrorKind::kDevice: return "device";
    case ErrorKind::kMemory: return "memory";
    case ErrorKind::kCache: return "cache";
    case ErrorKind::kInvalidArgument: return "invalid argument";
    case ErrorKind::kInternal: return "internal";
  }
  return "unknown";
}

namespace {
// The kind is stored as a payload so that no information is lost in the
// round trip through absl::Status.
constexpr char kKindPayload[] = "dualcast.kind";
}  // namespace

absl::Status MakeStatus(ErrorKind kind, const std::string& message) {
  absl::StatusCode code = absl::StatusCode::kInvalidArgument;
  switch (kind) {
    case ErrorKind::kInternal: code = absl::StatusCode::kInternal; break;
    case ErrorKind::kDevice: code = absl::StatusCode::kUnavailable; break;
    case ErrorKind::kMemory: code = absl::StatusCode::kResourceExhausted; break;
    case ErrorKind::kCompile: code = absl::StatusCode::kAborted; break;
    default: break;
  }
  absl::Status status(code, message);
  status.SetPayload(kKindPayload, absl::Cord(std::to_string(static_cast<int>(kind))));
  return status;
}

void ThrowStatus(const absl::Status& status) {
  ErrorKind kind = ErrorKind::kInternal;
  if (auto payload = status.GetPayload(kKindPayload)) {
    kind = static_cast<ErrorKind>(std::stoi(std::string(*payload)));
  }
  throw Error(kind, std::string(status.message()));
}

}  // namespace dualcast
