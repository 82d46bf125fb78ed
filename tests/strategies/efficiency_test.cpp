#include "parasim/strategies/efficiency.hpp"

#include <cmath>
#include <functional>
#include <limits>

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "support/input_error.hpp"

namespace parasim::strategies {
namespace {

const std::string kData = PARASIM_TEST_DATA_DIR;

using test_support::input_error;

TEST(CriticalBatch, DoublesEpochsAtTheCriticalBatch) {
  const auto e = StatisticalEfficiency::critical_batch(10, 1000, "hand");
  EXPECT_DOUBLE_EQ(e.epochs(1), 10.01);
  EXPECT_DOUBLE_EQ(e.epochs(1000), 20.0);
  EXPECT_DOUBLE_EQ(e.epochs(3000), 40.0);
}

TEST(CriticalBatch, ModelDefaultsReproduceTheReferenceRecipe) {
  // ResNet-50: 90 epochs at 256, B_crit 16384 -> E_min = 90 / (1 + 256/16384) = 88.615...
  const auto e = default_efficiency("resnet50");
  EXPECT_NEAR(e.e_min(), 90.0 / 1.015625, 1e-9);
  EXPECT_NEAR(e.epochs(256), 90.0, 1e-9);
  EXPECT_NEAR(e.epochs(16384), 2 * 90.0 / 1.015625, 1e-9);
  EXPECT_FALSE(e.source().empty());
  for (const auto& d : model_training_defaults()) {
    EXPECT_FALSE(d.source.empty()) << d.model;
    EXPECT_NO_THROW(dataset(d.dataset)) << d.model;
  }
}

TEST(NoneEfficiency, IsFlat) {
  const auto e = StatisticalEfficiency::none(90, "x");
  EXPECT_DOUBLE_EQ(e.epochs(1), 90);
  EXPECT_DOUBLE_EQ(e.epochs(1e6), 90);
}

TEST(TableEfficiency, InterpolatesLogLogAndExtrapolatesWithTheFittedForm) {
  const auto e = StatisticalEfficiency::table_from_csv(kData + "/efficiency/resnet50_table.csv", 0);
  EXPECT_DOUBLE_EQ(e.epochs(256), 90);
  EXPECT_NEAR(e.epochs(8192), 100, 1e-9);
  // 1024 lies 2/5 of the way from 256 to 8192 in log space: 90 * (100/90)^0.4
  EXPECT_NEAR(e.epochs(1024), 90 * std::pow(100.0 / 90.0, 0.4), 1e-9);
  // Least squares E = a + b B over the three points gives a, b; beyond the last point the growth follows 1 + B/B_crit.
  const double n = 3, sx = 256 + 8192 + 32768, sy = 390;
  const double sxx = 256.0 * 256 + 8192.0 * 8192 + 32768.0 * 32768, sxy = 256.0 * 90 + 8192.0 * 100 + 32768.0 * 200;
  const double b = (n * sxy - sx * sy) / (n * sxx - sx * sx), a = (sy - b * sx) / n;
  EXPECT_NEAR(e.e_min(), a, 1e-9);
  EXPECT_NEAR(e.b_crit(), a / b, 1e-6);
  EXPECT_NEAR(e.epochs(65536), 200 * (1 + 65536 / (a / b)) / (1 + 32768 / (a / b)), 1e-9);
}

TEST(TableEfficiency, StepsAreConvertedToEpochs) {
  // 1000 steps at batch 100 over 10,000 samples = 10 epochs; 200 steps at 1000 = 20 epochs.
  const auto e = StatisticalEfficiency::table_from_csv(kData + "/efficiency/steps.csv", 10'000);
  EXPECT_DOUBLE_EQ(e.points()[0].epochs, 10);
  EXPECT_DOUBLE_EQ(e.points()[1].epochs, 20);
}

TEST(TableEfficiency, AnEpochCountPastTheDoubleRangeIsRefusedNamingTheTable) {
  // (1, 2e300) and (2, 3e300) fit E = 1e300 (1 + B / 1), so batch 1e9 extrapolates from the last
  // point to 3e300 (1 + 1e9) / 3 = 1e309 = inf (the efficiency_csv fuzz target found such tables).
  const auto e = StatisticalEfficiency::table({{1, 2e300}, {2, 3e300}}, "huge.csv");
  EXPECT_NEAR(e.b_crit(), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(e.epochs(2), 3e300);
  EXPECT_EQ(input_error([&] { (void)e.epochs(1e9); }),
            "huge.csv: the epoch count at global batch 1e+09 is inf, not a positive finite number; check the "
            "table's batches and epochs");
}

TEST(TableEfficiency, AFitPastTheDoubleRangeFallsBackToNoGrowth) {
  // Batches 1e-300 and 2e300: the sum of squared batches is inf and the least-squares slope NaN.
  const auto e = StatisticalEfficiency::table({{1e-300, 1.0}, {2e300, 1.5}}, "wide.csv");
  EXPECT_EQ(e.b_crit(), 0.0);
  EXPECT_EQ(e.e_min(), 1.0);
  EXPECT_EQ(e.epochs(3e300), 1.5);
}

TEST(TableEfficiency, BadFilesNameTheLine) {
  EXPECT_EQ(input_error([] { StatisticalEfficiency::table_from_csv(kData + "/efficiency/bad_line.csv", 0); }),
            kData + "/efficiency/bad_line.csv:3: expected two numbers, found \"512,abc\"");
  EXPECT_EQ(input_error([] {
              StatisticalEfficiency::table({{256, 90}}, "t");
            }),
            "t: an efficiency table needs at least 2 (batch, epochs) points");
  EXPECT_EQ(input_error([] {
              StatisticalEfficiency::table({{256, 90}, {128, 80}}, "t");
            }),
            "t: point 2: batches must be strictly increasing");
  EXPECT_EQ(input_error([] { parse_efficiency("critical-batch:abc:1", "resnet50", 0); }),
            "--efficiency critical-batch:abc:1: expected critical-batch:E_MIN:B_CRIT with two positive numbers");
  EXPECT_EQ(input_error([] { parse_efficiency("fancy", "resnet50", 0); }),
            "--efficiency fancy: expected critical-batch, critical-batch:E_MIN:B_CRIT, table:FILE.csv or none");
}

TEST(TimeToTrain, EpochsTimesStepsTimesStepTime) {
  const auto e = StatisticalEfficiency::none(90, "x");
  // ceil(1,281,167 / 1024) = 1252 steps per epoch; 90 epochs; 100 ms per step.
  const auto t = time_to_train(e, dataset("imagenet-1k").samples, 1024, 100 * kNsPerMs);
  EXPECT_EQ(t.steps_per_epoch, 1252);
  EXPECT_DOUBLE_EQ(t.total_steps, 112'680);
  EXPECT_EQ(t.total, 112'680LL * 100 * kNsPerMs);
  const auto with_overhead = time_to_train(e, 1'281'167, 1024, 100 * kNsPerMs, 30 * kNsPerS);
  EXPECT_EQ(with_overhead.total, t.total + 90LL * 30 * kNsPerS);
  // 112,680 steps of 1e14 ns (28 h) is 1.1e19 ns, past int64: saturated, never negative.
  const auto huge = time_to_train(e, dataset("imagenet-1k").samples, 1024, 100'000'000'000'000);
  EXPECT_EQ(huge.total, std::numeric_limits<TimeNs>::max());
}

TEST(Datasets, KnownSizesAndUnknownNames) {
  EXPECT_EQ(dataset("imagenet-1k").samples, 1'281'167);
  EXPECT_EQ(dataset("cifar-10").samples, 50'000);
  EXPECT_EQ(input_error([] { dataset("mnist"); }).rfind("unknown dataset \"mnist\"; known datasets: imagenet-1k", 0),
            0u);
}

}  // namespace
}  // namespace parasim::strategies
