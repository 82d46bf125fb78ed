// NCCL-like collective costs (CollectiveCosts::Nccl) on hand-computed cases: protocol choice by
// size, NCCL's latencies, the NVLink payload share, NVLS on Hopper, and agreement of the expanded
// and analytic modes on an idle network.
#include <numeric>

#include <gtest/gtest.h>

#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/simulator/collectives.hpp"
#include "parasim/simulator/engine.hpp"

namespace parasim::simulator {
namespace {

std::vector<DeviceId> first_n(int n) {
  std::vector<DeviceId> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TimeNs simulate_one(const hardware::Cluster& cluster, std::vector<DeviceId> group, Bytes bytes, CollectiveMode mode,
                    CollectiveAlgorithm algo = CollectiveAlgorithm::Auto) {
  TaskGraphBuilder b(cluster.num_devices());
  const GroupId grp = b.add_group(group);
  b.add_collective({.op = CollectiveOp::AllReduce, .group = grp, .bytes = bytes, .algorithm = algo});
  TaskGraph g = std::move(b).build();
  return Engine(cluster, {.collectives = mode, .costs = CollectiveCosts::Nccl}).run(g).step_time;
}

// DGX A100: every GPU's NVSwitch port carries 300 GB/s each way; a ring step sends S/8 per GPU.
TEST(NcclCosts, LargeRingAllreduceUsesSimpleAtTheNvlinkPayloadRate) {
  const hardware::Cluster c = hardware::make_cluster_preset("dgx-a100");
  CollectivePlanner planner(c);
  const Bytes s = 64 * MiB;
  const CollectivePlan p = planner.plan(first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, s);
  // Simple: 8.4 us + 14 x (3.4 us + ceil(8 MiB / (300 x 0.8)) ns).
  const TimeNs simple = 8'400 + 14 * (3'400 + 34'953);
  EXPECT_EQ(p.cost(s, CollectiveCosts::Nccl, CollectiveProtocol::Simple).time, simple);
  // LL128: 10 us + 14 x (1.9 us + ceil(8 MiB / (300 x 0.8 x 0.92)) ns).
  EXPECT_EQ(p.cost(s, CollectiveCosts::Nccl, CollectiveProtocol::LL128).time, 10'000 + 14 * (1'900 + 37'992));
  const CollectiveCost best = p.cost(s, CollectiveCosts::Nccl);
  EXPECT_EQ(best.protocol, CollectiveProtocol::Simple);
  EXPECT_EQ(best.time, simple);
  EXPECT_EQ(best.net_time, 0);
}

TEST(NcclCosts, SmallAllreduceUsesLowLatencyLL) {
  const hardware::Cluster c = hardware::make_cluster_preset("dgx-a100");
  CollectivePlanner planner(c);
  const Bytes s = 64 * KiB;
  const CollectivePlan p = planner.plan(first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, s);
  // LL: 3.6 us + 14 x (0.47 us + ceil(8 KiB / (300 x 0.8 x 1/4)) ns) = 3600 + 14 x (470 + 137).
  const CollectiveCost best = p.cost(s, CollectiveCosts::Nccl);
  EXPECT_EQ(best.protocol, CollectiveProtocol::LL);
  EXPECT_EQ(best.time, 3'600 + 14 * (470 + 137));
  EXPECT_EQ(p.cost(s, CollectiveCosts::Nccl, CollectiveProtocol::Simple).time, 8'400 + 14 * (3'400 + 35));
}

TEST(NcclCosts, ExpandedAndAnalyticAgreeOnAnIdleNetwork) {
  for (const char* preset : {"dgx-a100", "dgx1-v100"})
    for (Bytes s : {Bytes{64 * KiB}, Bytes{64 * MiB}}) {
      const hardware::Cluster c = hardware::make_cluster_preset(preset, 2);
      const TimeNs analytic = simulate_one(c, first_n(16), s, CollectiveMode::Analytic);
      const TimeNs expanded = simulate_one(c, first_n(16), s, CollectiveMode::Expanded);
      EXPECT_NEAR(static_cast<double>(expanded), static_cast<double>(analytic), 1e-3 * static_cast<double>(analytic))
          << preset << " " << s;
    }
}

TEST(NcclCosts, HopperNvswitchAllreduceUsesNvls) {
  const hardware::Cluster c = hardware::make_cluster_preset("dgx-h100");
  const Bytes s = 64 * MiB;
  // NVLS: 25 us + S / 275 GB/s (algbw 275 of 450 GB/s ports), one step.
  const TimeNs nvls = 25'000 + 244'033;
  EXPECT_EQ(simulate_one(c, first_n(8), s, CollectiveMode::Analytic), nvls);
  EXPECT_EQ(simulate_one(c, first_n(8), s, CollectiveMode::Analytic, CollectiveAlgorithm::Nvls), nvls);
  // Not on Ampere: the NVLS request falls back to a ring.
  const hardware::Cluster ampere = hardware::make_cluster_preset("dgx-a100");
  CollectivePlanner a100(ampere);
  EXPECT_EQ(a100.plan(first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Nvls, s).algorithm,
            CollectiveAlgorithm::Ring);
}

TEST(NcclCosts, NetworkPhasesAreAccountedSeparately) {
  const hardware::Cluster c = hardware::make_cluster_preset("dgx-a100", 2);
  CollectivePlanner planner(c);
  const Bytes s = 256 * MiB;
  const CollectivePlan p = planner.plan(first_n(16), CollectiveOp::AllReduce, CollectiveAlgorithm::Hierarchical, s);
  ASSERT_EQ(p.algorithm, CollectiveAlgorithm::Hierarchical);
  EXPECT_TRUE(p.multi_node);
  const CollectiveCost cost = p.cost(s, CollectiveCosts::Nccl);
  EXPECT_GT(cost.net_time, 0);
  EXPECT_LT(cost.net_time, cost.time);
  // Calibration scales the two parts separately.
  EXPECT_EQ(cost.scaled(1.0, 2.0), cost.time + cost.net_time);
}

}  // namespace
}  // namespace parasim::simulator
