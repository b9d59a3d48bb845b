// LineEditor: libedit's readline interface plus the history file under the user's data directory.
#include "examples/repl/line_editor.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#if DUALCAST_HAVE_LIBEDIT
#include <editline/readline.h>
#endif

namespace dualcast::repl {

std::string DefaultHistoryPath() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/dualcast/repl_history";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.local/share/dualcast/repl_history";
  return "";
}

LineEditor::LineEditor(std::string history_path) : history_path_(std::move(history_path)) {
#if DUALCAST_HAVE_LIBEDIT
  using_history();
  stifle_history(2000);
  if (!history_path_.empty()) read_history(history_path_.c_str());
#endif
}

LineEditor::~LineEditor() = default;

std::optional<std::string> LineEditor::ReadLine(const std::string& prompt) {
#if DUALCAST_HAVE_LIBEDIT
  char* line = readline(prompt.c_str());
  if (line == nullptr) return std::nullopt;
  std::string out(line);
  std::free(line);
  return out;
#else
  std::cout << prompt << std::flush;
  std::string out;
  if (!std::getline(std::cin, out)) return std::nullopt;
  return out;
#endif
}

void LineEditor::AddHistory(const std::string& entry) {
#if DUALCAST_HAVE_LIBEDIT
  if (entry.empty()) return;
  add_history(entry.c_str());
  if (history_path_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(history_path_).parent_path(), ec);
  if (write_history(history_path_.c_str()) != 0) {
    std::cerr << "warning: cannot write the history file " << history_path_ << "\n";
  }
#else
  (void)entry;
#endif
}

}  // namespace dualcast::repl
