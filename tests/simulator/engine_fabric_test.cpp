// The engine over fat-tree and rail-optimized fabrics: exact times of transfers across leaves
// under oversubscription, and rail-local collectives.
#include <gtest/gtest.h>

#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/simulator/engine.hpp"

namespace parasim::simulator {
namespace {

using hardware::Cluster;
using hardware::make_cluster_preset;

// n0.gpu0 -> n1.gpu0 on dgx-h100 with radix-8 leaves: GPU-NIC (PCIe 5, 500 ns, 50 GB/s), NIC-leaf
// (1,500 ns, 50 GB/s), leaf-spine and spine-leaf (500 ns each, 50 GB/s / oversubscription),
// leaf-NIC, NIC-GPU: alpha 5,000 ns.
TimeNs cross_leaf_transfer(const std::string& preset) {
  const Cluster c = make_cluster_preset(preset, 4);
  TaskGraphBuilder b(32);
  b.add_transfer({.src = 0, .dst = 8, .bytes = 1'000'000});
  return Engine(c).run(std::move(b).build()).step_time;
}

TEST(EngineFabric, CrossLeafTransferAtOneToOneAndTwoToOne) {
  EXPECT_EQ(cross_leaf_transfer("dgx-h100:fabric=fat-tree,radix=8"), 5'000 + 20'000);  // 1 MB at 50 GB/s
  EXPECT_EQ(cross_leaf_transfer("dgx-h100:fabric=fat-tree,radix=8,oversubscription=2:1"),
            5'000 + 40'000);  // 25 GB/s uplinks
  // The non-blocking switch: 4,000 ns of alpha (one switch), 50 GB/s.
  EXPECT_EQ(cross_leaf_transfer("dgx-h100"), 4'000 + 20'000);
}

TEST(EngineFabric, TwoFlowsToOneLeafTakeDistinctSpines) {
  // n0.gpu0 -> n1.gpu0 and n0.gpu1 -> n1.gpu1: destinations on ports 0 and 1 of leaf 2, so
  // spines 0 and 1 (D-mod-k): no shared link, both at full speed even at 2:1.
  const Cluster c = make_cluster_preset("dgx-h100:fabric=fat-tree,radix=8,oversubscription=2:1", 4);
  TaskGraphBuilder b(32);
  b.add_transfer({.src = 0, .dst = 8, .bytes = 1'000'000});
  b.add_transfer({.src = 1, .dst = 9, .bytes = 1'000'000});
  EXPECT_EQ(Engine(c).run(std::move(b).build()).step_time, 5'000 + 40'000);
}

TEST(EngineFabric, RailAllReduceBetweenSameRailNicsStaysWithinOneLeaf) {
  const Cluster c = make_cluster_preset("dgx-h100:fabric=rail-optimized,radix=8", 4);
  TaskGraphBuilder b(32);
  // GPU 0 of every node: NIC 0, rail leaf 0.
  const GroupId rail0 = b.add_group(std::vector<DeviceId>{0, 8, 16, 24});
  b.add_collective({.op = CollectiveOp::AllReduce, .group = rail0, .bytes = 8'000'000});
  const TaskGraph g = std::move(b).build();
  const StepResult r = Engine(c, {.record_timeline = true}).run(g);
  const hardware::FabricLayout& f = *c.fabric();
  std::int64_t fabric_bytes = 0;
  for (hardware::DirLinkId l = 0; l < c.num_directed_links(); ++l) {
    const auto bytes = r.links[static_cast<std::size_t>(l)].bytes;
    if (bytes == 0 || Cluster::link_of(l) < f.first_link) continue;
    fabric_bytes += bytes;
    // Only links between a NIC and leaf 0.
    EXPECT_TRUE(c.dir_from(l) == f.first_switch || c.dir_to(l) == f.first_switch) << c.directed_link_name(l);
  }
  EXPECT_GT(fabric_bytes, 0);
  // Same hops and speeds as under one non-blocking switch: the same time to the nanosecond.
  const Cluster flat = make_cluster_preset("dgx-h100", 4);
  EXPECT_EQ(r.step_time, Engine(flat).run(g).step_time);
}

}  // namespace
}  // namespace parasim::simulator
