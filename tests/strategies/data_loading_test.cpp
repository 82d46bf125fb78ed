// Data loading (StepSetup::data_loading) on the pipeline fixture: chain_model(4), fc fwd 1000 ns
// and bwd 2000 ns per sample, free transfers, no update cost. GPipe mp=4 with 4 micro-batches of
// one sample takes (4 + 4 - 1) x 3000 = 21,000 ns; PipeDream's steady state is 3000 ns per
// micro-batch (12,000 per step of 4). The loader's time per step is samples x sample_ms / workers.
#include <gtest/gtest.h>

#include "lowering_fixtures.hpp"
#include "parasim/strategies/simulate_strategy.hpp"

namespace parasim::strategies {
namespace {

using namespace testing;

StrategyResult run(const std::string& strategy, const std::string& loading, Symmetry symmetry = Symmetry::DataAndTensor,
                   Granularity g = Granularity::Op) {
  static const hardware::Cluster cluster = star_cluster(8, 0, 1e9);
  static const FakeCosts costs = [] {
    FakeCosts c;
    c.bwd_data = 2000;
    c.bwd_weight = 0;
    return c;
  }();
  static const models::Model model = chain_model(4);
  const Strategy s = parse_strategy(strategy);
  StepSetup setup{.model = &model,
                  .cluster = &cluster,
                  .strategy = s,
                  .global_batch = 4 * s.dp,
                  .costs = &costs,
                  .optimizer = profiler::Optimizer::Sgd,
                  .granularity = g,
                  .symmetry = symmetry};
  setup.data_loading = parse_data_loading(loading);
  return simulate_strategy(setup);
}

int loader_tasks(const StrategyResult& r) {
  const auto& g = r.lowered.graph;
  return count_tasks(g, [&](simulator::TaskId t) { return g.phase(t) == simulator::Phase::DataLoad; });
}

TEST(DataLoading, OffByDefaultAddsNothingAndSaysSo) {
  const StrategyResult r = run("mp=4,schedule=gpipe,micro=4", "off");
  EXPECT_EQ(r.step_time, 21'000);
  EXPECT_EQ(loader_tasks(r), 0);
  EXPECT_EQ(r.lowered.graph.streams_per_device(), kStreamsPerDevice);
  const nlohmann::json j = strategy_result_to_json(r);
  EXPECT_EQ(j["data_loading"]["modelled"], false);
  EXPECT_EQ(j["data_loading"]["description"], "not modelled (off)");
  EXPECT_EQ(j["step_overhead_ms"], 0.0);
  EXPECT_EQ(j["step_overhead"], "0 ms (uncalibrated: optimizer.step launches, zero_grad and Python time not modelled)");
}

TEST(DataLoading, PrefetchFasterThanTheStepCostsNothing) {
  // 4 samples x 4,000 ns / 1 worker = 16,000 ns < 21,000: hidden behind the step.
  const StrategyResult r = run("mp=4,schedule=gpipe,micro=4", "sample_ms=0.004,workers=1");
  EXPECT_EQ(r.step_time, 21'000);
  EXPECT_EQ(r.data_load_time, 16'000);
  EXPECT_EQ(loader_tasks(r), 1);
  EXPECT_EQ(r.lowered.graph.streams_per_device(), kStreamsPerDevice + 1);
  EXPECT_EQ(r.devices[0].compute, 4 * 3000);  // the host loads: not the device's compute
}

TEST(DataLoading, PrefetchSlowerThanTheStepSetsTheStep) {
  // 4 x 30,000 / 2 workers = 60,000 ns: the loader is the bottleneck, the step is its time.
  const StrategyResult r = run("mp=4,schedule=gpipe,micro=4", "sample_ms=0.03,workers=2");
  EXPECT_EQ(r.step_time, 60'000);
  EXPECT_EQ(r.devices[0].compute, 12'000);
  EXPECT_EQ(r.devices[0].idle, 48'000);
  // The same by throughput: 1 / 30 us = 33,333.33 samples/s per worker.
  EXPECT_NEAR(
      static_cast<double>(run("mp=4,schedule=gpipe,micro=4", "samples_per_s=33333.3333333,workers=2").step_time),
      60'000, 1);
  const nlohmann::json j = strategy_result_to_json(r);
  EXPECT_EQ(j["data_loading"]["modelled"], true);
  EXPECT_EQ(j["data_loading"]["overlapped"], true);
  EXPECT_EQ(j["data_loading"]["load_ms_per_step"], 0.06);
}

TEST(DataLoading, SynchronousLoadingIsPaidInFull) {
  // workers=0: 4 x 4,000 = 16,000 ns before anything of the step starts: 16,000 + 21,000.
  const StrategyResult r = run("mp=4,schedule=gpipe,micro=4", "sample_ms=0.004");
  EXPECT_EQ(r.step_time, 37'000);
  for (const DeviceReport& d : r.devices) {
    EXPECT_EQ(d.compute, 12'000);
    EXPECT_EQ(d.idle, 25'000);
  }
  // Data parallelism without micro-batches: 4 layers x 4 samples x 3,000 = 48,000 ns of compute.
  EXPECT_EQ(run("dp=1", "off").step_time, 48'000);
  EXPECT_EQ(run("dp=1", "sample_ms=0.004").step_time, 64'000);
  EXPECT_EQ(run("dp=1", "sample_ms=0.004,workers=4").step_time, 48'000);
}

TEST(DataLoading, EveryReplicaHasItsLoaderAndSymmetryAgrees) {
  for (const std::string loading : {"sample_ms=0.004", "sample_ms=0.03,workers=2"}) {
    const StrategyResult one = run("dp=2,mp=4,schedule=1f1b,micro=4", loading);
    const StrategyResult all = run("dp=2,mp=4,schedule=1f1b,micro=4", loading, Symmetry::None);
    EXPECT_EQ(one.step_time, all.step_time) << loading;
    EXPECT_EQ(loader_tasks(one), 1) << loading;
    EXPECT_EQ(loader_tasks(all), 2) << loading;
  }
  EXPECT_EQ(run("mp=4,schedule=1f1b,micro=4", "sample_ms=0.004", Symmetry::DataAndTensor, Granularity::Stage).step_time,
            37'000);
}

TEST(DataLoading, AsynchronousPipelinesWaitPerMicroBatch) {
  EXPECT_EQ(run("mp=4,schedule=pipedream,micro=4", "off").step_time, 12'000);
  // One sample per micro-batch: 5,000 ns of loading > 3,000 of the bottleneck stage: 4 x 5,000.
  const StrategyResult slow = run("mp=4,schedule=pipedream,micro=4", "sample_ms=0.005,workers=1");
  EXPECT_EQ(slow.step_time, 20'000);
  EXPECT_EQ(loader_tasks(slow), 12);  // one per simulated micro-batch (4 + 4 of fill + 4 of drain)
  EXPECT_EQ(run("mp=4,schedule=pipedream,micro=4", "sample_ms=0.002,workers=1").step_time, 12'000);
  EXPECT_EQ(input_error([] { run("mp=4,schedule=pipedream,micro=4", "sample_ms=0.002"); }),
            "data loading: workers=0 (loading in the training process) is not modelled for the asynchronous "
            "schedule pipedream; give workers >= 1");
}

}  // namespace
}  // namespace parasim::strategies
