// StderrCapture: what the code under test writes to stderr (fd 2), for checking warnings.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace dualcast::jit {

// Redirects fd 2 to a temporary file from construction until Text() (or destruction).
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    file_ = std::tmpfile();
    REQUIRE(file_ != nullptr);
    saved_ = ::dup(2);
    ::dup2(::fileno(file_), 2);
  }
  ~StderrCapture() {
    Restore();
    if (file_ != nullptr) std::fclose(file_);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // Everything written so far; stops the capture.
  std::string Text() {
    Restore();
    std::rewind(file_);
    std::string text;
    for (int c; (c = std::fgetc(file_)) != EOF;) text.push_back(static_cast<char>(c));
    return text;
  }

 private:
  void Restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::FILE* file_ = nullptr;
  int saved_ = -1;
};

}  // namespace dualcast::jit
