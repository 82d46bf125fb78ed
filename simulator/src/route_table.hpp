// Private: routes between device pairs as the simulator needs them - link ids in one flat
// array, plus the route's total latency and idle bottleneck - looked up once per pair.
#pragma once

#include <span>
#include <vector>

#include "parasim/hardware/cluster.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::simulator {

using hardware::DirLinkId;

struct RouteRef {
  std::uint32_t offset = 0;  // into RouteTable::links()
  std::uint32_t hops = 0;
  TimeNs latency = 0;
  double bottleneck = 0;     // GB/s; 0 for an empty route
};

class RouteTable {
 public:
  explicit RouteTable(const hardware::Cluster& c);

  RouteRef get(DeviceId src, DeviceId dst) {
    if (!dense_.empty()) {
      auto& slot =
          dense_[static_cast<std::size_t>(src) * static_cast<std::size_t>(devices_) + static_cast<std::size_t>(dst)];
      if (slot < 0) slot = static_cast<std::int32_t>(compute(src, dst));
      return routes_[static_cast<std::size_t>(slot)];
    }
    const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint32_t>(dst);
    for (std::size_t i = slot_of(key);; i = (i + 1) & (sparse_.size() - 1)) {
      if (sparse_[i].key == key) return routes_[sparse_[i].route];
      if (sparse_[i].key == kEmpty) return routes_[insert(i, key, src, dst)];
    }
  }
  std::span<const DirLinkId> links(const RouteRef& r) const { return {links_.data() + r.offset, r.hops}; }
  const DirLinkId* link_data() const { return links_.data(); }
  const hardware::Cluster& cluster() const { return cluster_; }
  /// About how many bytes the looked-up routes hold (beyond the fixed dense index).
  std::size_t memory_bytes() const {
    return sparse_.size() * sizeof(Slot) + routes_.size() * sizeof(RouteRef) + links_.size() * sizeof(DirLinkId);
  }
  /// Forgets every route (they are looked up again on demand, identically). Invalidates RouteRefs.
  void clear() {
    std::fill(dense_.begin(), dense_.end(), -1);
    sparse_.assign(sparse_.empty() ? 0 : kFirstSlots, Slot{});
    sparse_used_ = 0;
    routes_.clear();
    links_.clear();
  }

 private:
  std::uint32_t compute(DeviceId src, DeviceId dst);
  // The sparse index: open addressing with linear probing over a power-of-two table, at most half
  // full (a data-parallel group over thousands of nodes looks up tens of thousands of pairs).
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};  // no device pair has this key
  static constexpr std::size_t kFirstSlots = 1024;
  struct Slot {
    std::uint64_t key = kEmpty;
    std::uint32_t route = 0;
  };
  std::size_t slot_of(std::uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & (sparse_.size() - 1);
  }
  // The first empty slot of a key's probe sequence (the key is not in the table).
  std::size_t empty_slot(std::uint64_t key) const;
  // Computes the route of a missing key whose probe ended at empty slot i; returns its index.
  std::uint32_t insert(std::size_t i, std::uint64_t key, DeviceId src, DeviceId dst);

  const hardware::Cluster& cluster_;
  int devices_ = 0;
  std::vector<std::int32_t> dense_;  // devices^2 route indices (-1 unknown) for small clusters
  std::vector<Slot> sparse_;         // empty for dense clusters
  std::size_t sparse_used_ = 0;
  std::vector<RouteRef> routes_;
  std::vector<DirLinkId> links_;
};

}  // namespace parasim::simulator
