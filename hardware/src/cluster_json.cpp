#include "parasim/hardware/cluster_json.hpp"

#include <cmath>
#include <unordered_map>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/hardware/device_spec.hpp"

namespace parasim::hardware {

namespace {

std::string known_device_kinds() {
  std::string known;
  for (const auto& s : device_specs()) known += (known.empty() ? "" : ", ") + s.kind;
  return known;
}

std::string optional_string(const JsonField& obj, const std::string& key) {
  auto f = obj.find(key);
  return f ? f->as_string() : std::string();
}

std::string nonempty_string(const JsonField& f) {
  std::string s = f.as_string();
  if (s.empty()) f.fail("a non-empty string");
  return s;
}

double positive_number(const JsonField& f) {
  if (!f.raw().is_number()) f.fail("a number > 0");
  const double v = f.raw().get<double>();
  if (!std::isfinite(v) || !(v > 0)) f.fail("a number > 0");
  return v;
}

void check_count(const JsonField& arr, std::int64_t min, std::int64_t max, const std::string& what) {
  const auto n = static_cast<std::int64_t>(arr.array_size());
  if (n < min || n > max)
    throw InputError(arr.file() + ": " + arr.path() + ": expected " + std::to_string(min) + " to " +
                     std::to_string(max) + " " + what + ", found " + std::to_string(n));
}

}  // namespace

Cluster cluster_from_json(const nlohmann::json& doc, const std::string& origin) {
  JsonField root{doc, origin, "$"};
  root.expect_schema(kClusterSchema);
  ClusterSpec spec;
  spec.name = nonempty_string(root.at("name"));
  spec.description = optional_string(root, "description");
  spec.intra_node_fabric = optional_string(root, "intra_node_fabric");
  spec.inter_node_fabric = optional_string(root, "inter_node_fabric");
  if (auto ch = root.find("nccl_channels")) spec.nccl_channels = static_cast<int>(ch->as_int(0, kMaxNcclChannels));

  std::unordered_map<std::string, std::pair<EndpointId, std::string>> names;  // name -> (id, JSON path)
  auto claim_name = [&](const JsonField& f, EndpointId id) {
    std::string name = nonempty_string(f);
    auto [it, fresh] = names.emplace(name, std::make_pair(id, f.path()));
    if (!fresh)
      throw InputError(f.file() + ": " + f.path() + ": duplicate name \"" + name + "\" (also " + it->second.second +
                       ")");
    return name;
  };

  const JsonField devices = root.at("devices");
  check_count(devices, 1, kMaxClusterDevices, "devices");
  spec.devices.reserve(devices.array_size());
  for (const auto& d : devices.items_of_array()) {
    ClusterDevice dev;
    dev.name = claim_name(d.at("name"), static_cast<EndpointId>(spec.devices.size()));
    const JsonField kind = d.at("kind");
    const auto ds = find_device_spec(kind.as_string());
    if (!ds) kind.fail("a known device kind (" + known_device_kinds() + ")");
    dev.kind = ds->kind;
    if (auto n = d.find("node")) dev.node = static_cast<std::int32_t>(n->as_int(0, kMaxClusterDevices - 1));
    if (auto m = d.find("memory_bytes")) dev.memory = m->as_int(1);
    spec.devices.push_back(std::move(dev));
  }

  if (auto endpoints = root.find("endpoints")) {
    check_count(*endpoints, 0, kMaxClusterEndpoints, "endpoints");
    for (const auto& e : endpoints->items_of_array()) {
      ClusterEndpoint ep;
      ep.name = claim_name(e.at("name"), static_cast<EndpointId>(spec.devices.size() + spec.endpoints.size()));
      const JsonField kind = e.at("kind");
      const auto k = parse_endpoint_kind(kind.as_string());
      if (!k) kind.fail("one of \"cpu\", \"pcie_switch\", \"nvswitch\", \"nic\", \"ib_switch\"");
      ep.kind = *k;
      if (auto n = e.find("node")) ep.node = static_cast<std::int32_t>(n->as_int(-1, kMaxClusterDevices - 1));
      spec.endpoints.push_back(std::move(ep));
    }
  }

  const JsonField links = root.at("links");
  check_count(links, 0, kMaxClusterLinks, "links");
  std::unordered_map<std::string, std::string> link_names;  // name -> JSON path
  auto endpoint_ref = [&](const JsonField& f) {
    const std::string name = f.as_string();
    auto it = names.find(name);
    if (it == names.end()) f.fail("the name of a device or endpoint");
    return it->second.first;
  };
  for (const auto& l : links.items_of_array()) {
    ClusterLink link;
    if (auto n = l.find("name")) {
      link.name = nonempty_string(*n);
      auto [it, fresh] = link_names.emplace(link.name, n->path());
      if (!fresh)
        throw InputError(n->file() + ": " + n->path() + ": duplicate link name \"" + link.name + "\" (also " +
                         it->second + ")");
    }
    const JsonField kind = l.at("kind");
    const auto k = parse_link_kind(kind.as_string());
    if (!k) kind.fail("one of \"nvlink\", \"nvswitch\", \"pcie\", \"qpi\", \"ib\", \"ethernet\"");
    link.kind = *k;
    link.a = endpoint_ref(l.at("a"));
    link.b = endpoint_ref(l.at("b"));
    if (link.a == link.b) l.at("b").fail("an endpoint other than \"a\"");
    // Sane ranges, not physics: 10 s of latency or a link outside 1 KB/s .. 1 PB/s is a typo (or a
    // unit mistake), and these bounds keep route latencies and transfer times inside int64.
    link.alpha = l.at("latency_ns").as_int(0, 10'000'000'000);
    link.bandwidth = GBps{positive_number(l.at("bandwidth_gbps"))};
    if (link.bandwidth.value < 1e-6 || link.bandwidth.value > 1e6)
      l.at("bandwidth_gbps").fail("a bandwidth in GB/s between 1e-6 (1 KB/s) and 1e6 (1 PB/s)");
    spec.links.push_back(std::move(link));
  }

  if (auto fab = root.find("fabric")) {
    // The inter-node fabric is generated: the file lists the nodes with their NICs, and these
    // options say how the NICs are joined (fabric.hpp).
    FabricOptions o;
    const JsonField kind = fab->at("kind");
    const auto k = parse_fabric_kind(kind.as_string());
    if (!k || *k == FabricKind::SingleSwitch)
      kind.fail("\"fat-tree\" or \"rail-optimized\" (a single switch is listed as an endpoint with its links)");
    o.kind = *k;
    if (auto r = fab->find("oversubscription"))
      o.oversubscription = parse_oversubscription(r->as_string(), r->file() + ": " + r->path());
    GBps nic_bw{50.0};
    if (auto sw = fab->find("switch")) {
      o.switch_model = sw->as_string();
      const SwitchModel* m = find_switch_model(o.switch_model);
      if (!m) {
        std::string known;
        for (const auto& x : switch_models()) known += (known.empty() ? "" : ", ") + x.name;
        sw->fail("a known switch (" + known + ")");
      }
      nic_bw = m->port_bandwidth;
    }
    if (auto r = fab->find("radix")) {
      o.radix = static_cast<int>(r->as_int(kMinSwitchRadix, kMaxSwitchRadix));
      if (o.radix % 2 != 0) r->fail("an even number of switch ports");
    }
    if (auto b = fab->find("nic_bandwidth_gbps")) {
      nic_bw = GBps{positive_number(*b)};
      if (nic_bw.value < 1e-6 || nic_bw.value > 1e6) b->fail("a bandwidth in GB/s between 1e-6 and 1e6");
    }
    TimeNs nic_alpha = kIbHopAlphaNs;
    if (auto a = fab->find("nic_latency_ns")) nic_alpha = a->as_int(0, 10'000'000'000);
    for (const auto& [key, value] : fab->raw().items())
      if (key != "kind" && key != "oversubscription" && key != "switch" && key != "radix" &&
          key != "nic_bandwidth_gbps" && key != "nic_latency_ns")
        throw InputError(origin + ": $.fabric." + key +
                         ": unknown field; expected kind, oversubscription, switch, radix, nic_bandwidth_gbps, "
                         "nic_latency_ns");
    build_fabric(spec, o, nic_bw, nic_alpha, origin + ": $.fabric.");
  }

  try {
    return Cluster(std::move(spec));
  } catch (const InputError& e) {
    throw InputError(origin + ": " + e.what());
  }
}

Cluster load_cluster_file(const std::filesystem::path& path) {
  return cluster_from_json(read_json_file(path), path.string());
}

nlohmann::json cluster_to_json(const Cluster& c) {
  const ClusterSpec& s = c.spec();
  nlohmann::json j;
  j["schema"] = kClusterSchema;
  j["name"] = s.name;
  j["description"] = s.description;
  j["intra_node_fabric"] = s.intra_node_fabric;
  j["inter_node_fabric"] = s.inter_node_fabric;
  if (s.nccl_channels) j["nccl_channels"] = *s.nccl_channels;
  auto& devices = j["devices"] = nlohmann::json::array();
  for (const auto& d : s.devices)
    devices.push_back({{"name", d.name}, {"kind", d.kind}, {"node", d.node}, {"memory_bytes", d.memory}});
  // A generated fabric is written as its options, not as its switches and links.
  const FabricLayout* fabric = c.fabric();
  const std::size_t n_endpoints =
      fabric ? static_cast<std::size_t>(fabric->first_switch) - s.devices.size() : s.endpoints.size();
  const std::size_t n_links = fabric ? static_cast<std::size_t>(fabric->first_link) : s.links.size();
  auto& endpoints = j["endpoints"] = nlohmann::json::array();
  for (std::size_t i = 0; i < n_endpoints; ++i) {
    const auto& e = s.endpoints[i];
    endpoints.push_back({{"name", e.name}, {"kind", std::string(to_string(e.kind))}, {"node", e.node}});
  }
  auto& links = j["links"] = nlohmann::json::array();
  for (std::size_t i = 0; i < n_links; ++i) {
    const auto& l = s.links[i];
    links.push_back({{"name", l.name},
                     {"kind", std::string(to_string(l.kind))},
                     {"a", c.endpoint_name(l.a)},
                     {"b", c.endpoint_name(l.b)},
                     {"latency_ns", l.alpha},
                     {"bandwidth_gbps", l.bandwidth.value}});
  }
  if (fabric)
    j["fabric"] = {{"kind", std::string(to_string(fabric->options.kind))},
                   {"oversubscription", oversubscription_text(fabric->options.oversubscription)},
                   {"switch", fabric->switch_name},
                   {"radix", fabric->radix},
                   {"nic_bandwidth_gbps", fabric->nic_bandwidth.value},
                   {"nic_latency_ns", fabric->nic_alpha}};
  return j;
}

void save_cluster_file(const Cluster& cluster, const std::filesystem::path& path) {
  write_file_atomic(path, dump_json(cluster_to_json(cluster)));
}

Cluster resolve_cluster(const std::string& preset_or_file, int nodes) {
  std::error_code ec;
  const bool looks_like_file = preset_or_file.find('/') != std::string::npos ||
                               preset_or_file.ends_with(".json") || std::filesystem::exists(preset_or_file, ec);
  if (!looks_like_file) return make_cluster_preset(preset_or_file, nodes);
  if (nodes != 1)
    throw InputError(preset_or_file + ": --nodes applies to presets only; a cluster file lists its own nodes");
  return load_cluster_file(preset_or_file);
}

}  // namespace parasim::hardware
