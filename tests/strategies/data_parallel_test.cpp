// Data parallelism: step = compute + exposed gradient allreduce, computed by hand.
//
// chain_model(2): relu -> fc1 -> fc2 -> loss, fc = 1000 x 1000 without bias (1e6 params, 4e6 bytes
// of fp32 gradients). FakeCosts: 1000 ns per sample per linear phase. Global batch 8 on dp=2:
// 4 samples per replica, so fc fwd = bwd_data = bwd_weight = 4000 ns. Cluster: 2 GPUs on a
// switch, alpha 0, 1 GB/s (1 byte/ns): a 2-rank ring allreduce of S bytes takes S ns.
#include <map>

#include <gtest/gtest.h>

#include "lowering_fixtures.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/strategies/batch_split.hpp"
#include "parasim/strategies/simulate_strategy.hpp"

namespace parasim::strategies {
namespace {

using namespace testing;
using simulator::CollectiveOp;
using simulator::TaskKind;

// Priced on the pure link model unless `collective_costs` says otherwise.
StrategyResult run(const std::string& strategy, Symmetry symmetry = Symmetry::DataAndTensor, TimeNs update = 500,
                   simulator::CollectiveCosts collective_costs = simulator::CollectiveCosts::Links,
                   const simulator::EngineOptions& options = {}) {
  static const models::Model model = chain_model(2);
  static const hardware::Cluster cluster = star_cluster(2, 0, 1.0);
  static FakeCosts costs;
  costs.update = update;
  StepSetup setup{.model = &model,
                  .cluster = &cluster,
                  .strategy = parse_strategy(strategy),
                  .global_batch = 8,
                  .costs = &costs,
                  .optimizer = profiler::Optimizer::Adam,
                  .symmetry = symmetry};
  setup.collective_costs = collective_costs;  // Links: hand-computed on the pure link model
  return simulate_strategy(setup, options);
}

TEST(DataParallel, BucketsOverlapTheRestOfBackward) {
  // fc2's gradients (4e6 B >= 1 MiB) close bucket 0 at 16,000 ns (fwd 8,000 + fc2 bwd 8,000); its
  // allreduce takes 4e6 ns; fc1's bucket is ready at 24,000 but queues behind it on the DP stream:
  // 4,016,000 .. 8,016,000, then fc1's update (500 ns). fc2's update ran at 4,016,000.
  // Compute: 6 linear phases x 4,000 + 2 updates = 25,000; of the 8e6 ns of allreduce, 8,000 ns
  // overlap the backward of fc1 and 500 ns fc2's update.
  const StrategyResult r = run("dp=2,bucket_mb=1");
  EXPECT_EQ(r.step_time, 8'016'500);
  ASSERT_EQ(r.devices.size(), 1u);  // replica 0 stands for both
  EXPECT_EQ(r.devices[0].compute, 25'000);
  EXPECT_EQ(r.devices[0].comm, 8'000'000);
  EXPECT_EQ(r.devices[0].exposed_comm, 7'991'500);
  EXPECT_EQ(r.devices[0].idle, 0);
  EXPECT_DOUBLE_EQ(r.throughput, 8 * 1e9 / 8'016'500.0);
  EXPECT_EQ(r.lowered.replica_batch, (std::vector<std::int64_t>{4, 4}));
  EXPECT_EQ(count_tasks(r.lowered.graph, [&](simulator::TaskId t) {
              return r.lowered.graph.kind(t) == TaskKind::Collective;
            }),
            2);
}

TEST(DataParallel, OverlapOffIsOneExposedAllreduce) {
  // All backward ends at 24,000; one allreduce of 8e6 B: 8e6 ns; then both updates (1,000 ns).
  const StrategyResult r = run("dp=2,overlap=off");
  EXPECT_EQ(r.step_time, 24'000 + 8'000'000 + 1'000);
  EXPECT_EQ(r.devices[0].exposed_comm, 8'000'000);
  EXPECT_EQ(r.devices[0].compute, 25'000);
}

TEST(DataParallel, NcclCollectivesHoldSmsFromTheBackwardTheyOverlap) {
  // As BucketsOverlapTheRestOfBackward, priced like NCCL: fc2's bucket is all-reduced from 16,000
  // ns on for far longer than fc1's backward, which runs beside it on the 68 of a V100's 80 SMs
  // that NCCL's 12 channels leave: each of its two 4,000 ns tasks takes round(4,000 / 0.85) =
  // 4,706 ns. Link costs (the test above) hold nothing, and every output says which.
  const StrategyResult r = run("dp=2,bucket_mb=1", Symmetry::DataAndTensor, 500, simulator::CollectiveCosts::Nccl,
                               {.record_timeline = true});
  const simulator::TaskGraph& g = r.lowered.graph;
  TimeNs first_allreduce_start = -1;
  for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t)
    if (g.kind(t) == TaskKind::Collective && first_allreduce_start < 0)
      first_allreduce_start = r.result.timeline[static_cast<std::size_t>(t)].start;
  EXPECT_EQ(first_allreduce_start, 16'000);
  std::vector<TimeNs> beside;  // the compute tasks that start while the first all-reduce runs
  for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t) {
    const simulator::TaskTiming& tt = r.result.timeline[static_cast<std::size_t>(t)];
    if (g.kind(t) != TaskKind::Compute || g.device(t) != 0 || tt.start < 16'000 || tt.end == tt.start) continue;
    if (tt.start < 16'000 + 2 * 4'706) beside.push_back(tt.end - tt.start);
  }
  EXPECT_EQ(beside, (std::vector<TimeNs>{4'706, 4'706}));
  EXPECT_EQ(r.collective_sms,
            "a running collective holds one SM per NCCL channel, 12 of 80 on V100-SXM2-32GB; the compute it overlaps "
            "runs on the other SMs");
  EXPECT_EQ(strategy_result_to_json(r)["collective_sms"], r.collective_sms);
  EXPECT_EQ(run("dp=2,bucket_mb=1").collective_sms, "none (link costs: compute runs at full rate beside collectives)");
  EXPECT_EQ(describe_collective_sms(hardware::make_cluster_preset("dgx-h100")),
            "a running collective holds one SM per NCCL channel, 24 of 132 on H100-SXM5-80GB (NVLS 16); the "
            "compute it overlaps runs on the other SMs");
  // A cluster that pins NCCL's channels (NCCL_MIN/MAX_NCHANNELS) says so.
  EXPECT_EQ(describe_collective_sms(hardware::make_cluster_preset("dgx-a100:nccl_channels=8")),
            "a running collective holds one SM per NCCL channel, 8 of 108 on A100-SXM4-80GB (the cluster's "
            "nccl_channels); the compute it overlaps runs on the other SMs");
  EXPECT_EQ(describe_collective_sms(hardware::make_cluster_preset("dgx-a100:nccl_channels=0")),
            "none (the cluster's nccl_channels=0: compute runs at full rate beside collectives)");
}

TEST(DataParallel, SymmetricReplicaMatchesFullSimulation) {
  const StrategyResult one = run("dp=2,bucket_mb=1", Symmetry::DataAndTensor);
  const StrategyResult all = run("dp=2,bucket_mb=1", Symmetry::None);
  EXPECT_EQ(one.step_time, all.step_time);
  EXPECT_EQ(all.devices.size(), 2u);
  EXPECT_EQ(all.lowered.graph.size(), 2 * one.lowered.graph.size() - 2);  // the 2 collectives are shared
}

TEST(DataParallel, SymmetryHoldsOnOversubscribedFatTreeAndRailFabrics) {
  // 32 replicas over 4 DGX H100 on radix-8 leaves (8 leaves, 4 spines): one simulated replica
  // and every replica simulated agree within 1 %, NCCL costs and the link model alike.
  static const models::Model model = chain_model(2);
  FakeCosts costs;
  for (const char* preset : {"dgx-h100:fabric=fat-tree,radix=8,oversubscription=2:1",
                             "dgx-h100:fabric=rail-optimized,radix=8,oversubscription=3:1"})
    for (auto collective_costs : {simulator::CollectiveCosts::Nccl, simulator::CollectiveCosts::Links}) {
      const hardware::Cluster cluster = hardware::make_cluster_preset(preset, 4);
      const auto step = [&](Symmetry symmetry) {
        StepSetup setup{.model = &model,
                        .cluster = &cluster,
                        .strategy = parse_strategy("dp=32"),
                        .global_batch = 64,
                        .costs = &costs,
                        .optimizer = profiler::Optimizer::Adam,
                        .symmetry = symmetry};
        setup.collective_costs = collective_costs;
        return simulate_strategy(setup).step_time;
      };
      const TimeNs one = step(Symmetry::DataAndTensor), all = step(Symmetry::None);
      EXPECT_NEAR(static_cast<double>(one), static_cast<double>(all), 0.01 * static_cast<double>(all)) << preset;
      EXPECT_GT(one, 0);
    }
}

TEST(DataParallel, SingleDeviceHasNoCollectives) {
  const StrategyResult r = run("dp=1");
  // batch 8 on one device: 6 linear phases x 8,000 + 2 updates.
  EXPECT_EQ(r.step_time, 48'000 + 1'000);
  EXPECT_EQ(r.devices[0].exposed_comm, 0);
}

TEST(DataParallel, ZeroShardsOptimizerStateAndUsesReduceScatterAllGather) {
  const StrategyResult plain = run("dp=2,overlap=off");
  const StrategyResult zero = run("dp=2,overlap=off,zero=1");
  // Adam fp32: 8 B/param of optimizer state; 2e6 params; ZeRO-1 over 2 ranks halves it.
  EXPECT_EQ(plain.devices[0].breakdown.optimizer, 16'000'000);
  EXPECT_EQ(zero.devices[0].breakdown.optimizer, 8'000'000);
  const auto& g = zero.lowered.graph;
  EXPECT_EQ(count_tasks(g, [&](simulator::TaskId t) {
              return g.kind(t) == TaskKind::Collective && g.collective_op(t) == CollectiveOp::ReduceScatter;
            }),
            1);
  EXPECT_EQ(count_tasks(g, [&](simulator::TaskId t) {
              return g.kind(t) == TaskKind::Collective && g.collective_op(t) == CollectiveOp::AllGather;
            }),
            1);
  // Reduce-scatter (8e6 B over 2 ranks: 4e6 ns), updates of half the shard (250 ns each), all-gather (4e6 ns).
  EXPECT_EQ(zero.step_time, 24'000 + 4'000'000 + 500 + 4'000'000);
}

// The DP reduction moves the gradient buffer, the ZeRO all-gather the weights: bf16 weights of
TEST(DataParallel, ZeroTwoAlsoShardsGradientsWithTheSameTraffic) {
  const StrategyResult one = run("dp=2,overlap=off,zero=1");
  const StrategyResult two = run("dp=2,overlap=off,zero=2");
  // fp32 gradients of 2e6 params: 8e6 B, 4e6 B per rank with ZeRO-2; optimizer state as ZeRO-1.
  EXPECT_EQ(one.devices[0].breakdown.grads, 8'000'000);
  EXPECT_EQ(two.devices[0].breakdown.grads, 4'000'000);
  EXPECT_EQ(two.devices[0].breakdown.optimizer, 8'000'000);
  // Same reduce-scatter, shard update and all-gather as ZeRO-1 (no gradient accumulation).
  EXPECT_EQ(two.step_time, one.step_time);
}

/// `model` on 2 GPUs with `strategy` (global batch 8, update 500 ns) on the pure link model.
StepSetup on_two_gpus(const models::Model& model, const std::string& strategy, Granularity granularity) {
  static const hardware::Cluster cluster = star_cluster(2, 0, 1.0);
  static FakeCosts costs;
  costs.update = 500;
  StepSetup setup{.model = &model,
                  .cluster = &cluster,
                  .strategy = parse_strategy(strategy),
                  .global_batch = 8,
                  .costs = &costs,
                  .granularity = granularity};
  setup.collective_costs = simulator::CollectiveCosts::Links;
  return setup;
}

// 2e6 parameters are 4e6 B; an fp32 buffer (auto, Megatron-LM's main_grad) reduces 8e6 B, a bf16
// one (fused-buffer: Megatron-Core's grad_reduce_in_fp32=False) 4e6 B; fp8 reduces bf16 gradients.
TEST(DataParallel, ReductionMovesTheGradientBufferAndTheGatherTheWeights) {
  auto collective_bytes = [](GradAccumulation a, models::DType dtype, const std::string& strategy) {
    const models::Model model = chain_model(2, 1000, 1, dtype);
    StepSetup setup = on_two_gpus(model, strategy, Granularity::Op);
    setup.grad_accumulation = a;
    const StrategyResult r = simulate_strategy(setup);
    std::map<CollectiveOp, Bytes> bytes;
    const auto& g = r.lowered.graph;
    for (simulator::TaskId t = 0; t < static_cast<simulator::TaskId>(g.size()); ++t)
      if (g.kind(t) == TaskKind::Collective) bytes[g.collective_op(t)] += g.bytes(t);
    return bytes;
  };
  using Ops = std::map<CollectiveOp, Bytes>;
  constexpr auto kBf16 = models::DType::BF16;
  EXPECT_EQ(collective_bytes(GradAccumulation::Auto, kBf16, "dp=2,overlap=off"),
            (Ops{{CollectiveOp::AllReduce, 8'000'000}}));
  EXPECT_EQ(collective_bytes(GradAccumulation::Fused, kBf16, "dp=2,overlap=off"),
            (Ops{{CollectiveOp::AllReduce, 8'000'000}}));
  EXPECT_EQ(collective_bytes(GradAccumulation::FusedBuffer, kBf16, "dp=2,overlap=off"),
            (Ops{{CollectiveOp::AllReduce, 4'000'000}}));
  EXPECT_EQ(collective_bytes(GradAccumulation::InPlace, kBf16, "dp=2,overlap=off"),
            (Ops{{CollectiveOp::AllReduce, 4'000'000}}));
  EXPECT_EQ(collective_bytes(GradAccumulation::Auto, kBf16, "dp=2,overlap=off,zero=1"),
            (Ops{{CollectiveOp::ReduceScatter, 8'000'000}, {CollectiveOp::AllGather, 4'000'000}}));
  EXPECT_EQ(collective_bytes(GradAccumulation::FusedBuffer, kBf16, "dp=2,overlap=off,zero=1"),
            (Ops{{CollectiveOp::ReduceScatter, 4'000'000}, {CollectiveOp::AllGather, 4'000'000}}));
  // fp32 training: 4 B either way.
  EXPECT_EQ(collective_bytes(GradAccumulation::Auto, models::DType::F32, "dp=2,overlap=off,zero=1"),
            (Ops{{CollectiveOp::ReduceScatter, 8'000'000}, {CollectiveOp::AllGather, 8'000'000}}));
}

int collectives(const StrategyResult& r, CollectiveOp op, simulator::Phase phase) {
  const auto& g = r.lowered.graph;
  return count_tasks(g, [&](simulator::TaskId t) {
    return g.kind(t) == TaskKind::Collective && g.collective_op(t) == op && g.phase(t) == phase;
  });
}

TEST(DataParallel, ZeroTwoReduceScattersEveryMicroBatch) {
  // Two micro-batches of 2 samples: each fc phase 2,000 ns; the one bucket (8e6 B) reduce-scatters
  // over 2 ranks in 4e6 ns. Micro-batch 0: forward 0..4,000, backward 4,000..12,000, its
  // reduce-scatter 12,000..4,012,000 next to micro-batch 1 (12,000..24,000). The step's last:
  // reduce-scatter 4,012,000..8,012,000, both shard updates (250 ns each), all-gather to 12,012,500.
  const StrategyResult r = run("dp=2,micro=2,zero=2");
  EXPECT_EQ(collectives(r, CollectiveOp::ReduceScatter, simulator::Phase::BackwardWeight), 2);
  EXPECT_EQ(collectives(r, CollectiveOp::AllGather, simulator::Phase::Update), 1);
  EXPECT_EQ(r.step_time, 12'012'500);
  // ZeRO-1 adds the micro-batches up at full size and reduce-scatters once, 24,000..4,024,000.
  const StrategyResult one = run("dp=2,micro=2,zero=1");
  EXPECT_EQ(collectives(one, CollectiveOp::ReduceScatter, simulator::Phase::BackwardWeight), 1);
  EXPECT_EQ(one.step_time, 8'024'500);
  EXPECT_EQ(r.devices[0].breakdown.grads * 2, one.devices[0].breakdown.grads);
  // At stage granularity the same (the chunk's backward is one task, its update the ops' 250 + 250).
  static const models::Model model = chain_model(2);
  const StrategyResult stage = simulate_strategy(on_two_gpus(model, "dp=2,micro=2,zero=2", Granularity::Stage));
  EXPECT_EQ(stage.lowered.granularity, Granularity::Stage);
  EXPECT_EQ(collectives(stage, CollectiveOp::ReduceScatter, simulator::Phase::BackwardWeight), 2);
  EXPECT_EQ(stage.step_time, 12'012'500);
}

TEST(DataParallel, ZeroThreeGathersEachLayerWithPrefetchAndReduceScattersItsGradients) {
  // fc1 and fc2 hold 4e6 B each; over 2 ranks an all-gather or reduce-scatter of one is 1 step of
  // 2e6 B: 2e6 ns. Forward: gather fc1 0..2e6, gather fc2 (prefetched) 2e6..4e6 while fc1 runs
  // (2e6..2.004e6), fc2 4e6..4.004e6. Backward: gather fc2 4.004e6..6.004e6, gather fc1
  // (prefetched) 6.004e6..8.004e6 while fc2's backward runs (to 6.012e6); fc2's reduce-scatter
  // queues behind it on the DP stream: 8.004e6..10.004e6; fc1's backward 8.004e6..8.012e6, its
  // reduce-scatter 10.004e6..12.004e6; then both shard updates (250 ns each).
  const StrategyResult r = run("dp=2,zero=3");
  EXPECT_EQ(r.step_time, 12'004'500);
  EXPECT_EQ(collectives(r, CollectiveOp::AllGather, simulator::Phase::Forward), 2);
  EXPECT_EQ(collectives(r, CollectiveOp::AllGather, simulator::Phase::BackwardData), 2);
  EXPECT_EQ(collectives(r, CollectiveOp::ReduceScatter, simulator::Phase::BackwardWeight), 2);
  EXPECT_EQ(collectives(r, CollectiveOp::AllReduce, simulator::Phase::BackwardWeight), 0);
  // Memory: weights, gradients and Adam state / 2, plus both layers gathered whole (the one
  // computing and the one prefetched): 4e6 + 4e6 + 8e6 + 8e6.
  const simulator::MemoryBreakdown& m = r.devices[0].breakdown;
  EXPECT_EQ(m.params, 4'000'000);
  EXPECT_EQ(m.grads, 4'000'000);
  EXPECT_EQ(m.optimizer, 8'000'000);
  EXPECT_EQ(m.other, 8'000'000);
  // Gradient accumulation: every micro-batch gathers and reduce-scatters again.
  const StrategyResult acc = run("dp=2,micro=2,zero=3");
  EXPECT_EQ(collectives(acc, CollectiveOp::AllGather, simulator::Phase::Forward), 4);
  EXPECT_EQ(collectives(acc, CollectiveOp::AllGather, simulator::Phase::BackwardData), 4);
  EXPECT_EQ(collectives(acc, CollectiveOp::ReduceScatter, simulator::Phase::BackwardWeight), 4);
}

TEST(DataParallel, ZeroThreeGathersAndReduceScattersABlockWhole) {
  // relu -> block h.0 {fc1, fc2} -> block h.1 {fc3, fc4} -> loss; each block holds 8e6 B, one
  // gather or reduce-scatter of it over 2 ranks is 4e6 ns (FSDP's flat parameter per wrapped block).
  // Forward: gather h.0 0..4e6, gather h.1 (prefetched) 4e6..8e6 on the DP stream; fc1, fc2
  // 4e6..4.008e6; fc3, fc4 8e6..8.008e6. Backward: gather h.1 8.008e6..12.008e6, gather h.0
  // (prefetched) 12.008e6..16.008e6; fc4, fc3 12.008e6..12.024e6; h.1's reduce-scatter queues
  // behind the gather: 16.008e6..20.008e6; fc2, fc1 16.008e6..16.024e6, h.0's reduce-scatter
  // 20.008e6..24.008e6; then the four shard updates (250 ns each).
  static const models::Model model = [] {
    models::ModelBuilder b("blocks", 1, models::DType::F32);
    models::OpId x = b.input("x", {1, 1000});
    x = b.relu("relu", x);
    for (int block = 0; block < 2; ++block) {
      auto scope = b.block("h." + std::to_string(block));
      for (int i = 1; i <= 2; ++i) x = b.linear("fc" + std::to_string(2 * block + i), x, 1000, 1000, false);
    }
    b.cross_entropy("loss", x);
    return b.finish();
  }();
  StepSetup setup = on_two_gpus(model, "dp=2,zero=3", Granularity::Op);
  const StrategyResult r = simulate_strategy(setup);
  EXPECT_EQ(collectives(r, CollectiveOp::AllGather, simulator::Phase::Forward), 2);
  EXPECT_EQ(collectives(r, CollectiveOp::AllGather, simulator::Phase::BackwardData), 2);
  EXPECT_EQ(collectives(r, CollectiveOp::ReduceScatter, simulator::Phase::BackwardWeight), 2);
  EXPECT_EQ(r.step_time, 24'009'000);
  // Full recomputation: the backward's gather of each block comes before its recomputed forward.
  setup.strategy = parse_strategy("dp=2,recompute=full,zero=3");
  const StrategyResult full = simulate_strategy(setup);
  EXPECT_EQ(collectives(full, CollectiveOp::AllGather, simulator::Phase::Recompute), 2);
  EXPECT_EQ(collectives(full, CollectiveOp::AllGather, simulator::Phase::BackwardData), 0);
  EXPECT_EQ(collectives(full, CollectiveOp::ReduceScatter, simulator::Phase::BackwardWeight), 2);
}

TEST(DataParallel, ZeroThreeAtStageGranularityOverlapsTheRestOfTheGather) {
  // One chunk of 2 layers (8e6 B): the first layer's gather (4e6 B: 2e6 ns), the compute (8,000)
  // next to the rest's (2e6..4e6); backward: first 4e6..6e6, rest 6e6..8e6 next to the backward
  // (6e6..6.016e6); the chunk's reduce-scatter (8e6 B: 4e6 ns) 8e6..12e6, the update (500 / 2).
  static const models::Model model = chain_model(2);
  const StrategyResult r = simulate_strategy(on_two_gpus(model, "dp=2,zero=3", Granularity::Stage));
  EXPECT_EQ(r.lowered.granularity, Granularity::Stage);
  EXPECT_EQ(r.step_time, 12'000'500);
}

TEST(DataParallel, ZeroThreeGrammar) {
  EXPECT_EQ(to_string(parse_strategy("dp=8,micro=4,zero=3")), "dp=8,micro=4,zero=3");
  EXPECT_EQ(input_error([] { parse_strategy("dp=8,zero=4"); }), "--strategy: zero=4: expected an integer in [0, 3]");
  EXPECT_EQ(input_error([] { parse_strategy("dp=2,mp=2,schedule=pipedream,zero=3"); }),
            "--strategy: zero=3 needs a synchronous schedule (pipedream updates weights after every micro-batch; "
            "ZeRO-3 with it is not modelled)");
  EXPECT_EQ(input_error([] { parse_strategy("dp=8,ep=2,zero=3"); }),
            "--strategy: zero=3 with ep > 1 is not modelled (the experts' parameters would be gathered over dp / ep "
            "replicas)");
}

TEST(DataParallel, UnevenBatchSplitsLikeTorchChunk) {
  EXPECT_EQ(split_like_torch_chunk(128, 3), (std::vector<std::int64_t>{43, 43, 42}));
  EXPECT_EQ(split_like_torch_chunk(10, 4), (std::vector<std::int64_t>{3, 3, 3, 1}));
  EXPECT_EQ(split_like_torch_chunk(5, 4), (std::vector<std::int64_t>{2, 2, 1, 0}));
  static const models::Model model = chain_model(2);
  static const hardware::Cluster cluster = star_cluster(4, 0, 1.0);
  FakeCosts costs;
  // torch.nn.DataParallel over three GPUs (the heterogeneous-GPU benchmark): 128 is 43/43/42.
  StepSetup setup{.model = &model,
                  .cluster = &cluster,
                  .strategy = parse_strategy("dp=3,split=even"),
                  .global_batch = 128,
                  .costs = &costs};
  const LoweredStep chunked = lower_step(setup);
  EXPECT_EQ(chunked.replica_batch, (std::vector<std::int64_t>{43, 43, 42}));
  EXPECT_EQ(chunked.symmetry, Symmetry::None);  // replicas differ: all simulated
  setup.strategy = parse_strategy("dp=4");
  setup.global_batch = 5;
  EXPECT_EQ(input_error([&] { lower_step(setup); }),
            "global batch 5 over dp=4: split like torch.chunk (chunks of 2), the last replica gets no sample; use a "
            "multiple of 4 or split=speed");
  setup.strategy = parse_strategy("dp=3,split=speed");
  setup.global_batch = 8;
  const LoweredStep step = lower_step(setup);
  EXPECT_EQ(step.replica_batch, (std::vector<std::int64_t>{3, 3, 2}));
  EXPECT_EQ(step.symmetry, Symmetry::None);  // replicas differ: all simulated
}

}  // namespace
}  // namespace parasim::strategies

namespace parasim::strategies {
namespace {

// Collectives by symmetry (one message per class, the rest inferred) against every device and
// every message, on 64 H100s over 8 nodes: GPT-2 with NCCL-priced hierarchical collectives.
TEST(DataParallel, CollectivesBySymmetryMatchEveryDeviceAtScale) {
  static const models::Model model = models::build_zoo_model("gpt2", {.batch = 1});
  static const hardware::Cluster cluster = hardware::make_cluster_preset("dgx-h100", 8);
  profiler::RooflineCostModel roofline;
  auto run_with = [&](Symmetry symmetry) {
    StepSetup setup{.model = &model,
                    .cluster = &cluster,
                    .strategy = parse_strategy("dp=64"),
                    .global_batch = 64,
                    .costs = &roofline,
                    .symmetry = symmetry};
    return simulate_strategy(setup);
  };
  const StrategyResult sym = run_with(Symmetry::DataAndTensor);
  const StrategyResult all = run_with(Symmetry::None);
  EXPECT_EQ(all.result.collective_messages_inferred, 0);
  EXPECT_GT(sym.result.collective_messages_inferred, 10 * sym.result.collective_messages);
  EXPECT_EQ(sym.result.collective_messages + sym.result.collective_messages_inferred, all.result.collective_messages);
  const auto exact = static_cast<double>(all.step_time);
  EXPECT_NEAR(static_cast<double>(sym.step_time), exact, 0.01 * exact);
}

// Gradient accumulation: micro=4 of 2 samples on one GPU, so each micro-batch costs fc1 and fc2
// fwd + bwd_data + bwd_weight = 2 x 6,000 = 12,000 ns and four cost 48,000 ns; FakeCosts prices a
// pass over B bytes at B ns. Each fc has 1e6 parameters.
TEST(DataParallel, GradientAccumulationAddsOnePassPerParameterTensorAndMicroBatch) {
  auto step = [](GradAccumulation a, models::DType dtype) {
    static const hardware::Cluster cluster = star_cluster(2, 0, 1.0);
    const models::Model model = chain_model(2, 1000, 1, dtype);
    FakeCosts costs;
    costs.accumulate_ns_per_byte = 1;
    StepSetup setup{.model = &model,
                    .cluster = &cluster,
                    .strategy = parse_strategy("micro=4"),
                    .global_batch = 8,
                    .costs = &costs,
                    .grad_accumulation = a};
    setup.collective_costs = simulator::CollectiveCosts::Links;
    return simulate_strategy(setup).step_time;
  };
  constexpr TimeNs kCompute = 48'000;
  // fp32, in-place: 12 B/param from the second micro-batch on: 2 fcs x 3 passes x 12e6 ns.
  EXPECT_EQ(step(GradAccumulation::InPlace, models::DType::F32), kCompute + 2 * 3 * 12'000'000);
  EXPECT_EQ(step(GradAccumulation::Auto, models::DType::F32), kCompute + 2 * 3 * 12'000'000);
  // fp32 buffer: every micro-batch, read 4 + buffer 4, write 4.
  EXPECT_EQ(step(GradAccumulation::Fp32Buffer, models::DType::F32), kCompute + 2 * 4 * 12'000'000);
  // fp16 into an fp32 buffer (auto for fp16): 2 + 4 + 4 = 10 B/param on all four micro-batches.
  EXPECT_EQ(step(GradAccumulation::Auto, models::DType::F16), kCompute + 2 * 4 * 10'000'000);
  EXPECT_EQ(step(GradAccumulation::InPlace, models::DType::F16), kCompute + 2 * 3 * 6'000'000);
  EXPECT_EQ(step(GradAccumulation::Fused, models::DType::F16), kCompute);
}

}  // namespace
}  // namespace parasim::strategies
