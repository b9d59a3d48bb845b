// The text of the dualcast::Error a call throws, for tests that check what a message says.
//
// Example:
//   const std::string m = test::ErrorOf([&] { tape.gradient(loss, {a}); });
//   CHECK(test::Has(m, "before this Tape was opened"));
#pragma once

#include <functional>
#include <string>

#include "dualcast/error.hpp"

namespace dualcast::test {

// The message of the Error `fn` throws; `when_none` when it throws none.
inline std::string ErrorOf(const std::function<void()>& fn, const std::string& when_none = "") {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return when_none;
}

inline bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace dualcast::test
