// Line editing and persistent history for the interactive REPL (libedit, from Debian's libedit-dev).
//
// libedit gives the arrow keys, Ctrl-R search and Emacs bindings a REPL user
// expects, under a BSD licence, and LLVM already pulls it in (so it adds no
// new dependency). Built without it (DUALCAST_HAVE_LIBEDIT unset), the editor
// falls back to plain line reading with no history.
//
// History: one entry per statement (a multi-line definition is stored as one
// line), kept in $XDG_DATA_HOME/dualcast/repl_history, or
// ~/.local/share/dualcast/repl_history, written after every statement so a
// killed session keeps it.
//
// Ctrl-C while typing: the editor reads through an interruptible getc, so a
// SIGINT (see interrupt.h) ends ReadLine with nullopt and InterruptPending()
// set; the caller drops the unfinished statement and prompts again.
//
// Tab completion: SetCompletions gives a function that lists the names the
// session knows (variables, functions, builtins, `:` commands); Tab completes
// the word before the cursor from it.
//
// Example:
//   LineEditor editor(DefaultHistoryPath());
//   editor.SetCompletions([&] { return session.CompletionNames(); });
//   while (auto line = editor.ReadLine("dc> ")) { ...; editor.AddHistory(*line); }
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dualcast::repl {

// The history file's path ("" when neither XDG_DATA_HOME nor HOME is set).
std::string DefaultHistoryPath();

class LineEditor {
 public:
  // Loads `history_path` (may be "" for no history; a missing file is fine).
  explicit LineEditor(std::string history_path);
  ~LineEditor();
  LineEditor(const LineEditor&) = delete;
  LineEditor& operator=(const LineEditor&) = delete;

  // One line without its newline, or nullopt at end of input (Ctrl-D) or
  // after Ctrl-C (then InterruptPending() is true).
  std::optional<std::string> ReadLine(const std::string& prompt);
  // The candidates Tab completes from (called at each Tab press).
  void SetCompletions(std::function<std::vector<std::string>()> names);
  // Adds an entry and saves the history file (creating its directory).
  void AddHistory(const std::string& entry);

 private:
  std::string history_path_;
};

}  // namespace dualcast::repl
