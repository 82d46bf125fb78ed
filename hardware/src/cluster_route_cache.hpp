// Private: the per-source shortest-path trees behind Cluster::route(), filled on first use.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "parasim/hardware/cluster.hpp"

namespace parasim::hardware {

struct Cluster::RouteCache {
  std::mutex mu;
  bool enabled = false;                // false: too big to keep, trees are computed per call
  std::size_t endpoints = 0;
  std::vector<DirLinkId> trees;        // [src * endpoints + e] = directed link into e
  std::vector<std::uint8_t> ready;     // per source device

  void reset(std::size_t devices, std::size_t n_endpoints) {
    endpoints = n_endpoints;
    enabled = static_cast<std::int64_t>(devices * n_endpoints) <= kMaxPrecomputedTreeEntries;
    trees.clear();
    ready.assign(enabled ? devices : 0, 0);
    if (enabled) trees.assign(devices * n_endpoints, -1);
  }
};

}  // namespace parasim::hardware
