// dualcast-repl: the REPL-style driver (interactive, or a script from a file or stdin).
//
// Usage: dualcast-repl [--strict] [--echo] [script.dc | -]
//   no script and a terminal on stdin: interactive (line editing, history);
//   otherwise statements are read from the file (or stdin) and results printed.
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iostream>

#include "examples/repl/driver.h"
#include "examples/repl/line_editor.h"
#include "examples/repl/session.h"

namespace {

void Usage(std::ostream& os) {
  os << "usage: dualcast-repl [--strict] [--echo] [script.dc | -]\n"
        "  --strict  exit with status 1 at the first error (scripts)\n"
        "  --echo    print each input line before its result (transcripts)\n"
        "With no script and a terminal, starts the interactive REPL (:help inside).\n";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dualcast::repl;
  ScriptOptions options;
  std::string script;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--strict") == 0) {
      options.strict = true;
    } else if (std::strcmp(argv[i], "--echo") == 0) {
      options.echo = true;
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      Usage(std::cout);
      return 0;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      std::cerr << "dualcast-repl: unknown option " << argv[i] << "\n";
      Usage(std::cerr);
      return 2;
    } else if (script.empty()) {
      script = argv[i];
    } else {
      Usage(std::cerr);
      return 2;
    }
  }

  if (!script.empty() && script != "-") {
    std::ifstream in(script);
    if (!in) {
      std::cerr << "dualcast-repl: cannot open " << script << ": " << std::strerror(errno) << "\n";
      return 2;
    }
    Session session(std::cout, std::cerr, {.origin = script});
    return RunScript(in, session, options, std::cout);
  }
  if (script.empty() && isatty(STDIN_FILENO)) {
    Session session(std::cout, std::cerr);
    LineEditor editor(DefaultHistoryPath());
    return RunInteractive(session, editor);
  }
  Session session(std::cout, std::cerr, {.origin = "<stdin>"});
  return RunScript(std::cin, session, options, std::cout);
}
