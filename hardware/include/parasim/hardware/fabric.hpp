// Inter-node fabrics of frontier size: the switches between the nodes' NICs.
//
//   single-switch   one non-blocking InfiniBand switch (the default; what a full fat tree
//                   behaves like when it never congests)
//   fat-tree        leaf switches (radix/2 NIC ports, radix/2 uplinks), a node's NICs on
//                   consecutive leaf ports; spines above (2 tiers), or pods of radix/2 leaves
//                   and radix/2 aggregation switches under (radix/2)^2 cores (3 tiers) when
//                   there are more leaves than a spine has ports
//   rail-optimized  NIC i of every node in a scalable unit (SU, radix/2 nodes: 32 on
//                   QM9700, as in the DGX SuperPOD H100 reference architecture) on rail leaf i
//                   of that SU; spines (or pods and cores) above as in the fat tree
//
// Oversubscription R:1 divides each leaf uplink's bandwidth by R (the leaf keeps radix/2 ports
// each way), so a leaf's NICs can offer R times what leaves the leaf. Routing is explicit and
// deterministic (Cluster::route): a message leaves through the source device's nearest NIC,
// enters through the destination's, and climbs only as high as it must, the uplinks chosen by
// the destination (D-mod-k, as InfiniBand's fat-tree routing engines do), so traffic to the
// hosts of one leaf spreads over every spine. Sources for switch radixes and speeds: see
// switch_models() and docs/simulator.md.
//
// Example:
//   FabricOptions o = parse_fabric_options("fat-tree", "2:1", "");   // InputError naming the field
//   ClusterSpec spec = make_cluster_preset_spec("dgx-h100:fabric=fat-tree,oversubscription=2:1", 512);
//   std::cout << describe_fabric(*spec.fabric);   // "fat-tree, 3 tiers: 128 leaf + 128 aggregation ..."
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parasim/common/units.hpp"

namespace parasim::hardware {

struct ClusterSpec;
using EndpointId = std::int32_t;
using LinkId = std::int32_t;

enum class FabricKind : std::uint8_t { SingleSwitch, FatTree, RailOptimized };

std::string_view to_string(FabricKind k);  // "single-switch", "fat-tree", "rail-optimized"
std::optional<FabricKind> parse_fabric_kind(std::string_view s);

/// A switch whose radix and port speed a fabric is built from.
struct SwitchModel {
  std::string name;       // "qm9700"
  std::string product;    // "NVIDIA Quantum-2 QM9700"
  int radix = 0;          // ports
  GBps port_bandwidth{};  // per port, per direction
  std::string source;
};
const std::vector<SwitchModel>& switch_models();
const SwitchModel* find_switch_model(std::string_view name);

struct FabricOptions {
  FabricKind kind = FabricKind::SingleSwitch;
  double oversubscription = 1.0;  // leaf down:up bandwidth, >= 1 ("2:1" is 2)
  std::string switch_model;       // empty: the one matching the NICs' generation
  int radix = 0;                  // 0: the switch model's
  /// NICs per node on an 8-GPU NVSwitch node (1, 2, 4 or 8); 0: the preset's own (one per GPU).
  /// Fewer NICs are each shared by the GPUs of one PCIe switch (Jean Zay's 4 Omni-Path links).
  int nics_per_node = 0;
  bool operator==(const FabricOptions&) const = default;
};

/// Largest oversubscription accepted (a typo guard, not physics).
inline constexpr double kMaxOversubscription = 64.0;
/// Radix bounds: a switch has an even number of ports, half down and half up.
inline constexpr int kMinSwitchRadix = 4;
inline constexpr int kMaxSwitchRadix = 1024;

/// "2:1" -> 2, "1:1" -> 1, "1.5:1" -> 1.5; InputError naming `field` otherwise.
double parse_oversubscription(std::string_view text, const std::string& field);
/// "2:1" for 2.
std::string oversubscription_text(double r);

/// The built fabric: what the switches are and where their links sit in the cluster, so routes
/// are computed from the structure instead of searched. Switch endpoints and fabric links come
/// after everything else (endpoints: leaves, then spines or aggregation switches, then cores;
/// links: NIC-leaf by host port, leaf uplinks by leaf, aggregation-core by aggregation switch).
struct FabricLayout {
  FabricOptions options;
  std::string switch_name;  // switch_models() name, e.g. "qm9700"
  std::string switch_product;
  int radix = 0;
  int down = 0;   // NIC ports per leaf
  int up = 0;     // uplinks per leaf (and per aggregation switch in 3 tiers)
  int tiers = 0;  // 1: one leaf holds every NIC; 2: leaves + spines; 3: + cores
  int leaves = 0;
  int middle = 0;  // spines (2 tiers) or aggregation switches (3 tiers)
  int cores = 0;
  int pods = 0;  // 3 tiers: groups of `up` leaves sharing `up` aggregation switches
  int nics_per_node = 0;
  int nodes = 0;
  GBps nic_bandwidth{};     // NIC <-> leaf
  GBps uplink_bandwidth{};  // leaf -> spine/aggregation: the port's bandwidth / oversubscription
  GBps core_bandwidth{};    // aggregation -> core
  TimeNs nic_alpha = 0;
  TimeNs switch_alpha = 0;
  EndpointId first_switch = 0;
  LinkId first_link = 0;
  std::vector<EndpointId> nics;  // node-major: NIC i of node n is nics[n * nics_per_node + i]

  int host_ports() const { return nodes * nics_per_node; }
  int switches() const { return leaves + middle + cores; }
  int links() const;
  /// The leaf and its port of NIC i of node n.
  int leaf_of(int node, int nic) const;
  int port_of(int node, int nic) const;
};

/// Per switch-to-switch hop: a Quantum switch forwards in ~130 ns port to port, plus cables and
/// SerDes; see cluster_presets.cpp for the other latencies.
inline constexpr TimeNs kIbSwitchHopAlphaNs = 500;

/// Replaces `spec`'s inter-node part: connects every NIC endpoint (kind nic, node >= 0; the same
/// number on every node, in id order) through a `options` fabric of `nic_bandwidth` NICs, and
/// records the layout in spec.fabric. InputError (prefixed with `where`) when the nodes do not
/// fit in three tiers of the radix, or a node has no NIC. Does nothing for single-switch.
void build_fabric(ClusterSpec& spec, const FabricOptions& options, GBps nic_bandwidth, TimeNs nic_alpha,
                  const std::string& where);
/// "fat-tree, 2 tiers: 8 leaf + 4 spine switches of 8 ports ..." - one line.
std::string describe_fabric(const FabricLayout& f);

}  // namespace parasim::hardware
