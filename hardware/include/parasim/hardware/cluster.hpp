// A cluster: the devices a training step runs on, the other endpoints traffic passes through
// (host CPUs, PCIe switches, NVSwitch fabrics, NICs, the InfiniBand switch) and the links
// between them, with the route every device pair's traffic takes.
//
// Links are full duplex: each direction is an independent resource with the link's bandwidth.
// A directed link is named by `DirLinkId = 2 * link + direction` (direction 0: a -> b,
// 1: b -> a), which is what routes and the simulator's link resources are made of.
//
// Routing (precomputed once, deterministic): among all paths from one device to another the
// route is the one with
//   1. the fewest *transit devices* (a GPU forwarding someone else's traffic) - GPUs are
//      forwarders of last resort, so on a DGX-1 two GPUs without an NVLink between them talk
//      over PCIe/QPI, exactly as CUDA peer-to-peer copies do; only a topology with no other
//      path (e.g. a ring of direct links) routes through a GPU;
//   2. then the fewest hops;
//   3. then the highest bottleneck bandwidth;
//   4. then the first path found when links are explored in link-id order.
// Identical nodes: when every node is a copy of node 0 (same endpoints and links in the same
// order, attached to the same shared endpoints - every preset), swapping node 0 and node k maps
// the cluster onto itself, so a route from node k is node 0's route, swapped back; and a route
// from node 0 to node j >= 2 is the one to node 1, swapped with node j. Only node 0's devices
// then need a shortest-path tree, searched over nodes 0 and 1 and the shared endpoints (8 small
// trees instead of 16,384 over the whole fabric), each over an index of that window alone, so that
// it costs what the window holds whatever the cluster's size. A route whose search met a tie (two
// equally good ways, where rule 4 could differ after the swap), or that enters a node twice (where
// a way through a third node could tie with it), is searched directly over the whole cluster.
//
// Example:
//   using namespace parasim::hardware;
//   Cluster c = make_cluster_preset("dgx1-v100", /*nodes=*/2);
//   for (DirLinkId l : c.route(0, 5)) std::cout << c.directed_link_name(l) << "\n";   // PCIe/QPI
//   RouteSummary s = c.route_summary(0, 3);   // 1 hop, 50 GB/s (two bonded NVLinks)
//   std::cout << c.node_of(9) << " " << c.devices_of_node(1).size() << "\n";     // "1 8"
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "parasim/common/units.hpp"
#include "parasim/hardware/fabric.hpp"

namespace parasim::hardware {

using DeviceId = std::int32_t;    // 0 .. num_devices()-1; devices are also endpoints 0 .. D-1
using EndpointId = std::int32_t;  // devices first, then the other endpoints
using LinkId = std::int32_t;
using DirLinkId = std::int32_t;   // 2 * link + direction

/// Hard limits that keep a hostile cluster file from exhausting the machine.
inline constexpr std::int64_t kMaxClusterDevices = 1'048'576;
inline constexpr std::int64_t kMaxClusterEndpoints = 4'194'304;
inline constexpr std::int64_t kMaxClusterLinks = 16'777'216;

enum class LinkKind : std::uint8_t { NVLink, NVSwitch, PCIe, QPI, InfiniBand, Ethernet };
enum class EndpointKind : std::uint8_t { Device, Cpu, PcieSwitch, NvSwitch, Nic, IbSwitch };

std::string_view to_string(LinkKind k);          // "nvlink", "nvswitch", "pcie", "qpi", "ib", "ethernet"
std::string_view to_string(EndpointKind k);      // "device", "cpu", "pcie_switch", "nvswitch", "nic", "ib_switch"
std::optional<LinkKind> parse_link_kind(std::string_view s);
std::optional<EndpointKind> parse_endpoint_kind(std::string_view s);  // "device" is not accepted here

struct ClusterDevice {
  std::string name{};
  std::string kind{};     // canonical DeviceSpec kind, e.g. "V100-SXM2-32GB"
  std::int32_t node = 0;  // which machine (intra-node vs inter-node grouping)
  Bytes memory = 0;       // device memory capacity
};

/// Anything that is not a device: CPUs, PCIe switches, NVSwitch fabrics, NICs, IB switches.
struct ClusterEndpoint {
  std::string name{};
  EndpointKind kind = EndpointKind::Cpu;
  std::int32_t node = 0;  // -1: shared by all nodes (the InfiniBand switch)
};

struct ClusterLink {
  std::string name{};
  LinkKind kind = LinkKind::PCIe;
  EndpointId a = 0;       // endpoint ids: devices are 0..D-1, endpoints[i] is D+i
  EndpointId b = 0;
  TimeNs alpha = 0;       // latency per message (per hop), ns
  GBps bandwidth{};       // per direction
};

/// Plain data: what a cluster file or a preset describes. `Cluster` validates it.
struct ClusterSpec {
  std::string name;
  std::string description;
  std::string intra_node_fabric;   // human description, e.g. "NVLink2 hybrid cube-mesh"
  std::string inter_node_fabric;   // e.g. "InfiniBand EDR (4 NICs per node)", "none"
  std::vector<ClusterDevice> devices;
  std::vector<ClusterEndpoint> endpoints;
  std::vector<ClusterLink> links;
  /// A fat-tree or rail-optimized fabric built by build_fabric() (none: the links say it all).
  std::optional<FabricLayout> fabric;
  /// The NCCL channels (so SMs) every collective runs on, on every GPU, as NCCL_MIN_NCHANNELS =
  /// NCCL_MAX_NCHANNELS would pin them (0: collectives hold none); unset: each part's own
  /// (nccl_channels(), device_spec.hpp). In [0, kMaxNcclChannels].
  std::optional<int> nccl_channels;
};
inline constexpr int kMaxNcclChannels = 64;

struct RouteSummary {
  int hops = 0;
  TimeNs latency = 0;  // sum of the alphas along the route
  GBps bottleneck{};   // smallest bandwidth along the route (0 for src == dst)
};

class Cluster {
 public:
  /// Validates `spec` (InputError "cluster <name>: ..." on bad values, duplicate names, unknown
  /// device kinds, links to unknown endpoints, disconnected devices) and precomputes routes.
  explicit Cluster(ClusterSpec spec);
  Cluster(const Cluster& other);
  Cluster& operator=(const Cluster& other);
  Cluster(Cluster&&) noexcept;
  Cluster& operator=(Cluster&&) noexcept;
  ~Cluster();

  const std::string& name() const { return spec_.name; }
  const ClusterSpec& spec() const { return spec_; }

  int num_devices() const { return static_cast<int>(spec_.devices.size()); }
  int num_endpoints() const { return num_devices() + static_cast<int>(spec_.endpoints.size()); }
  int num_links() const { return static_cast<int>(spec_.links.size()); }
  int num_directed_links() const { return 2 * num_links(); }
  int num_nodes() const { return static_cast<int>(node_devices_offsets_.size()) - 1; }

  const ClusterDevice& device(DeviceId d) const { return spec_.devices[static_cast<std::size_t>(d)]; }
  const ClusterLink& link(LinkId l) const { return spec_.links[static_cast<std::size_t>(l)]; }
  const std::string& endpoint_name(EndpointId e) const;
  EndpointKind endpoint_kind(EndpointId e) const;
  std::optional<EndpointId> find_endpoint(std::string_view name) const;

  static LinkId link_of(DirLinkId d) { return d >> 1; }
  static DirLinkId directed(LinkId l, bool reverse) { return 2 * l + (reverse ? 1 : 0); }
  EndpointId dir_from(DirLinkId d) const { return (d & 1) ? link(link_of(d)).b : link(link_of(d)).a; }
  EndpointId dir_to(DirLinkId d) const { return (d & 1) ? link(link_of(d)).a : link(link_of(d)).b; }
  GBps dir_bandwidth(DirLinkId d) const { return link(link_of(d)).bandwidth; }
  /// dir_bandwidth() of every directed link by id, as plain GB/s (= bytes/ns): what a flow
  /// network solves over, kept here so that each simulation does not copy 30,000 of them.
  std::span<const double> dir_bandwidths() const { return dir_bandwidth_; }
  /// Sum of every link's latency (ns, as a double: it may exceed int64) and the slowest link's
  /// bandwidth: bounds for sanity checks.
  double total_link_latency() const { return total_link_latency_; }
  GBps slowest_link() const { return GBps{slowest_link_}; }
  TimeNs dir_alpha(DirLinkId d) const { return link(link_of(d)).alpha; }
  /// "n0.gpu0->n0.gpu1 (nvlink)".
  std::string directed_link_name(DirLinkId d) const;

  /// The route from `src` to `dst` as directed link ids in travel order; empty when src == dst.
  std::vector<DirLinkId> route(DeviceId src, DeviceId dst) const;
  RouteSummary route_summary(DeviceId src, DeviceId dst) const;

  int node_of(DeviceId d) const { return device(d).node; }
  std::span<const DeviceId> devices_of_node(int node) const;
  /// Devices of the largest node (presets: all nodes have the same count).
  int max_devices_per_node() const;
  /// The most memory any of devices 0 .. first - 1 has (a planner asks for every candidate).
  Bytes largest_memory(std::int64_t first) const {
    if (first <= 0) return 0;
    return memory_prefix_max_[static_cast<std::size_t>(std::min<std::int64_t>(first, num_devices()) - 1)];
  }
  /// The distinct device kinds in first-seen order ("V100-SXM2-32GB", or several for a hetero box).
  std::vector<std::string> device_kinds() const;
  /// True when there are several nodes and every one is a copy of node 0 (see the header comment):
  /// devices with the same local index then see the same routes, up to the swap of their nodes.
  bool identical_nodes() const { return identical_nodes_; }
  /// True when the nodes are identical, no built fabric joins them, and route(src, dst) is node 0's
  /// and node 1's route mapped by the node swap. Every permutation of such nodes then maps the
  /// cluster onto itself and this route onto the route between the images of src and dst (the
  /// collective planner reuses what it worked out for a pattern on the pattern's images).
  bool route_follows_node_symmetry(DeviceId src, DeviceId dst) const;
  /// A device's position among its node's devices (0 .. devices per node - 1).
  int local_index(DeviceId d) const { return device_local_[static_cast<std::size_t>(d)]; }
  /// The fat-tree or rail-optimized fabric between the nodes, if the cluster has one.
  const FabricLayout* fabric() const { return spec_.fabric ? &*spec_.fabric : nullptr; }

 private:
  struct RouteCache;
  void validate_and_index();
  void check_connected() const;
  // Shortest-path tree from one source device: the directed link into each endpoint (-1 none).
  void shortest_path_tree(DeviceId src, DirLinkId* parent_out) const;
  // The tree of `src` (nodes not identical): cached when small enough, otherwise computed into
  // `scratch`.
  const DirLinkId* tree_of(DeviceId src, std::vector<DirLinkId>& scratch) const;
  // Identical nodes: shortest_path_tree() over the window alone (nodes 0 and 1 and the shared
  // endpoints), indexed by window index; src is a device of node 0. Kept per source.
  void window_tree(DeviceId src, DirLinkId* parent_out) const;
  bool window_path(DeviceId src, DeviceId dst, std::vector<DirLinkId>& path, int& k, int& j) const;
  const DirLinkId* window_tree_of(DeviceId src) const;
  // An endpoint's index in the window, -1 outside it.
  std::int32_t window_index(EndpointId e) const;
  void index_window();
  // Identical nodes (cluster_symmetry.cpp): decides identical_nodes_ and fills the maps below.
  void index_node_symmetry();
  // The image of an endpoint / directed link under the swap of nodes `a` and `b`.
  EndpointId swap_endpoint(EndpointId e, int a, int b) const;
  DirLinkId swap_link(DirLinkId d, int a, int b) const;
  int endpoint_node(EndpointId e) const;
  // Fabric routes (cluster_fabric.cpp): node 0's devices' ways to their nearest NIC, and the
  // route between devices of different nodes built from the fabric's structure.
  void index_fabric();
  int exit_path(DeviceId d, std::vector<DirLinkId>& out) const;
  std::vector<DirLinkId> fabric_route(DeviceId src, DeviceId dst) const;

  ClusterSpec spec_;
  // Adjacency in CSR form: for endpoint e, adj_[adj_offsets_[e] .. adj_offsets_[e+1]) are the
  // directed links leaving e, in link-id order.
  std::vector<std::int32_t> adj_offsets_;
  std::vector<DirLinkId> adj_;
  std::vector<std::int32_t> node_devices_offsets_;
  std::vector<DeviceId> node_devices_;
  std::vector<double> dir_bandwidth_;
  double total_link_latency_ = 0;
  double slowest_link_ = 0;
  std::vector<std::int32_t> device_local_;  // per device: index among its node's devices
  std::vector<Bytes> memory_prefix_max_;    // per device: the most memory of devices 0 .. it
  bool identical_nodes_ = false;
  std::vector<std::int32_t> endpoint_local_;   // per endpoint: index in its node's list, -1 shared
  std::vector<std::int32_t> node_ep_offsets_;  // CSR: node k's endpoints in id order
  std::vector<EndpointId> node_eps_;
  std::vector<std::int32_t> link_node_;          // per link: the node it touches, -1 none
  std::vector<std::int32_t> link_local_;         // per link: index in its node's list
  std::vector<std::int32_t> node_link_offsets_;  // CSR: node k's links in id order
  std::vector<LinkId> node_links_;
  // Identical nodes: the window the two-node trees search - node 0's endpoints, node 1's, then the
  // shared ones in id order - and its adjacency (adj_'s order, heads inside the window only), so
  // that a tree costs what the window holds, not what the cluster does (a 131,072-GPU cluster's
  // one IB switch has 131,072 links).
  std::vector<EndpointId> window_eps_;
  std::vector<EndpointId> window_shared_;  // the shared endpoints, ascending
  std::vector<std::int32_t> window_adj_offsets_;
  std::vector<DirLinkId> window_adj_;
  std::vector<std::int32_t> window_adj_to_;  // each entry's head, as a window index
  std::vector<std::int32_t> exit_offsets_;  // identical nodes with a fabric: CSR of node 0's
  std::vector<DirLinkId> exit_links_;       // devices' links to their nearest NIC
  std::vector<std::int32_t> exit_nic_;      // and that NIC's index among the node's NICs
  // Shortest-path trees per source device, computed on first use and kept when devices x
  // endpoints fits in kMaxPrecomputedTreeEntries (otherwise recomputed per call).
  std::unique_ptr<RouteCache> cache_;
};

/// Trees for all sources are kept when devices x endpoints stays below this (64 MiB).
inline constexpr std::int64_t kMaxPrecomputedTreeEntries = 16'777'216;

}  // namespace parasim::hardware
