// SourceError rendering: "file:line:col: error: ..." plus the source line and a caret under the span.
#include "examples/repl/source_error.h"

#include <algorithm>

namespace dualcast::repl {

const char* CategoryName(ErrorCategory category) {
  switch (category) {
    case ErrorCategory::kParse: return "parse error";
    case ErrorCategory::kUnknownName: return "unknown name";
    case ErrorCategory::kArity: return "wrong arity";
    case ErrorCategory::kType: return "type error";
    case ErrorCategory::kShape: return "shape error";
    case ErrorCategory::kValue: return "value error";
    case ErrorCategory::kRuntime: return "runtime error";
  }
  return "error";
}

std::string FormatError(std::string_view origin, int first_line, std::string_view text,
                        const SourceError& error) {
  const size_t begin = std::min(error.span().begin, text.size());
  size_t line_start = 0;
  if (begin > 0) {
    const size_t nl = text.rfind('\n', begin - 1);
    if (nl != std::string_view::npos) line_start = nl + 1;
  }
  size_t line_end = text.find('\n', line_start);
  if (line_end == std::string_view::npos) line_end = text.size();
  const int line =
      first_line + static_cast<int>(std::count(text.begin(), text.begin() + line_start, '\n'));
  const size_t column = begin - line_start;

  std::string out;
  if (!origin.empty()) {
    out += std::string(origin) + ":" + std::to_string(line) + ":" + std::to_string(column + 1) + ": ";
  }
  out += "error: ";
  out += error.what();
  out += "\n  ";
  out += std::string(text.substr(line_start, line_end - line_start));
  out += "\n  ";
  out += std::string(column, ' ');
  out += '^';
  const size_t end = std::min(error.span().end, line_end);
  for (size_t i = begin + 1; i < end; ++i) out += '~';
  out += '\n';
  return out;
}

}  // namespace dualcast::repl
