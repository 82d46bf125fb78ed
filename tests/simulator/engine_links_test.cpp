// Links: alpha + bytes / share, max-min fair sharing, full duplex, multi-hop, busy time.
#include <gtest/gtest.h>

#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/simulator/engine.hpp"
#include "test_clusters.hpp"

namespace parasim::simulator {
namespace {

using testing::star_cluster;

// Star: every GPU-switch hop has alpha 500 ns and 10 GB/s, so GPU->GPU alpha is 1000 ns.
constexpr TimeNs kRouteAlpha = 1'000;

TEST(EngineLinks, OneTransferIsAlphaPlusBytesOverBeta) {
  auto cluster = star_cluster(3, 500, 10);
  TaskGraphBuilder b(3);
  b.add_transfer({.src = 0, .dst = 2, .bytes = 1'000'000});
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster).run(g);
  EXPECT_EQ(r.step_time, kRouteAlpha + 100'000);
  EXPECT_EQ(r.events, 2);  // latency phase done, data done
}

TEST(EngineLinks, TwoTransfersSharingALinkEachGetHalf) {
  auto cluster = star_cluster(3, 500, 10);
  TaskGraphBuilder b(3);
  const TaskId t0 = b.add_transfer({.src = 0, .dst = 2, .bytes = 1'000'000});
  const TaskId t1 = b.add_transfer({.src = 1, .dst = 2, .bytes = 1'000'000});  // shares switch->gpu2
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster, {.record_timeline = true}).run(g);
  // Fair share: both move at 5 GB/s after the latency, both end at alpha + 2 S / beta.
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(t0)].end, kRouteAlpha + 200'000);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(t1)].end, kRouteAlpha + 200'000);
  const hardware::DirLinkId down = cluster.route(0, 2).back();
  EXPECT_EQ(r.links[static_cast<std::size_t>(down)].busy, 200'000);
  EXPECT_EQ(r.links[static_cast<std::size_t>(down)].bytes, 2'000'000);
}

TEST(EngineLinks, LateJoinerSlowsTheFirstFlowFromThenOn) {
  auto cluster = star_cluster(3, 500, 10);
  TaskGraphBuilder b(3);
  const TaskId t0 = b.add_transfer({.src = 0, .dst = 2, .bytes = 1'000'000});
  const TaskId wait = b.add_compute({.device = 1, .duration = 51'000});
  const TaskId t1 = b.add_transfer({.src = 1, .dst = 2, .bytes = 1'000'000});
  b.add_dependency(t1, wait);
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster, {.record_timeline = true}).run(g);
  // t0 alone at 10 GB/s from 1'000 to 52'000 (510'000 B), then 5 GB/s: 490'000 B more -> 150'000.
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(t0)].end, 150'000);
  // t1 moves from 52'000: 490'000 B at 5 GB/s until 150'000, the other 510'000 B at 10 GB/s.
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(t1)].end, 201'000);
}

TEST(EngineLinks, OppositeDirectionsDoNotContend) {
  auto cluster = star_cluster(2, 500, 10);
  TaskGraphBuilder b(2);
  b.add_transfer({.src = 0, .dst = 1, .bytes = 1'000'000});
  b.add_transfer({.src = 1, .dst = 0, .bytes = 1'000'000});
  TaskGraph g = std::move(b).build();
  EXPECT_EQ(Engine(cluster).run(g).step_time, kRouteAlpha + 100'000);
}

TEST(EngineLinks, MaxMinGivesLeftoverBandwidthToLessConstrainedFlows) {
  // Three flows into gpu3 share switch->gpu3 (10/3 GB/s each). d = gpu0->gpu1 shares gpu0->switch
  // with a, which is held to 10/3 elsewhere, so d gets the rest: 20/3 GB/s, not an equal 5.
  auto cluster = star_cluster(4, 0, 10);
  TaskGraphBuilder b(4, 3);
  const TaskId a = b.add_transfer({.src = 0, .dst = 3, .bytes = 200'000, .stream = 1});
  const TaskId c = b.add_transfer({.src = 1, .dst = 3, .bytes = 200'000, .stream = 1});
  const TaskId e = b.add_transfer({.src = 2, .dst = 3, .bytes = 200'000, .stream = 1});
  const TaskId d = b.add_transfer({.src = 0, .dst = 1, .bytes = 200'000, .stream = 2});
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster, {.record_timeline = true}).run(g);
  EXPECT_EQ(r.timeline[static_cast<std::size_t>(d)].end, 30'000);  // 200'000 B at 20/3 GB/s
  for (TaskId t : {a, c, e}) EXPECT_EQ(r.timeline[static_cast<std::size_t>(t)].end, 60'000);  // at 10/3 GB/s
}

TEST(EngineLinks, MultiHopFlowMovesAtItsSlowestLink) {
  auto cluster = hardware::make_cluster_preset("dgx1-v100");
  TaskGraphBuilder b(8);
  b.add_transfer({.src = 0, .dst = 5, .bytes = 12'000'000});  // PCIe 12 GB/s + QPI, alpha 5 us
  TaskGraph g = std::move(b).build();
  StepResult r = Engine(cluster).run(g);
  EXPECT_EQ(r.step_time, 5'000 + 1'000'000);
  // Every link of the route was busy for the data phase.
  for (hardware::DirLinkId l : cluster.route(0, 5)) EXPECT_EQ(r.links[static_cast<std::size_t>(l)].busy, 1'000'000);
}

TEST(EngineLinks, TransfersOnOneStreamRunOneAfterAnother) {
  auto cluster = star_cluster(3, 500, 10);
  TaskGraphBuilder b(3);
  b.add_transfer({.src = 0, .dst = 1, .bytes = 100'000});
  b.add_transfer({.src = 0, .dst = 2, .bytes = 100'000});  // same stream of gpu0: FIFO
  TaskGraph g = std::move(b).build();
  EXPECT_EQ(Engine(cluster).run(g).step_time, 2 * (kRouteAlpha + 10'000));
}

}  // namespace
}  // namespace parasim::simulator
