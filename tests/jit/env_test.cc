// Tests of the environment-variable parser (jit/env.h) and the variables read through it.
#include <doctest/doctest.h>

#include <stdlib.h>

#include <cstdint>
#include <optional>
#include <string>

#include "jit/cpu/thread_pool.h"
#include "jit/env.h"
#include "jit/stats.h"
#include "stderr_capture.h"

namespace dualcast::jit {
namespace {

// Sets an environment variable for a scope, then puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_CASE("ParseDecimal: the whole string, digits only, no overflow") {
  CHECK(ParseDecimal("0") == uint64_t{0});
  CHECK(ParseDecimal("42") == uint64_t{42});
  CHECK(ParseDecimal("007") == uint64_t{7});
  CHECK(ParseDecimal("18446744073709551615") == UINT64_MAX);
  // strtoull read "-5" as 2^64 - 5, "3k" as 3 and " 5" as 5.
  for (const char* bad : {"", "-5", "-1", "+5", " 5", "5 ", "3k", "2x", "1e3", "abc", "0x10",
                          "1.5", "18446744073709551616", "99999999999999999999"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseDecimal(bad).has_value());
  }
}

// The same spec as DUALCAST_NUM_THREADS on a 16-core machine.
const EnvIntegerSpec kThreads = {.min = 1, .max = 1024, .fallback = 16,
                                 .accepted = "a whole number of threads from 1 to 1024",
                                 .fallback_text = "the default of 16 (the available cores)"};

TEST_CASE("ParseEnvInteger: accepted values, defaults and clamping, each with its warning") {
  CHECK(ParseEnvInteger("DUALCAST_NUM_THREADS", nullptr, kThreads).value == 16);
  CHECK(ParseEnvInteger("DUALCAST_NUM_THREADS", nullptr, kThreads).warning == "");
  CHECK(ParseEnvInteger("DUALCAST_NUM_THREADS", "", kThreads).value == 16);
  CHECK(ParseEnvInteger("DUALCAST_NUM_THREADS", "", kThreads).warning == "");
  for (const char* ok : {"1", "4", "1024"}) {
    CAPTURE(ok);
    EnvIntegerValue v = ParseEnvInteger("DUALCAST_NUM_THREADS", ok, kThreads);
    CHECK(v.value == std::stoull(ok));
    CHECK(v.warning == "");
  }
  for (const char* bad : {"0", "-1", "abc", "2x", "1e3", " 4"}) {
    CAPTURE(bad);
    EnvIntegerValue v = ParseEnvInteger("DUALCAST_NUM_THREADS", bad, kThreads);
    CHECK(v.value == 16);
    CHECK(v.warning == "DUALCAST_NUM_THREADS='" + std::string(bad) +
                           "' is not a whole number of threads from 1 to 1024; using the default "
                           "of 16 (the available cores)");
  }
  EnvIntegerValue big = ParseEnvInteger("DUALCAST_NUM_THREADS", "100000", kThreads);
  CHECK(big.value == 1024);
  CHECK(big.warning == "DUALCAST_NUM_THREADS='100000' is above the maximum of 1024; using 1024");
  // Past UINT64_MAX is malformed, not clamped: it is no number at all.
  CHECK(ParseEnvInteger("DUALCAST_NUM_THREADS", "99999999999999999999", kThreads).value == 16);
}

TEST_CASE("WarnEnvOnce: one line per distinct message per process") {
  StderrCapture err;
  WarnEnvOnce("DUALCAST_TEST_ONLY='x' is not a number; using 1");
  WarnEnvOnce("DUALCAST_TEST_ONLY='x' is not a number; using 1");
  WarnEnvOnce("DUALCAST_TEST_ONLY='y' is not a number; using 1");
  CHECK(err.Text() ==
        "dualcast: warning: DUALCAST_TEST_ONLY='x' is not a number; using 1\n"
        "dualcast: warning: DUALCAST_TEST_ONLY='y' is not a number; using 1\n");
}

TEST_CASE("EnvSwitch: on/off words, the fallback when unset or empty, a warning for the rest") {
  const char* name = "DUALCAST_TEST_SWITCH";
  for (const char* on : {"1", "true", "on", "yes"}) {
    ScopedEnv env(name, on);
    CHECK(EnvSwitch(name, false));
  }
  for (const char* off : {"0", "false", "off", "no"}) {
    ScopedEnv env(name, off);
    CHECK_FALSE(EnvSwitch(name, true));
  }
  StderrCapture err;
  for (bool fallback : {false, true}) {
    {
      ScopedEnv env(name, nullptr);
      CHECK(EnvSwitch(name, fallback) == fallback);
    }
    {
      ScopedEnv env(name, "");
      CHECK(EnvSwitch(name, fallback) == fallback);
    }
    ScopedEnv env(name, "2");
    CHECK(EnvSwitch(name, fallback) == fallback);
  }
  CHECK(err.Text() ==
        "dualcast: warning: DUALCAST_TEST_SWITCH='2' is not 1 or 0 (true/false, on/off, yes/no); "
        "using 0, the default\n"
        "dualcast: warning: DUALCAST_TEST_SWITCH='2' is not 1 or 0 (true/false, on/off, yes/no); "
        "using 1, the default\n");
}

TEST_CASE("DUALCAST_KERNEL_CACHE_MAX / DUALCAST_IR_CACHE_MAX: 0 is no cap, bad values warn") {
  {
    ScopedEnv env("DUALCAST_KERNEL_CACHE_MAX", nullptr);
    CHECK(EnvCapacity("DUALCAST_KERNEL_CACHE_MAX", 4096) == 4096);
  }
  {
    ScopedEnv env("DUALCAST_KERNEL_CACHE_MAX", "100");
    CHECK(EnvCapacity("DUALCAST_KERNEL_CACHE_MAX", 4096) == 100);
  }
  {
    ScopedEnv env("DUALCAST_IR_CACHE_MAX", "0");  // as DUALCAST_CACHE_MAX=0: no cap
    CHECK(EnvCapacity("DUALCAST_IR_CACHE_MAX", 2048) == SIZE_MAX);
  }
  StderrCapture err;
  {
    // strtoull wrapped -5 to 2^64 - 5 (no cap); abc and 3k fell back silently.
    ScopedEnv env("DUALCAST_KERNEL_CACHE_MAX", "-5");
    CHECK(EnvCapacity("DUALCAST_KERNEL_CACHE_MAX", 4096) == 4096);
    CHECK(EnvCapacity("DUALCAST_KERNEL_CACHE_MAX", 4096) == 4096);  // warned once
  }
  {
    ScopedEnv env("DUALCAST_IR_CACHE_MAX", "3k");
    CHECK(EnvCapacity("DUALCAST_IR_CACHE_MAX", 2048) == 2048);
  }
  CHECK(err.Text() ==
        "dualcast: warning: DUALCAST_KERNEL_CACHE_MAX='-5' is not a whole number of entries (0 "
        "for no cap); using the default of 4096\n"
        "dualcast: warning: DUALCAST_IR_CACHE_MAX='3k' is not a whole number of entries (0 for no "
        "cap); using the default of 2048\n");
}

TEST_CASE("DUALCAST_NUM_THREADS: malformed or 0 uses every core, with a warning; clamped at 1024") {
  int cores = 0;
  {
    ScopedEnv env("DUALCAST_NUM_THREADS", nullptr);
    cores = ThreadPool::DefaultNumThreads();
  }
  REQUIRE(cores >= 1);
  {
    ScopedEnv env("DUALCAST_NUM_THREADS", "3");
    CHECK(ThreadPool::DefaultNumThreads() == 3);
  }
  StderrCapture err;
  for (const char* bad : {"0", "2x"}) {
    ScopedEnv env("DUALCAST_NUM_THREADS", bad);
    CHECK(ThreadPool::DefaultNumThreads() == cores);
  }
  {
    ScopedEnv env("DUALCAST_NUM_THREADS", "100000");
    CHECK(ThreadPool::DefaultNumThreads() == 1024);
  }
  const std::string text = err.Text();
  const std::string dflt = "using the default of " + std::to_string(cores) + " (the available cores)";
  CHECK(text.find("dualcast: warning: DUALCAST_NUM_THREADS='0' is not a whole number of threads "
                  "from 1 to 1024; " + dflt + "\n") != std::string::npos);
  CHECK(text.find("DUALCAST_NUM_THREADS='2x' is not") != std::string::npos);
  CHECK(text.find("dualcast: warning: DUALCAST_NUM_THREADS='100000' is above the maximum of "
                  "1024; using 1024\n") != std::string::npos);
}

}  // namespace
}  // namespace dualcast::jit
