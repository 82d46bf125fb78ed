// parasim calibrate: the fit recovers factors that generated synthetic runs (per GPU kind), holds
// factors no run depends on at their default, leaves a kind with too few runs on the default
// kernel model, and refuses to fit more factors than runs allow.
#include "parasim/validation/calibrate.hpp"

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/hardware/device_spec.hpp"

namespace parasim::validation {
namespace {

constexpr const char* kA100 = "A100-SXM4-80GB";
constexpr const char* kH100 = "H100-SXM5-80GB";

// A small GPT on DGX nodes under one strategy: what varies across runs is how much of the step is
// GEMMs, bandwidth-bound kernels, NVLink and network collectives.
RecordedRun synthetic(const std::string& id, int dp, int tp, std::int64_t micro_batch, int layers,
                      const std::string& preset = "dgx-a100") {
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
  r.preset = preset;
  r.gpus = dp * tp;
  r.strategy.dp = dp;
  r.strategy.tp = tp;
  r.global_batch = dp * micro_batch;
  r.dtype = models::DType::F16;
  r.measured_step_s = 1;
  return r;
}

// Each run's "measurement" is what parasim projects under `truth`.
void measure_under(RunsFile& f, const Calibration& truth) {
  for (RecordedRun& r : f.runs) {
    const RunOutcome o = evaluate_run(r, {.calibration = truth, .progress = {}});
    EXPECT_TRUE(o.scored) << r.id << ": " << o.note;
    r.measured_step_s = o.projected_step_s;
  }
}

RunsFile synthetic_runs(const Calibration& truth) {
  RunsFile f;
  f.path = "synthetic";
  f.runs = {synthetic("dp8", 8, 1, 8, 4),      synthetic("tp8", 1, 8, 16, 4),  synthetic("dp16", 16, 1, 4, 2),
            synthetic("dp2tp8", 2, 8, 32, 6),  synthetic("dp32", 32, 1, 64, 2), synthetic("tp4dp4", 4, 4, 2, 8),
            synthetic("one", 1, 1, 64, 3),       synthetic("tp2dp4", 4, 2, 16, 3)};
  measure_under(f, truth);
  return f;
}

std::string note_of(const CalibrationFit& fit, const std::string& name) {
  for (const FitFactor& f : fit.factors)
    if (f.name == name) return f.note;
  return "no factor " + name;
}

TEST(Calibrate, RecoversTheFactorsThatMadeTheRuns) {
  Calibration truth;
  truth.kernels[kA100] = {1.25, 0.8};
  truth.intra_node_comm = 1.6;
  truth.inter_node_comm = 1.3;
  truth.step_overhead_ms = 2.0;
  // Within the CLI's default budget (--max-iterations 20): the Jacobian's finite differences are
  // fine enough (0.5% of a factor) for Gauss-Newton to converge in a few steps.
  const CalibrationFit fit =
      fit_calibration(synthetic_runs(truth), {.max_iterations = 20, .fixed = {}, .per_gpu_kind = true, .on_stage = {}});
  EXPECT_TRUE(fit.converged);
  EXPECT_LE(fit.iterations, 10);
  ASSERT_EQ(fit.factors.size(), 5u);
  for (const FitFactor& f : fit.factors) EXPECT_TRUE(f.fitted) << f.name << ": " << f.note;
  EXPECT_NEAR(fit.calibration.kernel_factors(kA100).matrix, 1.25, 0.0125);
  EXPECT_NEAR(fit.calibration.kernel_factors(kA100).memory, 0.8, 0.01);
  EXPECT_NEAR(fit.calibration.intra_node_comm, 1.6, 0.016);
  EXPECT_NEAR(fit.calibration.inter_node_comm, 1.3, 0.013);
  EXPECT_NEAR(fit.calibration.step_overhead_ms, 2.0, 0.02);
  EXPECT_EQ(fit.calibration.kernels.size(), 1u);  // only the kind it saw
  EXPECT_FALSE(fit.calibration.has_kernel_factors(kH100));
  EXPECT_LT(fit.in_sample.max_abs_error_pct, 0.1);
  EXPECT_GT(fit.default_model.max_abs_error_pct, 10.0);
  EXPECT_LT(fit.leave_one_out.max_abs_error_pct, 1.0);
}

// A factor whose true value is at its bound (NVLink collectives three times as fast as modelled,
// the fastest the fit allows): the fit holds it there once a step would push it past, and still
// recovers the others.
TEST(Calibrate, HoldsAFactorAtItsBoundAndRecoversTheRest) {
  Calibration truth;
  truth.kernels[kA100] = {1.25, 0.8};
  truth.intra_node_comm = 1.0 / 3.0;
  truth.inter_node_comm = 1.3;
  truth.step_overhead_ms = 2.0;
  const CalibrationFit fit =
      fit_calibration(synthetic_runs(truth), {.max_iterations = 20, .fixed = {}, .per_gpu_kind = true, .on_stage = {}});
  EXPECT_TRUE(fit.converged);
  // Within the fit's own stopping rule (no factor moving 0.01%): the collectives' held SMs make the
  // step less sensitive to this factor, and the last step toward the bound is under that.
  EXPECT_NEAR(fit.calibration.intra_node_comm, 1.0 / 3.0, 1e-4 / 3.0);
  EXPECT_NEAR(fit.calibration.kernel_factors(kA100).matrix, 1.25, 0.0125);
  EXPECT_NEAR(fit.calibration.kernel_factors(kA100).memory, 0.8, 0.01);
  EXPECT_NEAR(fit.calibration.inter_node_comm, 1.3, 0.013);
  EXPECT_NEAR(fit.calibration.step_overhead_ms, 2.0, 0.02);
  EXPECT_LT(fit.in_sample.max_abs_error_pct, 0.1);
}

// Two GPU kinds made with different kernel factors: each kind gets its own. A third kind with two
// runs cannot fit two factors and keeps the default kernel model, in the fit and out of sample.
TEST(Calibrate, FitsKernelFactorsPerGpuKind) {
  Calibration truth;
  truth.kernels[kA100] = {1.3, 0.9};
  truth.kernels[kH100] = {0.8, 1.2};
  truth.kernels["V100-SXM2-32GB"] = {1.5, 1.5};
  truth.intra_node_comm = 1.4;
  RunsFile runs;
  runs.path = "two-kinds";
  runs.runs = {synthetic("a-dp8", 8, 1, 8, 4),
               synthetic("a-tp8", 1, 8, 16, 4),
               synthetic("a-one", 1, 1, 64, 3),
               synthetic("a-tp2dp4", 4, 2, 16, 3),
               synthetic("h-dp8", 8, 1, 8, 4, "dgx-h100"),
               synthetic("h-tp8", 1, 8, 16, 4, "dgx-h100"),
               synthetic("h-one", 1, 1, 64, 3, "dgx-h100"),
               synthetic("h-tp4", 2, 4, 8, 6, "dgx-h100"),
               synthetic("v-dp8", 8, 1, 8, 4, "dgx1-v100"),
               synthetic("v-one", 1, 1, 64, 3, "dgx1-v100")};
  measure_under(runs, truth);
  const CalibrationFit fit = fit_calibration(
      runs,
      {.max_iterations = 60, .fixed = {"inter_node_comm", "step_overhead_ms"}, .per_gpu_kind = true, .on_stage = {}});
  EXPECT_NEAR(fit.calibration.kernel_factors(kA100).matrix, 1.3, 0.013);
  EXPECT_NEAR(fit.calibration.kernel_factors(kA100).memory, 0.9, 0.009);
  EXPECT_NEAR(fit.calibration.kernel_factors(kH100).matrix, 0.8, 0.008);
  EXPECT_NEAR(fit.calibration.kernel_factors(kH100).memory, 1.2, 0.012);
  EXPECT_NEAR(fit.calibration.intra_node_comm, 1.4, 0.014);
  EXPECT_FALSE(fit.calibration.has_kernel_factors("V100-SXM2-32GB"));
  EXPECT_FALSE(fit.fitted("matrix[V100-SXM2-32GB]"));
  EXPECT_EQ(note_of(fit, "memory[V100-SXM2-32GB]"), "2 run(s) of this kind, 3 needed: default kernel model");
  // The V100 runs are priced by the default kernel model: off by what the truth put on them.
  const RunOutcome& v = fit.in_sample.outcomes[8];
  EXPECT_LT(v.error_pct, -20.0);
  EXPECT_NEAR(fit.leave_one_out.outcomes[8].error_pct, v.error_pct, 1.0);
  // Leaving out one of four A100 runs leaves three: still fitted, still right.
  EXPECT_LT(std::abs(fit.leave_one_out.outcomes[0].error_pct), 1.0);

  const Calibration back = calibration_from_json(calibration_fit_to_json(fit), "cal.json");
  EXPECT_EQ(back.kernels.size(), 2u);
  EXPECT_NEAR(back.kernel_factors(kH100).matrix, 0.8, 0.008);
}

TEST(Calibrate, PoolsGpuKindsByDefault) {
  Calibration truth;
  truth.kernels["*"] = {1.2, 1.0};
  RunsFile runs = synthetic_runs(truth);
  runs.runs.resize(4);
  runs.runs.push_back(synthetic("h-dp8", 8, 1, 8, 4, "dgx-h100"));
  measure_under(runs, truth);
  const CalibrationFit fit =
      fit_calibration(runs, {.max_iterations = 40,
                             .fixed = {"memory", "intra_node_comm", "inter_node_comm", "step_overhead_ms"},
                             .on_stage = {}});
  ASSERT_EQ(fit.calibration.kernels.size(), 1u);
  EXPECT_NEAR(fit.calibration.kernel_factors(kH100).matrix, 1.2, 0.012);
  EXPECT_TRUE(fit.fitted("matrix[*]"));
  EXPECT_LT(fit.in_sample.max_abs_error_pct, 0.1);
}

// Partial pooling (--kind-spread): runs of two kinds made with the same kernel factors. Any
// deviation costs the fit without lowering an error, so every kind comes out at the pooled factors,
// which are the truth.
TEST(Calibrate, AKindSpreadRecoversFactorsTheKindsShare) {
  Calibration truth;
  truth.kernels["*"] = {1.3, 0.9};
  truth.intra_node_comm = 1.4;
  RunsFile runs = synthetic_runs(truth);
  runs.runs.resize(6);
  runs.runs.push_back(synthetic("h-dp8", 8, 1, 8, 4, "dgx-h100"));
  runs.runs.push_back(synthetic("h-tp8", 1, 8, 16, 4, "dgx-h100"));
  measure_under(runs, truth);
  const CalibrationFit fit = fit_calibration(
      runs,
      {.max_iterations = 40, .fixed = {"inter_node_comm", "step_overhead_ms"}, .kind_spread = 0.1, .on_stage = {}});
  EXPECT_DOUBLE_EQ(fit.kind_spread, 0.1);
  ASSERT_EQ(fit.calibration.kernels.size(), 3u);  // "*", A100, H100
  for (const char* kind : {"*", kA100, kH100}) {
    EXPECT_NEAR(fit.calibration.kernels.at(kind).matrix, 1.3, 0.013) << kind;
    EXPECT_NEAR(fit.calibration.kernels.at(kind).memory, 0.9, 0.009) << kind;
  }
  EXPECT_NEAR(fit.calibration.intra_node_comm, 1.4, 0.014);
  EXPECT_TRUE(fit.fitted("matrix[H100-SXM5-80GB]"));
  EXPECT_LT(fit.in_sample.max_abs_error_pct, 0.1);
  EXPECT_LT(fit.leave_one_out.max_abs_error_pct, 1.0);
  const nlohmann::json j = calibration_fit_to_json(fit);
  EXPECT_DOUBLE_EQ(j["kind_spread"].get<double>(), 0.1);
  EXPECT_EQ(calibration_from_json(j, "cal.json").kernels.size(), 3u);
}

// A kind with one run whose GEMMs run slower than the others': with a kind spread its factor moves
// toward what that run says, part of the way (the deviation is charged for); left out, the run is
// priced with the factors of the other kind (the pooled ones), not the default model - where
// --per-gpu-kind can fit no factor for one run and keeps the default.
TEST(Calibrate, AKindSpreadLetsAKindWithOneRunLeanOnThePooledFactors) {
  Calibration truth;
  truth.kernels[kA100] = {1.3, 1.0};
  truth.kernels["V100-SXM2-32GB"] = {1.6, 1.0};
  RunsFile runs = synthetic_runs(truth);
  runs.runs.resize(6);
  runs.runs.push_back(synthetic("v-dp8", 8, 1, 8, 4, "dgx1-v100"));
  measure_under(runs, truth);
  const FitOptions options{.max_iterations = 40,
                           .fixed = {"memory", "intra_node_comm", "inter_node_comm", "step_overhead_ms"},
                           .kind_spread = 0.1,
                           .on_stage = {}};
  const CalibrationFit fit = fit_calibration(runs, options);
  const double v100 = fit.calibration.kernel_factors("V100-SXM2-32GB").matrix;
  EXPECT_GT(v100, 1.4);
  EXPECT_LT(v100, 1.59);
  // The pooled factors sit between the kinds, so the A100's own moves a little too (its six runs
  // hold it within 2%).
  EXPECT_GT(fit.calibration.kernel_factors(kA100).matrix, 1.3);
  EXPECT_LT(fit.calibration.kernel_factors(kA100).matrix, 1.3 * 1.02);
  EXPECT_LT(std::abs(fit.in_sample.outcomes[6].error_pct), std::abs(fit.default_model.outcomes[6].error_pct));
  // Left out: priced as the pooled A100 factor prices it.
  Calibration pooled;
  pooled.kernels["*"] = {1.3, 1.0};
  const RunOutcome with_pooled = evaluate_run(runs.runs[6], {.calibration = pooled, .progress = {}});
  EXPECT_NEAR(fit.leave_one_out.outcomes[6].error_pct, with_pooled.error_pct, 0.5);
  EXPECT_LT(with_pooled.error_pct, -5.0);
  // Without the spread, --per-gpu-kind leaves the V100 on the default model.
  FitOptions apart = options;
  apart.kind_spread = 0;
  apart.per_gpu_kind = true;
  EXPECT_FALSE(fit_calibration(runs, apart).calibration.has_kernel_factors("V100-SXM2-32GB"));
  FitOptions both = options;
  both.per_gpu_kind = true;
  EXPECT_THROW((void)fit_calibration(runs, both), InputError);
}

// calibrate settles what a row leaves open once, with the default model, and holds it through
// the fit: a run settled at full recomputation of its first layer only is priced that way, not
// with every layer rerun (until session 32 the fit priced it with every layer: the Llama 3 405B
// row +16.3% left out, where validate --calibration gave +3.1% with the same factors).
// The fit's Jacobian column for the step overhead is worked out from the run's projection instead
// of projecting again (calibrate.cpp, with_overhead): that holds while the overhead is added once,
// after the simulation, in whole nanoseconds (llround of ms x 1e6).
TEST(Calibrate, TheStepOverheadAddsToAProjectionInWholeNanoseconds) {
  const RecordedRun run = synthetic("dp2tp8", 2, 8, 32, 6);
  const auto step_ns = [&](double overhead_ms) {
    Calibration c;
    c.step_overhead_ms = overhead_ms;
    const RunOutcome o = evaluate_run(run, {.calibration = c, .progress = {}});
    EXPECT_TRUE(o.scored) << o.note;
    return std::llround(o.projected_step_s * 1e9);
  };
  const long long none = step_ns(0);
  EXPECT_EQ(step_ns(0.3000004), none + 300'000);  // 300,000.4 ns rounds down
  EXPECT_EQ(step_ns(1.3000006), none + 1'300'001);
  EXPECT_EQ(step_ns(12.5), none + 12'500'000);
}

// Calibrate's slopes in the communication factors simulate the base projection's lowered step again
// (they are engine options): the same projection, to the nanosecond, as lowering afresh; a kernel
// factor changes the step, so it is lowered again.
TEST(Calibrate, CommunicationSlopesSimulateTheKeptStepAgain) {
  const RecordedRun run = synthetic("dp2tp8", 2, 8, 32, 6);  // TP in a node, DP across two
  RunLowering kept;
  const RunOutcome base = evaluate_run(run, {.calibration = {}, .progress = {}, .lowering = &kept});
  ASSERT_TRUE(base.scored) << base.note;
  ASSERT_FALSE(kept.key.empty());
  const std::string key = kept.key;
  Calibration comm;
  comm.intra_node_comm = 0.5;
  comm.inter_node_comm = 2.0;
  const RunOutcome again = evaluate_run(run, {.calibration = comm, .progress = {}, .lowering = &kept});
  const RunOutcome fresh = evaluate_run(run, {.calibration = comm, .progress = {}});
  EXPECT_EQ(kept.key, key);
  EXPECT_EQ(again.projected_step_s, fresh.projected_step_s);
  EXPECT_NE(again.projected_step_s, base.projected_step_s);
  Calibration kernels = comm;
  kernels.kernels[kA100].matrix = 1.2;
  const RunOutcome lowered = evaluate_run(run, {.calibration = kernels, .progress = {}, .lowering = &kept});
  EXPECT_NE(kept.key, key);
  EXPECT_EQ(lowered.projected_step_s, evaluate_run(run, {.calibration = kernels, .progress = {}}).projected_step_s);
  EXPECT_GT(lowered.projected_step_s, again.projected_step_s);
}

TEST(Calibrate, PricesARunAtTheRecomputedLayersItWasSettledAt) {
  RecordedRun run = synthetic("first-layer", 8, 1, 8, 4);
  run.strategy.recompute = strategies::Recompute::Full;
  run.strategy.recompute_layers = 1;
  const RunOutcome first = evaluate_run(run, {});
  ASSERT_TRUE(first.scored) << first.note;
  EXPECT_EQ(first.run.strategy.recompute_layers, 1);
  run.strategy.recompute_layers = 0;
  const RunOutcome every = evaluate_run(run, {});
  ASSERT_TRUE(every.scored) << every.note;
  EXPECT_EQ(every.run.strategy.recompute_layers, 0);
  EXPECT_LT(first.projected_step_s, every.projected_step_s);  // three of four layers not rerun
}

TEST(Calibrate, HoldsFixedAndIrrelevantFactorsAtTheirDefault) {
  Calibration truth;
  truth.kernels[kA100] = {1.1, 1.0};
  RunsFile runs = synthetic_runs(truth);
  // Single-node runs only: nothing crosses the network.
  runs.runs = {runs.runs[0], runs.runs[1], runs.runs[6], runs.runs[7]};
  const CalibrationFit fit = fit_calibration(
      runs, {.max_iterations = 20, .fixed = {"step_overhead_ms"}, .per_gpu_kind = true, .on_stage = {}});
  EXPECT_FALSE(fit.fitted("inter_node_comm"));
  EXPECT_FALSE(fit.fitted("step_overhead_ms"));
  EXPECT_DOUBLE_EQ(fit.calibration.inter_node_comm, 1.0);
  EXPECT_DOUBLE_EQ(fit.calibration.step_overhead_ms, 0.0);
  EXPECT_NEAR(fit.calibration.kernel_factors(kA100).matrix, 1.1, 0.011);
  const nlohmann::json j = calibration_fit_to_json(fit);
  EXPECT_EQ(j["schema"], "parasim.calibration/2");
  EXPECT_EQ(j["fitted_factors"].size(), 3u);
  EXPECT_EQ(j["not_fitted"]["inter_node_comm"], "no run depends on it");
  EXPECT_EQ(calibration_from_json(j, "cal.json").describe().substr(0, 35), "A100-SXM4-80GB matrix x1.100 memory");
}

// calibrate --profiles --runs: the kernel factors come from the profiles and are held at those
// values while the links are fitted to the runs.
TEST(Calibrate, HoldsFactorsAtTheirStartValues) {
  Calibration truth;
  truth.kernels[kA100] = {1.3, 0.9};
  truth.intra_node_comm = 1.5;
  RunsFile runs = synthetic_runs(truth);
  runs.runs = {runs.runs[0], runs.runs[1], runs.runs[6], runs.runs[7]};
  FitOptions options{
      .max_iterations = 20, .fixed = {"matrix", "memory", "step_overhead_ms"}, .per_gpu_kind = true, .on_stage = {}};
  options.start.kernels[kA100] = {1.3, 0.9};
  const CalibrationFit fit = fit_calibration(runs, options);
  EXPECT_FALSE(fit.fitted("matrix[A100-SXM4-80GB]"));
  EXPECT_FALSE(fit.fitted("memory[A100-SXM4-80GB]"));
  EXPECT_DOUBLE_EQ(fit.calibration.kernel_factors(kA100).matrix, 1.3);
  EXPECT_DOUBLE_EQ(fit.calibration.kernel_factors(kA100).memory, 0.9);
  EXPECT_NEAR(fit.calibration.intra_node_comm, 1.5, 0.015);
  EXPECT_LT(fit.in_sample.max_abs_error_pct, 0.1);
}

// Runs are projected in parallel; the fit, and its file, must not depend on the thread count.
TEST(Calibrate, TheFitIsTheSameOnOneThreadAndOnThree) {
  Calibration truth;
  truth.kernels[kA100] = {1.2, 1.0};
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
    (void)fit_calibration(runs, {.max_iterations = 20, .fixed = {}, .per_gpu_kind = true, .on_stage = {}});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, 46), "calibrate: 0 of 2 scored run(s) enter the fit ") << e.what();
  }
  EXPECT_THROW((void)fit_calibration(runs, {.max_iterations = 8, .fixed = {"gpu"}, .on_stage = {}}), InputError);
}

TEST(CalibrationFile, RoundTripsAndRejectsUnknownFactors) {
  Calibration c;
  c.kernels[kA100] = {1.5, 1.0};
  c.step_overhead_ms = 12;
  const Calibration back = calibration_from_json(calibration_to_json(c), "c.json");
  EXPECT_DOUBLE_EQ(back.kernel_factors(kA100).matrix, 1.5);
  EXPECT_DOUBLE_EQ(back.kernel_factors(kH100).matrix, 1.0);  // a kind it has no factors for
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
  bad["factors"]["matrix"] = 1.2;  // version 2 keeps kernel factors per kind
  EXPECT_THROW((void)calibration_from_json(bad, "c.json"), InputError);
  bad = calibration_to_json(c);
  bad["kernels"][kA100]["matrix"] = 0;
  EXPECT_THROW((void)calibration_from_json(bad, "c.json"), InputError);
  bad = calibration_to_json(c);
  bad["kernels"][kA100]["flops"] = 1;
  try {
    (void)calibration_from_json(bad, "c.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "c.json: $.kernels.A100-SXM4-80GB.flops: expected matrix or memory, found number 1");
  }
}

// Files written before kernel factors were per kind: their matrix and memory apply to every kind.
TEST(CalibrationFile, ReadsVersionOneAsFactorsForEveryKind) {
  const nlohmann::json v1 = {{"schema", "parasim.calibration/1"},
                             {"factors", {{"matrix", 1.08}, {"memory", 0.95}, {"step_overhead_ms", 12.5}}}};
  const Calibration c = calibration_from_json(v1, "old.json");
  EXPECT_DOUBLE_EQ(c.kernel_factors(kH100).matrix, 1.08);
  EXPECT_DOUBLE_EQ(c.kernel_factors(kA100).memory, 0.95);
  EXPECT_TRUE(c.has_kernel_factors(kH100));
  EXPECT_EQ(calibration_to_json(c)["kernels"]["*"]["matrix"], 1.08);
}

TEST(CalibrationFile, NamesKindsCanonicallyAndRejectsUnknownOnes) {
  Calibration c;
  c.origin = "cal.json";
  c.kernels["a100"] = {1.2, 1.0};
  c.kernels["*"] = {1.1, 1.0};
  const Calibration canonical = hardware::with_canonical_kinds(c);
  EXPECT_TRUE(canonical.kernels.contains(kA100));
  EXPECT_DOUBLE_EQ(canonical.kernel_factors(kH100).matrix, 1.1);
  c.kernels["B300"] = {1.0, 1.0};
  try {
    (void)hardware::with_canonical_kinds(c);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, 51), "cal.json: $.kernels.B300: expected a device kind (V");
  }
  c.kernels.erase("B300");
  c.kernels["A100-SXM4-80GB"] = {1.3, 1.0};
  EXPECT_THROW((void)hardware::with_canonical_kinds(c), InputError);  // the same kind twice
}

}  // namespace
}  // namespace parasim::validation
