// A Tape's lifetime at the edges: a static Tape at exit, and one destroyed on the wrong thread.
//
// Each case runs in a forked child, whose exit status and output the parent
// reads. Before the fix, the static Tape crashed the process at exit (it read
// its thread's list of tapes, already destroyed) before stdio was flushed,
// and a Tape destroyed on another thread corrupted the heap far from there.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "doctest/doctest.h"
#include "dualcast/dualcast.hpp"

namespace dualcast {
namespace {

struct ChildResult {
  int status = 0;
  std::string output;  // stdout and stderr
};

// Runs `body` in a child process whose stdout and stderr go to a pipe; the child exits with exit(0).
ChildResult RunInChild(const std::function<void()>& body) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  std::fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    body();
    std::exit(0);  // runs thread_local, then static destructors
  }
  close(fds[1]);
  ChildResult r;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) r.output.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  waitpid(pid, &r.status, 0);
  return r;
}

TEST_CASE("a static Tape: the process exits cleanly, its buffered output flushed") {
  const ChildResult r = RunInChild([] {
    static Tape tape;
    Array<double> x = Array<double>::from({1, 2}, {2});
    CHECK(tape.gradient(sum(x * x), {x})[0].to_vector() == std::vector<double>{2, 4});
    std::printf("result: 42\n");  // buffered: a pipe is not a terminal
  });
  CHECK(WIFEXITED(r.status));
  CHECK(WEXITSTATUS(r.status) == 0);
  CHECK(r.output.find("result: 42") != std::string::npos);
}

// ThreadSanitizer does not support starting threads in a child forked from
// a multi-threaded process (the thread pool runs), which this case needs.
#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadsAfterFork = false;
#else
constexpr bool kThreadsAfterFork = true;
#endif

TEST_CASE("a Tape destroyed on another thread stops the process with a message, not a corrupt heap" *
          doctest::skip(!kThreadsAfterFork)) {
  const ChildResult r = RunInChild([] {
    auto tape = std::make_unique<Tape>();
    std::thread([&] { tape.reset(); }).join();
  });
  CHECK(WIFSIGNALED(r.status));
  CHECK(WTERMSIG(r.status) == SIGABRT);
  CHECK(r.output.find("a Tape was destroyed on a thread other than the one that created it") !=
        std::string::npos);
}

}  // namespace
}  // namespace dualcast
