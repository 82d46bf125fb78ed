#include "parasim/hardware/cluster_presets.hpp"

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/hardware/device_spec.hpp"
#include "support/input_error.hpp"

namespace parasim::hardware {
namespace {

using test_support::input_error;

TEST(ClusterPresets, AllPresetsBuildSingleAndMultiNode) {
  for (const auto& name : cluster_preset_names()) {
    for (int nodes : {1, 3}) {
      Cluster c = make_cluster_preset(name, nodes);
      const auto& info = *std::find_if(cluster_presets().begin(), cluster_presets().end(),
                                       [&](const ClusterPresetInfo& p) { return p.name == name; });
      EXPECT_EQ(c.num_devices(), info.devices_per_node * nodes) << name;
      EXPECT_EQ(c.num_nodes(), nodes) << name;
      EXPECT_EQ(c.max_devices_per_node(), info.devices_per_node) << name;
      EXPECT_EQ(c.device(0).kind, info.device_kind) << name;
      EXPECT_GT(c.device(0).memory, 0) << name;
      for (DeviceId d = 0; d < c.num_devices(); ++d) EXPECT_EQ(c.node_of(d), d / info.devices_per_node);
    }
  }
}

TEST(ClusterPresets, Dgx1HasTheHybridCubeMesh) {
  Cluster c = make_cluster_preset("dgx1-v100");
  // Every V100 has six NVLink2 lanes of 25 GB/s; bonded pairs are one 50 GB/s link.
  std::vector<double> lanes(8, 0.0);
  int nvlink_pairs = 0;
  for (LinkId l = 0; l < c.num_links(); ++l) {
    const auto& link = c.link(l);
    if (link.kind != LinkKind::NVLink) continue;
    ++nvlink_pairs;
    lanes[static_cast<std::size_t>(link.a)] += link.bandwidth.value / 25.0;
    lanes[static_cast<std::size_t>(link.b)] += link.bandwidth.value / 25.0;
  }
  EXPECT_EQ(nvlink_pairs, 16);
  for (double n : lanes) EXPECT_EQ(n, 6.0);
  EXPECT_EQ(c.route_summary(0, 3).bottleneck.value, 50.0);  // NV2
  EXPECT_EQ(c.route_summary(0, 1).bottleneck.value, 25.0);  // NV1
  EXPECT_EQ(c.route_summary(0, 5).hops, 5);                 // SYS: PCIe + QPI
}

TEST(ClusterPresets, FabricsAndMultiNodeBandwidths) {
  // dgx-a100: NVSwitch 300 GB/s inside, HDR 25 GB/s per GPU across nodes.
  Cluster a = make_cluster_preset("dgx-a100", 2);
  EXPECT_EQ(a.route_summary(0, 7).hops, 2);
  EXPECT_EQ(a.route_summary(0, 7).bottleneck.value, 300.0);
  EXPECT_EQ(a.route_summary(0, 7).latency, 2 * kNvswitchHopAlphaNs);
  EXPECT_EQ(a.route_summary(0, 8).hops, 4);
  EXPECT_EQ(a.route_summary(0, 8).bottleneck.value, 25.0);
  EXPECT_EQ(a.route_summary(0, 8).latency, 2 * kGpuNicAlphaNs + 2 * kIbHopAlphaNs);
  Cluster h = make_cluster_preset("dgx-h100", 2);
  EXPECT_EQ(h.route_summary(1, 2).bottleneck.value, 450.0);
  EXPECT_EQ(h.route_summary(1, 9).bottleneck.value, 50.0);
  Cluster h200 = make_cluster_preset("hgx-h200");
  EXPECT_EQ(h200.device(0).kind, "H200-SXM-141GB");
  EXPECT_EQ(h200.route_summary(0, 1).bottleneck.value, 450.0);
  // DGX B200: NVLink5 through NVSwitch at 900 GB/s a direction, ConnectX-7 NDR between nodes.
  Cluster b200 = make_cluster_preset("dgx-b200", 2);
  EXPECT_EQ(b200.device(0).kind, "B200-SXM-180GB");
  EXPECT_EQ(b200.device(0).memory, 179 * GiB);
  EXPECT_EQ(b200.route_summary(0, 1).bottleneck.value, 900.0);
  EXPECT_EQ(b200.route_summary(0, 8).bottleneck.value, 50.0);
  EXPECT_EQ(device_spec("b200").sm_count, 148);
  EXPECT_EQ(device_spec("b200").peak_tflops(DType::BF16), 2250.0);
  EXPECT_EQ(device_spec("b200").peak_tflops(DType::FP8), 4500.0);
  // Features of a generation carry to the next (fused attention from Ampere, NVLS from Hopper).
  EXPECT_TRUE(device_spec("b200").arch_at_least("hopper"));
  EXPECT_TRUE(device_spec("h100").arch_at_least("hopper"));
  EXPECT_FALSE(device_spec("a100").arch_at_least("hopper"));
  EXPECT_TRUE(device_spec("a100").arch_at_least("ampere"));
  EXPECT_FALSE(device_spec("v100").arch_at_least("ampere"));
  DeviceSpec cpu = device_spec("a100");
  cpu.arch = "cpu";
  EXPECT_FALSE(cpu.arch_at_least("pascal"));
  // The fabric can be chosen in the name.
  Cluster v = make_cluster_preset("dgx1-v100:ib=hdr", 2);
  EXPECT_EQ(v.name(), "dgx1-v100:ib=hdr");
  EXPECT_NE(v.spec().inter_node_fabric.find("HDR"), std::string::npos);
  EXPECT_EQ(make_cluster_preset("dgx1-v100", 2).spec().inter_node_fabric.find("EDR, 4 NICs"), 11u);
}

TEST(ClusterPresets, PcieHeteroStagesThroughTheHost) {
  Cluster c = make_cluster_preset("pcie-hetero");
  ASSERT_EQ(c.num_devices(), 3);
  EXPECT_EQ(c.device(0).kind, "TITAN-X-Pascal");
  EXPECT_EQ(c.device(1).kind, "TITAN-X-Pascal");
  EXPECT_EQ(c.device(2).kind, "GTX-1080");
  EXPECT_EQ((c.device_kinds()), (std::vector<std::string>{"TITAN-X-Pascal", "GTX-1080"}));
  const auto r = c.route_summary(0, 2);
  EXPECT_EQ(r.hops, 2);
  EXPECT_EQ(r.bottleneck.value, 12.0);
  EXPECT_EQ(c.endpoint_kind(c.dir_to(c.route(0, 2)[0])), EndpointKind::Cpu);
}

TEST(ClusterPresets, BadNamesAndNodeCountsAreInputErrors) {
  EXPECT_EQ(input_error([] { make_cluster_preset("dgx-9000"); }),
            "unknown cluster preset \"dgx-9000\"; known presets: dgx1-v100, dgx-a100, dgx-h100, hgx-h200, "
            "dgx-b200, pcie-hetero (or a parasim.cluster/1 JSON file)");
  EXPECT_EQ(input_error([] { make_cluster_preset("dgx-h100:ib=xdr"); }),
            "cluster preset \"dgx-h100:ib=xdr\": unknown option \"ib=xdr\"; expected ib=edr, ib=hdr or ib=ndr");
  EXPECT_EQ(input_error([] { make_cluster_preset("dgx-h100", 0); }),
            "cluster preset \"dgx-h100\": nodes must be in [1, 131072], found 0");
  EXPECT_EQ(input_error([] { make_cluster_preset("dgx-h100", 131073); }),
            "cluster preset \"dgx-h100\": nodes must be in [1, 131072], found 131073");
}

// gpu=KIND: the preset's GPUs as another memory variant of their part, links unchanged.
TEST(ClusterPresets, GpuOptionRunsAMemoryVariantOfThePresetsPart) {
  const Cluster forty = make_cluster_preset("dgx-a100:gpu=A100-SXM4-40GB", 2);
  const Cluster eighty = make_cluster_preset("dgx-a100", 2);
  ASSERT_EQ(forty.device_kinds(), std::vector<std::string>{"A100-SXM4-40GB"});
  EXPECT_EQ(forty.device(0).memory, 40 * GiB);
  EXPECT_EQ(forty.spec().description, "2 x 8x A100-SXM4-40GB, NVSwitch gen2, 300 GB/s per GPU");
  EXPECT_EQ(forty.spec().links.size(), eighty.spec().links.size());
  EXPECT_EQ(make_cluster_preset("dgx1-v100:ib=hdr,gpu=v10016gb").device_kinds(),
            std::vector<std::string>{"V100-SXM2-16GB"});
  EXPECT_EQ(make_cluster_preset("dgx-a100:gpu=A100-SXM4-80GB").spec().description,
            "1 x 8x A100-SXM4-80GB, NVSwitch gen2, 300 GB/s per GPU");
  EXPECT_EQ(input_error([] { make_cluster_preset("dgx-a100:gpu=H100-SXM5-80GB"); }),
            "cluster preset \"dgx-a100:gpu=H100-SXM5-80GB\": gpu: expected a variant of the preset's A100-SXM4-80GB "
            "(A100-SXM4-40GB, A100-SXM4-80GB), found \"H100-SXM5-80GB\"");
  using Kinds = std::vector<std::string>;
  EXPECT_EQ(memory_variants("A100-SXM4-80GB"), (Kinds{"A100-SXM4-40GB", "A100-SXM4-80GB"}));
  EXPECT_EQ(memory_variants("V100-SXM2-32GB"), (Kinds{"V100-SXM2-16GB", "V100-SXM2-32GB"}));
  EXPECT_EQ(memory_variants("H100-SXM5-80GB"), (Kinds{"H100-SXM5-80GB"}));
  EXPECT_EQ(memory_variants("TITAN-X-Pascal"), (Kinds{"TITAN-X-Pascal"}));
  EXPECT_EQ(memory_variants("GTX-1080"), (Kinds{"GTX-1080"}));  // the 1080 Ti is another part
  EXPECT_EQ(input_error([] { make_cluster_preset("dgx-a100:gpu=A100-40"); }),
            "cluster preset \"dgx-a100:gpu=A100-40\": gpu: expected a variant of the preset's A100-SXM4-80GB "
            "(A100-SXM4-40GB, A100-SXM4-80GB), found \"A100-40\"");
}

TEST(ClusterPresets, NicsOptionSharesFewerNicsBetweenTheGpus) {
  // Jean Zay's 4 Omni-Path links per node: a NIC per pair of GPUs, at EDR's 12.5 GB/s.
  const Cluster c = make_cluster_preset("dgx-a100:ib=edr,nics=4", 2);
  EXPECT_EQ(c.spec().inter_node_fabric, "InfiniBand EDR, 4 NICs per node (12.5 GB/s each), non-blocking switch");
  // GPU 0 -> its pair's PCIe switch -> NIC 0 -> IB switch -> NIC 4 -> PCIe switch -> GPU 8.
  EXPECT_EQ(c.route_summary(0, 8).hops, 6);
  EXPECT_EQ(c.route_summary(0, 8).bottleneck.value, 12.5);
  EXPECT_EQ(c.route_summary(0, 8).latency, 4 * kPcieHopAlphaNs + 2 * kIbHopAlphaNs);
  // GPUs 0 and 1 leave the node through the same NIC, GPU 2 through the next.
  auto nic_of = [&](DeviceId d) {
    for (DirLinkId l : c.route(d, 8))
      if (c.link(Cluster::link_of(l)).kind == LinkKind::InfiniBand) return c.link(Cluster::link_of(l)).name;
    return std::string();
  };
  EXPECT_EQ(nic_of(0), "n0.ib.nic0");
  EXPECT_EQ(nic_of(1), "n0.ib.nic0");
  EXPECT_EQ(nic_of(2), "n0.ib.nic1");
  // Inside a node nothing changes: NVSwitch.
  EXPECT_EQ(c.route_summary(0, 7).bottleneck.value, 300.0);
  // nics=8 is the preset itself.
  EXPECT_EQ(make_cluster_preset("dgx-h100:nics=8", 2).spec().links.size(),
            make_cluster_preset("dgx-h100", 2).spec().links.size());
  EXPECT_EQ(input_error([] { make_cluster_preset("dgx-a100:nics=3"); }),
            "cluster preset \"dgx-a100:nics=3\": nics: expected the NICs per node, 1, 2, 4 or 8, found \"3\"");
  EXPECT_EQ(input_error([] { make_cluster_preset("dgx1-v100:nics=2"); }),
            "cluster preset \"dgx1-v100:nics=2\": nics applies to the 8-GPU NVSwitch presets (dgx-a100, dgx-h100, "
            "hgx-h200, dgx-b200); dgx1-v100 has its own NICs");
}

TEST(ClusterPresets, NcclChannelsHeldPerPart) {
  // {ring/tree, NVLS}: NCCL's logged channel counts on 8-GPU SXM systems, 2 over PCIe.
  const auto channels = [](const char* kind) {
    const NcclChannels c = nccl_channels(device_spec(kind));
    EXPECT_FALSE(c.source.empty()) << kind;
    return std::pair{c.ring_tree, c.nvls};
  };
  EXPECT_EQ(channels("v100"), std::pair(12, 0));
  EXPECT_EQ(channels("p100"), std::pair(8, 0));
  EXPECT_EQ(channels("a100"), std::pair(24, 0));
  EXPECT_EQ(channels("h100"), std::pair(24, 16));
  EXPECT_EQ(channels("h200"), std::pair(24, 16));
  EXPECT_EQ(channels("b200"), std::pair(24, 16));
  EXPECT_EQ(channels("h100pcie"), std::pair(2, 0));
  EXPECT_EQ(channels("gtx1080"), std::pair(2, 0));
}

}  // namespace
}  // namespace parasim::hardware
