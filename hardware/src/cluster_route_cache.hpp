// Private: the per-source shortest-path trees behind Cluster::route(), filled on first use.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "parasim/hardware/cluster.hpp"

namespace parasim::hardware {

/// Budget of the lazily kept trees of clusters too big for the full table (256 MiB): enough for
/// every source of a 5,128-GPU DGX A100 cluster (10,898 endpoints).
inline constexpr std::int64_t kMaxSparseTreeEntries = 4 * kMaxPrecomputedTreeEntries;

struct Cluster::RouteCache {
  std::mutex mu;
  bool enabled = false;                // false: too big to keep, trees are computed per call
  std::size_t endpoints = 0;
  std::vector<DirLinkId> trees;        // [src * endpoints + e] = directed link into e
  std::vector<std::uint8_t> ready;     // per source device
  // When the full table is too big: the trees of the sources asked for so far, up to
  // kMaxSparseTreeEntries (never evicted, so handed-out pointers stay valid). Planners ask for routes
  // from a handful of devices thousands of times on clusters of thousands of GPUs.
  std::unordered_map<DeviceId, std::unique_ptr<DirLinkId[]>> sparse;
  // Identical nodes: the window trees of node 0's devices (by local index), filled on first use.
  std::vector<std::unique_ptr<DirLinkId[]>> window;

  /// `window_sources`: node 0's devices when the nodes are identical (window trees only, no table).
  void reset(std::size_t devices, std::size_t n_endpoints, std::size_t window_sources) {
    endpoints = n_endpoints;
    enabled = window_sources == 0 && static_cast<std::int64_t>(devices * n_endpoints) <= kMaxPrecomputedTreeEntries;
    trees.clear();
    sparse.clear();
    window.clear();
    window.resize(window_sources);
    ready.assign(enabled ? devices : 0, 0);
    if (enabled) trees.assign(devices * n_endpoints, -1);
  }
};

}  // namespace parasim::hardware
