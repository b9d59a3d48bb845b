// Strict parsing of integer environment variables and the shared once-only warning (see env.h).
#include "jit/env.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

namespace dualcast::jit {

std::optional<uint64_t> ParseDecimal(std::string_view text) {
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

std::string EnvWarningText(std::string_view name, std::string_view value,
                           std::string_view problem, std::string_view used) {
  // std::string, not StrCat: this abseil's string_view is not std::string_view.
  std::string text(name);
  text.append("='").append(value).append("' ").append(problem).append("; using ").append(used);
  return text;
}

EnvIntegerValue ParseEnvInteger(std::string_view name, const char* text,
                                const EnvIntegerSpec& spec) {
  if (text == nullptr || text[0] == '\0') return {spec.fallback, ""};
  const std::optional<uint64_t> n = ParseDecimal(text);
  if (!n || *n < spec.min) {
    return {spec.fallback,
            EnvWarningText(name, text, "is not " + std::string(spec.accepted), spec.fallback_text)};
  }
  if (*n > spec.max) {
    const std::string max = std::to_string(spec.max);
    return {spec.max, EnvWarningText(name, text, "is above the maximum of " + max, max)};
  }
  return {*n, ""};
}

uint64_t EnvInteger(const char* name, const EnvIntegerSpec& spec) {
  EnvIntegerValue v = ParseEnvInteger(name, std::getenv(name), spec);
  if (!v.warning.empty()) WarnEnvOnce(v.warning);
  return v.value;
}

bool EnvSwitch(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  const std::string_view text(v);
  for (const char* on : {"1", "true", "on", "yes"}) {
    if (text == on) return true;
  }
  for (const char* off : {"0", "false", "off", "no"}) {
    if (text == off) return false;
  }
  WarnEnvOnce(EnvWarningText(name, text, "is not 1 or 0 (true/false, on/off, yes/no)",
                             fallback ? "1, the default" : "0, the default"));
  return fallback;
}

void WarnEnvOnce(const std::string& message) {
  static std::mutex* mu = new std::mutex;  // never destroyed: read during exit too
  static std::set<std::string>* warned = new std::set<std::string>;
  {
    std::lock_guard<std::mutex> lock(*mu);
    if (!warned->insert(message).second) return;
  }
  std::fprintf(stderr, "dualcast: warning: %s\n", message.c_str());
}

}  // namespace dualcast::jit
