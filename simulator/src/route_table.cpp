#include "route_table.hpp"

#include <algorithm>
#include <limits>

namespace parasim::simulator {

namespace {
// Dense lookup up to 1024 devices (4 MiB of indices); a hash map beyond.
constexpr int kMaxDenseDevices = 1024;
}  // namespace

RouteTable::RouteTable(const hardware::Cluster& c) : cluster_(c), devices_(c.num_devices()) {
  if (devices_ > 0 && devices_ <= kMaxDenseDevices)
    dense_.assign(static_cast<std::size_t>(devices_) * static_cast<std::size_t>(devices_), -1);
  else sparse_.assign(kFirstSlots, Slot{});
}

std::size_t RouteTable::empty_slot(std::uint64_t key) const {
  std::size_t i = slot_of(key);
  while (sparse_[i].key != kEmpty) i = (i + 1) & (sparse_.size() - 1);
  return i;
}

std::uint32_t RouteTable::insert(std::size_t i, std::uint64_t key, DeviceId src, DeviceId dst) {
  const std::uint32_t route = compute(src, dst);
  if (2 * (sparse_used_ + 1) > sparse_.size()) {  // grow, then probe again
    std::vector<Slot> old(2 * sparse_.size());
    old.swap(sparse_);
    for (const Slot& s : old)
      if (s.key != kEmpty) sparse_[empty_slot(s.key)] = s;
    i = empty_slot(key);
  }
  sparse_[i] = {key, route};
  ++sparse_used_;
  return route;
}

std::uint32_t RouteTable::compute(DeviceId src, DeviceId dst) {
  const auto path = cluster_.route(src, dst);
  RouteRef r;
  r.offset = static_cast<std::uint32_t>(links_.size());
  r.hops = static_cast<std::uint32_t>(path.size());
  double bottleneck = path.empty() ? 0.0 : std::numeric_limits<double>::infinity();
  for (DirLinkId l : path) {
    links_.push_back(l);
    r.latency += cluster_.dir_alpha(l);
    bottleneck = std::min(bottleneck, cluster_.dir_bandwidth(l).value);
  }
  r.bottleneck = bottleneck;
  routes_.push_back(r);
  return static_cast<std::uint32_t>(routes_.size() - 1);
}

}  // namespace parasim::simulator
