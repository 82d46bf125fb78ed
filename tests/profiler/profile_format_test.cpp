#include "parasim/profiler/profile.hpp"

#include <fstream>

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "profile_fixtures.hpp"

namespace parasim::profiler {
namespace {

using namespace testing_fixtures;
using nlohmann::json;

TEST(ProfileFormat, RoundTripsThroughAFile) {
  const Profile p = sample_profile();
  const auto path = temp_file("roundtrip.json");
  save_profile(p, path);
  const Profile back = load_profile(path);
  EXPECT_EQ(back, p);
  // Canonical output: saving the loaded profile gives the same bytes.
  const auto again = temp_file("roundtrip2.json");
  save_profile(back, again);
  EXPECT_EQ(read_text_file(path), read_text_file(again));
}

TEST(ProfileFormat, WritesTheDocumentedShape) {
  const json j = to_json(sample_profile());
  EXPECT_EQ(j["schema"], "parasim.profile/1");
  EXPECT_EQ(j["dtype"], "fp16");
  EXPECT_EQ(j["source"], "measured-gpu");
  EXPECT_EQ(j["device"]["cudnn"], "9.1.0");
  EXPECT_FALSE(j["device"].contains("onednn"));  // empty fields are left out
  EXPECT_EQ(j["ops"][0]["phases"]["fwd"]["median_ns"], 11'000);
  EXPECT_FALSE(j["ops"][0]["phases"].contains("bwd_data"));
  EXPECT_EQ(j["links"][0]["fit"][1]["beta_gbps"], 140.25);
}

TEST(ProfileFormat, SummarizeTakesMinMedianMax) {
  const PhaseStats odd = summarize({30, 10, 20}, 2);
  EXPECT_EQ(odd, (PhaseStats{10, 20, 30, 2, 3}));
  const PhaseStats even = summarize({40, 10, 20, 30}, 1);
  EXPECT_EQ(even.median_ns, 25);
  EXPECT_DOUBLE_EQ(even.spread(), 30.0 / 25.0);
}

/// Loads `j` as if from "bad.json" and returns the InputError message.
std::string load_error(const json& j) {
  try {
    profile_from_json(j, "bad.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ProfileFormat, RejectsMissingFields) {
  json j = to_json(sample_profile());
  j.erase("command");
  EXPECT_EQ(load_error(j), "bad.json: $: missing required field \"command\"");
  j = to_json(sample_profile());
  j["ops"][1]["phases"]["fwd"].erase("reps");
  EXPECT_EQ(load_error(j), "bad.json: $.ops[1].phases.fwd: missing required field \"reps\"");
}

TEST(ProfileFormat, RejectsWrongTypes) {
  json j = to_json(sample_profile());
  j["batch"] = "8";
  EXPECT_EQ(load_error(j), "bad.json: $.batch: expected an integer, found string \"8\"");
  j = to_json(sample_profile());
  j["ops"][0]["names"] = "conv1";
  EXPECT_EQ(load_error(j), "bad.json: $.ops[0].names: expected an array, found string \"conv1\"");
  j = to_json(sample_profile());
  j["ops"][0]["phases"]["fwd"]["median_ns"] = 1.5;
  EXPECT_EQ(load_error(j), "bad.json: $.ops[0].phases.fwd.median_ns: expected an integer, found number 1.5");
}

TEST(ProfileFormat, RejectsNegativeAndNonFiniteNumbers) {
  json j = to_json(sample_profile());
  j["ops"][0]["phases"]["fwd"]["min_ns"] = -5;
  EXPECT_EQ(load_error(j), "bad.json: $.ops[0].phases.fwd.min_ns: expected an integer >= 0, found number -5");
  j = to_json(sample_profile());
  j["links"][0]["fit"][0]["alpha_ns"] = std::nan("");  // serialized as null
  EXPECT_EQ(load_error(json::parse(j.dump())), "bad.json: $.links[0].fit[0].alpha_ns: expected a number, found null");
  j = to_json(sample_profile());
  j["links"][0]["fit"][0]["beta_gbps"] = 0;
  EXPECT_EQ(load_error(j),
            "bad.json: $.links[0].fit[0].beta_gbps: expected a positive bandwidth in GB/s, found number 0");
}

TEST(ProfileFormat, RejectsInconsistentStatistics) {
  json j = to_json(sample_profile());
  j["ops"][0]["phases"]["fwd"]["min_ns"] = 12'000;
  EXPECT_EQ(load_error(j),
            "bad.json: $.ops[0].phases.fwd: expected min_ns <= median_ns <= max_ns, found 12000, 11000, 15000");
}

TEST(ProfileFormat, RejectsUnknownPhasesDuplicatesAndBadEnums) {
  json j = to_json(sample_profile());
  j["ops"][1]["phases"]["backward"] = j["ops"][1]["phases"]["fwd"];
  EXPECT_EQ(
      load_error(j),
      "bad.json: $.ops[1].phases.backward: unknown phase \"backward\"; expected fwd, bwd_data, bwd_weight or update");
  j = to_json(sample_profile());
  j["ops"][1]["signature"] = j["ops"][0]["signature"];
  EXPECT_EQ(load_error(j), "bad.json: $.ops[1].signature: duplicate signature \"conv2d|fp16|[8, 3, 32, 32]|[8, 16, 32, "
                           "32]|k=3x3\" (first at $.ops[0])");
  j = to_json(sample_profile());
  j["dtype"] = "fp8";
  EXPECT_EQ(load_error(j), "bad.json: $.dtype: expected fp32, fp16 or bf16, found string \"fp8\"");
  j = to_json(sample_profile());
  j["schema"] = "parasim.profile/2";
  EXPECT_EQ(load_error(j), "bad.json: $.schema: expected \"parasim.profile/1\", found string \"parasim.profile/2\"");
  j = to_json(sample_profile());
  j["links"][0]["fit"][1]["min_bytes"] = 70'000;
  EXPECT_EQ(load_error(j), "bad.json: $.links[0].fit[1].min_bytes: expected segments sorted and contiguous, this one "
                           "starting at 65536, found number 70000");
}

TEST(ProfileFormat, TruncatedFileNamesLineAndColumn) {
  const auto path = temp_file("truncated.json");
  const std::string text = dump_json(to_json(sample_profile()));
  std::ofstream(path) << text.substr(0, text.size() / 2);
  try {
    load_profile(path);
    FAIL();
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path.string() + ":", 0), 0u) << msg;
    EXPECT_NE(msg.find("malformed JSON"), std::string::npos) << msg;
  }
}

TEST(ProfileFormat, MissingFileIsAnInputError) {
  EXPECT_THROW(load_profile(temp_file("does-not-exist.json")), InputError);
}

}  // namespace
}  // namespace parasim::profiler
