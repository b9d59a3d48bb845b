// Script and interactive input loops for the REPL (see driver.h).
#include "examples/repl/driver.h"

#include <iostream>
#include <string>

#include "examples/repl/interrupt.h"
#include "examples/repl/lexer.h"

namespace dualcast::repl {

int RunScript(std::istream& in, Session& session, const ScriptOptions& options, std::ostream& echo_out) {
  std::string statement, line;
  int line_number = 0, first_line = 1;
  while (std::getline(in, line)) {
    ThrowIfInterrupted();  // Ctrl-C during an interactive `:load`
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (statement.empty()) first_line = line_number;
    if (options.echo) {
      echo_out << (line.empty() ? "" : statement.empty() ? "> " : "  ") << line << "\n";
      echo_out.flush();
    }
    const bool blank = line.find_first_not_of(" \t") == std::string::npos;
    if (statement.empty() && blank) continue;
    statement += statement.empty() ? line : "\n" + line;
    if (!blank && NeedsMoreInput(statement)) continue;
    const bool ok = session.Run(statement, first_line);
    statement.clear();
    if (!ok && options.strict) return 1;
    if (session.quit_requested()) return 0;
  }
  if (!statement.empty()) {
    // Let the parser report what is missing (it sees the end of input).
    const bool ok = session.Run(statement, first_line);
    if (!ok && options.strict) return 1;
  }
  return 0;
}

int RunInteractive(Session& session, LineEditor& editor) {
  std::cout << "dualcast REPL (float64 arrays, cpu). :help for help, :quit or Ctrl-D to leave.\n";
  InstallInterruptHandler();
  editor.SetCompletions([&session] { return session.CompletionNames(); });
  std::string statement;
  while (!session.quit_requested()) {
    std::optional<std::string> line = editor.ReadLine(statement.empty() ? "dc> " : "..> ");
    if (!line && InterruptPending()) {  // Ctrl-C while typing: drop the statement, prompt again
      ClearInterrupt();
      statement.clear();
      std::cout << "^C" << std::endl;
      continue;
    }
    if (!line) {
      std::cout << "\n";
      break;
    }
    const bool blank = line->find_first_not_of(" \t") == std::string::npos;
    if (statement.empty() && blank) continue;
    statement += statement.empty() ? *line : "\n" + *line;
    if (!blank && NeedsMoreInput(statement)) continue;
    editor.AddHistory(JoinForHistory(statement));
    session.Run(statement, 1);
    statement.clear();
  }
  return 0;
}

}  // namespace dualcast::repl
