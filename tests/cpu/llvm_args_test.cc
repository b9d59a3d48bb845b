// Tests of the DUALCAST_LLVM_ARGS screen: words that make LLVM print and exit(0) the host process.
#include <doctest/doctest.h>

#include <string>

#include "jit/cpu/orc_jit.h"

namespace dualcast::jit::cpu {
namespace {

// LLVM's option parser handles these by printing and calling exit(0), so a
// program that set one in DUALCAST_LLVM_ARGS used to end, with status 0, at
// its first kernel compile. The end-to-end check (an error, not an exit) is
// the llvm_args_that_exit ctest, which needs a fresh process per value.
TEST_CASE("LlvmArgThatExits: help, version and option printers, with one or two dashes") {
  for (const char* word : {"-help", "--help", "-help-hidden", "--help-hidden", "-help-list",
                           "--help-list-hidden", "-version", "--version", "-print-options",
                           "--print-options", "-print-all-options", "--print-all-options",
                           "-h", "--help=true", "-version=1"}) {
    CAPTURE(word);
    CHECK(LlvmArgThatExits(word) == word);
    // Anywhere in the list: the first such word is named.
    CHECK(LlvmArgThatExits(std::string("-time-passes  ") + word + " -stats") == word);
  }
  CHECK(LlvmArgThatExits("@/tmp/args.rsp") == "@/tmp/args.rsp");  // may hold any of them
}

TEST_CASE("LlvmArgThatExits: ordinary options and positional words pass") {
  CHECK(LlvmArgThatExits("") == "");
  CHECK(LlvmArgThatExits("   ") == "");
  CHECK(LlvmArgThatExits("-time-passes") == "");
  CHECK(LlvmArgThatExits("-debug-pass=Structure --stats -print-after-all") == "");
  CHECK(LlvmArgThatExits("-x86-asm-syntax=intel") == "");
  // Not options at all (LLVM rejects these itself, with an error).
  CHECK(LlvmArgThatExits("help version") == "");
  CHECK(LlvmArgThatExits("-no-such-flag") == "");
}

}  // namespace
}  // namespace dualcast::jit::cpu
