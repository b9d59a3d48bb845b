// The REPL's input loops: a script (file or stdin) and the interactive terminal, both statement by statement.
//
// Both loops gather lines until lexer.h's NeedsMoreInput says the statement
// is complete (trailing '\', open bracket, dangling operator or an 'if'
// without its 'else'); an empty line always ends it (so a forgotten 'else'
// or ')' is reported instead of waiting forever). Then it goes to Session::Run with its first line
// number, so errors name "file:line:col".
//
// Exit status of a script: 0 when it ran to the end (errors were reported
// and the session went on); with `strict`, 1 at the first error; 0 on
// `:quit`. End of input inside an unfinished statement is an error.
//
// Example:
//   std::ifstream in("hmlstm.dc");
//   Session s(std::cout, std::cerr, {.origin = "hmlstm.dc"});
//   int status = RunScript(in, s, {.strict = true});
#pragma once

#include <istream>
#include <ostream>

#include "examples/repl/line_editor.h"
#include "examples/repl/session.h"

namespace dualcast::repl {

struct ScriptOptions {
  bool strict = false;  // stop with status 1 at the first error
  bool echo = false;    // print each input line ("> " + statement, "  " + continuation) first
};

int RunScript(std::istream& in, Session& session, const ScriptOptions& options, std::ostream& echo_out);

// The interactive loop with prompts "dc> " and "..> " (continuation). Returns 0.
int RunInteractive(Session& session, LineEditor& editor);

}  // namespace dualcast::repl
