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
TEST_CASE("LlvmArgThatExits: values LLVM would end the process on when it uses them") {
  // -stop-after=<unknown> reached report_fatal_error ("pass is not
  // registered") at the first compile, and -pass-remarks=( at the option
  // parse ("Invalid regular expression"): the process ended.
  CHECK(LlvmArgThatExits("-stop-after=nonexistent-pass") == "-stop-after=nonexistent-pass");
  CHECK(LlvmArgThatExits("-time-passes --start-before=bogus,2") == "--start-before=bogus,2");
  CHECK(LlvmArgThatExits("-pass-remarks=(") == "-pass-remarks=(");
  CHECK(LlvmArgThatExits("-pass-remarks-missed=[a") == "-pass-remarks-missed=[a");
  // Registered passes and valid expressions pass.
  CHECK(LlvmArgThatExits("-stop-after=machinelicm") == "");
  CHECK(LlvmArgThatExits("-stop-before=machine-scheduler,1") == "");
  CHECK(LlvmArgThatExits("-pass-remarks=loop-.*") == "");
  CHECK(LlvmArgThatExits("-pass-remarks-output=/tmp/remarks.yaml") == "");
}

}  // namespace dualcast::jit::cpu
