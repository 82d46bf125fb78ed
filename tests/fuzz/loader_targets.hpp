// Every loader parasim points at untrusted input, as one function "bytes in -> value or
// InputError". The libFuzzer targets (fuzz_target.cpp) and the regression test that replays
// the corpora and past crashes (regression_test.cpp) both go through this table, so a crash
// found by a fuzzer replays through exactly the same code in the normal test suite.
//
// A target does a little more than load: it also checks the invariants a loaded value must
// keep (what parasim writes it can read back; a loaded task graph simulates; an efficiency
// table gives finite epochs). A broken invariant throws InvariantViolation, which, like any
// exception other than InputError, is a finding.
//
// Example:
//   const LoaderTarget& t = loader_target("model");
//   t.load(R"({"schema": "parasim.model/1"})");   // throws parasim::InputError (no "name")
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace parasim::fuzz {

/// A loaded value broke a promise the loader makes (not a user error: a bug).
struct InvariantViolation : std::logic_error {
  using std::logic_error::logic_error;
};

struct LoaderTarget {
  std::string_view name;         // also the corpus folder: tests/fuzz/corpus/<name>/
  std::string_view description;  // what the bytes are
  void (*load)(std::string_view bytes);
};

/// All targets, in a fixed order.
std::span<const LoaderTarget> loader_targets();
/// The target called `name`; std::invalid_argument listing the known names otherwise.
const LoaderTarget& loader_target(std::string_view name);

}  // namespace parasim::fuzz
