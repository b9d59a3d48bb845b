// Helpers for the bad-input catalogue: caller buffers that must come back untouched, byte for byte.
//
// Every bad-input case hands the library caller-owned destinations (value and
// partial outputs through PartialsOptions, gradient buffers through
// Tape::accumulate_gradient), provokes one error, asserts its ErrorKind, and
// then checks that not one byte of those buffers changed: "a failed call
// leaves user buffers untouched" (DESIGN.md).
//
// Example:
//   Guarded<double> out({2, 3});                 // filled with a marker pattern
//   std::optional<Error> e = Catch([&] { partials(k, {a, b}, options); });
//   REQUIRE(e);
//   CHECK(e->kind() == ErrorKind::kShape);
//   CHECK(out.untouched());
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "dualcast/dualcast.hpp"

namespace dualcast::bad_inputs {

// A caller buffer viewed as an Array, with a copy of its bytes to compare against.
template <class T>
struct Guarded {
  std::vector<T> buffer;
  std::vector<T> original;
  Array<T> view;

  explicit Guarded(const Shape& shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    buffer.resize(static_cast<size_t>(n) + 1);  // +1: never empty, so the pointer is real
    for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<T>(1000.25 + static_cast<double>(i));
    original = buffer;
    view = Array<T>::view(buffer.data(), shape);
  }
  bool untouched() const {
    return std::memcmp(buffer.data(), original.data(), buffer.size() * sizeof(T)) == 0;
  }
};

// The dualcast::Error `f` throws, or nothing when it returns normally.
template <class F>
std::optional<Error> Catch(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

// Catch(f) run in a forked child, for a case whose bug was a crash (a write
// out of bounds): the crash fails the case instead of ending the test run.
// The child sends the Error's kind and message back through a pipe; a child
// killed by a signal, or one that threw something else, is a failed check.
template <class F>
std::optional<Error> CatchInChild(F&& f) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    int code = 4;  // f returned: no error
    std::string report;
    try {
      f();
    } catch (const Error& e) {
      report = std::string(1, static_cast<char>(e.kind())) + e.what();
      code = 0;
    } catch (...) {
      code = 3;
    }
    for (size_t done = 0; done < report.size();) {
      const ssize_t n = ::write(fds[1], report.data() + done, report.size() - done);
      if (n <= 0) ::_exit(5);
      done += static_cast<size_t>(n);
    }
    ::_exit(code);
  }
  ::close(fds[1]);
  std::string report;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) report.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO("child ", WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                     : "exited with status " + std::to_string(WEXITSTATUS(status)),
       " (0: an Error, 3: another exception, 4: no exception)");
  CHECK(WIFEXITED(status));
  CHECK((WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 4)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || report.empty()) return std::nullopt;
  return Error(static_cast<ErrorKind>(report[0]), report.substr(1));
}

inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace dualcast::bad_inputs

