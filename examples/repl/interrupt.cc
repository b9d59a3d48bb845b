// The SIGINT flag behind the REPL's Ctrl-C (see interrupt.h).
#include "examples/repl/interrupt.h"

#include <csignal>

namespace dualcast::repl {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;

void OnInterrupt(int) { g_interrupted = 1; }

}  // namespace

void InstallInterruptHandler() {
  struct sigaction action = {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocked read returns EINTR
  sigaction(SIGINT, &action, nullptr);
}

bool InterruptPending() { return g_interrupted != 0; }

void ClearInterrupt() { g_interrupted = 0; }

void ThrowIfInterrupted() {
  if (g_interrupted == 0) return;
  g_interrupted = 0;
  throw Interrupted();
}

}  // namespace dualcast::repl
