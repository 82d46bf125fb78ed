// Pipeline schedules on chain_model(4) cut into equal stages: fc fwd f = 1000 ns and bwd
// b = 2000 ns per sample (all of it data gradient: the gradient a stage sends back is ready at
// the end of its backward, as the textbook formula assumes), micro-batches of 1 sample,
// zero-cost transfers (bandwidth 1e9 GB/s, no latency), no update cost. GPipe/1F1B with p stages
// and m micro-batches take (m + p - 1)(f + b).
#include <gtest/gtest.h>

#include "lowering_fixtures.hpp"
#include "parasim/common/interrupt.hpp"
#include "parasim/strategies/pipeline_schedule.hpp"
#include "parasim/strategies/simulate_strategy.hpp"

namespace parasim::strategies {
namespace {

using namespace testing;

StrategyResult run(const std::string& strategy, std::int64_t batch, Granularity g = Granularity::Op,
                   int layers = 4) {
  static const hardware::Cluster cluster = star_cluster(4, 0, 1e9);
  static const FakeCosts costs = [] {
    FakeCosts c;
    c.bwd_data = 2000;
    c.bwd_weight = 0;
    return c;
  }();
  const models::Model model = chain_model(layers);
  StepSetup setup{.model = &model,
                  .cluster = &cluster,
                  .strategy = parse_strategy(strategy),
                  .global_batch = batch,
                  .costs = &costs,
                  .optimizer = profiler::Optimizer::Sgd,
                  .granularity = g};
  return simulate_strategy(setup);
}

TEST(PipelineSchedule, OneFOneBOrder) {
  std::string order;
  for (const WorkItem& w : pipeline_order(Schedule::OneFOneB, 4, 1, 6, 1)) order += to_string(w) + " ";
  EXPECT_EQ(order, "F0.c1 F1.c1 F2.c1 B0.c1 F3.c1 B1.c1 F4.c1 B2.c1 F5.c1 B3.c1 B4.c1 B5.c1 ");
  order.clear();
  for (const WorkItem& w : pipeline_order(Schedule::GPipe, 2, 1, 3, 0)) order += to_string(w) + " ";
  EXPECT_EQ(order, "F0.c0 F1.c0 F2.c0 B2.c0 B1.c0 B0.c0 ");
}

TEST(PipelineSchedule, InterleavedFollowsMegatron) {
  // 2 stages, 2 virtual stages, 4 micro-batches; stage 1 warms up with (2-1-1)*2 + (2-1)*2 = 2.
  std::string order;
  for (const WorkItem& w : pipeline_order(Schedule::Interleaved, 2, 2, 4, 1)) order += to_string(w) + " ";
  EXPECT_EQ(order,
            "F0.c1 F1.c1 F0.c3 B0.c3 F1.c3 B1.c3 F2.c1 B0.c1 F3.c1 B1.c1 F2.c3 B2.c3 F3.c3 B3.c3 B2.c1 B3.c1 ");
  EXPECT_EQ(input_error([] { pipeline_order(Schedule::Interleaved, 4, 2, 6, 0); }),
            "schedule=interleaved needs micro (6) to be a multiple of mp (4), as in Megatron-LM");
}

TEST(Pipeline, GPipeBubbleIsExactlyPMinusOneOverMPlusPMinusOne) {
  const StrategyResult r = run("mp=4,schedule=gpipe,micro=4", 4);
  EXPECT_EQ(r.step_time, 7 * 3000);
  EXPECT_EQ(r.bubble_time, 3 * 3000);
  EXPECT_DOUBLE_EQ(r.bubble_fraction, 3.0 / 7.0);
  for (const DeviceReport& d : r.devices) EXPECT_EQ(d.compute, 4 * 3000);
  EXPECT_EQ(r.lowered.op_stage, (std::vector<int>{0, 0, 0, 1, 2, 3, 3}));  // x relu fc1 | fc2 | fc3 | fc4 loss
}

TEST(Pipeline, OneFOneBSameTimeLessActivationMemory) {
  const StrategyResult gpipe = run("mp=4,schedule=gpipe,micro=8", 8);
  const StrategyResult one = run("mp=4,schedule=1f1b,micro=8", 8);
  EXPECT_EQ(gpipe.step_time, 11 * 3000);
  EXPECT_EQ(one.step_time, 11 * 3000);
  // Stage 0 keeps relu's output, which is fc1's input, once per micro-batch: 1000 x 4 B = 4,000 B.
  // GPipe holds all 8 micro-batches before the first backward; 1F1B at most 4 (= stages).
  EXPECT_EQ(gpipe.devices[0].breakdown.activations, 8 * 4'000);
  EXPECT_EQ(one.devices[0].breakdown.activations, 4 * 4'000);
  // The last stage holds one micro-batch either way under 1F1B: fc4's input and the loss's fp32
  // log-softmax (4,000 B each), and at the peak the loss's backward working set, the fp32
  // gradients of the log-softmax's output and input: 2 x 1000 x 4 B.
  EXPECT_EQ(one.devices[3].breakdown.activations, 8'000 + 8'000);
  EXPECT_EQ(run("mp=4,schedule=1f1b,micro=8", 8, Granularity::Stage).devices[3].breakdown.activations, 16'000);
}

TEST(Pipeline, InterleavingShrinksTheBubbleByV) {
  // 2 devices, 4 layers: per device and micro-batch f + b = 2 x 3000 = 6000 ns.
  const StrategyResult plain = run("mp=2,schedule=1f1b,micro=4", 4);
  const StrategyResult inter = run("mp=2,schedule=interleaved,interleave=2,micro=4", 4);
  EXPECT_EQ(plain.bubble_time, 6000);
  EXPECT_EQ(inter.bubble_time, 6000 / 2);
  EXPECT_EQ(inter.step_time, 4 * 6000 + 3000);
  EXPECT_EQ(inter.lowered.op_chunk, (std::vector<int>{0, 0, 0, 1, 2, 3, 3}));
}

TEST(Pipeline, StageGranularityMatchesOpGranularity) {
  for (const char* s : {"mp=4,schedule=gpipe,micro=4", "mp=4,schedule=1f1b,micro=8",
                        "mp=2,schedule=interleaved,interleave=2,micro=4"}) {
    const StrategyResult op = run(s, 8);
    const StrategyResult stage = run(s, 8, Granularity::Stage);
    EXPECT_EQ(op.step_time, stage.step_time) << s;
    EXPECT_LT(stage.lowered.graph.size(), op.lowered.graph.size()) << s;
  }
}

// Without a data-parallel reduction each stage's updates wait for every micro-batch's backward of
// its ops: through one zero-time join per stage ("grads_ready"), 2 x 4 + 2 edges a stage instead
// of 2 x 4 x 2, at the same step. 2 stages of 2 fc layers, f = 2000 ns and b = 4000 ns a
// micro-batch: GPipe (4 + 1) x 6000 ns, then stage 0's two 500 ns updates.
TEST(Pipeline, UpdatesWaitForTheirStagesGradientsThroughOneJoin) {
  static const hardware::Cluster cluster = star_cluster(4, 0, 1e9);
  FakeCosts costs;
  costs.bwd_data = 2000;
  costs.bwd_weight = 0;
  costs.update = 500;
  const models::Model model = chain_model(4);
  const StrategyResult r = simulate_strategy({.model = &model,
                                              .cluster = &cluster,
                                              .strategy = parse_strategy("mp=2,schedule=gpipe,micro=4"),
                                              .global_batch = 4,
                                              .costs = &costs,
                                              .optimizer = profiler::Optimizer::Sgd});
  EXPECT_EQ(r.step_time, 5 * 6000 + 2 * 500);
  const simulator::TaskGraph& g = r.lowered.graph;
  std::vector<simulator::TaskId> joins, updates;
  for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t) {
    if (g.name(t) == "grads_ready") joins.push_back(t);
    if (g.kind(t) == simulator::TaskKind::Compute && g.phase(t) == simulator::Phase::Update) updates.push_back(t);
  }
  ASSERT_EQ(joins.size(), 2u);
  ASSERT_EQ(updates.size(), 4u);
  for (simulator::TaskId j : joins) {
    EXPECT_EQ(g.kind(j), simulator::TaskKind::Marker);
    EXPECT_EQ(g.deps(j).size(), 8u);  // 2 fc layers x 4 micro-batches
    for (simulator::TaskId d : g.deps(j)) EXPECT_EQ(g.phase(d), simulator::Phase::BackwardWeight) << g.name(d);
  }
  for (simulator::TaskId u : updates) {
    ASSERT_EQ(g.deps(u).size(), 1u) << g.name(u);
    EXPECT_EQ(g.name(g.deps(u)[0]), "grads_ready");
  }
}

TEST(Pipeline, PipeDreamStashesWeightVersionsSpecTrainPredictsThem) {
  const StrategyResult pd = run("mp=4,schedule=pipedream,micro=4", 4);
  // Stage i keeps M - i weight versions: the live one plus M - i - 1 stashed copies of 1e6 fp32 params.
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(pd.devices[static_cast<std::size_t>(i)].breakdown.other, (3 - i) * 4'000'000) << i;
  // Steady state: the bottleneck stage does one forward and one backward per micro-batch.
  EXPECT_EQ(pd.step_time, 4 * 3000);
  EXPECT_EQ(pd.lowered.simulated_microbatches, 12);  // 4 measured, 4 of fill before, 4 of drain after

  const StrategyResult st = run("mp=4,schedule=spectrain,micro=4", 4);
  for (const DeviceReport& d : st.devices) EXPECT_EQ(d.breakdown.other, 0);
  const auto& g = st.lowered.graph;
  EXPECT_EQ(count_tasks(g, [&](simulator::TaskId t) { return g.name(t) == "weight_prediction"; }), 4 * 12);
  EXPECT_GT(st.step_time, pd.step_time);  // the axpy is extra work on every stage
}

// ZeRO-1 under PipeDream on a slow switch (100 GB/s): every micro-batch reduce-scatters and then
// all-gathers its stage's 8 MB of fp32 weights across the 2 replicas, 94,638 ns each on the
// communication stream, while the compute of a micro-batch takes about 7,400 ns. The compute runs
// ahead, so in a finite run every reduce-scatter queues before the first all-gather, and the
// micro-batch markers (which wait for the all-gathers) come 94,638 ns apart; the pipeline's real
// pace is its communication stream's: one reduce-scatter and one all-gather per micro-batch.
TEST(Pipeline, AsynchronousStepIsAtLeastTheBusiestStreamsShare) {
  const hardware::Cluster slow = star_cluster(4, 0, 100.0);
  static const FakeCosts costs = [] {
    FakeCosts c;
    c.bwd_data = 2000;
    c.bwd_weight = 0;
    c.update = 500;
    return c;
  }();
  const models::Model model = chain_model(4);
  for (const int k : {1, 4}) {
    StepSetup setup{.model = &model,
                    .cluster = &slow,
                    .strategy = parse_strategy("dp=2,mp=2,schedule=pipedream,zero=1,micro=" + std::to_string(k)),
                    .global_batch = 2 * k,
                    .costs = &costs,
                    .optimizer = profiler::Optimizer::Sgd};
    const StrategyResult r = simulate_strategy(setup);
    const auto& done = r.lowered.microbatch_done;  // after the fill of mp = 2 micro-batches
    const auto end = [&](int i) {
      return r.result.timeline[static_cast<std::size_t>(done[static_cast<std::size_t>(i)])].end;
    };
    EXPECT_EQ(end(1 + k) - end(1), k * 94'638) << k;  // the markers: the all-gathers' pace alone
    EXPECT_TRUE(r.result.link_timeline.empty()) << k;  // task times only: no interval per message
    EXPECT_GE(r.step_time, k * 2 * 94'638) << k;      // a reduce-scatter and an all-gather per micro-batch
    // Exactly device 1's communication stream over the simulated micro-batches, scaled to k (its
    // collectives run a few ns longer than device 0's where a pipeline transfer shares the link).
    EXPECT_EQ(r.step_time, k == 1 ? 189'292 : 757'204) << k;
    for (const DeviceReport& d : r.devices) {
      EXPECT_LE(d.compute + d.exposed_comm, r.step_time) << k;  // steady state: one period's worth
      EXPECT_EQ(d.idle, r.step_time - d.compute - d.exposed_comm) << k;
    }
  }
}

TEST(Pipeline, CtrlCEndsTheLoweringAtTheNextMicroBatch) {
  request_interrupt();
  EXPECT_THROW(run("mp=4,schedule=1f1b,micro=4", 4), Interrupted);
  EXPECT_THROW(run("mp=4,schedule=1f1b,micro=4", 4, Granularity::Stage), Interrupted);
  reset_interrupt();
  EXPECT_EQ(run("mp=4,schedule=1f1b,micro=4", 4).step_time, 7 * 3000);
}

TEST(Pipeline, MoreStagesThanLayersIsAnInputError) {
  // relu, fc1 and the loss: 3 units for 4 stages.
  EXPECT_NE(input_error([] { run("mp=4,schedule=1f1b,micro=4", 4, Granularity::Op, 1); }).find("only 3 units"),
            std::string::npos);
}

}  // namespace
}  // namespace parasim::strategies
