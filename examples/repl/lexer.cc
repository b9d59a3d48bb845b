// The REPL lexer and the "is this statement finished?" test used for multi-line input.
#include "examples/repl/lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace dualcast::repl {

const char* TokName(Tok tok) {
  switch (tok) {
    case Tok::kNumber: return "a number";
    case Tok::kIdent: return "a name";
    case Tok::kDef: return "'def'";
    case Tok::kLet: return "'let'";
    case Tok::kIn: return "'in'";
    case Tok::kIf: return "'if'";
    case Tok::kThen: return "'then'";
    case Tok::kElse: return "'else'";
    case Tok::kAnd: return "'and'";
    case Tok::kOr: return "'or'";
    case Tok::kNot: return "'not'";
    case Tok::kLParen: return "'('";
    case Tok::kRParen: return "')'";
    case Tok::kLBracket: return "'['";
    case Tok::kRBracket: return "']'";
    case Tok::kComma: return "','";
    case Tok::kSemicolon: return "';'";
    case Tok::kDotParen: return "'.('";
    case Tok::kAssign: return "'='";
    case Tok::kEq: return "'=='";
    case Tok::kNe: return "'!='";
    case Tok::kLt: return "'<'";
    case Tok::kLe: return "'<='";
    case Tok::kGt: return "'>'";
    case Tok::kGe: return "'>='";
    case Tok::kPlus: return "'+'";
    case Tok::kMinus: return "'-'";
    case Tok::kStar: return "'*'";
    case Tok::kSlash: return "'/'";
    case Tok::kCaret: return "'^'";
    case Tok::kEnd: return "end of input";
  }
  return "?";
}

namespace {

Tok Keyword(std::string_view word) {
  if (word == "def") return Tok::kDef;
  if (word == "let") return Tok::kLet;
  if (word == "in") return Tok::kIn;
  if (word == "if") return Tok::kIf;
  if (word == "then") return Tok::kThen;
  if (word == "else") return Tok::kElse;
  if (word == "and") return Tok::kAnd;
  if (word == "or") return Tok::kOr;
  if (word == "not") return Tok::kNot;
  return Tok::kIdent;
}

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::vector<Token> Lex(std::string_view text) {
  std::vector<Token> tokens;
  size_t i = 0;
  const size_t n = text.size();
  auto push = [&](Tok kind, size_t begin, size_t end) {
    Token t;
    t.kind = kind;
    t.span = {begin, end};
    tokens.push_back(std::move(t));
  };
  while (i < n) {
    const char c = text[i];
    if (c == '#') {
      while (i < n && text[i] != '\n') ++i;
      continue;
    }
    if (c == '\\') {  // a line continuation: only whitespace may follow on its line
      size_t j = i + 1;
      while (j < n && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r')) ++j;
      if (j < n && text[j] != '\n' && text[j] != '#') {
        throw SourceError(ErrorCategory::kParse, {i, i + 1},
                          "'\\' continues a statement on the next line; it must end its line");
      }
      i = j;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    const size_t begin = i;
    if (IsDigit(c) || (c == '.' && i + 1 < n && IsDigit(text[i + 1]))) {
      while (i < n && (IsDigit(text[i]) || text[i] == '.')) ++i;
      if (i < n && (text[i] == 'e' || text[i] == 'E')) {
        size_t j = i + 1;
        if (j < n && (text[j] == '+' || text[j] == '-')) ++j;
        if (j < n && IsDigit(text[j])) {
          i = j;
          while (i < n && IsDigit(text[i])) ++i;
        }
      }
      if (i < n && IsIdentChar(text[i])) {
        while (i < n && IsIdentChar(text[i])) ++i;
        throw SourceError(ErrorCategory::kParse, {begin, i}, "malformed number");
      }
      std::string spelling(text.substr(begin, i - begin));
      char* end = nullptr;
      errno = 0;
      const double value = std::strtod(spelling.c_str(), &end);
      if (end != spelling.c_str() + spelling.size()) {
        throw SourceError(ErrorCategory::kParse, {begin, i}, "malformed number '" + spelling + "'");
      }
      push(Tok::kNumber, begin, i);
      tokens.back().number = value;
      tokens.back().text = std::move(spelling);
      continue;
    }
    if (IsIdentStart(c)) {
      while (i < n && IsIdentChar(text[i])) ++i;
      std::string word(text.substr(begin, i - begin));
      push(Keyword(word), begin, i);
      tokens.back().text = std::move(word);
      continue;
    }
    auto two = [&](char next) { return i + 1 < n && text[i + 1] == next; };
    switch (c) {
      case '(': push(Tok::kLParen, i, i + 1); ++i; continue;
      case ')': push(Tok::kRParen, i, i + 1); ++i; continue;
      case '[': push(Tok::kLBracket, i, i + 1); ++i; continue;
      case ']': push(Tok::kRBracket, i, i + 1); ++i; continue;
      case ',': push(Tok::kComma, i, i + 1); ++i; continue;
      case ';': push(Tok::kSemicolon, i, i + 1); ++i; continue;
      case '+': push(Tok::kPlus, i, i + 1); ++i; continue;
      case '-': push(Tok::kMinus, i, i + 1); ++i; continue;
      case '*': push(Tok::kStar, i, i + 1); ++i; continue;
      case '/': push(Tok::kSlash, i, i + 1); ++i; continue;
      case '^': push(Tok::kCaret, i, i + 1); ++i; continue;
      case '.':
        if (two('(')) {
          push(Tok::kDotParen, i, i + 2);
          i += 2;
          continue;
        }
        break;
      case '=':
        if (two('=')) { push(Tok::kEq, i, i + 2); i += 2; continue; }
        push(Tok::kAssign, i, i + 1); ++i; continue;
      case '!':
        if (two('=')) { push(Tok::kNe, i, i + 2); i += 2; continue; }
        break;
      case '<':
        if (two('=')) { push(Tok::kLe, i, i + 2); i += 2; continue; }
        push(Tok::kLt, i, i + 1); ++i; continue;
      case '>':
        if (two('=')) { push(Tok::kGe, i, i + 2); i += 2; continue; }
        push(Tok::kGt, i, i + 1); ++i; continue;
      default:
        break;
    }
    std::string shown = (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
                            ? "byte " + std::to_string(static_cast<unsigned char>(c))
                            : "'" + std::string(1, c) + "'";
    throw SourceError(ErrorCategory::kParse, {i, i + 1},
                      "unexpected character " + shown +
                          (c == '!' ? " (write 'not x', or '!=' for 'not equal')" : ""));
  }
  push(Tok::kEnd, n, n);
  return tokens;
}

bool NeedsMoreInput(std::string_view text) {
  // A trailing backslash (before an optional comment and spaces) always continues.
  {
    size_t end = text.size();
    const size_t last_nl = text.rfind('\n');
    const size_t line_start = last_nl == std::string_view::npos ? 0 : last_nl + 1;
    const size_t hash = text.find('#', line_start);
    if (hash != std::string_view::npos) end = hash;
    while (end > line_start && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
    if (end > line_start && text[end - 1] == '\\') return true;
  }
  if (!text.empty() && text.find_first_not_of(" \t\r\n") != std::string_view::npos &&
      text[text.find_first_not_of(" \t\r\n")] == ':') {
    return false;  // commands are one line (a `:time` statement can use `\`)
  }
  std::vector<Token> tokens;
  try {
    tokens = Lex(text);
  } catch (const SourceError&) {
    return false;
  }
  int depth = 0, ifs = 0, lets = 0;
  for (const Token& t : tokens) {
    switch (t.kind) {
      case Tok::kLParen: case Tok::kLBracket: case Tok::kDotParen: ++depth; break;
      case Tok::kRParen: case Tok::kRBracket: --depth; break;
      case Tok::kIf: ++ifs; break;
      case Tok::kElse: --ifs; break;
      case Tok::kLet: ++lets; break;
      case Tok::kIn: --lets; break;
      default: break;
    }
    if (depth < 0) return false;  // a stray closer: let the parser say so
  }
  if (depth > 0 || ifs > 0 || lets > 0) return true;
  if (tokens.size() < 2) return false;
  switch (tokens[tokens.size() - 2].kind) {
    case Tok::kAssign: case Tok::kEq: case Tok::kNe: case Tok::kLt: case Tok::kLe:
    case Tok::kGt: case Tok::kGe: case Tok::kPlus: case Tok::kMinus: case Tok::kStar:
    case Tok::kSlash: case Tok::kCaret: case Tok::kComma: case Tok::kAnd: case Tok::kOr:
    case Tok::kNot: case Tok::kThen: case Tok::kElse: case Tok::kIn: case Tok::kIf:
    case Tok::kLet: case Tok::kDef:
      return true;
    default:
      return false;
  }
}

std::string JoinForHistory(std::string_view text) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    const size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
    if (!line.empty() && line.back() == '\\') line.remove_suffix(1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
    size_t lead = 0;
    while (lead < line.size() && std::isspace(static_cast<unsigned char>(line[lead]))) ++lead;
    line = line.substr(lead);
    if (!line.empty()) {
      if (!out.empty()) out += ' ';
      out += std::string(line);
    }
    start = end + 1;
  }
  return out;
}

}  // namespace dualcast::repl
