// `--fabric KIND` and `--oversubscription R:1`: the inter-node fabric of a preset cluster, passed on
// as options in the preset's name ("dgx-h100:fabric=fat-tree,oversubscription=2:1"), so that
// every consumer of the cluster name (planner, projection, report) builds the same cluster.
//
// Example:
//   FabricArgs f;
//   add_fabric_options(*cmd, f);
//   ... in the callback: in.cluster = with_fabric(in.cluster, f);
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace parasim::cli {

struct FabricArgs {
  std::string fabric;            // empty: the preset's (one non-blocking switch)
  std::string oversubscription;  // empty: 1:1
};

void add_fabric_options(CLI::App& cmd, FabricArgs& a);
/// `cluster` with the fabric options appended; unchanged when none were given. InputError (exit 2)
/// naming the option for a bad kind or ratio, --oversubscription without a fabric that has
/// uplinks, or a cluster file (which gives its fabric in its "fabric" field).
std::string with_fabric(const std::string& cluster, const FabricArgs& a);

}  // namespace parasim::cli
