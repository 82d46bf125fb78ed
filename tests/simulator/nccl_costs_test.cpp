// NCCL-like collective costs (CollectiveCosts::Nccl) on hand-computed cases: protocol choice by
// size, NCCL's latencies, the NVLink payload share, NVLS on Hopper, and agreement of the expanded
// and analytic modes on an idle network.
#include <cmath>
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

// DGX A100: every GPU's NVSwitch port carries 300 GB/s each way, of which NCCL's reductions reach
// 230 (20 of 25 GB/s per NVLink, then 230 of 240: nccl-tests#149); a ring step sends S/8 per GPU.
TEST(NcclCosts, LargeRingAllreduceUsesSimpleAtTheNvlinkPayloadRate) {
  const hardware::Cluster c = hardware::make_cluster_preset("dgx-a100");
  CollectivePlanner planner(c);
  const Bytes s = 64 * MiB;
  const CollectivePlan p = planner.plan(first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, s);
  EXPECT_NEAR(p.nvlink_payload, 230.0 / 300.0, 1e-12);
  // An all-gather moves data without reducing it: 240 of 300.
  EXPECT_DOUBLE_EQ(planner.plan(first_n(8), CollectiveOp::AllGather, CollectiveAlgorithm::Ring, s).nvlink_payload, 0.8);
  // Simple: 8.4 us + 14 x (3.4 us + ceil(8 MiB / (300 x 230/300)) ns) = ceil(36'472.2) = 36'473,
  // all on NVLink, stretched by the share NCCL reaches at 64 MiB (0.804): 566'622 / 0.804.
  EXPECT_DOUBLE_EQ(nvlink_size_efficiency(s), 0.804);
  const TimeNs simple = 704'754;
  EXPECT_EQ(std::llround((8'400 + 14 * (3'400 + 36'473)) / 0.804), simple);
  EXPECT_EQ(p.cost(s, CollectiveCosts::Nccl, CollectiveProtocol::Simple).time, simple);
  // LL128: 10 us + 14 x (1.9 us + ceil(8 MiB / (230 x 0.92)) ns) = ceil(39'643.7) = 39'644.
  EXPECT_EQ(p.cost(s, CollectiveCosts::Nccl, CollectiveProtocol::LL128).time,
            std::llround((10'000 + 14 * (1'900 + 39'644)) / 0.804));
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
  // LL: 3.6 us + 14 x (0.47 us + ceil(8 KiB / (230 x 1/4)) ns) = 3600 + 14 x (470 + 143), at the
  // share measured for 1 MiB, which holds below it (0.831).
  const CollectiveCost best = p.cost(s, CollectiveCosts::Nccl);
  EXPECT_EQ(best.protocol, CollectiveProtocol::LL);
  EXPECT_EQ(best.time, 14'659);
  EXPECT_EQ(std::llround((3'600 + 14 * (470 + 143)) / 0.831), 14'659);
  EXPECT_EQ(p.cost(s, CollectiveCosts::Nccl, CollectiveProtocol::Simple).time,
            std::llround((8'400 + 14 * (3'400 + 36)) / 0.831));
}

// The share of the model's busbw that NCCL reaches over NVLink, from nccl-tests on 8 A100s: the
// table's points, linear in log(size) between them, flat outside.
TEST(NcclCosts, NvlinkShareBySize) {
  EXPECT_DOUBLE_EQ(nvlink_size_efficiency(1), 0.831);
  EXPECT_DOUBLE_EQ(nvlink_size_efficiency(1 * MiB), 0.831);
  EXPECT_DOUBLE_EQ(nvlink_size_efficiency(16 * MiB), 0.652);
  EXPECT_NEAR(nvlink_size_efficiency(3 * MiB), 0.787 + (0.694 - 0.787) * std::log2(1.5), 1e-12);
  EXPECT_DOUBLE_EQ(nvlink_size_efficiency(1024 * MiB), 1.0);
  EXPECT_DOUBLE_EQ(nvlink_size_efficiency(8192 * MiB), 1.0);
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
  // NVLS: 25 us + S / 275 GB/s (algbw 275 of 450 GB/s ports), one step, at the share NCCL reaches
  // at 64 MiB (0.804). A ring would be slower: 8.4 us + 14 x (3.4 us + 8 MiB / 370 GB/s) = 373 us
  // before the same share.
  const TimeNs nvls = std::llround((25'000 + 244'033) / 0.804);
  EXPECT_EQ(simulate_one(c, first_n(8), s, CollectiveMode::Analytic), nvls);
  EXPECT_EQ(simulate_one(c, first_n(8), s, CollectiveMode::Analytic, CollectiveAlgorithm::Nvls), nvls);
  // Blackwell's NVSwitch gen4 runs NVLS too (at the same share of its 900 GB/s ports: assumed).
  const hardware::Cluster blackwell = hardware::make_cluster_preset("dgx-b200");
  CollectivePlanner b200(blackwell);
  EXPECT_TRUE(b200.plan(first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Nvls, s).nvls);
  // Not on Ampere: the NVLS request falls back to a ring.
  const hardware::Cluster ampere = hardware::make_cluster_preset("dgx-a100");
  CollectivePlanner a100(ampere);
  EXPECT_EQ(a100.plan(first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Nvls, s).algorithm,
            CollectiveAlgorithm::Ring);
}

// DGX-1: the best single ring runs over the 8 doubled NVLinks (0-3-2-1-5-6-7-4, 50 GB/s each way),
// but NCCL's rings use all 6 NVLinks of every GPU (6 x 25 = 150 GB/s): 3 times the one ring.
// 1 GiB ring Simple: 8.4 us + 14 x (3.4 us + ceil(128 MiB / (50 x 0.8 x 3)) ns).
TEST(NcclCosts, DgxOneRingsUseEveryNvlink) {
  const hardware::Cluster c = hardware::make_cluster_preset("dgx1-v100");
  CollectivePlanner planner(c);
  const Bytes s = 1024 * MiB;
  const CollectivePlan p = planner.plan(first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, s);
  ASSERT_EQ(p.phases.size(), 1u);
  EXPECT_DOUBLE_EQ(p.phases[0].channels, 3.0);
  EXPECT_EQ(p.cost(s, CollectiveCosts::Nccl, CollectiveProtocol::Simple).time, 8'400 + 14 * (3'400 + 1'118'482));
  // Four GPUs 0-3 (fully connected; 0-3 and 1-2 doubled): the ring 0-1-3-2 has a 25 GB/s hop and
  // GPU 0 has 1 + 1 + 2 links = 100 GB/s to the other three: 4 times. The pure link model keeps one ring.
  const CollectivePlan q = planner.plan(first_n(4), CollectiveOp::AllGather, CollectiveAlgorithm::Ring, s);
  EXPECT_DOUBLE_EQ(q.phases[0].channels, 4.0);
  EXPECT_EQ(q.cost(s, CollectiveCosts::Links).time, q.analytic_time(s));
  EXPECT_DOUBLE_EQ(p.nvlink_payload, 0.8);  // Volta: NCCL's 20 of 25 GB/s per NVLink
  // NVSwitch nodes: one port per GPU, one ring is all there is.
  const hardware::Cluster a100 = hardware::make_cluster_preset("dgx-a100");
  CollectivePlanner pa(a100);
  EXPECT_DOUBLE_EQ(pa.plan(first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, s).phases[0].channels, 1.0);
}

// Two DGX A100s, one ring over 16 GPUs: each of NCCL's rings leaves a node through another GPU's
// HDR NIC, so the node's 8 NICs (8 x 25 GB/s) carry what one NIC carries for the single ring.
// 1 GiB: 8.4 us + 30 x (9.6 us + ceil(64 MiB / (25 x 0.96 x 8)) ns). The hierarchical plan's
// network phase already runs one ring per NIC: no gain there.
TEST(NcclCosts, RingsAcrossNodesSpreadOverTheNodesNics) {
  const hardware::Cluster c = hardware::make_cluster_preset("dgx-a100", 2);
  CollectivePlanner planner(c);
  const Bytes s = 1024 * MiB;
  const CollectivePlan ring = planner.plan(first_n(16), CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, s);
  EXPECT_DOUBLE_EQ(ring.phases[0].channels, 8.0);
  EXPECT_EQ(ring.cost(s, CollectiveCosts::Nccl, CollectiveProtocol::Simple).time, 8'400 + 30 * (9'600 + 349'526));
  const CollectivePlan h = planner.plan(first_n(16), CollectiveOp::AllReduce, CollectiveAlgorithm::Hierarchical, s);
  ASSERT_EQ(h.phases.size(), 3u);
  for (const auto& ph : h.phases) EXPECT_DOUBLE_EQ(ph.channels, 1.0);
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

// One GPU on each of `nodes` DGX H100 nodes (local GPU 0): a data-parallel group beside TP = 8.
std::vector<DeviceId> one_per_node(int nodes, int local = 0) {
  std::vector<DeviceId> v;
  for (int n = 0; n < nodes; ++n) v.push_back(n * 8 + local);
  return v;
}

// PAT's steps: a Bruck all-gather with its dimensions reversed, n - 1 blocks of S/n in log2 n
// steps; reduce-scatter the same steps last to first.
TEST(NcclCosts, PatStepsDoubleTheBlocksAsTheDistanceHalves) {
  const hardware::Cluster c = hardware::make_cluster_preset("dgx-h100", 5);
  CollectivePlanner planner(c);
  const auto group = one_per_node(5);  // 0, 8, 16, 24, 32
  const Bytes s = 5 * MiB + 3;
  const CollectivePlan ag = planner.plan(group, CollectiveOp::AllGather, CollectiveAlgorithm::Pat, s);
  ASSERT_EQ(ag.algorithm, CollectiveAlgorithm::Pat);
  ASSERT_EQ(ag.phases.size(), 3u);  // ceil(log2 5)
  const std::size_t distance[] = {4, 2, 1};
  const std::int64_t blocks[] = {1, 2, 1};  // the last step: 5 - 4
  const Bytes block = (s + 4) / 5;          // ceil(S / 5) = 1'048'577
  EXPECT_EQ(block, 1'048'577);
  for (std::size_t k = 0; k < 3; ++k) {
    const CollectivePhase& ph = ag.phases[k];
    EXPECT_EQ(ph.repeats, 1u);
    EXPECT_EQ(ph.hop, HopClass::Net);
    EXPECT_EQ(CollectivePlan::flow_bytes(ph, s), blocks[k] * block);
    const auto& pattern = ag.patterns[ph.pattern];
    ASSERT_EQ(pattern.size(), 5u);
    for (std::size_t r = 0; r < 5; ++r) {
      EXPECT_EQ(pattern[r].src, group[r]);
      EXPECT_EQ(pattern[r].dst, group[(r + distance[k]) % 5]);
    }
  }
  const CollectivePlan rs = planner.plan(group, CollectiveOp::ReduceScatter, CollectiveAlgorithm::Pat, s);
  ASSERT_EQ(rs.phases.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(CollectivePlan::flow_bytes(rs.phases[k], s), blocks[2 - k] * block);
    EXPECT_EQ(rs.patterns[rs.phases[k].pattern][0].dst, group[distance[2 - k]]);
  }
  // PAT needs one GPU per node (NCCL's ncclPatEnable): two per node get the ring; all-reduce has none.
  const std::vector<DeviceId> two_per_node{0, 1, 8, 9, 16, 17};
  EXPECT_EQ(planner.plan(two_per_node, CollectiveOp::AllGather, CollectiveAlgorithm::Pat, s).algorithm,
            CollectiveAlgorithm::Ring);
  EXPECT_EQ(planner.plan(group, CollectiveOp::AllReduce, CollectiveAlgorithm::Pat, s).algorithm,
            CollectiveAlgorithm::Ring);
  EXPECT_EQ(&planner.cached_plan(group, CollectiveOp::AllGather, CollectiveAlgorithm::Pat, s),
            &planner.cached_plan(group, CollectiveOp::AllGather, CollectiveAlgorithm::Pat, 64 * MiB))
      << "a PAT plan does not depend on the size";
  EXPECT_EQ(&planner.cached_plan(group, CollectiveOp::AllReduce, CollectiveAlgorithm::Pat, s),
            &planner.cached_plan(group, CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, s))
      << "PAT asked of an all-reduce is its ring plan";
}

// NCCL's PAT model (tuning.cc, 2.23+): 8 us + 2.8 us per rank, 14 / 3.5 = 4 us a network step,
// the Simple protocol only, at 0.75 of the ring's bus bandwidth. Four nodes, 64 MiB: blocks of
// 16 MiB over each GPU's 50 GB/s NIC at the InfiniBand payload share (0.96 x 0.75 = 0.72):
// 4 us + ceil(16'777'216 / 0.72 / 50) = 470'034 ns, then 4 us + ceil(33'554'432 / 0.72 / 50) =
// 936'068 ns, after 8 + 4 x 2.8 = 19.2 us.
TEST(NcclCosts, PatIsNcclsLogLatencyModelAtThreeQuartersOfTheBandwidth) {
  const hardware::Cluster c = hardware::make_cluster_preset("dgx-h100", 4);
  CollectivePlanner planner(c);
  const Bytes s = 64 * MiB;
  const CollectivePlan p = planner.plan(one_per_node(4), CollectiveOp::AllGather, CollectiveAlgorithm::Pat, s);
  ASSERT_EQ(p.phases.size(), 2u);
  for (const auto& idle : p.idle)
    for (const IdleFlow& f : idle) EXPECT_DOUBLE_EQ(f.rate, 50.0);
  EXPECT_DOUBLE_EQ(p.phases[0].channels, 1.0);
  EXPECT_FALSE(p.protocol_enabled(CollectiveProtocol::LL));
  EXPECT_FALSE(p.protocol_enabled(CollectiveProtocol::LL128));
  const CollectiveCost cost = p.cost(s, CollectiveCosts::Nccl);
  EXPECT_EQ(cost.protocol, CollectiveProtocol::Simple);
  EXPECT_EQ(cost.time, 19'200 + 470'034 + 936'068);
  // All of it is network time (the per-rank latency included): a calibration scales it as such.
  EXPECT_EQ(cost.net_time, cost.time);
  EXPECT_EQ(cost.scaled(3.0, 0.5), cost.time / 2);
  // The engine's expanded steps agree with the closed form on an idle network.
  TaskGraphBuilder b(c.num_devices());
  b.add_collective({.op = CollectiveOp::AllGather,
                    .group = b.add_group(one_per_node(4)),
                    .bytes = s,
                    .algorithm = CollectiveAlgorithm::Pat});
  const TaskGraph g = std::move(b).build();
  for (CollectiveMode mode : {CollectiveMode::Expanded, CollectiveMode::Analytic}) {
    EXPECT_NEAR(static_cast<double>(Engine(c, {.collectives = mode, .costs = CollectiveCosts::Nccl}).run(g).step_time),
                static_cast<double>(cost.time), 2.0)
        << to_string(mode);
    // Calibrated: both modes scale the whole of it as network time.
    const Engine calibrated(c, {.collectives = mode,
                                .costs = CollectiveCosts::Nccl,
                                .intra_node_comm_scale = 3.0,
                                .inter_node_comm_scale = 0.5});
    EXPECT_NEAR(static_cast<double>(calibrated.run(g).step_time), static_cast<double>(cost.time / 2), 2.0)
        << to_string(mode);
  }
}

// Auto weighs PAT against the ring under NCCL's costs only: at 16 nodes PAT's log latency wins
// for 1 MiB (96 us against the ring's 126 us, LL), the ring's full bandwidth from 16 MiB; at 1,024
// nodes PAT wins at 256 MiB, where the ring pays 1,023 steps of latency.
TEST(NcclCosts, AutoPicksPatWhereItsLatencyPaysForItsBandwidth) {
  struct Case {
    int nodes;
    Bytes bytes;
    CollectiveAlgorithm want;
  };
  for (const Case& k : {Case{16, MiB, CollectiveAlgorithm::Pat}, Case{16, 16 * MiB, CollectiveAlgorithm::Ring},
                        Case{1024, 256 * MiB, CollectiveAlgorithm::Pat}}) {
    const hardware::Cluster c = hardware::make_cluster_preset("dgx-h100", k.nodes);
    CollectivePlanner planner(c);
    const auto group = one_per_node(k.nodes, 3);
    for (CollectiveOp op : {CollectiveOp::ReduceScatter, CollectiveOp::AllGather}) {
      const CollectiveChoice& got =
          planner.cached_choice(group, op, CollectiveAlgorithm::Auto, k.bytes, CollectiveCosts::Nccl, 1, 1);
      EXPECT_EQ(got.plan->algorithm, k.want) << k.nodes << " " << k.bytes;
      const TimeNs ring =
          planner.plan(group, op, CollectiveAlgorithm::Ring, k.bytes).cost(k.bytes, CollectiveCosts::Nccl).time;
      const TimeNs pat =
          planner.plan(group, op, CollectiveAlgorithm::Pat, k.bytes).cost(k.bytes, CollectiveCosts::Nccl).time;
      EXPECT_EQ(got.time, std::min(ring, pat));
      // Pure alpha-beta costs (Links) carry none of NCCL's PAT latencies: the ring stays.
      EXPECT_EQ(planner.cached_choice(group, op, CollectiveAlgorithm::Auto, k.bytes, CollectiveCosts::Links, 1, 1)
                    .plan->algorithm,
                CollectiveAlgorithm::Ring);
    }
  }
}

// PAT by symmetry: one message per class of each step (on one switch, one class) gives the step
// every message gives, with compute of different lengths before the collectives and SMs held.
TEST(NcclCosts, PatBySymmetryMatchesEveryMessage) {
  const hardware::Cluster c = hardware::make_cluster_preset("dgx-h100", 16);
  TaskGraphBuilder b(c.num_devices());
  const GroupId group = b.add_group(one_per_node(16, 5));
  std::vector<TaskId> before;
  for (int n = 0; n < 16; ++n) before.push_back(b.add_compute({.device = n * 8 + 5, .duration = 10'000 + 1'000 * n}));
  const TaskId ag = b.add_collective(
      {.op = CollectiveOp::AllGather, .group = group, .bytes = 48 * MiB, .algorithm = CollectiveAlgorithm::Pat});
  for (TaskId t : before) b.add_dependency(ag, t);
  const TaskId rs = b.add_collective(
      {.op = CollectiveOp::ReduceScatter, .group = group, .bytes = MiB, .algorithm = CollectiveAlgorithm::Auto});
  b.add_dependency(rs, ag);
  const TaskGraph g = std::move(b).build();
  const auto run = [&](bool symmetric) {
    return Engine(c, {.costs = CollectiveCosts::Nccl,
                      .record_timeline = true,
                      .symmetric_collectives = symmetric,
                      .collectives_hold_sms = true})
        .run(g);
  };
  const StepResult one = run(true), every = run(false);
  EXPECT_EQ(one.step_time, every.step_time);
  EXPECT_EQ(one.algorithms[static_cast<std::size_t>(ag)], CollectiveAlgorithm::Pat);
  // auto at 1 MiB over 16 nodes: PAT's 4 steps (96 us) beat the ring's 15 (126 us).
  EXPECT_EQ(every.algorithms[static_cast<std::size_t>(rs)], CollectiveAlgorithm::Pat);
  EXPECT_EQ(every.collective_messages, 2 * 4 * 16);
  EXPECT_EQ(one.collective_messages + one.collective_messages_inferred, every.collective_messages);
  EXPECT_LT(one.collective_messages, every.collective_messages);
}

// `parasim clusters show` prints the NCCL model's numbers, each with its source.
TEST(NcclCosts, ModelFiguresNameTheirSources) {
  const std::vector<CollectiveModelFigure> rows = nccl_model_figures();
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[1].value, "LL 3.6 / LL128 10 / Simple 8.4 us");
  EXPECT_EQ(rows[3].value, "3.4 / 5.7 / 9.6 us");
  EXPECT_EQ(rows[4].value, "25 us, algorithm bandwidth 61.1% of the port");
  EXPECT_EQ(rows[5].value, "8 us + 2.8 us per rank + 4 us per log2 step, Simple only, 0.75 of the ring's bandwidth");
  EXPECT_NE(rows[5].source.find("arXiv 2506.20252"), std::string::npos);
  EXPECT_EQ(rows[6].value, "NVLink 80.0% (Hopper 82.4%; A100 reductions 76.7%), InfiniBand 96%");
  EXPECT_EQ(rows[7].value.substr(0, 60), "83.1% at 1 MiB, 65.0% at 8 MiB, 79.9% at 128 MiB, 100.0% at ");
  for (const CollectiveModelFigure& r : rows) EXPECT_FALSE(r.source.empty()) << r.quantity;
}

TEST(NcclCosts, SmallCollectivesRunOnFewerChannels) {
  using enum CollectiveProtocol;
  const auto ring = CollectiveAlgorithm::Ring;
  // Simple: 512 threads x 64 B per channel = 32 KiB; 24 channels from 768 KiB.
  EXPECT_EQ(nccl_collective_channels(24, 16, 768 * KiB, ring, Simple, 8), 24);
  EXPECT_EQ(nccl_collective_channels(24, 16, 768 * KiB - 1, ring, Simple, 8), 23);
  EXPECT_EQ(nccl_collective_channels(24, 16, 100'000, ring, Simple, 8), 3);
  EXPECT_EQ(nccl_collective_channels(24, 16, 1'000, ring, Simple, 8), 1);  // never below one
  EXPECT_EQ(nccl_collective_channels(24, 16, 1 << 30, CollectiveAlgorithm::Hierarchical, Simple, 64), 24);
  // LL128: 640 x 8 B = 5 KiB. LL: 512 x 8 B = 4 KiB, times the ranks on a ring.
  EXPECT_EQ(nccl_collective_channels(24, 16, 64 * KiB, ring, LL128, 8), 12);
  EXPECT_EQ(nccl_collective_channels(24, 16, 100'000, ring, LL, 8), 3);
  EXPECT_EQ(nccl_collective_channels(24, 16, 100'000, CollectiveAlgorithm::Tree, LL, 8), 24);
  // NVLS runs its own channels whatever the size; a cluster pinned to 0 holds none.
  EXPECT_EQ(nccl_collective_channels(24, 16, 1'000, CollectiveAlgorithm::Nvls, LL, 8), 16);
  EXPECT_EQ(nccl_collective_channels(0, 0, 1 << 30, ring, Simple, 8), 0);
}

}  // namespace
}  // namespace parasim::simulator
