// Cluster validation, indexing and accessors. Routing lives in cluster_routing.cpp.
#include "parasim/hardware/cluster.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <mutex>

#include "parasim/common/error.hpp"
#include "parasim/hardware/device_spec.hpp"
#include "cluster_route_cache.hpp"

namespace parasim::hardware {

namespace {

struct KindName {
  LinkKind kind;
  std::string_view name;
};
constexpr KindName kLinkKinds[] = {
    {LinkKind::NVLink, "nvlink"}, {LinkKind::NVSwitch, "nvswitch"}, {LinkKind::PCIe, "pcie"},
    {LinkKind::QPI, "qpi"},       {LinkKind::InfiniBand, "ib"},     {LinkKind::Ethernet, "ethernet"},
};

struct EndpointKindName {
  EndpointKind kind;
  std::string_view name;
};
constexpr EndpointKindName kEndpointKinds[] = {
    {EndpointKind::Device, "device"},  {EndpointKind::Cpu, "cpu"}, {EndpointKind::PcieSwitch, "pcie_switch"},
    {EndpointKind::NvSwitch, "nvswitch"}, {EndpointKind::Nic, "nic"}, {EndpointKind::IbSwitch, "ib_switch"},
};

std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

// Names seen so far, to find a duplicate: views of strings that outlive the set, in an
// open-addressing table of their indices (a 131,072-GPU preset names 393,216 links; a
// node-based set spent most of the cluster's construction allocating and freeing its nodes).
class NameSet {
 public:
  explicit NameSet(std::size_t capacity) : slots_(std::bit_ceil(2 * capacity + 2), 0) { names_.reserve(capacity); }
  /// False when `name` was inserted before.
  bool insert(std::string_view name) {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = std::hash<std::string_view>{}(name)&mask;; i = (i + 1) & mask) {
      if (slots_[i] == 0) {
        names_.push_back(name);
        slots_[i] = static_cast<std::uint32_t>(names_.size());
        return true;
      }
      if (names_[slots_[i] - 1] == name) return false;
    }
  }

 private:
  std::vector<std::string_view> names_;
  std::vector<std::uint32_t> slots_;  // index + 1 into names_, 0 empty; at most half full
};

}  // namespace

std::string_view to_string(LinkKind k) {
  for (const auto& e : kLinkKinds)
    if (e.kind == k) return e.name;
  return "?";
}

std::string_view to_string(EndpointKind k) {
  for (const auto& e : kEndpointKinds)
    if (e.kind == k) return e.name;
  return "?";
}

std::optional<LinkKind> parse_link_kind(std::string_view s) {
  for (const auto& e : kLinkKinds)
    if (e.name == s) return e.kind;
  if (s == "infiniband") return LinkKind::InfiniBand;
  return std::nullopt;
}

std::optional<EndpointKind> parse_endpoint_kind(std::string_view s) {
  for (const auto& e : kEndpointKinds)
    if (e.name == s && e.kind != EndpointKind::Device) return e.kind;
  return std::nullopt;
}

Cluster::Cluster(ClusterSpec spec) : spec_(std::move(spec)), cache_(std::make_unique<RouteCache>()) {
  validate_and_index();
  check_connected();
}

Cluster::Cluster(const Cluster& other) : Cluster(other.spec_) {}

Cluster& Cluster::operator=(const Cluster& other) {
  if (this != &other) *this = Cluster(other.spec_);
  return *this;
}

Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;
Cluster::~Cluster() = default;

void Cluster::validate_and_index() {
  const std::string where = "cluster " + in_quotes(spec_.name) + ": ";
  if (spec_.name.empty()) throw InputError("cluster: the name must not be empty");
  const auto d = static_cast<std::int64_t>(spec_.devices.size());
  if (d < 1 || d > kMaxClusterDevices)
    throw InputError(where + "expected 1 to " + std::to_string(kMaxClusterDevices) + " devices, found " +
                     std::to_string(d));
  if (static_cast<std::int64_t>(spec_.endpoints.size()) > kMaxClusterEndpoints)
    throw InputError(where + "more than " + std::to_string(kMaxClusterEndpoints) + " endpoints");
  if (static_cast<std::int64_t>(spec_.links.size()) > kMaxClusterLinks)
    throw InputError(where + "more than " + std::to_string(kMaxClusterLinks) + " links");

  // One namespace for devices and endpoints, another for links (the names stay put while this runs).
  NameSet names(spec_.devices.size() + spec_.endpoints.size());
  std::int32_t max_node = 0;
  for (std::size_t i = 0; i < spec_.devices.size(); ++i) {
    auto& dev = spec_.devices[i];
    if (dev.name.empty()) throw InputError(where + "device " + std::to_string(i) + " has an empty name");
    if (!names.insert(dev.name)) throw InputError(where + "duplicate endpoint name " + in_quotes(dev.name));
    const DeviceSpec& ds = device_spec(dev.kind);  // InputError listing the known kinds
    dev.kind = ds.kind;
    if (dev.memory < 0) throw InputError(where + "device " + in_quotes(dev.name) + ": memory must be >= 0");
    if (dev.memory == 0) dev.memory = ds.memory;
    if (dev.node < 0 || dev.node >= kMaxClusterDevices)
      throw InputError(where + "device " + in_quotes(dev.name) + ": node must be in [0, " +
                       std::to_string(kMaxClusterDevices - 1) + "], found " + std::to_string(dev.node));
    max_node = std::max(max_node, dev.node);
  }
  if (spec_.nccl_channels && (*spec_.nccl_channels < 0 || *spec_.nccl_channels > kMaxNcclChannels))
    throw InputError(where + "nccl_channels must be in [0, " + std::to_string(kMaxNcclChannels) + "], found " +
                     std::to_string(*spec_.nccl_channels));
  memory_prefix_max_.resize(spec_.devices.size());
  for (std::size_t i = 0; i < spec_.devices.size(); ++i)
    memory_prefix_max_[i] = std::max(i == 0 ? Bytes{0} : memory_prefix_max_[i - 1], spec_.devices[i].memory);
  for (std::size_t i = 0; i < spec_.endpoints.size(); ++i) {
    const auto& ep = spec_.endpoints[i];
    if (ep.name.empty()) throw InputError(where + "endpoint " + std::to_string(i) + " has an empty name");
    if (ep.kind == EndpointKind::Device)
      throw InputError(where + "endpoint " + in_quotes(ep.name) + ": devices belong in the device list");
    if (!names.insert(ep.name)) throw InputError(where + "duplicate endpoint name " + in_quotes(ep.name));
    if (ep.node < -1 || ep.node > max_node)
      throw InputError(where + "endpoint " + in_quotes(ep.name) + ": node must be -1 (shared) or in [0, " +
                       std::to_string(max_node) + "], found " + std::to_string(ep.node));
  }

  // Nodes must be dense (0..K-1, none empty) so "node k" means the same thing everywhere.
  std::vector<std::int32_t> count(static_cast<std::size_t>(max_node) + 1, 0);
  for (const auto& dev : spec_.devices) ++count[static_cast<std::size_t>(dev.node)];
  for (std::size_t n = 0; n < count.size(); ++n)
    if (count[n] == 0)
      throw InputError(where + "node " + std::to_string(n) + " has no devices (nodes must be numbered 0.." +
                       std::to_string(max_node) + " without gaps)");
  node_devices_offsets_.assign(count.size() + 1, 0);
  for (std::size_t n = 0; n < count.size(); ++n) node_devices_offsets_[n + 1] = node_devices_offsets_[n] + count[n];
  node_devices_.assign(spec_.devices.size(), 0);
  {
    std::vector<std::int32_t> fill(node_devices_offsets_.begin(), node_devices_offsets_.end() - 1);
    for (std::size_t i = 0; i < spec_.devices.size(); ++i)
      node_devices_[static_cast<std::size_t>(fill[static_cast<std::size_t>(spec_.devices[i].node)]++)] =
          static_cast<DeviceId>(i);
  }

  const auto n_endpoints = static_cast<EndpointId>(spec_.devices.size() + spec_.endpoints.size());
  NameSet link_names(spec_.links.size());
  for (std::size_t i = 0; i < spec_.links.size(); ++i) {
    auto& l = spec_.links[i];
    // The message prefix, made only for an error.
    const auto lw = [&] { return where + "link " + (l.name.empty() ? std::to_string(i) : in_quotes(l.name)) + ": "; };
    if (l.a < 0 || l.a >= n_endpoints || l.b < 0 || l.b >= n_endpoints)
      throw InputError(lw() + "connects an unknown endpoint");
    if (l.a == l.b) throw InputError(lw() + "connects " + in_quotes(endpoint_name(l.a)) + " to itself");
    if (!(l.bandwidth.value > 0) || !std::isfinite(l.bandwidth.value))
      throw InputError(lw() + "bandwidth must be a finite number > 0 GB/s, found " + std::to_string(l.bandwidth.value));
    if (l.alpha < 0) throw InputError(lw() + "latency must be >= 0 ns, found " + std::to_string(l.alpha));
    if (l.name.empty()) l.name = endpoint_name(l.a) + "-" + endpoint_name(l.b);
    if (!link_names.insert(l.name)) throw InputError(where + "duplicate link name " + in_quotes(l.name));
  }

  // CSR adjacency of directed links, in link-id order per endpoint (the routing tie-break).
  adj_offsets_.assign(static_cast<std::size_t>(n_endpoints) + 1, 0);
  for (const auto& l : spec_.links) {
    ++adj_offsets_[static_cast<std::size_t>(l.a) + 1];
    ++adj_offsets_[static_cast<std::size_t>(l.b) + 1];
  }
  for (std::size_t e = 0; e < static_cast<std::size_t>(n_endpoints); ++e) adj_offsets_[e + 1] += adj_offsets_[e];
  adj_.assign(2 * spec_.links.size(), 0);
  std::vector<std::int32_t> fill(adj_offsets_.begin(), adj_offsets_.end() - 1);
  for (std::size_t i = 0; i < spec_.links.size(); ++i) {
    const auto& l = spec_.links[i];
    adj_[static_cast<std::size_t>(fill[static_cast<std::size_t>(l.a)]++)] = directed(static_cast<LinkId>(i), false);
    adj_[static_cast<std::size_t>(fill[static_cast<std::size_t>(l.b)]++)] = directed(static_cast<LinkId>(i), true);
  }

  dir_bandwidth_.assign(adj_.size(), 0);
  total_link_latency_ = 0;
  slowest_link_ = 0;
  for (std::size_t i = 0; i < spec_.links.size(); ++i) {
    const auto& l = spec_.links[i];
    dir_bandwidth_[2 * i] = dir_bandwidth_[2 * i + 1] = l.bandwidth.value;
    total_link_latency_ += static_cast<double>(l.alpha);
    if (slowest_link_ == 0 || l.bandwidth.value < slowest_link_) slowest_link_ = l.bandwidth.value;
  }

  device_local_.assign(spec_.devices.size(), 0);
  for (std::size_t n = 0; n + 1 < node_devices_offsets_.size(); ++n)
    for (auto i = node_devices_offsets_[n]; i < node_devices_offsets_[n + 1]; ++i)
      device_local_[static_cast<std::size_t>(node_devices_[static_cast<std::size_t>(i)])] =
          i - node_devices_offsets_[n];
  index_node_symmetry();
  index_fabric();
  cache_->reset(spec_.devices.size(), static_cast<std::size_t>(n_endpoints),
                identical_nodes_ ? static_cast<std::size_t>(node_ep_offsets_[1]) : 0);
}

void Cluster::check_connected() const {
  // Links are full duplex, so undirected reachability from device 0 decides connectivity; a
  // device reachable only through another device is still connected (routed through it).
  const auto n = static_cast<std::size_t>(num_endpoints());
  std::vector<std::uint8_t> seen(n, 0);
  std::vector<EndpointId> stack{0};
  seen[0] = 1;
  while (!stack.empty()) {
    const EndpointId e = stack.back();
    stack.pop_back();
    for (auto i = adj_offsets_[static_cast<std::size_t>(e)]; i < adj_offsets_[static_cast<std::size_t>(e) + 1]; ++i) {
      const EndpointId to = dir_to(adj_[static_cast<std::size_t>(i)]);
      if (!seen[static_cast<std::size_t>(to)]) {
        seen[static_cast<std::size_t>(to)] = 1;
        stack.push_back(to);
      }
    }
  }
  for (DeviceId dv = 0; dv < num_devices(); ++dv)
    if (!seen[static_cast<std::size_t>(dv)])
      throw InputError("cluster " + in_quotes(spec_.name) + ": device " + in_quotes(device(dv).name) +
                       " is not connected to device " + in_quotes(device(0).name) + " by any path of links");
}

const std::string& Cluster::endpoint_name(EndpointId e) const {
  const auto d = static_cast<EndpointId>(spec_.devices.size());
  return e < d ? spec_.devices[static_cast<std::size_t>(e)].name
               : spec_.endpoints[static_cast<std::size_t>(e - d)].name;
}

EndpointKind Cluster::endpoint_kind(EndpointId e) const {
  const auto d = static_cast<EndpointId>(spec_.devices.size());
  return e < d ? EndpointKind::Device : spec_.endpoints[static_cast<std::size_t>(e - d)].kind;
}

std::optional<EndpointId> Cluster::find_endpoint(std::string_view name) const {
  for (EndpointId e = 0; e < num_endpoints(); ++e)
    if (endpoint_name(e) == name) return e;
  return std::nullopt;
}

std::string Cluster::directed_link_name(DirLinkId d) const {
  return endpoint_name(dir_from(d)) + "->" + endpoint_name(dir_to(d)) + " (" +
         std::string(to_string(link(link_of(d)).kind)) + ")";
}

std::span<const DeviceId> Cluster::devices_of_node(int node) const {
  if (node < 0 || node >= num_nodes()) return {};
  const auto b = static_cast<std::size_t>(node_devices_offsets_[static_cast<std::size_t>(node)]);
  const auto e = static_cast<std::size_t>(node_devices_offsets_[static_cast<std::size_t>(node) + 1]);
  return std::span<const DeviceId>(node_devices_.data() + b, e - b);
}

int Cluster::max_devices_per_node() const {
  int best = 0;
  for (int n = 0; n < num_nodes(); ++n) best = std::max(best, static_cast<int>(devices_of_node(n).size()));
  return best;
}

std::vector<std::string> Cluster::device_kinds() const {
  std::vector<std::string> kinds;
  for (const auto& d : spec_.devices)
    if (std::find(kinds.begin(), kinds.end(), d.kind) == kinds.end()) kinds.push_back(d.kind);
  return kinds;
}

}  // namespace parasim::hardware
