// parasim calibrate: the fit recovers factors that generated synthetic runs, holds factors no run
// depends on at their default, and refuses to fit more factors than runs allow.
#include "parasim/validation/calibrate.hpp"

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"

namespace parasim::validation {
namespace {

// A small GPT on DGX A100 nodes under one strategy: what varies across runs is how much of the
// step is GEMMs, bandwidth-bound kernels, NVLink and network collectives.
RecordedRun synthetic(const std::string& id, int dp, int tp, std::int64_t micro_batch, int layers) {
  RecordedRun r;
  r.id = id;
  r.transformer.name = id;
  r.transformer.layers = layers;
  r.transformer.hidden = 512;
  r.transformer.heads = 8;
  r.transformer.ffn = 2048;
  r.transformer.vocab = 4096;
  r.transformer.seq_len = 256;
  r.transformer.max_positions = 256;
  r.seq_len = 256;
  r.preset = "dgx-a100";
  r.gpus = dp * tp;
  r.strategy.dp = dp;
  r.strategy.tp = tp;
  r.global_batch = dp * micro_batch;
  r.dtype = models::DType::F16;
  r.measured_step_s = 1;
  return r;
}

RunsFile synthetic_runs(const Calibration& truth) {
  RunsFile f;
  f.path = "synthetic";
  f.runs = {synthetic("dp8", 8, 1, 8, 4),      synthetic("tp8", 1, 8, 16, 4),  synthetic("dp16", 16, 1, 4, 2),
            synthetic("dp2tp8", 2, 8, 32, 6),  synthetic("dp32", 32, 1, 64, 2), synthetic("tp4dp4", 4, 4, 2, 8),
            synthetic("one", 1, 1, 64, 3),       synthetic("tp2dp4", 4, 2, 16, 3)};
  for (RecordedRun& r : f.runs) {
    const RunOutcome o = evaluate_run(r, {.calibration = truth, .progress = {}});
    EXPECT_TRUE(o.scored) << r.id << ": " << o.note;
    r.measured_step_s = o.projected_step_s;
  }
  return f;
}

TEST(Calibrate, RecoversTheFactorsThatMadeTheRuns) {
  Calibration truth;
  truth.matrix = 1.25;
  truth.memory = 0.8;
  truth.intra_node_comm = 1.6;
  truth.inter_node_comm = 1.3;
  truth.step_overhead_ms = 2.0;
  const CalibrationFit fit =
      fit_calibration(synthetic_runs(truth), {.max_iterations = 60, .fixed = {}, .on_stage = {}});
  for (std::size_t i = 0; i < Calibration::kNames.size(); ++i) {
    EXPECT_TRUE(fit.fitted[i]) << Calibration::kNames[i];
    EXPECT_NEAR(fit.calibration.get(i), truth.get(i), 0.01 * std::max(1.0, truth.get(i))) << Calibration::kNames[i];
  }
  EXPECT_LT(fit.in_sample.max_abs_error_pct, 0.1);
  EXPECT_GT(fit.default_model.max_abs_error_pct, 10.0);
  EXPECT_LT(fit.leave_one_out.max_abs_error_pct, 1.0);
}

TEST(Calibrate, HoldsFixedAndIrrelevantFactorsAtTheirDefault) {
  Calibration truth;
  truth.matrix = 1.1;
  RunsFile runs = synthetic_runs(truth);
  // Single-node runs only: nothing crosses the network.
  runs.runs = {runs.runs[0], runs.runs[1], runs.runs[6], runs.runs[7]};
  const CalibrationFit fit =
      fit_calibration(runs, {.max_iterations = 20, .fixed = {"step_overhead_ms"}, .on_stage = {}});
  EXPECT_FALSE(fit.fitted[3]);  // inter_node_comm
  EXPECT_FALSE(fit.fitted[4]);  // step_overhead_ms, held
  EXPECT_DOUBLE_EQ(fit.calibration.inter_node_comm, 1.0);
  EXPECT_DOUBLE_EQ(fit.calibration.step_overhead_ms, 0.0);
  EXPECT_NEAR(fit.calibration.matrix, 1.1, 0.011);
  const nlohmann::json j = calibration_fit_to_json(fit);
  EXPECT_EQ(j["schema"], "parasim.calibration/1");
  EXPECT_EQ(j["fitted_factors"].size(), 3u);
  EXPECT_EQ(calibration_from_json(j, "cal.json").describe().substr(0, 14), "matrix x1.100,");
}

// calibrate --profiles --runs: the kernel factors come from the profiles and are held at those
// values while the links are fitted to the runs.
TEST(Calibrate, HoldsFactorsAtTheirStartValues) {
  Calibration truth;
  truth.matrix = 1.3;
  truth.memory = 0.9;
  truth.intra_node_comm = 1.5;
  RunsFile runs = synthetic_runs(truth);
  runs.runs = {runs.runs[0], runs.runs[1], runs.runs[6], runs.runs[7]};
  FitOptions options{.max_iterations = 20, .fixed = {"matrix", "memory", "step_overhead_ms"}, .on_stage = {}};
  options.start.matrix = 1.3;
  options.start.memory = 0.9;
  const CalibrationFit fit = fit_calibration(runs, options);
  EXPECT_FALSE(fit.fitted[0]);
  EXPECT_FALSE(fit.fitted[1]);
  EXPECT_DOUBLE_EQ(fit.calibration.matrix, 1.3);
  EXPECT_DOUBLE_EQ(fit.calibration.memory, 0.9);
  EXPECT_NEAR(fit.calibration.intra_node_comm, 1.5, 0.015);
  EXPECT_LT(fit.in_sample.max_abs_error_pct, 0.1);
}

// Runs are projected in parallel; the fit, and its file, must not depend on the thread count.
TEST(Calibrate, TheFitIsTheSameOnOneThreadAndOnThree) {
  Calibration truth;
  truth.matrix = 1.2;
  truth.intra_node_comm = 1.5;
  const RunsFile runs = synthetic_runs(truth);
  const auto fit_on = [&](int threads) {
    return calibration_fit_to_json(
        fit_calibration(runs, {.max_iterations = 6, .fixed = {}, .on_stage = {}, .threads = threads}));
  };
  EXPECT_EQ(fit_on(1).dump(), fit_on(3).dump());
}

TEST(Calibrate, RefusesToFitMoreFactorsThanRunsAllow) {
  RunsFile runs = synthetic_runs(Calibration{});
  runs.runs.resize(2);
  try {
    (void)fit_calibration(runs, {});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot fit"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)fit_calibration(runs, {.max_iterations = 8, .fixed = {"gpu"}, .on_stage = {}}), InputError);
}

TEST(CalibrationFile, RoundTripsAndRejectsUnknownFactors) {
  Calibration c;
  c.matrix = 1.5;
  c.step_overhead_ms = 12;
  const Calibration back = calibration_from_json(calibration_to_json(c), "c.json");
  EXPECT_DOUBLE_EQ(back.matrix, 1.5);
  EXPECT_DOUBLE_EQ(back.step_overhead_ms, 12);
  EXPECT_EQ(back.origin, "c.json");
  nlohmann::json bad = calibration_to_json(c);
  bad["factors"]["gpu"] = 2;
  try {
    (void)calibration_from_json(bad, "c.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, 25), "c.json: $.factors.gpu: ex");
  }
  bad = calibration_to_json(c);
  bad["factors"]["matrix"] = 0;
  EXPECT_THROW((void)calibration_from_json(bad, "c.json"), InputError);
}

}  // namespace
}  // namespace parasim::validation
