// Collective plans and their timings, expanded (link-level) and analytic (closed form).
#include "parasim/simulator/collectives.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/simulator/engine.hpp"
#include "route_table.hpp"  // private: which routes a planner looked up
#include "test_clusters.hpp"

namespace parasim::simulator {
namespace {

using testing::ring_cluster;
using testing::star_cluster;
using testing::two_level_cluster;

std::vector<DeviceId> first_n(int n) {
  std::vector<DeviceId> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// A graph with one collective over `group`; returns its simulated time.
TimeNs simulate_one(const hardware::Cluster& cluster, std::vector<DeviceId> group, CollectiveOp op,
                    CollectiveAlgorithm algo, Bytes bytes, CollectiveMode mode) {
  TaskGraphBuilder b(cluster.num_devices());
  const GroupId grp = b.add_group(group);
  b.add_collective({.op = op, .group = grp, .bytes = bytes, .algorithm = algo});
  TaskGraph g = std::move(b).build();
  return Engine(cluster, {.collectives = mode}).run(g).step_time;
}

TEST(Collectives, RingAllreduceOnAUniformRingIsTheTextbookFormula) {
  for (int n : {4, 8}) {
    const TimeNs alpha = 1'000;
    const double beta = 25;  // GB/s = bytes per ns
    const Bytes s = Bytes{1'000'000} * n;
    auto cluster = ring_cluster(n, alpha, beta);
    // 2(n-1) alpha + 2(n-1)/n S/beta, exactly: 246'000 ns for n = 4, 574'000 ns for n = 8.
    const TimeNs expected =
        2 * (n - 1) * alpha + static_cast<TimeNs>(2.0 * (n - 1) / n * static_cast<double>(s) / beta);
    EXPECT_EQ(expected, n == 4 ? 246'000 : 574'000);
    for (CollectiveMode mode : {CollectiveMode::Expanded, CollectiveMode::Analytic})
      EXPECT_EQ(simulate_one(cluster, first_n(n), CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, s, mode),
                expected)
          << "n=" << n << " " << to_string(mode);
  }
}

TEST(Collectives, RingReduceScatterAndAllGatherAreHalfTheSteps) {
  auto cluster = ring_cluster(4, 1'000, 25);
  for (CollectiveOp op : {CollectiveOp::ReduceScatter, CollectiveOp::AllGather})
    for (CollectiveMode mode : {CollectiveMode::Expanded, CollectiveMode::Analytic})
      EXPECT_EQ(simulate_one(cluster, first_n(4), op, CollectiveAlgorithm::Ring, 4'000'000, mode), 3 * 41'000);
}

TEST(Collectives, HierarchicalAllreduceOnTwoNodesOfFour) {
  // Intra-node: GPU -> node switch -> GPU, 2 x 500 ns, 100 GB/s. Inter-node: GPU -> IB switch ->
  // GPU, 2 x 2'000 ns, 25 GB/s. S = 8 MB.
  //   reduce-scatter in each node: 3 steps x (1'000 + 2'000'000 B / 100) = 63'000
  //   allreduce across the 2 nodes, 4 concurrent rings: 2 steps x (4'000 + 1'000'000 B / 25) = 88'000
  //   all-gather in each node: 63'000                                              total 214'000 ns
  auto cluster = two_level_cluster(2, 4, 500, 100, 2'000, 25);
  for (CollectiveMode mode : {CollectiveMode::Expanded, CollectiveMode::Analytic})
    EXPECT_EQ(
        simulate_one(cluster, first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Hierarchical, 8'000'000, mode),
        214'000);
  CollectivePlanner planner(cluster);
  const CollectivePlan p =
      planner.plan(first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Hierarchical, 8'000'000);
  EXPECT_EQ(p.algorithm, CollectiveAlgorithm::Hierarchical);
  EXPECT_EQ(p.steps(), 3 + 2 + 3);
  // Flat ring over all 8 for comparison: the two cross-node hops run at 25 GB/s.
  //   14 steps x (4'000 + 1'000'000 B / 25) = 616'000 ns; auto picks hierarchical.
  EXPECT_EQ(planner.analytic_time(first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 8'000'000), 616'000);
  EXPECT_EQ(planner.plan(first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Auto, 8'000'000).algorithm,
            CollectiveAlgorithm::Hierarchical);
}

TEST(Collectives, BinomialTreeAllreduce) {
  // 8 ranks on a switch (route alpha 1'000, 10 GB/s): 3 reduce + 3 broadcast steps, each moving
  // all S = 100'000 B: 6 x (1'000 + 10'000) = 66'000 ns.
  auto cluster = star_cluster(8, 500, 10);
  for (CollectiveMode mode : {CollectiveMode::Expanded, CollectiveMode::Analytic})
    EXPECT_EQ(simulate_one(cluster, first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Tree, 100'000, mode),
              66'000);
  // Small messages: the tree's 6 alphas beat the ring's 14, and auto sees it.
  CollectivePlanner planner(cluster);
  EXPECT_EQ(planner.plan(first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Auto, 800).algorithm,
            CollectiveAlgorithm::Tree);
  EXPECT_EQ(planner.plan(first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Auto, 80'000'000).algorithm,
            CollectiveAlgorithm::Ring);
}

TEST(Collectives, AllToAllOnASwitchIsLimitedByEachPort) {
  // Every GPU sends S/n to each of n-1 peers at once: its port carries (n-1) S/n at 10 GB/s.
  auto cluster = star_cluster(4, 500, 10);
  for (CollectiveMode mode : {CollectiveMode::Expanded, CollectiveMode::Analytic})
    EXPECT_EQ(simulate_one(cluster, first_n(4), CollectiveOp::AllToAll, CollectiveAlgorithm::Auto, 400'000, mode),
              1'000 + 30'000);
}

TEST(Collectives, PipelinedBroadcastChoosesItsChunkCount) {
  auto cluster = star_cluster(4, 500, 10);
  CollectivePlanner planner(cluster);
  const CollectivePlan p = planner.plan(first_n(4), CollectiveOp::Broadcast, CollectiveAlgorithm::Ring, 4'000'000);
  // (m + n - 2)(alpha + S/(m beta)) is smallest near m = sqrt((n-2) S / (alpha beta)) = 28.
  EXPECT_EQ(p.steps(), 28 + 4 - 2);
  const TimeNs expected = 30 * (1'000 + serialization_time((4'000'000 + 27) / 28, GBps{10}));
  EXPECT_EQ(p.analytic_time(4'000'000), expected);
  EXPECT_EQ(simulate_one(cluster, first_n(4), CollectiveOp::Broadcast, CollectiveAlgorithm::Ring, 4'000'000,
                         CollectiveMode::Expanded),
            expected);
}

// A hierarchical tree's size only picks its chunk count: the memo keeps one plan per chunk count,
// and each is exactly the plan a fresh planner makes for that size.
TEST(Collectives, CachedTreePlansAreTheirSizesPlansOnePerChunkCount) {
  const hardware::Cluster c = hardware::make_cluster_preset("dgx-h100", 4);
  const std::vector<DeviceId> group = first_n(32);
  CollectivePlanner cached(c);
  std::map<std::int64_t, const CollectivePlan*> by_divisor;
  for (Bytes b : {Bytes{0}, KiB, 64 * KiB, MiB, 16 * MiB, 256 * MiB, 1024 * MiB, 8192 * MiB}) {
    CollectivePlanner fresh(c);
    const CollectivePlan want = fresh.plan(group, CollectiveOp::AllReduce, CollectiveAlgorithm::HierarchicalTree, b);
    const CollectivePlan& got =
        cached.cached_plan(group, CollectiveOp::AllReduce, CollectiveAlgorithm::HierarchicalTree, b);
    ASSERT_EQ(got.algorithm, CollectiveAlgorithm::HierarchicalTree);
    ASSERT_EQ(got.phases.size(), 4u);
    ASSERT_EQ(got.phases.size(), want.phases.size());
    for (std::size_t i = 0; i < got.phases.size(); ++i) {
      EXPECT_EQ(got.phases[i].pattern, want.phases[i].pattern) << b;
      EXPECT_EQ(got.phases[i].repeats, want.phases[i].repeats) << b;
      EXPECT_EQ(got.phases[i].divisor, want.phases[i].divisor) << b;
      EXPECT_EQ(got.phases[i].hop, want.phases[i].hop) << b;
      EXPECT_EQ(got.phases[i].tree, want.phases[i].tree) << b;
    }
    EXPECT_EQ(got.patterns.size(), want.patterns.size());
    EXPECT_EQ(got.representatives, want.representatives);
    EXPECT_EQ(got.analytic_time(b), want.analytic_time(b)) << b;
    EXPECT_EQ(got.cost(b, CollectiveCosts::Nccl).time, want.cost(b, CollectiveCosts::Nccl).time) << b;
    const auto [it, added] = by_divisor.try_emplace(got.phases[1].divisor, &got);
    EXPECT_EQ(it->second, &got) << "one plan object per chunk count";
  }
  EXPECT_GE(by_divisor.size(), 3u);  // the sizes pick several chunk counts
  // Reduce-scatter has only a ring: every algorithm asked gets the same plan object.
  EXPECT_EQ(&cached.cached_plan(group, CollectiveOp::ReduceScatter, CollectiveAlgorithm::HierarchicalTree, MiB),
            &cached.cached_plan(group, CollectiveOp::ReduceScatter, CollectiveAlgorithm::Ring, 8 * MiB));
}

// Two data-parallel groups that a relabelling of identical nodes maps onto each other (one GPU of
// the same local index on each of four nodes) have the same patterns up to that relabelling: the
// second group's plans reuse the first's routes, rates and classes and equal what a fresh planner works out for it.
TEST(Collectives, GroupsThatRelabelledNodesMapOntoEachOtherShareTheirPatternWork) {
  const hardware::Cluster c = hardware::make_cluster_preset("dgx-h100", 8);
  const std::vector<DeviceId> a{0, 8, 16, 24}, b{35, 43, 51, 59};  // local 0 on nodes 0-3; local 3 on 4-7
  const std::vector<DeviceId> image{32, 40, 48, 56};               // local 0 on nodes 4-7: an image of a
  CollectivePlanner planner(c);
  const auto algorithms = {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree, CollectiveAlgorithm::Hierarchical,
                           CollectiveAlgorithm::HierarchicalTree};
  const auto plan_all = [&](const std::vector<DeviceId>& group) {  // the routes it looked up
    const std::size_t before = planner.routes().memory_bytes();
    for (CollectiveAlgorithm algo : algorithms) planner.cached_plan(group, CollectiveOp::AllReduce, algo, 64 * MiB);
    return planner.routes().memory_bytes() - before;
  };
  const std::size_t first = plan_all(a), second = plan_all(image), other = plan_all(b);
  // The image's own lookups: each member's NIC uplink for NCCL's channels (one 4-hop route each).
  EXPECT_EQ(second, 4 * (sizeof(RouteRef) + 4 * sizeof(hardware::DirLinkId)));
  EXPECT_GT(first, second);
  EXPECT_EQ(other, first);  // another local index: not an image, worked out afresh
  for (const auto& group : {image, b})
    for (CollectiveAlgorithm algo : algorithms) {
      CollectivePlanner fresh(c);
      const CollectivePlan want = fresh.plan(group, CollectiveOp::AllReduce, algo, 64 * MiB);
      const CollectivePlan& got = planner.cached_plan(group, CollectiveOp::AllReduce, algo, 64 * MiB);
      ASSERT_EQ(got.algorithm, want.algorithm);
      ASSERT_EQ(got.idle.size(), want.idle.size());
      for (std::size_t p = 0; p < got.idle.size(); ++p)
        for (std::size_t i = 0; i < got.idle[p].size(); ++i) {
          EXPECT_EQ(got.idle[p][i].latency, want.idle[p][i].latency);
          EXPECT_EQ(got.idle[p][i].rate, want.idle[p][i].rate);
        }
      EXPECT_EQ(got.representatives, want.representatives);
      ASSERT_EQ(got.phases.size(), want.phases.size());
      for (std::size_t i = 0; i < got.phases.size(); ++i) {
        EXPECT_EQ(got.phases[i].hop, want.phases[i].hop);
        EXPECT_EQ(got.phases[i].channels, want.phases[i].channels);
        EXPECT_EQ(got.phases[i].repeats, want.phases[i].repeats);
      }
      EXPECT_EQ(got.cost(64 * MiB, CollectiveCosts::Nccl).time, want.cost(64 * MiB, CollectiveCosts::Nccl).time);
    }
}

// The memo across groups, checked at random: one planner kept across many groups (images of each
// other or not, several members per node or one, routes that follow the node swap or meet ties)
// gives every plan field a fresh planner gives.
// Six identical nodes of two GPUs, each node's PCIe switch reaching two NICs, NIC 0 of every node on
// IB switch A and NIC 1 on B, the two switches linked: a route between nodes leaves through either
// NIC at the same label, a tie, so it does not follow the node swap and is keyed by its pairs.
hardware::Cluster two_switch_cluster() {
  using hardware::EndpointKind;
  using hardware::LinkKind;
  hardware::ClusterSpec s;
  s.name = "two-switch";
  constexpr int kNodes = 6;
  for (int n = 0; n < kNodes; ++n)
    for (int g = 0; g < 2; ++g) s.devices.push_back({"gpu" + std::to_string(2 * n + g), "A100-SXM4-80GB", n, 0});
  const auto ep = [&](const std::string& name, EndpointKind kind, int node) {
    s.endpoints.push_back({name, kind, node});
    return static_cast<hardware::EndpointId>(s.devices.size() + s.endpoints.size() - 1);
  };
  const hardware::EndpointId a = ep("swA", EndpointKind::IbSwitch, -1), b = ep("swB", EndpointKind::IbSwitch, -1);
  for (int n = 0; n < kNodes; ++n) {
    const auto psw = ep("psw" + std::to_string(n), EndpointKind::PcieSwitch, n);
    const auto nic0 = ep("nic" + std::to_string(2 * n), EndpointKind::Nic, n);
    const auto nic1 = ep("nic" + std::to_string(2 * n + 1), EndpointKind::Nic, n);
    s.links.push_back({"", LinkKind::NVLink, 2 * n, 2 * n + 1, 700, GBps{100}});
    for (int g = 0; g < 2; ++g) s.links.push_back({"", LinkKind::PCIe, 2 * n + g, psw, 500, GBps{24}});
    s.links.push_back({"", LinkKind::PCIe, psw, nic0, 500, GBps{24}});
    s.links.push_back({"", LinkKind::PCIe, psw, nic1, 500, GBps{24}});
    s.links.push_back({"", LinkKind::InfiniBand, nic0, a, 1500, GBps{25}});
    s.links.push_back({"", LinkKind::InfiniBand, nic1, b, 1500, GBps{25}});
  }
  s.links.push_back({"", LinkKind::InfiniBand, a, b, 1000, GBps{50}});
  return hardware::Cluster(s);
}

TEST(Collectives, APlannerKeptAcrossRandomGroupsPlansLikeAFreshOne) {
  std::mt19937 rng(7);
  const hardware::Cluster ties = two_switch_cluster();
  ASSERT_TRUE(ties.identical_nodes());
  EXPECT_FALSE(ties.route_follows_node_symmetry(0, 2));  // a tie between the NICs
  EXPECT_TRUE(ties.route_follows_node_symmetry(0, 1));   // the NVLink inside a node
  for (const char* preset : {"dgx1-v100", "dgx-h100", "pcie-hetero", "two-switch"}) {
    const hardware::Cluster c =
        std::string_view(preset) == "two-switch" ? ties : hardware::make_cluster_preset(preset, 6);
    CollectivePlanner kept(c);
    for (int trial = 0; trial < 40; ++trial) {
      // Either the same local indices on random nodes (images of one another) or random devices.
      std::vector<DeviceId> group;
      const int per_node = c.max_devices_per_node();
      if (trial % 2 == 0) {
        std::vector<int> nodes(static_cast<std::size_t>(c.num_nodes()));
        std::iota(nodes.begin(), nodes.end(), 0);
        std::shuffle(nodes.begin(), nodes.end(), rng);
        const int n_nodes = 2 + static_cast<int>(rng() % 3), locals = 1 + static_cast<int>(rng() % 2);
        for (int k = 0; k < n_nodes; ++k)
          for (int l = 0; l < locals; ++l) group.push_back(nodes[static_cast<std::size_t>(k)] * per_node + l);
      } else {
        std::vector<DeviceId> all(static_cast<std::size_t>(c.num_devices()));
        std::iota(all.begin(), all.end(), 0);
        std::shuffle(all.begin(), all.end(), rng);
        group.assign(all.begin(), all.begin() + 2 + static_cast<std::ptrdiff_t>(rng() % 10));
      }
      for (CollectiveOp op :
           {CollectiveOp::AllReduce, CollectiveOp::AllGather, CollectiveOp::AllToAll, CollectiveOp::Broadcast})
        for (CollectiveAlgorithm algo : {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree,
                                         CollectiveAlgorithm::Hierarchical, CollectiveAlgorithm::HierarchicalTree}) {
          const Bytes bytes = Bytes{1} << (10 + rng() % 20);
          CollectivePlanner fresh(c);
          const CollectivePlan want = fresh.plan(group, op, algo, bytes);
          const CollectivePlan& got = kept.cached_plan(group, op, algo, bytes);
          ASSERT_EQ(got.algorithm, want.algorithm) << preset << " " << trial;
          ASSERT_EQ(got.patterns.size(), want.patterns.size()) << preset << " " << trial;
          for (std::size_t p = 0; p < got.idle.size(); ++p)
            for (std::size_t i = 0; i < got.idle[p].size(); ++i) {
              ASSERT_EQ(got.idle[p][i].latency, want.idle[p][i].latency) << preset << " " << trial;
              ASSERT_EQ(got.idle[p][i].rate, want.idle[p][i].rate) << preset << " " << trial;
            }
          ASSERT_EQ(got.representatives, want.representatives) << preset << " " << trial;
          ASSERT_EQ(got.phases.size(), want.phases.size()) << preset << " " << trial;
          for (std::size_t i = 0; i < got.phases.size(); ++i) {
            ASSERT_EQ(got.phases[i].hop, want.phases[i].hop) << preset << " " << trial;
            ASSERT_EQ(got.phases[i].channels, want.phases[i].channels) << preset << " " << trial;
            ASSERT_EQ(got.phases[i].repeats, want.phases[i].repeats) << preset << " " << trial;
            ASSERT_EQ(got.phases[i].divisor, want.phases[i].divisor) << preset << " " << trial;
          }
          ASSERT_EQ(got.cost(bytes, CollectiveCosts::Nccl).time, want.cost(bytes, CollectiveCosts::Nccl).time);
        }
    }
  }
}

// What the engine charges: Auto resolves to the fastest applicable algorithm (first wins a tie),
// scaled by the calibration, memoised per key.
TEST(Collectives, CachedChoiceIsTheFastestApplicablePlanScaledAndMemoised) {
  const hardware::Cluster c = hardware::make_cluster_preset("dgx-h100", 4);
  const std::vector<DeviceId> group = first_n(32);
  CollectivePlanner planner(c);
  for (Bytes b : {KiB, MiB, 256 * MiB}) {
    CollectivePlanner fresh(c);
    TimeNs best = std::numeric_limits<TimeNs>::max();
    CollectiveAlgorithm best_algo = CollectiveAlgorithm::Auto;
    for (CollectiveAlgorithm a :
         {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Hierarchical, CollectiveAlgorithm::Tree,
          CollectiveAlgorithm::Nvls, CollectiveAlgorithm::HierarchicalTree}) {
      const CollectivePlan p = fresh.plan(group, CollectiveOp::AllReduce, a, b);
      if (p.algorithm != a && a != CollectiveAlgorithm::Ring) continue;
      const TimeNs t = p.cost(b, CollectiveCosts::Nccl).scaled(1.5, 2.0);
      if (t < best) best = t, best_algo = a;
    }
    const CollectiveChoice& got = planner.cached_choice(group, CollectiveOp::AllReduce, CollectiveAlgorithm::Auto, b,
                                                        CollectiveCosts::Nccl, 1.5, 2.0);
    EXPECT_EQ(got.time, best) << b;
    EXPECT_EQ(got.plan->algorithm, best_algo) << b;
    EXPECT_EQ(&planner.cached_choice(group, CollectiveOp::AllReduce, CollectiveAlgorithm::Auto, b,
                                     CollectiveCosts::Nccl, 1.5, 2.0),
              &got);
    const CollectiveChoice& unscaled = planner.cached_choice(group, CollectiveOp::AllReduce, CollectiveAlgorithm::Auto,
                                                             b, CollectiveCosts::Nccl, 1, 1);
    EXPECT_NE(&unscaled, &got);
    EXPECT_EQ(unscaled.time, unscaled.plan->cost(b, CollectiveCosts::Nccl).time);
  }
}

TEST(Collectives, Dgx1RingUsesOnlyNvlinks) {
  auto cluster = hardware::make_cluster_preset("dgx1-v100");
  CollectivePlanner planner(cluster);
  const auto order = planner.ring_order(first_n(8));
  ASSERT_EQ(order.size(), 8u);
  EXPECT_EQ(order.front(), 0);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto route = cluster.route(order[i], order[(i + 1) % order.size()]);
    ASSERT_EQ(route.size(), 1u);
    EXPECT_EQ(cluster.link(hardware::Cluster::link_of(route[0])).kind, hardware::LinkKind::NVLink);
  }
  // The bonded (NV2) pairs form a Hamiltonian cycle 0-3-2-1-5-6-7-4: the ring runs at 50 GB/s.
  EXPECT_EQ(order, (std::vector<DeviceId>{0, 3, 2, 1, 5, 6, 7, 4}));
  const Bytes s = 256 * MiB;
  EXPECT_EQ(planner.analytic_time(first_n(8), CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, s),
            14 * (1'000 + serialization_time(s / 8, GBps{50})));
}

TEST(Collectives, ExpandedAndAnalyticAgreeWithinOnePercentOnIdlePresets) {
  struct Case {
    const char* preset;
    int nodes;
    CollectiveOp op;
    CollectiveAlgorithm algo;
  };
  const Case cases[] = {
      {"dgx1-v100", 1, CollectiveOp::AllReduce, CollectiveAlgorithm::Ring},
      {"dgx1-v100", 2, CollectiveOp::AllReduce, CollectiveAlgorithm::Hierarchical},
      {"dgx-a100", 1, CollectiveOp::AllReduce, CollectiveAlgorithm::Tree},
      {"dgx-a100", 2, CollectiveOp::AllGather, CollectiveAlgorithm::Ring},
      {"dgx-h100", 2, CollectiveOp::AllReduce, CollectiveAlgorithm::Hierarchical},
      {"dgx-h100", 1, CollectiveOp::AllToAll, CollectiveAlgorithm::Auto},
      {"hgx-h200", 2, CollectiveOp::Broadcast, CollectiveAlgorithm::Ring},
      {"pcie-hetero", 1, CollectiveOp::AllReduce, CollectiveAlgorithm::Ring},
  };
  for (const Case& c : cases) {
    auto cluster = hardware::make_cluster_preset(c.preset, c.nodes);
    for (Bytes s : {Bytes{64} * KiB, Bytes{64} * MiB}) {
      const auto group = first_n(cluster.num_devices());
      const TimeNs e = simulate_one(cluster, group, c.op, c.algo, s, CollectiveMode::Expanded);
      const TimeNs a = simulate_one(cluster, group, c.op, c.algo, s, CollectiveMode::Analytic);
      EXPECT_LE(std::abs(static_cast<double>(e - a)), 0.01 * static_cast<double>(a))
          << c.preset << " x" << c.nodes << " " << to_string(c.op) << " " << s << ": expanded " << e << " analytic "
          << a;
    }
  }
}

TEST(Collectives, ExpandedCollectivesContendWithOtherTraffic) {
  // A 100 MB transfer on ring link 0->1 (stream 2) next to a ring allreduce of 4 MB (stream 1).
  auto cluster = ring_cluster(4, 1'000, 25);
  TaskGraphBuilder b(4, 3);
  const GroupId grp = b.add_group(first_n(4));
  const TaskId ar = b.add_collective(
      {.op = CollectiveOp::AllReduce, .group = grp, .bytes = 4'000'000, .algorithm = CollectiveAlgorithm::Ring});
  const TaskId big = b.add_transfer({.src = 0, .dst = 1, .bytes = 100'000'000, .stream = 2});
  TaskGraph g = std::move(b).build();
  // Analytic: the collective ignores the transfer: 246'000 ns; the transfer runs alone.
  const StepResult analytic =
      Engine(cluster, {.collectives = CollectiveMode::Analytic, .record_timeline = true}).run(g);
  EXPECT_EQ(analytic.timeline[static_cast<std::size_t>(ar)].end, 246'000);
  EXPECT_EQ(analytic.timeline[static_cast<std::size_t>(big)].end, 1'000 + 4'000'000);
  // Expanded: in each of the 6 steps the 0->1 chunk (1 MB) shares the link at 12.5 GB/s, so a step
  // takes 1'000 + 80'000. The transfer gets 12.5 GB/s during the 6 x 80'000 ns of data phases and
  // 25 GB/s in the 5 gaps of 1'000 ns between steps: 6'125'000 B by 486'000 ns, the remaining
  // 93'875'000 B alone take 3'755'000 ns more.
  const StepResult expanded = Engine(cluster, {.record_timeline = true}).run(g);
  EXPECT_EQ(expanded.timeline[static_cast<std::size_t>(ar)].end, 6 * 81'000);
  EXPECT_EQ(expanded.timeline[static_cast<std::size_t>(big)].end, 486'000 + 3'755'000);
}

}  // namespace
}  // namespace parasim::simulator
