#include <cctype>

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/hardware/cluster_presets.hpp"

namespace parasim::hardware {
namespace {

std::vector<std::string> route_names(const Cluster& c, DeviceId a, DeviceId b) {
  std::vector<std::string> names;
  for (DirLinkId l : c.route(a, b)) names.push_back(c.directed_link_name(l));
  return names;
}

TEST(ClusterRouting, Dgx1NeighboursAreOneNvlinkHop) {
  Cluster c = make_cluster_preset("dgx1-v100");
  const int pairs[][2] = {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {1, 2}, {1, 3}, {1, 5}, {2, 3},
                          {2, 6}, {3, 7}, {4, 5}, {4, 6}, {4, 7}, {5, 6}, {5, 7}, {6, 7}};
  for (const auto& p : pairs)
    for (bool reverse : {false, true}) {
      const DeviceId a = reverse ? p[1] : p[0], b = reverse ? p[0] : p[1];
      const auto r = c.route(a, b);
      ASSERT_EQ(r.size(), 1u) << a << "->" << b;
      EXPECT_EQ(c.link(Cluster::link_of(r[0])).kind, LinkKind::NVLink);
      EXPECT_EQ(c.dir_from(r[0]), a);
      EXPECT_EQ(c.dir_to(r[0]), b);
    }
  EXPECT_EQ(route_names(c, 0, 1), std::vector<std::string>{"n0.gpu0->n0.gpu1 (nvlink)"});
}

TEST(ClusterRouting, Dgx1NonNeighboursGoOverPcieAndQpiNotThroughAGpu) {
  Cluster c = make_cluster_preset("dgx1-v100");
  EXPECT_EQ(route_names(c, 0, 5), (std::vector<std::string>{
                                      "n0.gpu0->n0.pcie0 (pcie)",
                                      "n0.pcie0->n0.cpu0 (pcie)",
                                      "n0.cpu0->n0.cpu1 (qpi)",
                                      "n0.cpu1->n0.pcie2 (pcie)",
                                      "n0.pcie2->n0.gpu5 (pcie)",
                                  }));
  const auto s = c.route_summary(0, 5);
  EXPECT_EQ(s.latency, 4 * kPcieHopAlphaNs + kQpiAlphaNs);
  EXPECT_EQ(s.bottleneck.value, 12.0);
  // Every SYS pair crosses QPI.
  for (DeviceId a = 0; a < 8; ++a)
    for (DeviceId b = 0; b < 8; ++b) {
      if (a != b && c.route(a, b).size() != 1) {
        EXPECT_EQ(c.route_summary(a, b).hops, 5) << a << "->" << b;
      }
    }
}

TEST(ClusterRouting, Dgx1AcrossNodesUsesTheSharedNicOfThePcieSwitch) {
  Cluster c = make_cluster_preset("dgx1-v100", 2);
  EXPECT_EQ(route_names(c, 1, 9), (std::vector<std::string>{
                                      "n0.gpu1->n0.pcie0 (pcie)",
                                      "n0.pcie0->n0.nic0 (pcie)",
                                      "n0.nic0->ib-switch (ib)",
                                      "ib-switch->n1.nic0 (ib)",
                                      "n1.nic0->n1.pcie0 (pcie)",
                                      "n1.pcie0->n1.gpu1 (pcie)",
                                  }));
  // Inside a node, multi-node wiring does not change routes.
  EXPECT_EQ(c.route_summary(0, 5).hops, 5);
  EXPECT_EQ(c.devices_of_node(1).size(), 8u);
  EXPECT_EQ(c.devices_of_node(1)[0], 8);
}

TEST(ClusterRouting, RingOfDirectLinksForwardsThroughDevicesOnlyAsALastResort) {
  ClusterSpec s;
  s.name = "ring4";
  for (int i = 0; i < 4; ++i) s.devices.push_back({"gpu" + std::to_string(i), "V100-SXM2-32GB", 0, 0});
  for (int i = 0; i < 4; ++i) s.links.push_back({"", LinkKind::NVLink, i, (i + 1) % 4, 100, GBps{10}});
  Cluster c(s);
  EXPECT_EQ(c.route(0, 1).size(), 1u);
  EXPECT_EQ(c.route(0, 2).size(), 2u);  // through gpu1 (lowest link id first)
  EXPECT_EQ(c.dir_to(c.route(0, 2)[0]), 1);
  EXPECT_EQ(c.route(3, 1).size(), 2u);
  EXPECT_TRUE(c.route(2, 2).empty());
  EXPECT_EQ(c.link(0).name, "gpu0-gpu1");  // generated link names
}

TEST(ClusterRouting, TiesPreferTheWidestBottleneckThenTheLowestLinkId) {
  ClusterSpec s;
  s.name = "two-paths";
  s.devices = {{"a", "A100", 0, 0}, {"b", "A100", 0, 0}};
  s.endpoints = {{"slow", EndpointKind::PcieSwitch, 0}, {"fast", EndpointKind::NvSwitch, 0}};
  s.links = {{"a-slow", LinkKind::PCIe, 0, 2, 0, GBps{12}}, {"slow-b", LinkKind::PCIe, 2, 1, 0, GBps{12}},
             {"a-fast", LinkKind::NVSwitch, 0, 3, 0, GBps{300}}, {"fast-b", LinkKind::NVSwitch, 3, 1, 0, GBps{300}}};
  Cluster c(s);
  EXPECT_EQ(route_names(c, 0, 1), (std::vector<std::string>{"a->fast (nvswitch)", "fast->b (nvswitch)"}));
  EXPECT_EQ(route_names(c, 1, 0), (std::vector<std::string>{"b->fast (nvswitch)", "fast->a (nvswitch)"}));
}

TEST(ClusterRouting, LargeClustersRouteOnDemand) {
  Cluster c = make_cluster_preset("dgx-h100", 600);  // 4800 GPUs: trees are not all kept
  EXPECT_EQ(c.route_summary(0, 4799).hops, 4);
  EXPECT_EQ(c.route_summary(4799, 4798).hops, 2);
}

}  // namespace
}  // namespace parasim::hardware

namespace parasim::hardware {
namespace {

// Identical nodes: routes from node k and to nodes >= 2 come from node 0's two-node trees, swapped.
// A copy of the same cluster with one extra (unlinked) endpoint in its last node is not symmetric,
// so it searches every route over the whole cluster: both must give the same links, pair by pair.
void expect_same_routes_as_full_search(const std::string& preset, int nodes) {
  const Cluster fast = make_cluster_preset(preset, nodes);
  ClusterSpec spec = make_cluster_preset_spec(preset, nodes);
  spec.endpoints.push_back({"odd-one-out", EndpointKind::Cpu, nodes - 1});
  const Cluster slow(spec);
  ASSERT_TRUE(fast.identical_nodes());
  ASSERT_FALSE(slow.identical_nodes());
  for (DeviceId a = 0; a < fast.num_devices(); ++a)
    for (DeviceId b = 0; b < fast.num_devices(); ++b) ASSERT_EQ(fast.route(a, b), slow.route(a, b)) << a << "->" << b;
}

TEST(ClusterRouting, IdenticalNodesRouteLikeAFullSearch) {
  expect_same_routes_as_full_search("dgx-h100", 4);
  expect_same_routes_as_full_search("dgx1-v100", 3);  // two GPUs per NIC, PCIe and QPI inside
  expect_same_routes_as_full_search("pcie-hetero", 3);
}

// The name of a directed link with node prefixes "nK." relabelled by `to`.
std::string relabelled(const Cluster& c, DirLinkId l, const std::vector<int>& to) {
  std::string name = c.directed_link_name(l), out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const bool starts = name[i] == 'n' && (i == 0 || name[i - 1] == '>') && i + 1 < name.size() &&
                        std::isdigit(static_cast<unsigned char>(name[i + 1]));
    if (!starts) {
      out += name[i];
      continue;
    }
    std::size_t j = i + 1;
    while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
    out += "n" + std::to_string(to[static_cast<std::size_t>(std::stoi(name.substr(i + 1, j - i - 1)))]);
    i = j - 1;
  }
  return out;
}

// Identical nodes on one switch: any relabelling of the nodes maps the cluster onto itself, and a
// route that follows the node swap maps onto the route between the images (what the collective
// planner relies on to reuse a pattern's work for its images).
// Checks every pair whose route follows the node swap against its image; returns how many did.
int expect_routes_follow(const Cluster& c, const std::vector<int>& to) {
  const int per_node = c.max_devices_per_node();
  const auto image = [&](DeviceId d) {
    return to[static_cast<std::size_t>(c.node_of(d))] * per_node + c.local_index(d);
  };
  int follows = 0;
  for (DeviceId a = 0; a < c.num_devices(); ++a)
    for (DeviceId b = 0; b < c.num_devices(); ++b) {
      if (!c.route_follows_node_symmetry(a, b)) continue;
      ++follows;
      const auto route = c.route(a, b), mapped = c.route(image(a), image(b));
      EXPECT_EQ(route.size(), mapped.size()) << a << "->" << b;
      for (std::size_t i = 0; i < std::min(route.size(), mapped.size()); ++i)
        EXPECT_EQ(relabelled(c, route[i], to), c.directed_link_name(mapped[i])) << a << "->" << b;
    }
  return follows;
}

TEST(ClusterRouting, RoutesOnIdenticalNodesFollowARelabellingOfTheNodes) {
  const std::vector<int> to{2, 0, 3, 1};  // node 0 -> 2, 1 -> 0, 2 -> 3, 3 -> 1
  const Cluster c = make_cluster_preset("dgx-h100", 4);
  EXPECT_EQ(expect_routes_follow(c, to), 32 * 31);  // every pair of distinct GPUs: no ties on an H100 node
  EXPECT_EQ(expect_routes_follow(make_cluster_preset("dgx1-v100", 4), to), 32 * 31);
  EXPECT_EQ(expect_routes_follow(make_cluster_preset("pcie-hetero", 4), to), 12 * 11);
  EXPECT_FALSE(c.route_follows_node_symmetry(5, 5));
  EXPECT_FALSE(c.route_follows_node_symmetry(0, 32));  // no such device
  // A built fabric is not symmetric under every relabelling; nodes that differ have no symmetry.
  EXPECT_FALSE(make_cluster_preset("dgx-h100:fabric=fat-tree,radix=8", 4).route_follows_node_symmetry(0, 9));
  ClusterSpec spec = make_cluster_preset_spec("dgx-h100", 3);
  spec.links.back().bandwidth = GBps{25.0};
  EXPECT_FALSE(Cluster(spec).route_follows_node_symmetry(0, 9));
}

// Specs built in code skip the JSON loader's checks: the constructor's own messages.
std::string construction_error(const ClusterSpec& spec) {
  try {
    Cluster c(spec);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ClusterRouting, DuplicateNamesAndBadLinksInACodedSpecAreNamed) {
  ClusterSpec spec = make_cluster_preset_spec("dgx-h100", 2);
  spec.links[5].name = spec.links[3].name;
  EXPECT_EQ(construction_error(spec), "cluster \"dgx-h100\": duplicate link name \"" + spec.links[3].name + "\"");
  spec = make_cluster_preset_spec("dgx-h100", 2);
  spec.endpoints[0].name = spec.devices[7].name;
  EXPECT_EQ(construction_error(spec), "cluster \"dgx-h100\": duplicate endpoint name \"n0.gpu7\"");
  spec = make_cluster_preset_spec("dgx-h100", 2);
  spec.links[2].alpha = -1;
  EXPECT_EQ(construction_error(spec),
            "cluster \"dgx-h100\": link \"" + spec.links[2].name + "\": latency must be >= 0 ns, found -1");
  spec.links[2].alpha = 0;
  spec.links[2].name.clear();
  spec.links[2].b = spec.links[2].a;
  EXPECT_EQ(construction_error(spec), "cluster \"dgx-h100\": link 2: connects \"n0.gpu2\" to itself");
}

TEST(ClusterRouting, NodesThatDifferAreNotIdentical) {
  EXPECT_FALSE(make_cluster_preset("dgx-h100", 1).identical_nodes());  // one node: nothing to swap
  ClusterSpec spec = make_cluster_preset_spec("dgx-h100", 3);
  spec.links.back().bandwidth = GBps{25.0};  // node 2's last NIC is slower
  EXPECT_FALSE(Cluster(spec).identical_nodes());
  EXPECT_EQ(Cluster(spec).local_index(19), 3);
}

}  // namespace
}  // namespace parasim::hardware
