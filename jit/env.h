// Reading dualcast's environment variables: strict integer parsing and the one warning format.
//
// A variable set to something dualcast cannot use (DUALCAST_NUM_THREADS=abc,
// DUALCAST_KERNEL_CACHE_MAX=-5) must not be silently read as something else:
// the value used instead is the default, and one line on stderr says so,
// naming the variable, its value and what was used:
//   dualcast: warning: DUALCAST_NUM_THREADS='2x' is not a whole number of threads from 1
//   to 1024; using the default of 16 (the available cores)          (one line)
// A value above a variable's maximum is clamped to it, also with a warning.
// Each (variable, value) pair is warned about once per process, however
// often it is read. Empty or unset means the default, silently.
//
// Example:
//   const uint64_t us = EnvInteger("DUALCAST_SPIN_US",
//       {.max = 1000000, .fallback = 100, .accepted = "a whole number of microseconds",
//        .fallback_text = "the default of 100"});
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dualcast::jit {

// `text` as a whole non-negative decimal integer (digits only: no sign, space,
// suffix or exponent); nullopt when malformed or above UINT64_MAX.
std::optional<uint64_t> ParseDecimal(std::string_view text);

// What an integer variable accepts, and what is used when its value is not accepted.
struct EnvIntegerSpec {
  uint64_t min = 0;
  uint64_t max = UINT64_MAX;  // larger values are clamped to this (with a warning)
  uint64_t fallback = 0;      // used when unset, empty, malformed or below min
  std::string_view accepted;  // completes "is not ...", e.g. "a whole number from 1 to 1024"
  std::string_view fallback_text;  // completes "using ...", e.g. "the default of 4096"
};

struct EnvIntegerValue {
  uint64_t value = 0;
  std::string warning;  // what to warn about ("" when `text` was used as given)
};

// The value of variable `name` holding `text` (nullptr: unset) under `spec`.
// Pure: the warning is returned, not printed.
EnvIntegerValue ParseEnvInteger(std::string_view name, const char* text,
                                const EnvIntegerSpec& spec);

// ParseEnvInteger of the environment's `name`, warning (WarnEnvOnce) when needed.
uint64_t EnvInteger(const char* name, const EnvIntegerSpec& spec);

// An on/off variable: 1, true, on, yes are on; 0, false, off, no are off;
// unset or empty is `fallback`, and anything else is `fallback` with a warning.
bool EnvSwitch(const char* name, bool fallback);

// "<name>='<value>' <problem>; using <used>": every environment warning's text.
std::string EnvWarningText(std::string_view name, std::string_view value,
                           std::string_view problem, std::string_view used);

// Writes "dualcast: warning: <message>" to stderr, once per process for each
// distinct message (a variable read by several components warns once).
void WarnEnvOnce(const std::string& message);

}  // namespace dualcast::jit
