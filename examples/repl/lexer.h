// The REPL language's tokens: numbers, names, keywords and operators, each with its byte range.
//
// The lexer is shared by the parser and by the line reader, which asks
// `NeedsMoreInput` whether a statement typed so far is complete (an open
// bracket, a trailing `\`, an operator at the end of a line, an `if` still
// waiting for its `else` or a `let` for its `in` all continue it on the next
// line). `#` starts a comment that runs to the end of the line.
//
// Example:
//   std::vector<Token> t = Lex("y = cell.(z, c) # comment");
//   // Ident "y", Assign, Ident "cell", DotParen, Ident "z", Comma, Ident "c", RParen, End
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "examples/repl/source_error.h"

namespace dualcast::repl {

enum class Tok {
  kNumber, kIdent,
  kDef, kLet, kIn, kIf, kThen, kElse, kAnd, kOr, kNot,
  kLParen, kRParen, kLBracket, kRBracket, kComma, kSemicolon,
  kDotParen,  // ".(" right after a name: Julia-style broadcast call
  kAssign, kEq, kNe, kLt, kLe, kGt, kGe,
  kPlus, kMinus, kStar, kSlash, kCaret,
  kEnd,
};

const char* TokName(Tok tok);

struct Token {
  Tok kind = Tok::kEnd;
  Span span;
  std::string text;   // identifier or number spelling
  double number = 0;  // kNumber: its value
};

// Tokens of `text`, ending with kEnd. Throws SourceError(kParse) on a
// character that starts no token or a malformed number.
std::vector<Token> Lex(std::string_view text);

// Whether `text` (the lines typed so far, joined with '\n') is an unfinished
// statement that should continue on the next line. Never throws: text that
// does not lex is complete (so the parser reports the error).
bool NeedsMoreInput(std::string_view text);

// The statement as one line for the history: comments and `\` line
// continuations removed, lines joined with a space.
std::string JoinForHistory(std::string_view text);

}  // namespace dualcast::repl
