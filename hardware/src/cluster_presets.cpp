// The cluster presets. Sources for every number:
//
// NVLink2 (V100): 25 GB/s per link per direction, 6 links per GPU - NVIDIA Tesla V100 whitepaper
//   and "NVIDIA DGX-1 With Tesla V100 System Architecture" (WP-08437-002), section "DGX-1 NVLink
//   Network Topology": a cube with all 12 edges NVLink-connected (some with two links) plus the
//   diagonals of two opposite faces; "three interwoven rings of single NVLink connections".
//   The exact edge list below is the one NCCL reads on a DGX-1V (topology dump in
//   github.com/NVIDIA/nccl/issues/671, matching `nvidia-smi topo -m`):
//
//          GPU0 GPU1 GPU2 GPU3 GPU4 GPU5 GPU6 GPU7
//     GPU0   X  NV1  NV1  NV2  NV2  SYS  SYS  SYS
//     GPU1  NV1   X  NV2  NV1  SYS  NV2  SYS  SYS
//     GPU2  NV1  NV2   X  NV2  SYS  SYS  NV1  SYS
//     GPU3  NV2  NV1  NV2   X  SYS  SYS  SYS  NV1
//     GPU4  NV2  SYS  SYS  SYS   X  NV1  NV1  NV2
//     GPU5  SYS  NV2  SYS  SYS  NV1   X  NV2  NV1
//     GPU6  SYS  SYS  NV1  SYS  NV1  NV2   X  NV2
//     GPU7  SYS  SYS  SYS  NV1  NV2  NV1  NV2   X
//
//   A bonded pair (NV2) is one link of 50 GB/s: CUDA peer copies stripe over both.
//   PCIe: GPU pairs (0,1) (2,3) (4,5) (6,7) share a PLX PCIe 3.0 switch; switches 0,1 hang off
//   CPU0 and 2,3 off CPU1 (two Xeon E5-2698 v4) joined by QPI. The 4 ConnectX-4 EDR NICs sit
//   one per PCIe switch (whitepaper figure 4), so two GPUs share one NIC.
// PCIe 3.0 x16: 12 GB/s per direction - the rate cudaMemcpy actually reaches (bandwidthTest),
//   not the 15.75 GB/s raw rate. PCIe 4.0 x16 25 GB/s and 5.0 x16 50 GB/s by the same ~80%.
// QPI: two 9.6 GT/s links between the sockets = 2 x 19.2 GB/s per direction (Intel E5-2600 v4
//   datasheet); never the bottleneck behind 12 GB/s PCIe.
// NVSwitch: DGX A100 has 6 NVSwitch gen2 chips, 12 NVLink3 links per GPU = 300 GB/s per
//   direction (DGX A100 System Architecture whitepaper); DGX H100 / HGX H200 have 4 NVSwitch
//   gen3 chips, 18 NVLink4 links per GPU = 450 GB/s per direction (DGX H100 user guide, H200
//   datasheet); DGX B200 has 2 NVSwitch chips (NVLink5), 18 links per GPU = 1.8 TB/s both ways,
//   900 GB/s per direction (DGX B200 datasheet: 14.4 TB/s aggregate for 8 GPUs). The chips are
//   modelled as one non-blocking switch per node: every GPU's
//   traffic is striped across all of them, so per-GPU port bandwidth is what limits.
// InfiniBand: EDR 100 Gb/s = 12.5 GB/s, HDR 200 Gb/s = 25 GB/s, NDR 400 Gb/s = 50 GB/s per NIC
//   per direction. DGX A100: 8 ConnectX-6 HDR compute NICs; DGX H100 and DGX B200: 8 ConnectX-7
//   NDR. The
//   fabric is one non-blocking switch (a full fat tree).
// Latencies (alpha, per hop, chosen to match the small-message end of the measurements - the
//   profiler's link fits replace them when available):
//   NVLink 1 us per message (p2pBandwidthLatencyTest on DGX-1V reports ~1-2 us GPU-to-GPU
//   including the copy launch); NVSwitch 0.5 us per hop (GPU -> switch -> GPU = 1 us);
//   PCIe 1 us per hop and QPI 1 us (cross-socket copies on DGX-1 cost ~5 us); GPU <-> NIC 0.5 us
//   and NIC <-> IB switch 1.5 us, so GPU to GPU across nodes is 4 us (RDMA write latency ~1-2 us
//   plus the NCCL proxy; nccl-tests inter-node small-message steps take 4-10 us).
#include "parasim/hardware/cluster_presets.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <functional>
#include <optional>
#include <string_view>

#include "parasim/common/error.hpp"
#include "parasim/hardware/device_spec.hpp"

namespace parasim::hardware {

namespace {

constexpr GBps kNvlink2{25.0};
constexpr GBps kPcie3{12.0};
constexpr GBps kPcie4{25.0};
constexpr GBps kPcie5{50.0};
constexpr GBps kQpi{38.4};
constexpr GBps kNvswitchA100{300.0};
constexpr GBps kNvswitchH100{450.0};
constexpr GBps kNvswitchB200{900.0};

std::string node_prefix(int node) { return "n" + std::to_string(node) + "."; }

// Builds a spec while handing out endpoint ids (devices first, then the other endpoints).
class SpecBuilder {
 public:
  explicit SpecBuilder(ClusterSpec& spec) : spec_(spec) {}

  EndpointId device(const std::string& name, const std::string& kind, int node) {
    spec_.devices.push_back({name, kind, node, device_spec(kind).memory});
    return static_cast<EndpointId>(spec_.devices.size() - 1);
  }
  // Non-device endpoints get ids after all devices; callers add every device first.
  EndpointId endpoint(const std::string& name, EndpointKind kind, int node) {
    spec_.endpoints.push_back({name, kind, node});
    return static_cast<EndpointId>(spec_.devices.size() + spec_.endpoints.size() - 1);
  }
  void link(const std::string& name, LinkKind kind, EndpointId a, EndpointId b, TimeNs alpha, GBps bw) {
    spec_.links.push_back({name, kind, a, b, alpha, bw});
  }

 private:
  ClusterSpec& spec_;
};

std::string fabric_name(IbGeneration ib, int nics_per_node) {
  char bw[32];
  std::snprintf(bw, sizeof bw, "%g", ib_bandwidth(ib).value);
  return "InfiniBand " + to_string(ib) + ", " + std::to_string(nics_per_node) + " NICs per node (" + bw +
         " GB/s each), non-blocking switch";
}

// Adds the shared IB switch (or the fabric of `fabric`) and, per node, NICs attached to
// `attach(node, nic)` endpoints.
void add_infiniband(SpecBuilder& b, ClusterSpec& spec, int nodes, int nics_per_node, IbGeneration ib,
                    const std::function<EndpointId(int node, int nic)>& attach, LinkKind attach_kind, GBps attach_bw,
                    TimeNs attach_alpha, const FabricOptions& fabric) {
  if (nodes <= 1) {
    spec.inter_node_fabric = "none (single node)";
    return;
  }
  if (fabric.kind != FabricKind::SingleSwitch) {
    // NICs and their attachments first, node by node; build_fabric appends the switches.
    for (int n = 0; n < nodes; ++n)
      for (int i = 0; i < nics_per_node; ++i)
        b.endpoint(node_prefix(n) + "nic" + std::to_string(i), EndpointKind::Nic, n);
    const auto first_nic = static_cast<EndpointId>(spec.devices.size() + spec.endpoints.size()) -
                           static_cast<EndpointId>(nodes * nics_per_node);
    for (int n = 0; n < nodes; ++n)
      for (int i = 0; i < nics_per_node; ++i)
        b.link(node_prefix(n) + "pcie.nic" + std::to_string(i), attach_kind, attach(n, i),
               first_nic + n * nics_per_node + i, attach_alpha, attach_bw);
    build_fabric(spec, fabric, ib_bandwidth(ib), kIbHopAlphaNs, "cluster preset \"" + spec.name + "\": ");
    return;
  }
  spec.inter_node_fabric = fabric_name(ib, nics_per_node);
  std::vector<EndpointId> nic_ids;
  nic_ids.reserve(static_cast<std::size_t>(nodes * nics_per_node));
  for (int n = 0; n < nodes; ++n)
    for (int i = 0; i < nics_per_node; ++i)
      nic_ids.push_back(b.endpoint(node_prefix(n) + "nic" + std::to_string(i), EndpointKind::Nic, n));
  const EndpointId ib_switch = b.endpoint("ib-switch", EndpointKind::IbSwitch, -1);
  for (int n = 0; n < nodes; ++n)
    for (int i = 0; i < nics_per_node; ++i) {
      const EndpointId nic = nic_ids[static_cast<std::size_t>(n * nics_per_node + i)];
      const EndpointId at = attach(n, i);
      b.link(node_prefix(n) + "pcie.nic" + std::to_string(i), attach_kind, at, nic, attach_alpha, attach_bw);
      b.link(node_prefix(n) + "ib.nic" + std::to_string(i), LinkKind::InfiniBand, nic, ib_switch, kIbHopAlphaNs,
             ib_bandwidth(ib));
    }
}

void check_nodes(const std::string& name, int nodes) {
  if (nodes < 1 || nodes > kMaxPresetNodes)
    throw InputError("cluster preset \"" + name + "\": nodes must be in [1, " + std::to_string(kMaxPresetNodes) +
                     "], found " + std::to_string(nodes));
}

ClusterSpec nvswitch_node_spec(const std::string& name, const std::string& kind, int nodes, IbGeneration ib,
                               GBps nvswitch_bw, GBps pcie_bw, const std::string& intra, const FabricOptions& fabric) {
  check_nodes(name, nodes);
  ClusterSpec spec;
  spec.name = name;
  spec.intra_node_fabric = intra;
  spec.description = std::to_string(nodes) + " x 8x " + kind + ", " + intra;
  SpecBuilder b(spec);
  for (int n = 0; n < nodes; ++n)
    for (int g = 0; g < 8; ++g) b.device(node_prefix(n) + "gpu" + std::to_string(g), kind, n);
  std::vector<EndpointId> switches;
  for (int n = 0; n < nodes; ++n)
    switches.push_back(b.endpoint(node_prefix(n) + "nvswitch", EndpointKind::NvSwitch, n));
  for (int n = 0; n < nodes; ++n)
    for (int g = 0; g < 8; ++g)
      b.link(node_prefix(n) + "nvswitch.gpu" + std::to_string(g), LinkKind::NVSwitch, n * 8 + g,
             switches[static_cast<std::size_t>(n)], kNvswitchHopAlphaNs, nvswitch_bw);
  const int nics = fabric.nics_per_node == 0 ? 8 : fabric.nics_per_node;
  if (nics == 8) {
    // One NIC per GPU on the GPU's own PCIe switch (GPUDirect RDMA): modelled as a direct link.
    add_infiniband(
        b, spec, nodes, 8, ib, [](int node, int nic) { return node * 8 + nic; }, LinkKind::PCIe, pcie_bw,
        kGpuNicAlphaNs, fabric);
    return spec;
  }
  // Fewer NICs (nics=N): each on a PCIe switch shared by 8 / N GPUs, whose traffic off the node
  // goes through it.
  const int per_nic = 8 / nics;
  std::vector<EndpointId> pcie_switches;
  for (int n = 0; n < nodes; ++n)
    for (int i = 0; i < nics; ++i)
      pcie_switches.push_back(b.endpoint(node_prefix(n) + "pcie" + std::to_string(i), EndpointKind::PcieSwitch, n));
  for (int n = 0; n < nodes; ++n)
    for (int g = 0; g < 8; ++g)
      b.link(node_prefix(n) + "pcie.gpu" + std::to_string(g), LinkKind::PCIe, n * 8 + g,
             pcie_switches[static_cast<std::size_t>(n * nics + g / per_nic)], kPcieHopAlphaNs, pcie_bw);
  add_infiniband(
      b, spec, nodes, nics, ib,
      [&](int node, int nic) { return pcie_switches[static_cast<std::size_t>(node * nics + nic)]; }, LinkKind::PCIe,
      pcie_bw, kPcieHopAlphaNs, fabric);
  return spec;
}

struct NvlinkEdge {
  int a, b, links;
};
// DGX-1V NVLink edges (see the matrix at the top of this file): 16 GPU pairs, 24 links.
constexpr std::array<NvlinkEdge, 16> kDgx1Nvlinks{{
    {0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1}, {1, 5, 2}, {2, 3, 2},
    {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2},
}};

struct PresetEntry {
  ClusterPresetInfo info;
  std::function<ClusterSpec(int, IbGeneration, const FabricOptions&)> make;
};

const std::vector<PresetEntry>& preset_table() {
  static const std::vector<PresetEntry> table = [] {
    std::vector<PresetEntry> t;
    t.push_back({{"dgx1-v100", "V100-SXM2-32GB", 8, "NVLink2 hybrid cube-mesh + PCIe 3.0 + QPI", IbGeneration::EDR,
                  "NVIDIA DGX-1 (Volta): 8x V100-SXM2-32GB, 6 NVLink2 links per GPU"},
                 [](int n, IbGeneration ib, const FabricOptions& f) { return dgx1_v100_spec(n, ib, f); }});
    t.push_back({{"dgx-a100", "A100-SXM4-80GB", 8, "NVSwitch gen2, 300 GB/s per GPU", IbGeneration::HDR,
                  "NVIDIA DGX A100: 8x A100-SXM4-80GB on 6 NVSwitch gen2 chips"},
                 [](int n, IbGeneration ib, const FabricOptions& f) { return dgx_a100_spec(n, ib, f); }});
    t.push_back({{"dgx-h100", "H100-SXM5-80GB", 8, "NVSwitch gen3, 450 GB/s per GPU", IbGeneration::NDR,
                  "NVIDIA DGX H100: 8x H100-SXM5-80GB on 4 NVSwitch gen3 chips"},
                 [](int n, IbGeneration ib, const FabricOptions& f) { return dgx_h100_spec(n, ib, f); }});
    t.push_back({{"hgx-h200", "H200-SXM-141GB", 8, "NVSwitch gen3, 450 GB/s per GPU", IbGeneration::NDR,
                  "NVIDIA HGX H200: 8x H200-SXM-141GB on 4 NVSwitch gen3 chips"},
                 [](int n, IbGeneration ib, const FabricOptions& f) { return hgx_h200_spec(n, ib, f); }});
    t.push_back({{"dgx-b200", "B200-SXM-180GB", 8, "NVSwitch gen4 (NVLink5), 900 GB/s per GPU", IbGeneration::NDR,
                  "NVIDIA DGX B200: 8x B200-SXM-180GB on 2 NVSwitch gen4 chips"},
                 [](int n, IbGeneration ib, const FabricOptions& f) { return dgx_b200_spec(n, ib, f); }});
    t.push_back({{"pcie-hetero", "TITAN-X-Pascal", 3, "PCIe 3.0 x16 through the host, no P2P (12 GB/s)",
                  IbGeneration::EDR, "Workstation: 2x TITAN X (Pascal) + 1x GTX 1080 on PCIe 3.0"},
                 [](int n, IbGeneration ib, const FabricOptions& f) { return pcie_hetero_spec(n, ib, f); }});
    return t;
  }();
  return table;
}

// The whole of `s` as an integer in [lo, hi], or nothing (a name option's value).
std::optional<int> parse_int_in(std::string_view s, int lo, int hi) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

}  // namespace

GBps ib_bandwidth(IbGeneration g) {
  switch (g) {
    case IbGeneration::EDR: return GBps{12.5};
    case IbGeneration::HDR: return GBps{25.0};
    case IbGeneration::NDR: return GBps{50.0};
  }
  return GBps{25.0};
}

std::string to_string(IbGeneration g) {
  switch (g) {
    case IbGeneration::EDR: return "EDR";
    case IbGeneration::HDR: return "HDR";
    case IbGeneration::NDR: return "NDR";
  }
  return "?";
}

ClusterSpec dgx1_v100_spec(int nodes, IbGeneration ib, const FabricOptions& fabric) {
  check_nodes("dgx1-v100", nodes);
  ClusterSpec spec;
  spec.name = "dgx1-v100";
  spec.intra_node_fabric = "NVLink2 hybrid cube-mesh + PCIe 3.0 + QPI";
  spec.description = std::to_string(nodes) + " x DGX-1 (8x V100-SXM2-32GB, NVLink2 hybrid cube-mesh)";
  SpecBuilder b(spec);
  for (int n = 0; n < nodes; ++n)
    for (int g = 0; g < 8; ++g) b.device(node_prefix(n) + "gpu" + std::to_string(g), "V100-SXM2-32GB", n);
  // Per node: 4 PCIe switches then 2 CPUs (endpoint ids recorded for the links below).
  std::vector<std::array<EndpointId, 4>> pcie_switches(static_cast<std::size_t>(nodes));
  std::vector<std::array<EndpointId, 2>> cpus(static_cast<std::size_t>(nodes));
  for (int n = 0; n < nodes; ++n) {
    for (int s = 0; s < 4; ++s)
      pcie_switches[static_cast<std::size_t>(n)][static_cast<std::size_t>(s)] =
          b.endpoint(node_prefix(n) + "pcie" + std::to_string(s), EndpointKind::PcieSwitch, n);
    for (int c = 0; c < 2; ++c)
      cpus[static_cast<std::size_t>(n)][static_cast<std::size_t>(c)] =
          b.endpoint(node_prefix(n) + "cpu" + std::to_string(c), EndpointKind::Cpu, n);
  }
  for (int n = 0; n < nodes; ++n) {
    const std::string p = node_prefix(n);
    for (const auto& e : kDgx1Nvlinks) {
      const std::string name = p + "nvlink.gpu" + std::to_string(e.a) + "-gpu" + std::to_string(e.b) +
                               (e.links == 2 ? ".x2" : "");
      b.link(name, LinkKind::NVLink, n * 8 + e.a, n * 8 + e.b, kNvlinkAlphaNs, GBps{kNvlink2.value * e.links});
    }
    const auto& sw = pcie_switches[static_cast<std::size_t>(n)];
    const auto& cpu = cpus[static_cast<std::size_t>(n)];
    for (int g = 0; g < 8; ++g)
      b.link(p + "pcie.gpu" + std::to_string(g), LinkKind::PCIe, n * 8 + g, sw[static_cast<std::size_t>(g / 2)],
             kPcieHopAlphaNs, kPcie3);
    for (int s = 0; s < 4; ++s)
      b.link(p + "pcie.switch" + std::to_string(s), LinkKind::PCIe, sw[static_cast<std::size_t>(s)],
             cpu[static_cast<std::size_t>(s / 2)], kPcieHopAlphaNs, kPcie3);
    b.link(p + "qpi", LinkKind::QPI, cpu[0], cpu[1], kQpiAlphaNs, kQpi);
  }
  add_infiniband(
      b, spec, nodes, 4, ib,
      [&](int node, int nic) { return pcie_switches[static_cast<std::size_t>(node)][static_cast<std::size_t>(nic)]; },
      LinkKind::PCIe, kPcie3, kPcieHopAlphaNs, fabric);
  return spec;
}

ClusterSpec dgx_a100_spec(int nodes, IbGeneration ib, const FabricOptions& fabric) {
  return nvswitch_node_spec("dgx-a100", "A100-SXM4-80GB", nodes, ib, kNvswitchA100, kPcie4,
                            "NVSwitch gen2, 300 GB/s per GPU", fabric);
}

ClusterSpec dgx_h100_spec(int nodes, IbGeneration ib, const FabricOptions& fabric) {
  return nvswitch_node_spec("dgx-h100", "H100-SXM5-80GB", nodes, ib, kNvswitchH100, kPcie5,
                            "NVSwitch gen3, 450 GB/s per GPU", fabric);
}

ClusterSpec hgx_h200_spec(int nodes, IbGeneration ib, const FabricOptions& fabric) {
  return nvswitch_node_spec("hgx-h200", "H200-SXM-141GB", nodes, ib, kNvswitchH100, kPcie5,
                            "NVSwitch gen3, 450 GB/s per GPU", fabric);
}

ClusterSpec dgx_b200_spec(int nodes, IbGeneration ib, const FabricOptions& fabric) {
  return nvswitch_node_spec("dgx-b200", "B200-SXM-180GB", nodes, ib, kNvswitchB200, kPcie5,
                            "NVSwitch gen4 (NVLink5), 900 GB/s per GPU", fabric);
}

ClusterSpec pcie_hetero_spec(int nodes, IbGeneration ib, const FabricOptions& fabric) {
  check_nodes("pcie-hetero", nodes);
  ClusterSpec spec;
  spec.name = "pcie-hetero";
  spec.intra_node_fabric = "PCIe 3.0 x16 through the host, no P2P (12 GB/s)";
  spec.description = std::to_string(nodes) + " x workstation (2x TITAN X Pascal + 1x GTX 1080, PCIe 3.0)";
  SpecBuilder b(spec);
  const std::array<const char*, 3> kinds{"TITAN-X-Pascal", "TITAN-X-Pascal", "GTX-1080"};
  for (int n = 0; n < nodes; ++n)
    for (int g = 0; g < 3; ++g)
      b.device(node_prefix(n) + "gpu" + std::to_string(g), kinds[static_cast<std::size_t>(g)], n);
  std::vector<EndpointId> hosts;
  for (int n = 0; n < nodes; ++n) hosts.push_back(b.endpoint(node_prefix(n) + "cpu0", EndpointKind::Cpu, n));
  // GeForce cards have no peer-to-peer: a copy is staged through host memory, i.e. it crosses
  // the GPU's PCIe link up to the host and the other GPU's link down.
  for (int n = 0; n < nodes; ++n)
    for (int g = 0; g < 3; ++g)
      b.link(node_prefix(n) + "pcie.gpu" + std::to_string(g), LinkKind::PCIe, n * 3 + g,
             hosts[static_cast<std::size_t>(n)], kPcieHopAlphaNs, kPcie3);
  add_infiniband(
      b, spec, nodes, 3, ib, [](int node, int nic) { return node * 3 + nic; }, LinkKind::PCIe, kPcie3, kGpuNicAlphaNs,
      fabric);
  return spec;
}

const std::vector<ClusterPresetInfo>& cluster_presets() {
  static const std::vector<ClusterPresetInfo> infos = [] {
    std::vector<ClusterPresetInfo> v;
    for (const auto& e : preset_table()) v.push_back(e.info);
    return v;
  }();
  return infos;
}

std::vector<std::string> cluster_preset_names() {
  std::vector<std::string> names;
  for (const auto& e : preset_table()) names.push_back(e.info.name);
  return names;
}

namespace {

// gpu=KIND: the preset's GPUs as another memory variant of the same part (A100-SXM4-40GB in a
// dgx-a100, V100-SXM2-16GB in a dgx1-v100): its memory and HBM bandwidth, the same links. A
// different part would need another node design, so it is refused.
void use_gpu_variant(ClusterSpec& spec, const std::string& gpu, const std::string& where) {
  const std::string preset_kind = spec.devices.front().kind;
  const std::vector<std::string> kinds = memory_variants(preset_kind);
  const std::optional<DeviceSpec> variant = find_device_spec(gpu);
  if (!variant || std::find(kinds.begin(), kinds.end(), variant->kind) == kinds.end()) {
    std::string variants;
    for (const std::string& k : kinds) variants += (variants.empty() ? "" : ", ") + k;
    throw InputError(where + "expected a variant of the preset's " + preset_kind + " (" + variants + "), found \"" +
                     gpu + "\"");
  }
  for (ClusterDevice& d : spec.devices) {
    if (d.kind != preset_kind) continue;
    d.kind = variant->kind;
    d.memory = variant->memory;
  }
  for (std::size_t at = spec.description.find(preset_kind); at != std::string::npos;
       at = spec.description.find(preset_kind, at + variant->kind.size()))
    spec.description.replace(at, preset_kind.size(), variant->kind);
}

}  // namespace

ClusterSpec make_cluster_preset_spec(const std::string& full_name, int nodes) {
  const auto colon = full_name.find(':');
  const std::string base = full_name.substr(0, colon);
  const PresetEntry* entry = nullptr;
  for (const auto& e : preset_table())
    if (e.info.name == base) entry = &e;
  if (!entry) {
    std::string known;
    for (const auto& n : cluster_preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw InputError("unknown cluster preset \"" + base + "\"; known presets: " + known +
                     " (or a parasim.cluster/1 JSON file)");
  }
  IbGeneration ib = entry->info.default_ib;
  FabricOptions fabric;
  std::optional<int> nccl_channels;
  std::string gpu;  // gpu=KIND: a memory variant of the preset's GPU
  if (colon != std::string::npos) {
    // Comma-separated options: ib=edr|hdr|ndr, fabric=KIND, oversubscription=R:1, switch=MODEL, radix=N,
    // nccl_channels=N, nics=N, gpu=KIND.
    const std::string where = "cluster preset \"" + full_name + "\": ";
    const std::string opts = full_name.substr(colon + 1);
    std::size_t start = 0;
    while (start <= opts.size()) {
      const std::size_t comma = std::min(opts.find(',', start), opts.size());
      const std::string opt = opts.substr(start, comma - start);
      start = comma + 1;
      const auto eq = opt.find('=');
      const std::string key = opt.substr(0, eq), value = eq == std::string::npos ? "" : opt.substr(eq + 1);
      if (opt == "ib=edr") ib = IbGeneration::EDR;
      else if (opt == "ib=hdr") ib = IbGeneration::HDR;
      else if (opt == "ib=ndr") ib = IbGeneration::NDR;
      else if (key == "ib")
        throw InputError(where + "unknown option \"" + opt + "\"; expected ib=edr, ib=hdr or ib=ndr");
      else if (key == "fabric" && parse_fabric_kind(value)) fabric.kind = *parse_fabric_kind(value);
      else if (key == "fabric")
        throw InputError(where + "fabric: expected single-switch, fat-tree or rail-optimized, found \"" + value + "\"");
      else if (key == "oversubscription")
        fabric.oversubscription = parse_oversubscription(value, where + "oversubscription");
      else if (key == "switch") fabric.switch_model = value;
      else if (key == "radix") {
        const std::optional<int> r = parse_int_in(value, kMinSwitchRadix, kMaxSwitchRadix);
        if (!r || *r % 2 != 0)
          throw InputError(where + "radix: expected an even number of switch ports in [" +
                           std::to_string(kMinSwitchRadix) + ", " + std::to_string(kMaxSwitchRadix) + "], found \"" +
                           value + "\"");
        fabric.radix = *r;
      } else if (key == "nccl_channels") {
        nccl_channels = parse_int_in(value, 0, kMaxNcclChannels);
        if (!nccl_channels)
          throw InputError(where + "nccl_channels: expected the channels (SMs) every collective runs on, in [0, " +
                           std::to_string(kMaxNcclChannels) + "], found \"" + value + "\"");
      } else if (key == "gpu") {
        gpu = value;
      } else if (key == "nics") {
        const std::optional<int> n = parse_int_in(value, 1, 8);
        if (!n || 8 % *n != 0)
          throw InputError(where + "nics: expected the NICs per node, 1, 2, 4 or 8, found \"" + value + "\"");
        if (!entry->info.takes_nics_option())
          throw InputError(where +
                           "nics applies to the 8-GPU NVSwitch presets (dgx-a100, dgx-h100, hgx-h200, "
                           "dgx-b200); " +
                           base + " has its own NICs");
        fabric.nics_per_node = *n;
      } else
        throw InputError(where + "unknown option \"" + opt +
                         "\"; expected ib=edr|hdr|ndr, fabric=single-switch|fat-tree|rail-optimized, "
                         "oversubscription=R:1, switch=qm9700|qm8700|sb7800, radix=N, nccl_channels=N, nics=N or "
                         "gpu=KIND, separated by commas");
    }
    if (fabric.kind == FabricKind::SingleSwitch &&
        (fabric.oversubscription != 1.0 || !fabric.switch_model.empty() || fabric.radix != 0))
      throw InputError(where +
                       "oversubscription, switch and radix describe a fat-tree or rail-optimized fabric; "
                       "add fabric=fat-tree or fabric=rail-optimized");
  }
  ClusterSpec spec = entry->make(nodes, ib, fabric);
  spec.nccl_channels = nccl_channels;
  if (!gpu.empty()) use_gpu_variant(spec, gpu, "cluster preset \"" + full_name + "\": gpu: ");
  if (colon != std::string::npos) spec.name = full_name;
  return spec;
}

Cluster make_cluster_preset(const std::string& name, int nodes) {
  return Cluster(make_cluster_preset_spec(name, nodes));
}

}  // namespace parasim::hardware
