// LineEditor: libedit's readline interface plus the history file under the user's data directory.
#include "examples/repl/line_editor.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "examples/repl/interrupt.h"

#if DUALCAST_HAVE_LIBEDIT
#include <editline/readline.h>
#endif

namespace dualcast::repl {
namespace {

// libedit's callbacks are plain functions: the one editor's completion source lives here.
std::function<std::vector<std::string>()>* g_completions = nullptr;

#if DUALCAST_HAVE_LIBEDIT
// One byte from the terminal; EOF on end of input or when Ctrl-C interrupted the read.
int InterruptibleGetc(FILE* in) {
  for (;;) {
    unsigned char c;
    const ssize_t n = read(fileno(in), &c, 1);
    if (n == 1) return c;
    if (n < 0 && errno == EINTR && !InterruptPending()) continue;
    return EOF;
  }
}

char* CompletionCandidate(const char* text, int state) {
  static std::vector<std::string> matches;
  static size_t next = 0;
  if (state == 0) {
    matches.clear();
    next = 0;
    if (g_completions != nullptr && *g_completions) {
      const size_t len = std::strlen(text);
      for (const std::string& name : (*g_completions)()) {
        if (name.compare(0, len, text) == 0) matches.push_back(name);
      }
    }
  }
  if (next >= matches.size()) return nullptr;
  return strdup(matches[next++].c_str());
}

char** Complete(const char* text, int, int) {
  rl_attempted_completion_over = 1;  // never fall back to file names
  // A command takes an argument (":load " + file); a name is followed by "(", ".(" or an operator.
  rl_completion_append_character = text[0] == ':' ? ' ' : '\0';
  return rl_completion_matches(text, CompletionCandidate);
}
#endif

}  // namespace

std::string DefaultHistoryPath() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/dualcast/repl_history";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.local/share/dualcast/repl_history";
  return "";
}

LineEditor::LineEditor(std::string history_path) : history_path_(std::move(history_path)) {
#if DUALCAST_HAVE_LIBEDIT
  rl_catch_signals = 0;  // our SIGINT handler decides (interrupt.h)
  rl_getc_function = InterruptibleGetc;
  rl_attempted_completion_function = Complete;
  using_history();
  stifle_history(2000);
  if (!history_path_.empty()) read_history(history_path_.c_str());
#endif
}

LineEditor::~LineEditor() {
  delete g_completions;
  g_completions = nullptr;
}

void LineEditor::SetCompletions(std::function<std::vector<std::string>()> names) {
  delete g_completions;
  g_completions = new std::function<std::vector<std::string>()>(std::move(names));
}

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
  if (!std::getline(std::cin, out)) {
    if (InterruptPending()) std::cin.clear();  // Ctrl-C interrupted the read, not end of input
    return std::nullopt;
  }
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
  // write_history truncates before it writes: written in place, a crash (or a
  // reader, or a second session starting) mid-write would see a cut history.
  // A private file renamed over the old one is replaced all at once.
  // A linked history file (a dotfiles repository) keeps its link: the target is replaced.
  std::filesystem::path target = history_path_;
  if (std::filesystem::is_symlink(target, ec)) target = std::filesystem::canonical(target, ec);
  if (ec) target = history_path_;
  const std::string staged = target.string() + "." + std::to_string(getpid()) + ".tmp";
  if (write_history(staged.c_str()) != 0) {
    std::filesystem::remove(staged, ec);
    std::cerr << "warning: cannot write the history file " << history_path_ << "\n";
    return;
  }
  std::filesystem::rename(staged, target, ec);
  if (ec) {
    std::filesystem::remove(staged, ec);
    std::cerr << "warning: cannot write the history file " << history_path_ << "\n";
  }
#else
  (void)entry;
#endif
}

}  // namespace dualcast::repl
