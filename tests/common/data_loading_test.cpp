// --data-loading: the spellings, the load time of n samples and the messages for bad values.
#include <gtest/gtest.h>

#include "parasim/common/calibration.hpp"
#include "parasim/common/data_loading.hpp"
#include "parasim/common/error.hpp"
#include "support/input_error.hpp"

namespace parasim {
namespace {

using test_support::input_error;

TEST(DataLoading, OffIsTheDefaultAndSaysSo) {
  const DataLoading d;
  EXPECT_FALSE(d.enabled);
  EXPECT_EQ(d.describe(), "not modelled (off)");
  EXPECT_EQ(d.load_time(1000), 0);
  EXPECT_FALSE(parse_data_loading("off").enabled);
  const nlohmann::json j = data_loading_to_json(d);
  EXPECT_EQ(j["modelled"], false);
  EXPECT_EQ(j["description"], "not modelled (off)");
  EXPECT_EQ(j.size(), 2u);
}

TEST(DataLoading, SampleTimeOrThroughputPerWorker) {
  const DataLoading a = parse_data_loading("sample_ms=0.5,workers=8");
  EXPECT_TRUE(a.overlapped());
  EXPECT_EQ(a.load_time(256), 16'000'000);  // 256 x 0.5 ms / 8
  EXPECT_EQ(a.describe(), "0.5 ms per sample, 8 workers prefetching (the step pays max(0, load - step))");
  const DataLoading b = parse_data_loading("workers=4,samples_per_s=2000");
  EXPECT_EQ(b.load_time(256), 32'000'000);  // 256 / (2000 x 4) s
  EXPECT_EQ(b.describe(), "2000 samples/s per worker, 4 workers prefetching (the step pays max(0, load - step))");
  const DataLoading c = parse_data_loading("sample_ms=2");
  EXPECT_FALSE(c.overlapped());
  EXPECT_EQ(c.load_time(3), 6'000'000);
  EXPECT_EQ(c.describe(), "2 ms per sample, in the training process (num_workers=0: the step pays the whole load)");
}

TEST(DataLoading, BadValuesNameTheOptionAndWhatWasExpected) {
  const std::string expected = "--data-loading: expected off or sample_ms=MS|samples_per_s=RATE[,workers=N], found ";
  EXPECT_EQ(input_error([] { parse_data_loading("on"); }), expected + "\"on\" (\"on\" is not key=value)");
  EXPECT_EQ(input_error([] { parse_data_loading("sample_ms=0"); }),
            expected + "\"sample_ms=0\" (sample_ms must be a number > 0, found \"0\")");
  EXPECT_EQ(input_error([] { parse_data_loading("samples_per_s=fast"); }),
            expected + "\"samples_per_s=fast\" (samples_per_s must be a number > 0, found \"fast\")");
  EXPECT_EQ(input_error([] { parse_data_loading("workers=4"); }),
            expected + "\"workers=4\" (sample_ms or samples_per_s is required)");
  EXPECT_EQ(
      input_error([] { parse_data_loading("sample_ms=1,workers=-1"); }),
      expected + "\"sample_ms=1,workers=-1\" (workers must be given once, an integer from 0 to 4096, found \"-1\")");
  EXPECT_EQ(input_error([] { parse_data_loading("sample_ms=1,samples_per_s=5"); }),
            expected + "\"sample_ms=1,samples_per_s=5\" (give one of sample_ms and samples_per_s, once)");
  EXPECT_EQ(input_error([] { parse_data_loading("sample_ms=1,prefetch=2", "--x"); }),
            "--x: expected off or sample_ms=MS|samples_per_s=RATE[,workers=N], found \"sample_ms=1,prefetch=2\" "
            "(unknown key \"prefetch\")");
}

TEST(DataLoading, TheStepOverheadIsStatedCalibratedOrNot) {
  Calibration c;
  EXPECT_EQ(c.describe_step_overhead(),
            "0 ms (uncalibrated: optimizer.step launches, zero_grad and Python time not modelled)");
  c.step_overhead_ms = 12;
  c.origin = "cal.json";
  EXPECT_EQ(c.describe_step_overhead(), "12.0 ms per step (calibrated, cal.json)");
}

}  // namespace
}  // namespace parasim
