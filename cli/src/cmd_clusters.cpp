// `parasim clusters`: the cluster presets as a table (or JSON), and `parasim clusters show`
// for one preset or parasim.cluster/1 file: its devices, links and routes (or the file itself).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "fabric_args.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/common/units.hpp"
#include "parasim/hardware/cluster_json.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/hardware/device_spec.hpp"
#include "parasim/hardware/kernel_model.hpp"
#include "parasim/simulator/collectives.hpp"
#include "text_table.hpp"

namespace parasim::cli {

namespace {

using namespace parasim::hardware;

std::string gbps_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g GB/s", v);
  return buf;
}

// ------------------------------------------------------------------ parasim clusters

void list_clusters(int nodes, bool as_json, const FabricArgs& fabric) {
  nlohmann::json list = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows{
      {"name", "devices", "nodes", "device kind", "intra-node fabric", "inter-node fabric"}};
  for (const ClusterPresetInfo& p : cluster_presets()) {
    const std::string name = with_fabric(p.name, fabric);
    const Cluster c = make_cluster_preset(name, nodes);
    // The inter-node fabric a multi-node build would use, even when listing single nodes.
    const std::string inter = nodes > 1 ? c.spec().inter_node_fabric
                                        : make_cluster_preset_spec(name, 2).inter_node_fabric + " (with --nodes > 1)";
    std::string kinds;
    for (const auto& k : c.device_kinds()) kinds += (kinds.empty() ? "" : " + ") + k;
    if (as_json) {
      list.push_back({{"name", p.name},
                      {"devices", c.num_devices()},
                      {"nodes", c.num_nodes()},
                      {"device_kinds", c.device_kinds()},
                      {"intra_node_fabric", p.intra_node_fabric},
                      {"inter_node_fabric", inter},
                      {"default_ib", to_string(p.default_ib)},
                      {"description", p.description}});
    } else {
      rows.push_back({p.name, std::to_string(c.num_devices()), std::to_string(c.num_nodes()), kinds,
                      p.intra_node_fabric, inter});
    }
  }
  if (as_json) {
    std::cout << dump_json(list);
    return;
  }
  print_table(std::cout, rows, {false, true, true, false, false, false});
  std::cout << "\nChoose the InfiniBand generation with a suffix, e.g. dgx1-v100:ib=hdr (edr, hdr, ndr), the GPU's\n"
               "memory variant with gpu=KIND (dgx-a100:gpu=A100-SXM4-40GB), fewer NICs per NVSwitch node with\n"
               "nics=N (dgx-a100:ib=edr,nics=4), options separated by commas, and the\n"
               "fabric with --fabric fat-tree|rail-optimized [--oversubscription 2:1].\n"
               "`parasim clusters show NAME [--nodes K]` prints one; --json gives a parasim.cluster/1 file.\n";
}

// ------------------------------------------------------------------ parasim clusters show

// nvidia-smi-topo-like matrix: for each pair, the route's bottleneck bandwidth and hop count.
void print_route_matrix(const Cluster& c) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header{""};
  for (DeviceId d = 0; d < c.num_devices(); ++d) header.push_back(std::to_string(d));
  rows.push_back(header);
  for (DeviceId a = 0; a < c.num_devices(); ++a) {
    std::vector<std::string> row{std::to_string(a) + " " + c.device(a).name};
    for (DeviceId b = 0; b < c.num_devices(); ++b) {
      if (a == b) {
        row.push_back("X");
        continue;
      }
      const RouteSummary s = c.route_summary(a, b);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g/%d", s.bottleneck.value, s.hops);
      row.push_back(buf);
    }
    rows.push_back(row);
  }
  std::vector<bool> right(header.size(), true);
  right[0] = false;
  print_table(std::cout, rows, right);
}

// How parasim prices each GPU's kernels when no measured profile exists, every number with its
// source (docs/fidelity.md derives the model).
void print_kernel_models(const std::map<std::string, int>& kinds) {
  for (const auto& [kind, count] : kinds) {
    const auto spec = find_device_spec(kind);
    if (!spec) continue;  // a cluster file's own device kind: priced only by a profile
    std::cout << "\nkernel model of " << kind << " (used without a measured profile; docs/fidelity.md):\n";
    std::vector<std::vector<std::string>> rows{{"quantity", "value", "source"}};
    for (const KernelModelFigure& f : kernel_model_figures(kernel_model(*spec)))
      rows.push_back({f.quantity, f.value, f.source});
    print_table(std::cout, rows, {false, false, false});
  }
}

// The fabric's tiers: switches per tier, ports, link bandwidths and the oversubscription.
void print_fabric(const FabricLayout& f) {
  std::cout << "\nfabric: " << to_string(f.options.kind) << ", " << f.tiers << (f.tiers == 1 ? " tier" : " tiers")
            << ", " << f.switch_product << " (" << f.radix << " ports), D-mod-k routing\n";
  std::vector<std::vector<std::string>> rows{
      {"tier", "switches", "ports down", "ports up", "uplink bandwidth", "oversubscription"}};
  const std::string over = oversubscription_text(f.options.oversubscription);
  const std::string leaf_role = f.options.kind == FabricKind::RailOptimized
                                    ? "leaf (rail; " + std::to_string(f.down) + " nodes per SU)"
                                    : std::string("leaf");
  rows.push_back({leaf_role, std::to_string(f.leaves),
                  std::to_string(f.down) + " x " + gbps_text(f.nic_bandwidth.value),
                  f.tiers >= 2 ? std::to_string(f.up) : "0", f.tiers >= 2 ? gbps_text(f.uplink_bandwidth.value) : "-",
                  f.tiers >= 2 ? over : "-"});
  if (f.tiers == 2)
    rows.push_back({"spine", std::to_string(f.middle), std::to_string(f.leaves) + " used of " + std::to_string(f.radix),
                    "0", "-", "1:1"});
  if (f.tiers == 3) {
    rows.push_back({"aggregation (" + std::to_string(f.pods) + " pods)", std::to_string(f.middle), std::to_string(f.up),
                    std::to_string(f.up), gbps_text(f.core_bandwidth.value), "1:1"});
    rows.push_back({"core", std::to_string(f.cores), std::to_string(f.pods) + " used of " + std::to_string(f.radix),
                    "0", "-", "1:1"});
  }
  print_table(std::cout, rows, {false, true, true, true, true, true});
}

void show_cluster(const std::string& name, int nodes, bool as_json) {
  const Cluster c = resolve_cluster(name, nodes);
  if (as_json) {
    std::cout << dump_json(cluster_to_json(c));
    return;
  }
  const ClusterSpec& s = c.spec();
  std::cout << s.name << ": " << s.description << "\n"
            << "  devices            " << c.num_devices() << " on " << c.num_nodes() << " node(s), up to "
            << c.max_devices_per_node() << " per node\n"
            << "  intra-node fabric  " << s.intra_node_fabric << "\n"
            << "  inter-node fabric  " << s.inter_node_fabric << "\n"
            << "  NCCL channels      "
            << (s.nccl_channels ? std::to_string(*s.nccl_channels) + " per collective (the cluster's nccl_channels)"
                                : std::string("each part's own (the kernel model below)"))
            << "\n\n";

  std::map<std::string, int> kinds;
  for (const auto& d : s.devices) ++kinds[d.kind];
  std::vector<std::vector<std::string>> dev_rows{{"device kind", "count", "memory"}};
  for (const auto& [kind, count] : kinds) {
    const std::string& wanted = kind;  // clang 14 (the sanitizer build) cannot capture a structured binding
    const auto it =
        std::find_if(s.devices.begin(), s.devices.end(), [&](const ClusterDevice& d) { return d.kind == wanted; });
    dev_rows.push_back({kind, std::to_string(count), format_bytes(it->memory)});
  }
  print_table(std::cout, dev_rows, {false, true, true});

  // Links grouped by (kind, bandwidth, latency): a 1000-node cluster stays readable.
  std::map<std::tuple<std::string, double, TimeNs>, int> groups;
  for (const auto& l : s.links) ++groups[{std::string(to_string(l.kind)), l.bandwidth.value, l.alpha}];
  std::vector<std::vector<std::string>> link_rows{{"link kind", "count", "bandwidth/direction", "latency"}};
  for (const auto& [key, count] : groups)
    link_rows.push_back(
        {std::get<0>(key), std::to_string(count), gbps_text(std::get<1>(key)), format_time(std::get<2>(key))});
  std::cout << "\n";
  print_table(std::cout, link_rows, {false, true, true, true});

  if (const FabricLayout* f = c.fabric()) print_fabric(*f);

  print_kernel_models(kinds);

  std::cout << "\ncollectives (NCCL cost model, the default; docs/fidelity.md):\n";
  std::vector<std::vector<std::string>> coll_rows{{"quantity", "value", "source"}};
  for (const simulator::CollectiveModelFigure& f : simulator::nccl_model_figures())
    coll_rows.push_back({f.quantity, f.value, f.source});
  print_table(std::cout, coll_rows, {false, false, false});

  if (c.num_devices() <= 16) {
    std::cout << "\nroutes (bottleneck GB/s / hops; GPUs never forward when another path exists):\n";
    print_route_matrix(c);
  }
}

}  // namespace

void register_clusters(CLI::App& app) {
  auto* cmd = app.add_subcommand("clusters", "List the cluster presets, or show one preset or cluster file");
  auto nodes = std::make_shared<int>(1);
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("--nodes", *nodes, "Nodes joined by InfiniBand (presets only)")
      ->check(CLI::Range(1, kMaxPresetNodes));
  cmd->add_flag("--json", *as_json, "Print JSON instead of a table");
  auto fabric = std::make_shared<FabricArgs>();
  add_fabric_options(*cmd, *fabric);

  auto* show = cmd->add_subcommand(
      "show", "Show one cluster: a preset name (e.g. dgx1-v100:ib=hdr) or a parasim.cluster/1 file");
  auto name = std::make_shared<std::string>();
  auto show_nodes = std::make_shared<int>(1);
  auto show_json = std::make_shared<bool>(false);
  show->add_option("name", *name, "Preset name or cluster file")->required();
  show->add_option("--nodes", *show_nodes, "Nodes joined by InfiniBand (presets only)")
      ->check(CLI::Range(1, kMaxPresetNodes));
  show->add_flag("--json", *show_json, "Print the parasim.cluster/1 JSON (loadable with --cluster FILE)");
  auto show_fabric = std::make_shared<FabricArgs>();
  add_fabric_options(*show, *show_fabric);
  show->callback([=] { show_cluster(with_fabric(*name, *show_fabric), *show_nodes, *show_json); });

  cmd->callback([=] {
    if (cmd->got_subcommand(show)) return;  // `clusters show` already ran
    list_clusters(*nodes, *as_json, *fabric);
  });
}

}  // namespace parasim::cli
