// The `parasim.cluster/1` file format: load (with errors naming file + JSON path), save, and
// the CLI's "preset name or file" resolution.
//
//   {
//     "schema": "parasim.cluster/1",
//     "name": "my-box",
//     "description": "...", "intra_node_fabric": "...", "inter_node_fabric": "...",   (optional)
//     "devices":   [{"name": "gpu0", "kind": "V100-SXM2-32GB", "node": 0, "memory_bytes": 34359738368}],
//     "endpoints": [{"name": "cpu0", "kind": "cpu", "node": 0}],        (cpu, pcie_switch, nvswitch, nic, ib_switch)
//     "links":     [{"name": "l0", "kind": "pcie", "a": "gpu0", "b": "cpu0",
//                    "latency_ns": 1000, "bandwidth_gbps": 12.0}]       (per direction, full duplex)
//     "fabric":    {"kind": "fat-tree", "oversubscription": "2:1",      (optional: generated switches
//                   "switch": "qm9700", "radix": 64,                      joining every node's NICs,
//                   "nic_bandwidth_gbps": 50, "nic_latency_ns": 1500}     fabric.hpp; rail-optimized too)
//   }
//
// Example:
//   Cluster c = resolve_cluster("dgx1-v100", 2);        // a preset
//   save_cluster_file(c, "dgx1x2.json");
//   Cluster d = resolve_cluster("dgx1x2.json", 1);      // the same cluster, from the file
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "parasim/hardware/cluster.hpp"

namespace parasim::hardware {

inline constexpr const char* kClusterSchema = "parasim.cluster/1";

Cluster cluster_from_json(const nlohmann::json& doc, const std::string& origin);
Cluster load_cluster_file(const std::filesystem::path& path);
nlohmann::json cluster_to_json(const Cluster& cluster);
void save_cluster_file(const Cluster& cluster, const std::filesystem::path& path);

/// A preset name (optionally "name:ib=hdr") or a path to a parasim.cluster/1 file. `nodes`
/// applies to presets; a file already says how many nodes it has, so nodes must be 1 there.
Cluster resolve_cluster(const std::string& preset_or_file, int nodes = 1);

}  // namespace parasim::hardware
