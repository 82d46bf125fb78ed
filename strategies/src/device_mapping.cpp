#include "parasim/strategies/device_mapping.hpp"

#include <algorithm>

#include "parasim/common/error.hpp"

namespace parasim::strategies {

namespace {

int axis_id(const std::string& name) {
  if (name == "tp") return 0;
  if (name == "mp") return 1;
  return 2;  // "dp": parse_strategy has already rejected anything else
}

}  // namespace

DeviceMapping::DeviceMapping(const Strategy& s, const hardware::Cluster& cluster) {
  extent_ = {s.tp * s.cp, s.mp, s.dp};
  tp_ = s.tp;
  for (int i = 0; i < 3; ++i)
    order_[static_cast<std::size_t>(i)] = axis_id(s.mapping.substr(static_cast<std::size_t>(3 * i), 2));
  const std::int64_t need = s.devices();
  if (need > cluster.num_devices()) {
    const int per_node = std::max(1, cluster.max_devices_per_node());
    const std::int64_t nodes_needed = (need + per_node - 1) / per_node;
    throw InputError(to_string(s) + " needs " + std::to_string(need) + " devices; cluster " + cluster.name() + " x" +
                     std::to_string(cluster.num_nodes()) + " has " + std::to_string(cluster.num_devices()) +
                     " - add --nodes " + std::to_string(nodes_needed) + " (or use fewer devices)");
  }
}

hardware::DeviceId DeviceMapping::device(int replica, int stage, int tp, int cp) const {
  const std::array<int, 3> coord = {tp + tp_ * cp, stage, replica};
  std::int64_t index = 0;
  for (int i = 2; i >= 0; --i) {
    const int axis = order_[static_cast<std::size_t>(i)];
    index = index * extent_[static_cast<std::size_t>(axis)] + coord[static_cast<std::size_t>(axis)];
  }
  return static_cast<hardware::DeviceId>(index);
}

RankCoords DeviceMapping::coords(hardware::DeviceId device) const {
  std::array<int, 3> coord{};
  std::int64_t rest = device;
  for (int i = 0; i < 3; ++i) {
    const int axis = order_[static_cast<std::size_t>(i)];
    coord[static_cast<std::size_t>(axis)] = static_cast<int>(rest % extent_[static_cast<std::size_t>(axis)]);
    rest /= extent_[static_cast<std::size_t>(axis)];
  }
  return {coord[2], coord[1], coord[0] % tp_, coord[0] / tp_};
}

}  // namespace parasim::strategies
