// Shared by the component test binaries (tests/support): the message of the InputError that `f`
// throws, so that a test asserts the exact text a user would read.
//
// Example:
//   EXPECT_EQ(input_error([] { parse_strategy("dp=0"); }), "--strategy: dp must be >= 1, found 0");
#pragma once

#include <functional>
#include <string>

#include "parasim/common/error.hpp"

namespace parasim::test_support {

/// The InputError's message, or "<no InputError>" when `f` returns normally.
inline std::string input_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no InputError>";
}

}  // namespace parasim::test_support
