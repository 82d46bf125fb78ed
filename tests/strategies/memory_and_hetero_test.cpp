// Memory feasibility with numbers, bytes per parameter, and heterogeneous data parallelism.
#include <gtest/gtest.h>

#include "lowering_fixtures.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/strategies/memory_model.hpp"
#include "parasim/strategies/simulate_strategy.hpp"

namespace parasim::strategies {
namespace {

using namespace testing;

TEST(MemoryModel, BytesPerParameter) {
  using models::DType;
  using profiler::Optimizer;
  EXPECT_EQ(param_bytes_per_param(DType::F32, Optimizer::Adam).total(), 16);
  EXPECT_EQ(param_bytes_per_param(DType::F16, Optimizer::Adam).total(), 16);  // 2 + 2 + 4 master + 8 state
  EXPECT_EQ(param_bytes_per_param(DType::BF16, Optimizer::Momentum).total(), 12);
  EXPECT_EQ(param_bytes_per_param(DType::F32, Optimizer::Sgd).total(), 8);
  // An fp32 gradient buffer (Megatron-LM's main_grad): 2 + 4 + 4 + 8, Megatron's 18 bytes/param.
  EXPECT_EQ(param_bytes_per_param(DType::BF16, Optimizer::Adam, GradAccumulation::Fp32Buffer).total(), 18);
  EXPECT_EQ(param_bytes_per_param(DType::BF16, Optimizer::Adam, GradAccumulation::Fused).grads, 4);
  EXPECT_EQ(param_bytes_per_param(DType::BF16, Optimizer::Adam, GradAccumulation::Auto).grads, 4);
  EXPECT_EQ(param_bytes_per_param(DType::F32, Optimizer::Adam, GradAccumulation::Auto).total(), 16);
  // Fused into a buffer of the gradient's dtype (Megatron-Core's grad_reduce_in_fp32=False): 2 + 2 + 4 + 8.
  EXPECT_EQ(param_bytes_per_param(DType::BF16, Optimizer::Adam, GradAccumulation::FusedBuffer).total(), 16);
  // FP8 GEMMs write bf16 weight gradients: 2 B a parameter outside an fp32 buffer, not the fp8 byte.
  EXPECT_EQ(param_bytes_per_param(DType::FP8, Optimizer::Adam, GradAccumulation::InPlace).grads, 2);
  EXPECT_EQ(param_bytes_per_param(DType::FP8, Optimizer::Adam, GradAccumulation::FusedBuffer).grads, 2);
  const simulator::StaticMemory m = static_memory_for(1000, DType::F16, Optimizer::Adam, /*zero_shards=*/8);
  EXPECT_EQ(m.params, 2000);
  EXPECT_EQ(m.grads, 2000);
  EXPECT_EQ(m.optimizer, 1500);
  // ZeRO-2 shards the gradients too: 2000 B over 8 ranks.
  const simulator::StaticMemory z2 = static_memory_for(1000, DType::F16, Optimizer::Adam, 8, /*shard_grads=*/true);
  EXPECT_EQ(z2.grads, 250);
  EXPECT_EQ(z2.optimizer, 1500);
  EXPECT_EQ(z2.params, 2000);
}

TEST(MemoryModel, Fp8KeepsBf16WeightsAndTheirFp8CopyAndTranspose) {
  using models::DType;
  using profiler::Optimizer;
  // bf16 weights 2 + fp8 copy 1 + its transpose 1, bf16 gradients 2, fp32 master 4 + Adam 8.
  const ParamBytes b = param_bytes_per_param(DType::FP8, Optimizer::Adam);
  EXPECT_EQ(b.weights, 4);
  EXPECT_EQ(b.grads, 2);
  EXPECT_EQ(b.optimizer, 12);
  EXPECT_EQ(b.total(), 18);
  const simulator::StaticMemory m = static_memory_for(8'030'261'248, DType::FP8, Optimizer::Adam, /*zero_shards=*/8);
  EXPECT_EQ(m.params, 32'121'044'992);
  EXPECT_EQ(m.grads, 16'060'522'496);
  EXPECT_EQ(m.optimizer, 12'045'391'872);  // 96,363,134,976 B over 8 ranks
}

TEST(Memory, Gpt3OnOneDgxA100IsInfeasibleWithNumbers) {
  const models::Model model = models::build_zoo_model("gpt3_175b", {.batch = 1, .dtype = models::DType::F16});
  const hardware::Cluster cluster = hardware::make_cluster_preset("dgx-a100");
  const profiler::RooflineCostModel roofline;
  StepSetup setup{.model = &model, .cluster = &cluster, .strategy = parse_strategy("dp=8"), .global_batch = 8,
                  .costs = &roofline, .granularity = Granularity::Stage, .simulate_infeasible = false};
  const StrategyResult r = simulate_strategy(setup);
  EXPECT_FALSE(r.feasible);
  EXPECT_FALSE(r.simulated);
  // 174.6e9 params x 18 B (fp16 weights, fp32 gradient buffer, master weights and Adam moments:
  // --grad-accumulation auto) = 3.14e12 B = 2927.2 GiB on every device; an A100 has 80 GiB.
  EXPECT_EQ(r.infeasible_reason, "needs 2927.2 GiB on device 0 (stage 0), device has 80.0 GiB");
  EXPECT_EQ(r.devices[0].peak_memory, 174'615'846'912LL * 18);
}

TEST(Memory, FitsWhenSplitEnough) {
  const models::Model model = chain_model(2);
  const hardware::Cluster cluster = star_cluster(2, 0, 1.0, "V100-SXM2-32GB", 20'000'000);
  FakeCosts costs;
  StepSetup setup{.model = &model, .cluster = &cluster, .strategy = parse_strategy("dp=1"), .global_batch = 1,
                  .costs = &costs};
  // 2e6 fp32 params x 16 B (Adam) = 32e6 B > 20e6.
  StrategyResult r = simulate_strategy(setup);
  EXPECT_FALSE(r.feasible);
  EXPECT_TRUE(r.simulated);
  EXPECT_EQ(r.infeasible_reason.substr(0, 10), "needs 0.0 ");
  setup.strategy = parse_strategy("mp=2");  // one fc per device: 16e6 B + activations
  r = simulate_strategy(setup);
  EXPECT_TRUE(r.feasible) << r.infeasible_reason;
}

TEST(Memory, ATensorSeveralOpsKeepIsStoredOnceAndTheLossAddsItsWorkingSet) {
  // fc0 keeps the data x; relu keeps its output r, which fa and fb keep again as their input:
  // stored once. fp32, one sample of 100 features: 400 B a tensor. Kept: x, r and the loss's
  // log-softmax (3 x 400 B); the peak is the loss's backward, with its fp32 gradients (800 B).
  models::ModelBuilder b("shared", 1);
  const models::OpId x = b.input("x", {1, 100});
  const models::OpId r = b.relu("relu", b.linear("fc0", x, 100, 100));
  b.cross_entropy("loss", b.add("sum", {b.linear("fa", r, 100, 100), b.linear("fb", r, 100, 100)}));
  const models::Model model = b.finish();
  const hardware::Cluster cluster = star_cluster(1, 0, 1.0);
  FakeCosts costs;
  StepSetup setup{
      .model = &model, .cluster = &cluster, .strategy = parse_strategy("dp=1"), .global_batch = 1, .costs = &costs};
  EXPECT_EQ(simulate_strategy(setup).devices[0].breakdown.activations, 3 * 400 + 800);
  setup.granularity = Granularity::Stage;
  EXPECT_EQ(simulate_strategy(setup).devices[0].breakdown.activations, 3 * 400 + 800);
}

TEST(HeterogeneousDataParallel, SpeedSplitBeatsEvenSplitOnPcieHetero) {
  // 2x TITAN X (Pascal) + 1x GTX 1080 on PCIe: the GTX 1080 is slower, so `even` waits for it.
  const models::Model model = models::build_zoo_model("vgg16_cifar", {.batch = 1});
  const hardware::Cluster cluster = hardware::make_cluster_preset("pcie-hetero");
  const profiler::RooflineCostModel roofline;
  StepSetup setup{.model = &model, .cluster = &cluster, .strategy = parse_strategy("dp=3"), .global_batch = 384,
                  .costs = &roofline, .optimizer = profiler::Optimizer::Momentum};
  const StrategyResult even = simulate_strategy(setup);
  setup.strategy = parse_strategy("dp=3,split=speed");
  const StrategyResult speed = simulate_strategy(setup);
  EXPECT_EQ(even.lowered.replica_batch, (std::vector<std::int64_t>{128, 128, 128}));
  EXPECT_EQ(speed.lowered.replica_batch, (std::vector<std::int64_t>{140, 140, 104}));
  EXPECT_LT(speed.step_time, even.step_time);
  EXPECT_GT(speed.throughput, even.throughput);
  ASSERT_EQ(speed.devices.size(), 3u);  // heterogeneous: every replica simulated
  EXPECT_EQ(speed.devices[2].kind, "GTX-1080");
  // Under `even` the fast TITAN Xs idle while the GTX 1080 computes.
  EXPECT_GT(even.devices[0].idle, speed.devices[0].idle);
}

TEST(CostSource, RooflineAndMeasuredSummaries) {
  const models::Model model = chain_model(2);
  const hardware::Cluster cluster = star_cluster(2, 0, 1.0);
  FakeCosts costs;
  const LoweredStep s = lower_step({.model = &model, .cluster = &cluster, .strategy = parse_strategy("dp=2"),
                                    .global_batch = 2, .costs = &costs});
  EXPECT_EQ(s.cost_source, "roofline");
  EXPECT_EQ(s.cost_counts.roofline, 4);  // relu, fc1, fc2, loss (one micro-batch size, one kind)

  // A profile measured at the micro-batch (4 samples) covers fc1 and fc2 (same signature).
  profiler::Profile profile;
  profile.backend = "cuda";
  profile.source = profiler::CostSource::MeasuredGpu;
  profile.device.kind = "V100-SXM2-32GB";
  profile.model = "chain";
  profile.batch = 4;
  profile.optimizer = profiler::Optimizer::Adam;
  const models::Model at4 = chain_model(2, 1000, 4);
  profiler::ProfileEntry e;
  e.names = {"fc1", "fc2"};
  e.kind = "linear";
  e.signature = at4.op(*at4.find_op("fc1")).signature();
  for (profiler::Phase ph : profiler::kPhases) e.set(ph, profiler::summarize({1000}, 1));
  profile.ops.push_back(e);
  const profiler::ProfileCostModel measured(profile, "p.json");
  const LoweredStep m = lower_step({.model = &model, .cluster = &cluster, .strategy = parse_strategy("dp=2"),
                                    .global_batch = 8, .costs = &measured});
  EXPECT_EQ(m.cost_counts.measured, 2);
  EXPECT_EQ(m.cost_counts.roofline, 2);
  EXPECT_EQ(m.cost_source, "profile p.json (cuda on V100-SXM2-32GB, chain b4 fp32): 2 of 4 ops measured, 2 roofline");
}

}  // namespace
}  // namespace parasim::strategies
