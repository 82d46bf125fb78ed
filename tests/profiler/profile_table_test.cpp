#include "parasim/profiler/profile_table.hpp"

#include <gtest/gtest.h>

#include "profile_fixtures.hpp"

namespace parasim::profiler {
namespace {

using namespace testing_fixtures;

TEST(ProfileTable, TotalsWeightMediansByOpsSharingASignature) {
  const ProfileTotals t = profile_totals(sample_profile());
  EXPECT_EQ(t.entries, 2);
  EXPECT_EQ(t.ops, 3);
  EXPECT_EQ(t.per_phase[0], 2 * 11'000 + 2'000);
  EXPECT_EQ(t.per_phase[1], 2'600);
  EXPECT_EQ(t.per_phase[2], 2 * 21'000);
  EXPECT_EQ(t.per_phase[3], 2 * 3'000);
  EXPECT_EQ(t.total(), 24'000 + 2'600 + 42'000 + 6'000);
}

TEST(ProfileTable, RendersRowsAndTotals) {
  const std::string text = render_profile_table(sample_profile());
  EXPECT_NE(text.find("profile: tiny_cnn b8 fp16 on NVIDIA H200 (H200-SXM-141GB)"), std::string::npos) << text;
  EXPECT_NE(text.find("conv1 (+1)  conv2d  fwd"), std::string::npos) << text;
  EXPECT_NE(text.find("45.5%"), std::string::npos) << text;  // (15 - 10) / 11 us
  EXPECT_NE(text.find("fwd=IMPLICIT_PRECOMP_GEMM"), std::string::npos) << text;
  EXPECT_NE(text.find("total 74.60 us"), std::string::npos) << text;
  const nlohmann::json j = profile_table_json(sample_profile());
  EXPECT_EQ(j["rows"].size(), 5u);
  EXPECT_EQ(j["rows"][0]["median_ns"], 11'000);
  EXPECT_EQ(j["totals"]["total"], 74'600);
}

}  // namespace
}  // namespace parasim::profiler
