// Projection on a hand-checkable setup: a 4-layer chain with round fake costs on a 4-GPU star
// written to a cluster file, critical-batch efficiency E(B) = 2 (1 + B / 16) and a 1,000-sample
// dataset. Every row must satisfy time to train = E(B) x ceil(1000 / B) x step exactly, with
// B = N x b for DP only and (N / M) x b for a hybrid of M-GPU workers, and gain = (T_dp - T_h) / T_dp.
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "lowering_fixtures.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/hardware/cluster_json.hpp"
#include "parasim/strategies/projection.hpp"

namespace parasim::strategies {
namespace {

using namespace testing;

TEST(Projection, ParsesGpuCounts) {
  EXPECT_EQ(parse_gpu_counts("8,16,32"), (std::vector<int>{8, 16, 32}));
  EXPECT_EQ(parse_gpu_counts("8-1024"), (std::vector<int>{8, 16, 32, 64, 128, 256, 512, 1024}));
  EXPECT_EQ(parse_gpu_counts("6-40"), (std::vector<int>{8, 16, 32}));
  EXPECT_EQ(parse_gpu_counts("1-64x2"), (std::vector<int>{1, 2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(parse_gpu_counts("3-48x2, 4"), (std::vector<int>{3, 4, 6, 12, 24, 48}));
  EXPECT_EQ(parse_gpu_counts("32,8,8"), (std::vector<int>{8, 32}));
  for (const char* bad : {"", "0", "abc", "64-8", "8-1024x1", "9-15", "8-", "1e3"})
    EXPECT_NE(input_error([&] { parse_gpu_counts(bad); }), "<no InputError>") << bad;
  EXPECT_EQ(input_error([] { parse_gpu_counts("64-8"); }), "--gpus: \"64-8\": the range ends before it starts");
}

TEST(Projection, DefaultPerDeviceBatchesSayWhereTheyComeFrom) {
  EXPECT_EQ(default_per_device_batch("resnet50").batch, 32);
  EXPECT_EQ(default_per_device_batch("gnmt").batch, 128);
  EXPECT_NE(default_per_device_batch("biglstm").source.find("Jozefowicz"), std::string::npos);
  EXPECT_NE(default_per_device_batch("no-such-model").source.find("assumed"), std::string::npos);
}

void expect_time_to_train(const ProjectionSide& s, const StatisticalEfficiency& eff, std::int64_t dataset,
                          std::int64_t batch) {
  ASSERT_TRUE(s.feasible) << s.reason;
  EXPECT_EQ(s.global_batch, batch) << to_string(s.strategy);
  EXPECT_DOUBLE_EQ(s.epochs, eff.epochs(static_cast<double>(batch)));
  EXPECT_EQ(s.steps_per_epoch, (dataset + batch - 1) / batch);
  EXPECT_EQ(s.time_to_train, std::llround(s.epochs * static_cast<double>(s.steps_per_epoch) *
                                           static_cast<double>(s.step_time)));
}

TEST(Projection, RowsFollowTheTimeToTrainFormulaAndTheBatchConvention) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "parasim_projection_test";
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "star4.json").string();
  hardware::save_cluster_file(star_cluster(4, 1000, 10.0), file);

  const models::Model model = chain_model(4, 512);
  FakeCosts costs;
  const StatisticalEfficiency eff = StatisticalEfficiency::critical_batch(2, 16, "test");
  ProjectionRequest req{.model = &model,
                        .cluster = file,
                        .costs = &costs,
                        .optimizer = profiler::Optimizer::Sgd,
                        .efficiency = eff,
                        .dataset = Dataset{"toy", 1000, "samples", "test"},
                        .per_device_batch = 4,
                        .per_device_batch_source = "test",
                        .gpus = {1, 2, 4},
                        .threads = 2};
  req.space.recomputes = {Recompute::None};
  const Projection p = run_projection(req);
  ASSERT_EQ(p.rows.size(), 3u);

  // One GPU: data parallelism of one; no hybrid exists.
  EXPECT_EQ(p.rows[0].gpus, 1);
  expect_time_to_train(p.rows[0].dp, eff, 1000, 4);
  EXPECT_FALSE(p.rows[0].hybrid.feasible);
  EXPECT_EQ(p.rows[0].hybrid.reason, "no split of 1 GPUs into data-parallel groups of M > 1 GPUs");
  EXPECT_FALSE(p.rows[0].gain_pct.has_value());

  for (std::size_t i = 1; i < p.rows.size(); ++i) {
    const ProjectionRow& r = p.rows[i];
    EXPECT_EQ(r.dp.strategy.dp, r.gpus);
    expect_time_to_train(r.dp, eff, 1000, 4LL * r.gpus);
    const int width = r.hybrid.strategy.mp * r.hybrid.strategy.tp;
    EXPECT_GT(width, 1);
    EXPECT_EQ(r.hybrid.strategy.dp * width, r.gpus);
    expect_time_to_train(r.hybrid, eff, 1000, 4LL * (r.gpus / width));
    ASSERT_TRUE(r.gain_pct.has_value());
    EXPECT_DOUBLE_EQ(*r.gain_pct, 100.0 * static_cast<double>(r.dp.time_to_train - r.hybrid.time_to_train) /
                                      static_cast<double>(r.dp.time_to_train));
  }
  // 4 GPUs, DP only: B = 16, E = 2 (1 + 16 / 16) = 4 epochs of ceil(1000 / 16) = 63 steps.
  EXPECT_DOUBLE_EQ(p.rows[2].dp.epochs, 4.0);
  EXPECT_EQ(p.rows[2].dp.steps_per_epoch, 63);

  const nlohmann::json j = projection_to_json(p);
  EXPECT_EQ(j.at("schema"), "parasim.projection/1");
  for (const char* key : {"cost_source", "efficiency", "dataset", "dataset_samples", "dataset_source", "cluster"})
    EXPECT_TRUE(j.at("assumptions").contains(key)) << key;
  EXPECT_EQ(j.at("assumptions").at("efficiency"), eff.describe());
  const nlohmann::json& row = j.at("rows").at(2);
  for (const char* key : {"gpus", "dp_strategy", "dp_step_time_ms", "dp_global_batch", "dp_epochs",
                          "dp_time_to_train_s", "hybrid_strategy", "hybrid_step_time_ms", "hybrid_global_batch",
                          "hybrid_epochs", "hybrid_time_to_train_s", "gain_pct"})
    EXPECT_TRUE(row.contains(key)) << key;
  EXPECT_TRUE(j.at("rows").at(0).at("gain_pct").is_null());
  const std::string csv = projection_to_csv(p);
  EXPECT_EQ(csv.substr(0, csv.find(',')), "gpus");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);
  // Identical inputs, identical bytes.
  EXPECT_EQ(dump_json(j), dump_json(projection_to_json(run_projection(req))));
  std::filesystem::remove_all(dir);
}

TEST(Projection, PicksTheBestOfEachSideFromAPlan) {
  PlanResult plan;
  auto row = [](const std::string& s, TimeNs ttt, Verdict v) {
    PlanRow r;
    r.strategy = parse_strategy(s);
    r.verdict = v;
    r.time_to_train = ttt;
    r.reason = v == Verdict::Feasible ? "" : "too big";
    return r;
  };
  plan.rows = {row("dp=2,mp=2,schedule=1f1b,micro=2", 600, Verdict::Feasible), row("dp=4", 800, Verdict::Feasible),
               row("dp=4,zero=1", 900, Verdict::Feasible), row("mp=4", 0, Verdict::PeakMemory)};
  const ProjectionRow r = projection_row_from_plan(4, 1, plan);
  EXPECT_EQ(to_string(r.dp.strategy), "dp=4");
  EXPECT_EQ(r.dp.candidates, 2);
  EXPECT_EQ(to_string(r.hybrid.strategy), "dp=2,mp=2,schedule=1f1b,micro=2");
  EXPECT_EQ(r.hybrid.candidates, 2);
  ASSERT_TRUE(r.gain_pct.has_value());
  EXPECT_DOUBLE_EQ(*r.gain_pct, 25.0);
  // One line per model-parallel width: M = 2 has a feasible split, M = 4 (mp=4) does not fit.
  ASSERT_EQ(r.hybrid_by_width.size(), 1u);
  EXPECT_EQ(r.hybrid_by_width.begin()->first, 2);
  EXPECT_EQ(to_string(r.hybrid_by_width.begin()->second.strategy), "dp=2,mp=2,schedule=1f1b,micro=2");
  EXPECT_EQ(r.hybrid_by_width.begin()->second.time_to_train, 600);
}

TEST(Projection, ExtrapolatedWinnersAreNamedInTheAssumptionsAndJson) {
  PlanResult plan;
  PlanRow hybrid;
  hybrid.strategy = parse_strategy("dp=2,mp=2,schedule=1f1b,micro=8");
  hybrid.verdict = Verdict::Feasible;
  hybrid.time_to_train = 600;
  hybrid.sampled_micro = {2, 4};
  PlanRow dp;
  dp.strategy = parse_strategy("dp=4");
  dp.verdict = Verdict::Feasible;
  dp.time_to_train = 800;
  plan.rows = {hybrid, dp};
  Projection p;
  p.rows = {projection_row_from_plan(4, 1, plan)};
  EXPECT_EQ(p.rows[0].hybrid.sampled_micro, (std::array<int, 2>{2, 4}));
  EXPECT_EQ(projection_shortcuts(p, false),
            "extrapolated along the micro-batch count (simulated at two smaller counts and continued): 4 GPUs hybrid "
            "(micro=8 from 2 and 4); candidates may be skipped by memory dominance; --exact simulates every candidate "
            "in full");
  EXPECT_EQ(projection_shortcuts(p, true).rfind("none:", 0), 0u);
  // A plan that skipped fewest-layers recomputations says how many.
  Projection skipped = p;
  skipped.rows[0].less_recompute = 3;
  EXPECT_EQ(projection_shortcuts(skipped, false),
            "extrapolated along the micro-batch count (simulated at two smaller counts and continued): 4 GPUs hybrid "
            "(micro=8 from 2 and 4); candidates may be skipped by memory dominance; 3 recomputing the fewest whole "
            "layers that fit not simulated because the same configuration fits with selective or no recomputation "
            "(taken to be faster); --exact simulates every candidate in full");
  p.assumptions.shortcuts = projection_shortcuts(p, false);
  const nlohmann::json j = projection_to_json(p);
  EXPECT_EQ(j["assumptions"]["shortcuts"], p.assumptions.shortcuts);
  EXPECT_EQ(j["rows"][0]["hybrid_simulated_micro"], nlohmann::json({2, 4}));
  EXPECT_FALSE(j["rows"][0].contains("dp_simulated_micro"));
}

TEST(Projection, BestSplitOfEachModelParallelWidth) {
  PlanResult plan;
  auto row = [](const std::string& s, TimeNs ttt) {
    PlanRow r;
    r.strategy = parse_strategy(s);
    r.verdict = Verdict::Feasible;
    r.time_to_train = ttt;
    return r;
  };
  // Ranked best first, as the planner returns them; tp counts towards the width (mp x tp).
  plan.rows = {row("dp=2,tp=4", 500), row("dp=4,mp=2", 550), row("dp=8", 560), row("dp=2,mp=2,tp=2", 570),
               row("dp=4,tp=2", 580), row("mp=8", 900)};
  const ProjectionRow r = projection_row_from_plan(8, 1, plan);
  ASSERT_EQ(r.hybrid_by_width.size(), 3u);
  EXPECT_EQ(to_string(r.hybrid_by_width.at(2).strategy), "dp=4,mp=2");
  EXPECT_EQ(to_string(r.hybrid_by_width.at(4).strategy), "dp=2,tp=4");
  EXPECT_EQ(r.hybrid_by_width.at(4).candidates, 2);
  EXPECT_EQ(to_string(r.hybrid_by_width.at(8).strategy), "mp=8");
  const nlohmann::json j = projection_to_json(Projection{{r}, {}});
  ASSERT_EQ(j["rows"][0]["hybrid_by_width"].size(), 3u);
  EXPECT_EQ(j["rows"][0]["hybrid_by_width"][1]["width"], 4);
  EXPECT_EQ(j["rows"][0]["hybrid_by_width"][1]["strategy"], "dp=2,tp=4");
}

}  // namespace
}  // namespace parasim::strategies
