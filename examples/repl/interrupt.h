// Ctrl-C in the REPL: SIGINT cancels the line being typed or the statement being run, never the session.
//
// The handler only sets a flag (async-signal-safe) and is installed without
// SA_RESTART, so a read blocked in the line editor returns at once. The
// editor then drops the unfinished line; a running statement checks the flag
// at safe points (each evaluated sub-expression, each `:time` repetition,
// each statement of a `:load`) and unwinds with `Interrupted`, which the
// session reports as "interrupted" with its state as before the statement.
// A single kernel launch is not cut short: the check follows it.
//
// Example:
//   InstallInterruptHandler();
//   ...
//   ThrowIfInterrupted();  // in a loop that may run long
#pragma once

#include <stdexcept>

namespace dualcast::repl {

// Thrown at a safe point after Ctrl-C.
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted (Ctrl-C)") {}
};

// Installs the SIGINT handler (interactive sessions only; scripts keep the default).
void InstallInterruptHandler();
// Whether Ctrl-C was pressed since the last ClearInterrupt().
bool InterruptPending();
void ClearInterrupt();
// Throws Interrupted (and clears the flag) when Ctrl-C was pressed.
void ThrowIfInterrupted();

}  // namespace dualcast::repl
