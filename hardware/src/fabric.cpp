// Fat-tree and rail-optimized fabrics. Sources:
//   NVIDIA Quantum-2 QM9700 datasheet: 64 ports of NDR 400 Gb/s (50 GB/s per direction).
//   NVIDIA Quantum QM8700 datasheet: 40 ports of HDR 200 Gb/s (25 GB/s).
//   Mellanox Switch-IB 2 SB7800 product brief: 36 ports of EDR 100 Gb/s (12.5 GB/s).
//   NVIDIA DGX SuperPOD Reference Architecture, DGX H100 (RA-11333-001): scalable units of 32
//   DGX H100 nodes, compute fabric rail-optimized - NIC i of every node of an SU on leaf (rail)
//   switch i of that SU, leaves under spine switches, a core tier beyond 4 SUs; QM9700 switches.
//   Three-tier fat trees of radix-k switches (k pods of k/2 leaves and k/2 aggregation switches,
//   (k/2)^2 cores): Al-Fares et al., "A Scalable, Commodity Data Center Network Architecture",
//   SIGCOMM 2008; D-mod-k routing: Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for
//   Shift Permutations on Real Life Fat Trees" (2010), as in OpenSM's ftree engine.
#include "parasim/hardware/fabric.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "parasim/common/error.hpp"
#include "parasim/hardware/cluster.hpp"

namespace parasim::hardware {

namespace {

struct KindName {
  FabricKind kind;
  std::string_view name;
};
constexpr KindName kKinds[] = {
    {FabricKind::SingleSwitch, "single-switch"},
    {FabricKind::FatTree, "fat-tree"},
    {FabricKind::RailOptimized, "rail-optimized"},
};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

bool parse_positive(std::string_view s, double& out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(out) && out > 0;
}

}  // namespace

std::string_view to_string(FabricKind k) {
  for (const auto& e : kKinds)
    if (e.kind == k) return e.name;
  return "?";
}

std::optional<FabricKind> parse_fabric_kind(std::string_view s) {
  for (const auto& e : kKinds)
    if (e.name == s) return e.kind;
  return std::nullopt;
}

const std::vector<SwitchModel>& switch_models() {
  static const std::vector<SwitchModel> models{
      {"qm9700", "NVIDIA Quantum-2 QM9700", 64, GBps{50.0}, "QM9700 datasheet: 64 ports of NDR 400 Gb/s"},
      {"qm8700", "NVIDIA Quantum QM8700", 40, GBps{25.0}, "QM8700 datasheet: 40 ports of HDR 200 Gb/s"},
      {"sb7800", "Mellanox Switch-IB 2 SB7800", 36, GBps{12.5}, "SB7800 product brief: 36 ports of EDR 100 Gb/s"},
  };
  return models;
}

const SwitchModel* find_switch_model(std::string_view name) {
  for (const auto& m : switch_models())
    if (m.name == name) return &m;
  return nullptr;
}

double parse_oversubscription(std::string_view text, const std::string& field) {
  const auto colon = text.find(':');
  double down = 0, up = 0;
  const bool ok = colon != std::string_view::npos && parse_positive(text.substr(0, colon), down) &&
                  parse_positive(text.substr(colon + 1), up);
  const double r = ok ? down / up : 0;
  if (!ok || r < 1.0 || r > kMaxOversubscription)
    throw InputError(field + ": expected an oversubscription ratio DOWN:UP such as 1:1, 2:1 or 3:1 (between 1:1 and " +
                     num(kMaxOversubscription) + ":1), found \"" + std::string(text) + "\"");
  return r;
}

std::string oversubscription_text(double r) { return num(r) + ":1"; }

int FabricLayout::links() const {
  const int h = host_ports();
  if (tiers <= 1) return h;
  return h + leaves * up + (tiers == 3 ? middle * up : 0);
}

int FabricLayout::leaf_of(int node, int nic) const {
  if (options.kind == FabricKind::RailOptimized) return (node / down) * nics_per_node + nic;
  return (node * nics_per_node + nic) / down;
}

int FabricLayout::port_of(int node, int nic) const {
  if (options.kind == FabricKind::RailOptimized) return node % down;
  return (node * nics_per_node + nic) % down;
}

void build_fabric(ClusterSpec& spec, const FabricOptions& options, GBps nic_bandwidth, TimeNs nic_alpha,
                  const std::string& where) {
  spec.fabric.reset();
  if (options.kind == FabricKind::SingleSwitch) return;
  FabricLayout f;
  f.options = options;
  const SwitchModel* model = nullptr;
  if (!options.switch_model.empty()) {
    model = find_switch_model(options.switch_model);
    if (!model) {
      std::string known;
      for (const auto& m : switch_models()) known += (known.empty() ? "" : ", ") + m.name;
      throw InputError(where + "switch: unknown switch \"" + options.switch_model + "\"; known: " + known);
    }
  } else {
    // The switch of the NICs' generation (the fastest whose ports do not exceed the NIC).
    for (const auto& m : switch_models())
      if (!model && m.port_bandwidth.value <= nic_bandwidth.value) model = &m;
    if (!model) model = &switch_models().back();
  }
  f.switch_name = model->name;
  f.switch_product = model->product;
  f.radix = options.radix > 0 ? options.radix : model->radix;
  if (f.radix < kMinSwitchRadix || f.radix > kMaxSwitchRadix || f.radix % 2 != 0)
    throw InputError(where + "radix: expected an even number of switch ports in [" + std::to_string(kMinSwitchRadix) +
                     ", " + std::to_string(kMaxSwitchRadix) + "], found " + std::to_string(f.radix));
  f.down = f.up = f.radix / 2;
  f.nic_bandwidth = GBps{std::min(nic_bandwidth.value, model->port_bandwidth.value)};
  f.uplink_bandwidth = GBps{model->port_bandwidth.value / options.oversubscription};
  f.core_bandwidth = model->port_bandwidth;
  f.nic_alpha = nic_alpha;
  f.switch_alpha = kIbSwitchHopAlphaNs;

  // The NICs, node-major, each node's in id order.
  int nodes = 0;
  for (const auto& d : spec.devices) nodes = std::max(nodes, d.node + 1);
  std::vector<std::vector<EndpointId>> per_node(static_cast<std::size_t>(nodes));
  const auto n_dev = static_cast<EndpointId>(spec.devices.size());
  for (std::size_t i = 0; i < spec.endpoints.size(); ++i)
    if (spec.endpoints[i].kind == EndpointKind::Nic && spec.endpoints[i].node >= 0 && spec.endpoints[i].node < nodes)
      per_node[static_cast<std::size_t>(spec.endpoints[i].node)].push_back(n_dev + static_cast<EndpointId>(i));
  if (nodes < 2) throw InputError(where + "a fabric joins nodes; this cluster has " + std::to_string(nodes));
  f.nodes = nodes;
  f.nics_per_node = static_cast<int>(per_node[0].size());
  for (int n = 0; n < nodes; ++n)
    if (per_node[static_cast<std::size_t>(n)].empty() ||
        static_cast<int>(per_node[static_cast<std::size_t>(n)].size()) != f.nics_per_node)
      throw InputError(where + "every node needs the same number (>= 1) of NIC endpoints (kind \"nic\"); node " +
                       std::to_string(n) + " has " + std::to_string(per_node[static_cast<std::size_t>(n)].size()) +
                       ", node 0 has " + std::to_string(f.nics_per_node));
  for (const auto& v : per_node) f.nics.insert(f.nics.end(), v.begin(), v.end());

  const std::int64_t hosts = std::int64_t{nodes} * f.nics_per_node;
  if (options.kind == FabricKind::RailOptimized) {
    f.leaves = ((nodes + f.down - 1) / f.down) * f.nics_per_node;
  } else {
    f.leaves = static_cast<int>((hosts + f.down - 1) / f.down);
  }
  const std::int64_t k = f.radix;
  if (f.leaves == 1) {
    f.tiers = 1;
  } else if (f.leaves <= k) {
    f.tiers = 2;
    f.middle = f.up;  // spines: one link from every leaf
  } else {
    f.tiers = 3;
    f.pods = (f.leaves + f.up - 1) / f.up;
    if (f.pods > k)
      throw InputError(where + std::to_string(nodes) + " nodes of " + std::to_string(f.nics_per_node) + " NICs need " +
                       std::to_string(f.leaves) + " leaf switches, more than a 3-tier " +
                       std::string(to_string(options.kind)) + " of radix " + std::to_string(k) + " holds (" +
                       std::to_string(k * (k / 2)) + "); choose a larger radix (radix=N)");
    f.middle = f.pods * f.up;
    f.cores = f.up * f.up;
  }

  // Switches and links, after everything else.
  f.first_switch = n_dev + static_cast<EndpointId>(spec.endpoints.size());
  f.first_link = static_cast<LinkId>(spec.links.size());
  if (static_cast<std::int64_t>(spec.endpoints.size()) + f.switches() > kMaxClusterEndpoints ||
      static_cast<std::int64_t>(spec.links.size()) + f.links() > kMaxClusterLinks)
    throw InputError(where + "the fabric would exceed the cluster size limits");
  const char* middle_name = f.tiers == 3 ? "agg" : "spine";
  for (int l = 0; l < f.leaves; ++l) spec.endpoints.push_back({"leaf" + std::to_string(l), EndpointKind::IbSwitch, -1});
  for (int m = 0; m < f.middle; ++m)
    spec.endpoints.push_back({middle_name + std::to_string(m), EndpointKind::IbSwitch, -1});
  for (int c = 0; c < f.cores; ++c) spec.endpoints.push_back({"core" + std::to_string(c), EndpointKind::IbSwitch, -1});
  const auto leaf_id = [&](int l) { return f.first_switch + l; };
  const auto middle_id = [&](int m) { return f.first_switch + f.leaves + m; };
  const auto core_id = [&](int c) { return f.first_switch + f.leaves + f.middle + c; };
  spec.links.reserve(spec.links.size() + static_cast<std::size_t>(f.links()));
  for (int n = 0; n < nodes; ++n)
    for (int i = 0; i < f.nics_per_node; ++i) {
      const EndpointId nic = f.nics[static_cast<std::size_t>(n * f.nics_per_node + i)];
      const int leaf = f.leaf_of(n, i);
      spec.links.push_back({"fabric.leaf" + std::to_string(leaf) + ".port" + std::to_string(f.port_of(n, i)),
                            LinkKind::InfiniBand, nic, leaf_id(leaf), f.nic_alpha, f.nic_bandwidth});
    }
  // NIC-leaf links were added node-major; routes index them by host port (node * P + nic).
  if (f.tiers >= 2)
    for (int l = 0; l < f.leaves; ++l)
      for (int j = 0; j < f.up; ++j) {
        const int m = f.tiers == 2 ? j : (l / f.up) * f.up + j;
        spec.links.push_back({"fabric.leaf" + std::to_string(l) + ".up" + std::to_string(j), LinkKind::InfiniBand,
                              leaf_id(l), middle_id(m), f.switch_alpha, f.uplink_bandwidth});
      }
  if (f.tiers == 3)
    for (int m = 0; m < f.middle; ++m)
      for (int c = 0; c < f.up; ++c) {
        const int core = (m % f.up) * f.up + c;
        spec.links.push_back({"fabric.agg" + std::to_string(m) + ".up" + std::to_string(c), LinkKind::InfiniBand,
                              middle_id(m), core_id(core), f.switch_alpha, f.core_bandwidth});
      }
  spec.inter_node_fabric = "InfiniBand " + describe_fabric(f);
  spec.fabric = std::move(f);
}

std::string describe_fabric(const FabricLayout& f) {
  std::string s = std::string(to_string(f.options.kind)) + ", " + std::to_string(f.tiers) +
                  (f.tiers == 1 ? " tier: " : " tiers: ") + std::to_string(f.leaves) + " leaf";
  if (f.tiers == 2) s += " + " + std::to_string(f.middle) + " spine";
  if (f.tiers == 3) s += " + " + std::to_string(f.middle) + " aggregation + " + std::to_string(f.cores) + " core";
  s += " switches (" + f.switch_product + ", " + std::to_string(f.radix) + " ports), " +
       std::to_string(f.nics_per_node) + " NICs per node at " + num(f.nic_bandwidth.value) + " GB/s";
  if (f.options.kind == FabricKind::RailOptimized) s += ", " + std::to_string(f.down) + " nodes per scalable unit";
  if (f.tiers >= 2)
    s += ", leaf uplinks " + num(f.uplink_bandwidth.value) + " GB/s (oversubscription " +
         oversubscription_text(f.options.oversubscription) + ")";
  else s += " (no uplinks: one leaf holds every NIC)";
  return s;
}

}  // namespace parasim::hardware
