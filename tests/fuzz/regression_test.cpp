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

}  // namespace
