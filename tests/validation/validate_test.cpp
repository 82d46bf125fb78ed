// `parasim validate` end to end on a tiny case: the JSON carries what the CLI promises and the
// error is computed from the two step times (its value is not asserted: machines are noisy).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "parasim/common/error.hpp"
#include "parasim/validation/validate.hpp"

namespace parasim::validation {

using namespace parasim::executor;  // runtimes, calibration, run_steps
namespace {

ValidationRequest tiny(const std::string& strategy) {
  ValidationRequest r;
  r.backend = Backend::Cpu;
  r.model = "tiny_cnn";
  r.batch = 4;
  r.strategy = strategy;
  r.warmup = 1;
  r.repetitions = 3;
  r.profile_repetitions = 2;
  r.profile_warmup = 1;
  r.priority = CpuRuntimeOptions::Priority::Default;  // tests never raise their priority
  return r;
}

TEST(Validate, ErrorPercentIsRelativeToTheMeasurement) {
  EXPECT_DOUBLE_EQ(error_percent(110, 100), 10.0);
  EXPECT_DOUBLE_EQ(error_percent(90, 100), -10.0);
  EXPECT_DOUBLE_EQ(error_percent(5, 0), 0.0);
}

TEST(Validate, JsonHasTheComparisonOfATinyDataParallelStep) {
  if (!PARASIM_HAVE_DNNL) GTEST_SKIP() << "built without oneDNN: every kernel would be a stand-in (not measured)";
  const ValidationResult r = validate(tiny("dp=2"));
  const nlohmann::json j = validation_to_json(r);
  for (const char* key : {"projected_ms", "measured_ms", "error_pct", "backend", "strategy", "devices_busy", "model",
                          "batch", "measured_min_ms", "measured_max_ms", "calibration", "notes"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["strategy"], "dp=2");
  EXPECT_EQ(j["devices"], 2);
  EXPECT_EQ(j["measured"], true);
  EXPECT_EQ(j["stand_in_tasks"], 0);
  EXPECT_GT(j["compute_tasks"].get<std::int64_t>(), 0);
  // Two devices: the contention model applies, and its effect is what it added to the step.
  ASSERT_TRUE(j.contains("contention"));
  EXPECT_EQ(j["contention"]["applied"], true);
  EXPECT_NEAR(j["contention"]["effect_ms"].get<double>(),
              j["simulated_ms"].get<double>() - j["contention"]["simulated_without_ms"].get<double>(), 1e-9);
  ASSERT_EQ(j["devices_busy"].size(), 2u);
  for (const auto& d : j["devices_busy"])
    for (const char* key :
         {"device", "projected_compute_ms", "measured_compute_ms", "projected_comm_ms", "measured_comm_ms"})
      EXPECT_TRUE(d.contains(key)) << key;
  const double projected = j["projected_ms"], measured = j["measured_ms"];
  EXPECT_GT(projected, 0);
  EXPECT_GT(measured, 0);
  EXPECT_NEAR(j["error_pct"].get<double>(), (projected - measured) / measured * 100.0, 1e-6);
  EXPECT_LE(j["measured_min_ms"].get<double>(), measured);
  EXPECT_GE(j["measured_max_ms"].get<double>(), measured);
}

TEST(Validate, RejectsWhatItCannotRun) {
  EXPECT_THROW(validate(tiny("mp=2,schedule=pipedream,micro=2")), InputError);
  ValidationRequest r = tiny("dp=1");
  r.model = "no_such_model";
  EXPECT_THROW(validate(r), InputError);
  r = tiny("dp=1");
  r.batch = 0;
  EXPECT_THROW(validate(r), InputError);
  // A model no CPU host trains in reasonable time is refused before anything runs.
  r = tiny("dp=1");
  r.model = "megatron_1t";
  r.batch = 1;
  try {
    validate(r);
    ADD_FAILURE() << "megatron_1t was not refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("GFLOP"), std::string::npos) << e.what();
  }
}

TEST(Validate, CudaWithoutEnoughGpusIsARuntimeFailure) {
  // No machine has 1024 GPUs visible: built without CUDA, without a GPU or with a few, the
  // request is refused as a runtime failure (exit 1), not as bad input.
  ValidationRequest r = tiny("dp=1024");
  r.backend = Backend::Cuda;
  r.batch = 1024;
  try {
    validate(r);
    ADD_FAILURE() << "a 1024-GPU cuda validation ran";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("--backend cuda"), std::string::npos) << e.what();
  }
}

ValidationResult row(double error_pct, std::int64_t stand_ins) {
  ValidationResult r;
  r.model = "tiny_cnn";
  r.strategy = "dp=1";
  r.projected = 1'000'000;
  r.measured = 1'000'000;
  r.error_pct = error_pct;
  r.stand_in_tasks = stand_ins;
  r.compute_tasks = 10;
  return r;
}

TEST(Validate, RowsWithStandInKernelsAreNotMeasuredAndLeftOutOfTheStatistics) {
  SuiteResult s;
  // Measured |errors| 2, 4, 9 (median 4, max 9); the stand-in rows' 0 % and 50 % do not count.
  s.rows = {row(-4, 0), row(0, 10), row(2, 0), row(50, 3), row(-9, 0)};
  summarize_suite(s);
  EXPECT_EQ(s.measured_rows, 3u);
  EXPECT_DOUBLE_EQ(s.median_abs_error_pct, 4.0);
  EXPECT_DOUBLE_EQ(s.max_abs_error_pct, 9.0);
  const nlohmann::json j = suite_to_json(s);
  EXPECT_EQ(j["measured_rows"], 3);
  EXPECT_EQ(j["not_measured_rows"], 2);
  EXPECT_EQ(j["rows"][1]["measured"], false);
  EXPECT_TRUE(j["rows"][1]["error_pct"].is_null());
  EXPECT_EQ(j["rows"][1]["stand_in_tasks"], 10);
  EXPECT_EQ(j["rows"][0]["measured"], true);
  EXPECT_DOUBLE_EQ(j["rows"][0]["error_pct"].get<double>(), -4.0);
}

TEST(Validate, ASuiteWithNothingMeasuredHasNoErrorStatistics) {
  SuiteResult s;
  s.rows = {row(0, 10), row(0.5, 10)};
  summarize_suite(s);
  EXPECT_EQ(s.measured_rows, 0u);
  const nlohmann::json j = suite_to_json(s);
  EXPECT_TRUE(j["median_abs_error_pct"].is_null());
  EXPECT_TRUE(j["max_abs_error_pct"].is_null());
  EXPECT_EQ(j["not_measured_rows"], 2);
}

TEST(Validate, TheSuiteIsTheDocumentedMatrix) {
  const auto cases = ci_suite_cases();
  ASSERT_EQ(cases.size(), 12u);
  EXPECT_EQ(cases.front().model, "tiny_cnn");
  EXPECT_EQ(cases.back().model, "googlenet_cifar");
  EXPECT_EQ(cases.back().strategy, "mp=2,schedule=1f1b,micro=4");
  for (const auto& c : cases) EXPECT_EQ(c.batch, 8);
  EXPECT_EQ(suite_cases("ci").size(), 12u);
}

TEST(Validate, TheHeldOutSuiteIsDisjointFromTheTuningSuite) {
  const auto tuning = ci_suite_cases();
  const auto held = suite_cases("heldout");
  ASSERT_EQ(held.size(), 8u);
  for (const SuiteCase& h : held)
    for (const SuiteCase& t : tuning)
      EXPECT_FALSE(h.model == t.model && h.batch == t.batch && h.strategy == t.strategy)
          << h.model << " " << h.strategy;
  // What the issue asks the held-out cases to cover.
  auto has = [&](const std::string& part) {
    return std::any_of(held.begin(), held.end(),
                       [&](const SuiteCase& c) { return c.strategy.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(has("tp=2"));
  EXPECT_TRUE(has("schedule=gpipe"));
  EXPECT_TRUE(has("schedule=interleaved"));
  EXPECT_TRUE(has("dp=3"));
  EXPECT_TRUE(
      std::any_of(held.begin(), held.end(), [](const SuiteCase& c) { return c.batch % 2 == 1; }));  // uneven split
  try {
    suite_cases("nightly");
    ADD_FAILURE() << "an unknown suite was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("expected ci"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace parasim::validation
