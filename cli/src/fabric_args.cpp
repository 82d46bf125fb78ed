#include "fabric_args.hpp"

#include <filesystem>

#include "parasim/common/error.hpp"
#include "parasim/hardware/fabric.hpp"

namespace parasim::cli {

void add_fabric_options(CLI::App& cmd, FabricArgs& a) {
  cmd.add_option("--fabric", a.fabric,
                 "Inter-node fabric of a preset: single-switch (default, non-blocking), fat-tree or rail-optimized "
                 "(leaf and spine switches, docs/simulator.md)");
  cmd.add_option("--oversubscription", a.oversubscription,
                 "Leaf down:up bandwidth of a fat-tree or rail-optimized fabric, e.g. 2:1 (default 1:1)");
}

std::string with_fabric(const std::string& cluster, const FabricArgs& a) {
  if (a.fabric.empty() && a.oversubscription.empty()) return cluster;
  const auto kind = hardware::parse_fabric_kind(a.fabric);
  if (!a.fabric.empty() && !kind)
    throw InputError("--fabric: expected single-switch, fat-tree or rail-optimized, found \"" + a.fabric + "\"");
  if (!a.oversubscription.empty()) {
    hardware::parse_oversubscription(a.oversubscription, "--oversubscription");
    if (!kind || *kind == hardware::FabricKind::SingleSwitch)
      throw InputError(
          "--oversubscription: describes the leaf uplinks of --fabric fat-tree or rail-optimized; "
          "give one of those too");
  }
  std::error_code ec;
  if (cluster.find('/') != std::string::npos || cluster.ends_with(".json") || std::filesystem::exists(cluster, ec))
    throw InputError("--fabric: applies to presets; the cluster file " + cluster +
                     " gives its fabric in its \"fabric\" field");
  std::string out = cluster + (cluster.find(':') == std::string::npos ? ":" : ",") + "fabric=" + a.fabric;
  if (!a.oversubscription.empty()) out += ",oversubscription=" + a.oversubscription;
  return out;
}

}  // namespace parasim::cli
