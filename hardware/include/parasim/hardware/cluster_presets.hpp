// Named clusters that exist in the real world, single node or K nodes joined by InfiniBand.
//
//   dgx1-v100    8x V100-SXM2-32GB, NVLink2 hybrid cube-mesh + PCIe 3.0 switches + 2 CPUs on QPI;
//                multi-node: 4 EDR NICs per node, one per PCIe switch (shared by two GPUs)
//   dgx-a100     8x A100-SXM4-80GB, NVSwitch gen2 (300 GB/s per GPU per direction); 8 HDR NICs
//   dgx-h100     8x H100-SXM5-80GB, NVSwitch gen3 (450 GB/s); 8 NDR NICs
//   hgx-h200     8x H200-SXM-141GB, NVSwitch gen3 (450 GB/s); 8 NDR NICs
//   pcie-hetero  2x TITAN X (Pascal) + 1x GTX 1080 on PCIe 3.0 x16 through the host, no P2P;
//                multi-node: one EDR NIC per GPU
//
// Options ride in the name after a colon, separated by commas: the InfiniBand generation
// ("dgx1-v100:ib=hdr"; edr, hdr, ndr) and the inter-node fabric (fabric.hpp):
// "dgx-h100:fabric=rail-optimized", "dgx-h100:fabric=fat-tree,oversubscription=2:1,radix=64",
// switch=qm9700|qm8700|sb7800. Without fabric=, one non-blocking switch joins the nodes.
// Every edge, bandwidth and latency, and where it comes from, is in cluster_presets.cpp and
// docs/simulator.md.
//
// Example:
//   Cluster c = make_cluster_preset("dgx-a100:ib=ndr", /*nodes=*/4);   // 32 GPUs
//   for (const auto& p : cluster_presets()) std::cout << p.name << " " << p.devices_per_node << "\n";
#pragma once

#include <string>
#include <vector>

#include "parasim/hardware/cluster.hpp"

namespace parasim::hardware {

enum class IbGeneration { EDR, HDR, NDR };

/// Per-NIC, per-direction bandwidth: EDR 100 Gb/s = 12.5 GB/s, HDR 25 GB/s, NDR 50 GB/s.
GBps ib_bandwidth(IbGeneration g);
std::string to_string(IbGeneration g);  // "EDR", "HDR", "NDR"

struct ClusterPresetInfo {
  std::string name;
  std::string device_kind;        // canonical kind of the (first) device
  int devices_per_node = 0;
  std::string intra_node_fabric;
  IbGeneration default_ib = IbGeneration::HDR;
  std::string description;
  /// Whether the name option nics=N applies: an 8-GPU node on NVSwitch, one NIC per GPU by default.
  bool takes_nics_option() const {
    return devices_per_node == 8 && intra_node_fabric.find("NVSwitch") != std::string::npos;
  }
};

const std::vector<ClusterPresetInfo>& cluster_presets();
std::vector<std::string> cluster_preset_names();

/// Largest `nodes` a preset accepts (8 GPUs per node stays within kMaxClusterDevices).
inline constexpr int kMaxPresetNodes = 131'072;

/// Builds a preset, `name` optionally carrying options (":ib=ndr,fabric=fat-tree", see above).
/// InputError for an unknown name (listing the known ones), a bad option, or nodes outside
/// [1, kMaxPresetNodes].
Cluster make_cluster_preset(const std::string& name, int nodes = 1);
ClusterSpec make_cluster_preset_spec(const std::string& name, int nodes = 1);

/// The individual presets as specs (no validation yet; Cluster validates).
ClusterSpec dgx1_v100_spec(int nodes, IbGeneration ib = IbGeneration::EDR, const FabricOptions& fabric = {});
ClusterSpec dgx_a100_spec(int nodes, IbGeneration ib = IbGeneration::HDR, const FabricOptions& fabric = {});
ClusterSpec dgx_h100_spec(int nodes, IbGeneration ib = IbGeneration::NDR, const FabricOptions& fabric = {});
ClusterSpec hgx_h200_spec(int nodes, IbGeneration ib = IbGeneration::NDR, const FabricOptions& fabric = {});
ClusterSpec dgx_b200_spec(int nodes, IbGeneration ib = IbGeneration::NDR, const FabricOptions& fabric = {});
ClusterSpec pcie_hetero_spec(int nodes, IbGeneration ib = IbGeneration::EDR, const FabricOptions& fabric = {});

/// Link latencies the presets use (per hop), with their reasoning in cluster_presets.cpp.
inline constexpr TimeNs kNvlinkAlphaNs = 1'000;
inline constexpr TimeNs kNvswitchHopAlphaNs = 500;
inline constexpr TimeNs kPcieHopAlphaNs = 1'000;
inline constexpr TimeNs kQpiAlphaNs = 1'000;
inline constexpr TimeNs kGpuNicAlphaNs = 500;
inline constexpr TimeNs kIbHopAlphaNs = 1'500;

}  // namespace parasim::hardware
