// SourceError: a REPL error that knows where in the statement it happened, and its caret rendering.
//
// Every mistake a user can make at the prompt — a typo, an unknown name, a
// shape mismatch, a wrong number of arguments — must point at the column it
// came from and must never end the session. The parser, the IR lowering and
// the evaluator all throw SourceError with the byte range of the offending
// token or expression; the session catches it, prints it with a caret line
// (clang style) and reads the next statement.
//
// Example:
//   throw SourceError(ErrorCategory::kUnknownName, span, "unknown name 'foo'");
//   // printed by FormatError(...):
//   //   <stdin>:1:5: error: unknown name 'foo'
//   //     y = foo + 1
//   //         ^~~
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dualcast::repl {

// A byte range [begin, end) in the statement text.
struct Span {
  size_t begin = 0;
  size_t end = 0;
};

// What kind of mistake it was; tests assert the category, users read the message.
enum class ErrorCategory {
  kParse,        // the text is not a statement of the language
  kUnknownName,  // a name that is neither a variable, a function nor a builtin
  kArity,        // wrong number of arguments
  kType,         // a boolean where a number is needed, or the other way round
  kShape,        // arrays whose shapes do not broadcast, a non-scalar loss...
  kValue,        // a bad argument value (negative size, ragged literal, ...)
  kRuntime,      // anything else the runtime reported (compile, device, ...)
};

const char* CategoryName(ErrorCategory category);

class SourceError : public std::runtime_error {
 public:
  SourceError(ErrorCategory category, Span span, const std::string& message)
      : std::runtime_error(message), category_(category), span_(span) {}
  ErrorCategory category() const { return category_; }
  Span span() const { return span_; }

 private:
  ErrorCategory category_;
  Span span_;
};

// "origin:line:col: error: message" (origin empty: "error: message"), then the
// source line holding span.begin and a caret line under the span. `first_line`
// is the line number of the statement's first line in its file (1-based).
std::string FormatError(std::string_view origin, int first_line, std::string_view text,
                        const SourceError& error);

}  // namespace dualcast::repl
