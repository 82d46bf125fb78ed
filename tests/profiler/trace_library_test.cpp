// find_trace_profile: the default profile for a cluster's device kinds, from synthetic profiles
// written into a temporary traces/ tree.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "parasim/models/zoo.hpp"
#include "parasim/profiler/profile_cost_model.hpp"
#include "parasim/profiler/trace_library.hpp"
#include "profile_fixtures.hpp"

namespace parasim::profiler {
namespace {

using testing_fixtures::sample_profile;

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "parasim_trace_library" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// sample_profile() (tiny_cnn fp16) re-labelled for `kind` at `batch`, written to dir/sub/file.
std::filesystem::path write(const std::filesystem::path& dir, const std::string& sub, const std::string& kind,
                            std::int64_t batch, models::DType dtype = models::DType::F16) {
  Profile p = sample_profile();
  p.device.kind = kind;
  p.batch = batch;
  p.dtype = dtype;
  p.links.clear();
  const auto file = dir / sub / ("tiny_cnn-b" + std::to_string(batch) + ".json");
  std::filesystem::create_directories(file.parent_path());
  save_profile(p, file);
  return file;
}

TEST(TraceLibrary, FindsTheProfileOfTheClustersDeviceKind) {
  const auto dir = fresh_dir("kinds");
  const auto h100 = write(dir, "h100-sxm5-80gb", "H100-SXM5-80GB", 8);
  write(dir, "h200-sxm-141gb", "H200-SXM-141GB", 8);
  const auto m = find_trace_profile(dir, {"H100-SXM5-80GB"}, "tiny_cnn", models::DType::F16);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->file, h100);
  EXPECT_EQ(m->device_kind, "H100-SXM5-80GB");
  EXPECT_EQ(m->batch, 8);
  // The cluster's first kind that has a profile wins.
  EXPECT_EQ(find_trace_profile(dir, {"A100-SXM4-80GB", "H200-SXM-141GB", "H100-SXM5-80GB"}, "tiny_cnn",
                               models::DType::F16)->device_kind,
            "H200-SXM-141GB");
}

TEST(TraceLibrary, ModelDtypeAndKindMustAllMatch) {
  const auto dir = fresh_dir("match");
  write(dir, "h100", "H100-SXM5-80GB", 8);
  EXPECT_FALSE(find_trace_profile(dir, {"V100-SXM2-32GB"}, "tiny_cnn", models::DType::F16));
  EXPECT_FALSE(find_trace_profile(dir, {"H100-SXM5-80GB"}, "resnet50", models::DType::F16));
  EXPECT_FALSE(find_trace_profile(dir, {"H100-SXM5-80GB"}, "tiny_cnn", models::DType::F32));
  EXPECT_FALSE(find_trace_profile(dir / "missing", {"H100-SXM5-80GB"}, "tiny_cnn", models::DType::F16));
}

TEST(TraceLibrary, LargestBatchWinsAndNonProfilesAreSkipped) {
  const auto dir = fresh_dir("batch");
  write(dir, "h100", "H100-SXM5-80GB", 8);
  const auto b32 = write(dir, "h100", "H100-SXM5-80GB", 32);
  std::ofstream(dir / "h100" / "notes.json") << "{\"not\": \"a profile\"}\n";
  std::ofstream(dir / "h100" / "broken.json") << "{";
  // A link probe: a profile without per-op entries.
  Profile links = sample_profile();
  links.device.kind = "H100-SXM5-80GB";
  links.ops.clear();
  save_profile(links, dir / "h100" / "links.json");
  const auto m = find_trace_profile(dir, {"H100-SXM5-80GB"}, "tiny_cnn", models::DType::F16);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->file, b32);
}

TEST(TraceLibrary, AModelNameSpelledWithEscapesIsStillFound) {
  // Files that do not hold the model's name are not parsed; one that spells it with \u escapes
  // (valid JSON for the same string) is.
  const auto dir = fresh_dir("escapes");
  const auto file = write(dir, "h100", "H100-SXM5-80GB", 8);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(file));
  ASSERT_EQ(j.at("model"), "tiny_cnn");
  std::string text = j.dump(1);
  const std::string plain = "\"model\": \"tiny_cnn\"";
  ASSERT_NE(text.find(plain), std::string::npos);
  text.replace(text.find(plain), plain.size(), "\"model\": \"\\u0074iny_cnn\"");
  ASSERT_EQ(text.find("\"tiny_cnn\""), std::string::npos);
  std::ofstream(file) << text;
  const auto m = find_trace_profile(dir, {"H100-SXM5-80GB"}, "tiny_cnn", models::DType::F16);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->file, file);
}

/// Every profile committed under the repository's traces/ is usable with --profile: it loads, it
/// matches its own model, and at its own batch every op of that model is measured (no roofline).
TEST(TraceLibrary, EveryCommittedProfileCoversItsModel) {
  int checked = 0;
  for (const auto& dir : std::filesystem::directory_iterator(PARASIM_TRACES_DIR)) {
    if (!dir.is_directory()) continue;
    for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
      if (f.path().extension() != ".json") continue;
      // A device folder also holds the link probe's cluster file (parasim.cluster/1).
      if (std::ifstream in(f.path()); nlohmann::json::parse(in).value("schema", "") != "parasim.profile/1") continue;
      const Profile p = load_profile(f.path());
      if (p.ops.empty()) continue;  // a link probe
      SCOPED_TRACE(f.path().string());
      const models::Model model = models::build_zoo_model(p.model, {.batch = p.batch, .dtype = p.dtype});
      ProfileCostModel costs(p, f.path().string());
      costs.check_matches(model);
      for (models::OpId v : model.topological_order()) {
        const OpCost c = costs.cost(model.op(v), p.device.kind, p.optimizer);
        EXPECT_NE(c.source, CostSource::Roofline)
            << model.op(v).name << " (" << models::to_string(model.op(v).kind) << ")";
      }
      EXPECT_EQ(costs.counts().roofline, 0) << costs.coverage_summary();
      EXPECT_EQ(costs.counts().scaled, 0) << costs.coverage_summary();
      ++checked;
    }
  }
  EXPECT_GE(checked, 3);  // the CPU host's profiles of the CI models
}

}  // namespace
}  // namespace parasim::profiler
