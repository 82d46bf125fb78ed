// Fat-tree and rail-optimized fabrics: exact switch and link counts, routes and hop counts, the
// preset and cluster-file options and their errors.
#include <gtest/gtest.h>

#include <set>

#include "parasim/common/error.hpp"
#include "parasim/hardware/cluster_json.hpp"
#include "parasim/hardware/cluster_presets.hpp"

namespace parasim::hardware {
namespace {

std::vector<std::string> route_names(const Cluster& c, DeviceId a, DeviceId b) {
  std::vector<std::string> names;
  for (DirLinkId l : c.route(a, b)) names.push_back(c.directed_link_name(l));
  return names;
}

std::string input_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ClusterFabric, FatTreeOfFourNodesWithRadix8Leaves) {
  // 32 NICs, 4 per leaf: 8 leaves, each with one uplink to each of 4 spines.
  const Cluster c = make_cluster_preset("dgx-h100:fabric=fat-tree,radix=8", 4);
  const FabricLayout* f = c.fabric();
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->tiers, 2);
  EXPECT_EQ(f->leaves, 8);
  EXPECT_EQ(f->middle, 4);
  EXPECT_EQ(f->cores, 0);
  EXPECT_EQ(f->links(), 64);                   // 32 NIC-leaf + 8 x 4 leaf-spine
  EXPECT_EQ(c.num_links(), 4 * (8 + 8) + 64);  // per node 8 NVSwitch + 8 PCIe NIC links
  EXPECT_EQ(c.num_endpoints(), 32 + 4 + 32 + 12);
  EXPECT_TRUE(c.identical_nodes());
  // A node's 8 NICs fill leaves 0 and 1; node 1's fill 2 and 3.
  EXPECT_EQ(f->leaf_of(0, 3), 0);
  EXPECT_EQ(f->leaf_of(0, 4), 1);
  EXPECT_EQ(f->leaf_of(1, 0), 2);
  // Across leaves: up to a spine chosen by the destination's port (D-mod-k) and down.
  EXPECT_EQ(route_names(c, 0, 8), (std::vector<std::string>{
                                      "n0.gpu0->n0.nic0 (pcie)",
                                      "n0.nic0->leaf0 (ib)",
                                      "leaf0->spine0 (ib)",
                                      "spine0->leaf2 (ib)",
                                      "leaf2->n1.nic0 (ib)",
                                      "n1.nic0->n1.gpu0 (pcie)",
                                  }));
  EXPECT_EQ(route_names(c, 0, 9)[2], "leaf0->spine1 (ib)");  // n1.nic1 is port 1 of leaf 2
  const RouteSummary s = c.route_summary(0, 9);
  EXPECT_EQ(s.hops, 6);
  EXPECT_EQ(s.latency, 2 * kGpuNicAlphaNs + 2 * kIbHopAlphaNs + 2 * kIbSwitchHopAlphaNs);
  EXPECT_EQ(s.bottleneck.value, 50.0);
  // Inside a node nothing changes: one NVSwitch hop each way.
  EXPECT_EQ(c.route_summary(8, 9).hops, 2);
  // Every route is a connected path from source to destination.
  for (DeviceId a : {0, 5, 13, 31})
    for (DeviceId b = 0; b < c.num_devices(); ++b) {
      EndpointId at = a;
      for (DirLinkId l : c.route(a, b)) {
        ASSERT_EQ(c.dir_from(l), at) << a << "->" << b;
        at = c.dir_to(l);
      }
      EXPECT_EQ(at, b);
    }
}

TEST(ClusterFabric, OversubscriptionDividesTheLeafUplinks) {
  const Cluster c = make_cluster_preset("dgx-h100:fabric=fat-tree,radix=8,oversubscription=2:1", 4);
  EXPECT_EQ(c.fabric()->uplink_bandwidth.value, 25.0);
  EXPECT_EQ(c.fabric()->nic_bandwidth.value, 50.0);
  EXPECT_EQ(c.route_summary(0, 8).bottleneck.value, 25.0);
  EXPECT_EQ(c.num_links(), 128);  // the same switches and links, slower uplinks
}

TEST(ClusterFabric, ThreeTiersWhenTheLeavesOutnumberASpinesPorts) {
  // 8 nodes x 8 NICs on radix 8: 16 leaves > 8 ports, so 4 pods of 4 leaves, 16 aggregation
  // switches, 16 cores.
  const Cluster c = make_cluster_preset("dgx-h100:fabric=fat-tree,radix=8", 8);
  const FabricLayout& f = *c.fabric();
  EXPECT_EQ(f.tiers, 3);
  EXPECT_EQ(f.leaves, 16);
  EXPECT_EQ(f.pods, 4);
  EXPECT_EQ(f.middle, 16);
  EXPECT_EQ(f.cores, 16);
  EXPECT_EQ(f.links(), 64 + 16 * 4 + 16 * 4);
  EXPECT_EQ(c.route_summary(0, 8).hops, 6);   // node 1: same pod
  EXPECT_EQ(c.route_summary(0, 16).hops, 8);  // node 2: another pod, through a core
  EXPECT_EQ(route_names(c, 0, 16)[3], "agg0->core0 (ib)");
  // 17 nodes need 34 leaves, more than radix 8 holds in three tiers (8 pods of 4).
  EXPECT_NE(input_error([] {
              make_cluster_preset("dgx-h100:fabric=fat-tree,radix=8", 17);
            }).find("more than a 3-tier fat-tree of radix 8 holds (32)"),
            std::string::npos);
}

TEST(ClusterFabric, RailOptimizedPutsNicIOfEveryNodeOnRailLeafI) {
  // Radix 8: scalable units of 4 nodes, 8 rail leaves per SU, 4 spines.
  const Cluster c = make_cluster_preset("dgx-h100:fabric=rail-optimized,radix=8", 4);
  const FabricLayout& f = *c.fabric();
  EXPECT_EQ(f.tiers, 2);
  EXPECT_EQ(f.leaves, 8);
  EXPECT_EQ(f.middle, 4);
  EXPECT_EQ(c.num_links(), 128);
  for (int n = 0; n < 4; ++n)
    for (int i = 0; i < 8; ++i) EXPECT_EQ(f.leaf_of(n, i), i);
  // Same rail: one leaf, no spine.
  EXPECT_EQ(route_names(c, 0, 24), (std::vector<std::string>{
                                       "n0.gpu0->n0.nic0 (pcie)",
                                       "n0.nic0->leaf0 (ib)",
                                       "leaf0->n3.nic0 (ib)",
                                       "n3.nic0->n3.gpu0 (pcie)",
                                   }));
  // Another rail: through a spine (the GPU never forwards to reach its peer's rail).
  EXPECT_EQ(c.route_summary(0, 25).hops, 6);
  // Two SUs (16 leaves, 3 tiers): same rail in one SU stays on its leaf; across SUs (pods 0 and
  // 2) it climbs to a core.
  const Cluster two = make_cluster_preset("dgx-h100:fabric=rail-optimized,radix=8", 8);
  EXPECT_EQ(two.fabric()->leaves, 16);
  EXPECT_EQ(two.fabric()->tiers, 3);
  EXPECT_EQ(two.fabric()->leaf_of(4, 0), 8);
  EXPECT_EQ(two.route_summary(0, 8).hops, 4);
  EXPECT_EQ(two.route_summary(0, 32).hops, 8);
}

TEST(ClusterFabric, DgxSuperPodScaleUsesQm9700AndThreeTiers) {
  // 2,048 DGX H100 (16,384 GPUs): SUs of 32 nodes, 64 SUs x 8 rails = 512 leaves, 16 pods.
  const ClusterSpec spec = make_cluster_preset_spec("dgx-h100:fabric=rail-optimized", 2048);
  const FabricLayout& f = *spec.fabric;
  EXPECT_EQ(f.switch_product, "NVIDIA Quantum-2 QM9700");
  EXPECT_EQ(f.radix, 64);
  EXPECT_EQ(f.down, 32);
  EXPECT_EQ(f.leaves, 512);
  EXPECT_EQ(f.tiers, 3);
  EXPECT_EQ(f.pods, 16);
  EXPECT_EQ(f.middle, 512);
  EXPECT_EQ(f.cores, 1024);
  // HDR NICs get the 40-port QM8700.
  EXPECT_EQ(make_cluster_preset_spec("dgx-a100:fabric=fat-tree", 4).fabric->radix, 40);
}

TEST(ClusterFabric, RoutesAreTheSameWhicheverOrderTheyAreAskedIn) {
  const Cluster a = make_cluster_preset("dgx1-v100:fabric=fat-tree,radix=8", 6);
  const Cluster b = make_cluster_preset("dgx1-v100:fabric=fat-tree,radix=8", 6);
  for (DeviceId s = 47; s >= 0; s -= 5)
    for (DeviceId d = 0; d < 48; ++d) (void)a.route(s, d);
  for (DeviceId s = 0; s < 48; s += 5)
    for (DeviceId d = 47; d >= 0; --d) EXPECT_EQ(a.route(s, d), b.route(s, d));
  // DGX-1: GPUs 0 and 1 share NIC 0 behind their PCIe switch.
  EXPECT_EQ(route_names(a, 1, 9).front(), "n0.gpu1->n0.pcie0 (pcie)");
  EXPECT_EQ(route_names(a, 1, 9)[1], "n0.pcie0->n0.nic0 (pcie)");
}

TEST(ClusterFabric, PresetOptionErrorsNameTheField) {
  EXPECT_NE(input_error([] { make_cluster_preset("dgx-h100:fabric=mesh", 2); }).find("fabric: expected single-switch"),
            std::string::npos);
  EXPECT_NE(input_error([] {
              make_cluster_preset("dgx-h100:fabric=fat-tree,oversubscription=1:2", 2);
            }).find("oversubscription: expected an oversubscription ratio"),
            std::string::npos);
  EXPECT_NE(input_error([] { make_cluster_preset("dgx-h100:fabric=fat-tree,radix=7", 2); }).find("radix: expected"),
            std::string::npos);
  EXPECT_NE(input_error([] {
              make_cluster_preset("dgx-h100:fabric=fat-tree,switch=x", 2);
            }).find("switch: unknown switch \"x\""),
            std::string::npos);
  EXPECT_NE(input_error([] {
              make_cluster_preset("dgx-h100:oversubscription=2:1", 2);
            }).find("add fabric=fat-tree or fabric=rail-optimized"),
            std::string::npos);
  EXPECT_EQ(parse_oversubscription("3:2", "x"), 1.5);
  EXPECT_EQ(oversubscription_text(2.0), "2:1");
}

TEST(ClusterFabric, ClusterFileRoundTripKeepsTheFabricAsOptions) {
  const Cluster c = make_cluster_preset("dgx-h100:fabric=rail-optimized,radix=8,oversubscription=2:1", 4);
  const nlohmann::json j = cluster_to_json(c);
  ASSERT_TRUE(j.contains("fabric"));
  EXPECT_EQ(j["fabric"]["kind"], "rail-optimized");
  EXPECT_EQ(j["fabric"]["oversubscription"], "2:1");
  EXPECT_EQ(j["links"].size(), 64u);  // node links only; the fabric's 64 are generated
  const Cluster d = cluster_from_json(j, "c.json");
  EXPECT_EQ(d.num_links(), c.num_links());
  EXPECT_EQ(d.num_endpoints(), c.num_endpoints());
  for (DeviceId a = 0; a < 32; a += 3)
    for (DeviceId b = 0; b < 32; ++b) EXPECT_EQ(d.route(a, b), c.route(a, b));
  EXPECT_EQ(cluster_to_json(d), j);
}

TEST(ClusterFabric, ClusterFileErrorsNameTheField) {
  const nlohmann::json base = cluster_to_json(make_cluster_preset("dgx-h100:fabric=fat-tree,radix=8", 2));
  const auto with = [&](const std::string& key, const nlohmann::json& v) {
    nlohmann::json j = base;
    j["fabric"][key] = v;
    return input_error([&] { cluster_from_json(j, "c.json"); });
  };
  EXPECT_NE(with("kind", "mesh").find("c.json: $.fabric.kind: expected \"fat-tree\" or \"rail-optimized\""),
            std::string::npos);
  EXPECT_NE(with("oversubscription", "0.5:1").find("c.json: $.fabric.oversubscription: expected"), std::string::npos);
  EXPECT_NE(with("radix", 9).find("c.json: $.fabric.radix: expected an even number"), std::string::npos);
  EXPECT_NE(with("switch", "qm1").find("c.json: $.fabric.switch: expected a known switch"), std::string::npos);
  EXPECT_NE(with("spines", 3).find("c.json: $.fabric.spines: unknown field"), std::string::npos);
}

}  // namespace
}  // namespace parasim::hardware
