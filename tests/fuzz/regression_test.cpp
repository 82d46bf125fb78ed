// Replays every seed (tests/fuzz/corpus/<loader>/) and every saved fuzzer finding
// (tests/fuzz/regressions/<loader>/) through the same loader code as the libFuzzer targets,
// built with the normal compiler as part of the normal test suite. Each file must load or be
// refused with an InputError; any other exception, a crash or a hang (ctest timeout) fails.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loader_targets.hpp"
#include "parasim/common/error.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string().front() != '.') out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

enum class Outcome { Loaded, InputError };

/// Loads `file` through `target`; fails the test (naming the file) on anything but the two
/// acceptable outcomes.
std::optional<Outcome> replay(const parasim::fuzz::LoaderTarget& target, const fs::path& file) {
  const std::string bytes = read_bytes(file);
  try {
    target.load(bytes);
    return Outcome::Loaded;
  } catch (const parasim::InputError& e) {
    if (std::string(e.what()).empty()) ADD_FAILURE() << file << ": InputError without a message";
    return Outcome::InputError;
  } catch (const std::exception& e) {
    ADD_FAILURE() << file << ": escaped exception (not an InputError): " << e.what();
  } catch (...) {
    ADD_FAILURE() << file << ": escaped a non-std exception";
  }
  return std::nullopt;
}

class LoaderReplay : public testing::TestWithParam<std::string> {};

TEST_P(LoaderReplay, CorpusAndRegressionsLoadOrThrowInputError) {
  const auto& target = parasim::fuzz::loader_target(GetParam());
  const fs::path root = PARASIM_FUZZ_DIR;
  const auto seeds = files_under(root / "corpus" / GetParam());
  const auto regressions = files_under(root / "regressions" / GetParam());
  EXPECT_FALSE(seeds.empty()) << "no seed corpus under " << root / "corpus" / GetParam();
  int loaded = 0;
  for (const auto& f : seeds)
    if (replay(target, f) == Outcome::Loaded) ++loaded;
  // The corpus seeds the fuzzer with valid files: at least one must load, or it explores only
  // the error paths.
  EXPECT_GT(loaded, 0) << "no seed under " << root / "corpus" / GetParam() << " loads";
  for (const auto& f : regressions) (void)replay(target, f);
}

std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (const auto& t : parasim::fuzz::loader_targets()) names.emplace_back(t.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Fuzz, LoaderReplay, testing::ValuesIn(target_names()),
                         [](const testing::TestParamInfo<std::string>& p) { return p.param; });


// ------------------------------------------------------------------ findings with a message to keep
// Each of these once escaped as something other than a clean InputError (or was undefined
// behaviour that only the sanitizer build saw); the message is part of the fix.

std::string input_error_of(std::string_view target, const std::string& bytes) {
  try {
    parasim::fuzz::loader_target(target).load(bytes);
  } catch (const parasim::InputError& e) {
    return e.what();
  }
  return "(loaded without an error)";
}

std::string regression_file(const std::string& target, const std::string& name) {
  return read_bytes(fs::path(PARASIM_FUZZ_DIR) / "regressions" / target / name);
}

TEST(FuzzFindings, NumberBeyondDoubleRangeIsAnInputErrorWithLineAndColumn) {
  // nlohmann throws out_of_range (not parse_error) for 1e999; it used to escape as exit 1.
  EXPECT_THAT(input_error_of("cluster", "{\n  \"x\": 1e999}"),
              testing::HasSubstr("fuzz-input:2:8: number 1e999 is out of range; expected a finite number"));
  EXPECT_THAT(input_error_of("model", "[-1e999]"), testing::HasSubstr("number -1e999 is out of range"));
}

TEST(FuzzFindings, LinkLatencyAndBandwidthHaveSaneRanges) {
  // INT64_MAX latency overflowed route latencies; 1e-300 GB/s overflowed transfer times.
  EXPECT_THAT(input_error_of("cluster", regression_file("cluster", "huge_latency.json")),
              testing::HasSubstr("$.links[0].latency_ns: expected an integer in [0, 10000000000]"));
  EXPECT_THAT(input_error_of("cluster", regression_file("cluster", "tiny_bandwidth.json")),
              testing::HasSubstr("$.links[0].bandwidth_gbps: expected a bandwidth in GB/s between 1e-6"));
}

TEST(FuzzFindings, TaskGraphBeyond64BitTimeOrMemoryIsRefusedBeforeSimulating) {
  // Two INT64_MAX durations in a row overflowed the engine's clock.
  EXPECT_THAT(input_error_of("taskgraph", regression_file("taskgraph", "duration_sum_overflow.json")),
              testing::HasSubstr("could add up past 2^62 ns"));
  EXPECT_THAT(input_error_of("taskgraph", regression_file("taskgraph", "alloc_overflow.json")),
              testing::HasSubstr("add up past 2^62 bytes"));
  EXPECT_THAT(input_error_of("taskgraph", regression_file("taskgraph", "static_memory_overflow.json")),
              testing::HasSubstr("add up past 2^62 bytes"));
}

TEST(FuzzFindings, ProfileAndTraceTimesStayInsideInt64) {
  EXPECT_THAT(input_error_of("profile", regression_file("profile", "fit_max_int64.json")),
              testing::HasSubstr("no further segment"));
  EXPECT_THAT(input_error_of("kineto", regression_file("kineto", "huge_times.json")),
              testing::HasSubstr("$.traceEvents[0].ts: expected a time stamp within 4e15 microseconds of zero"));
  EXPECT_THAT(input_error_of("kineto", regression_file("kineto", "many_unattributed.json")),
              testing::HasSubstr("expected a duration of at most 1e12 microseconds"));
  // Each duration within bounds, but 4,700 of 1e12 us add up past 2^62 ns.
  std::string trace = R"({"traceEvents": [)";
  for (int i = 0; i < 4700; ++i)
    trace += std::string(i ? "," : "") + R"({"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "ts": 0, "dur": 1e12})";
  trace += "]}";
  EXPECT_THAT(input_error_of("kineto", trace), testing::HasSubstr("GPU event durations add up past 2^62 ns"));
}

}  // namespace
