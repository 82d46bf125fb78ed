// Internal: how two candidate routes compare (cluster_routing.cpp's search and the fabric's exit
// paths, cluster_fabric.cpp): fewest GPU transits, then fewest hops, then the widest bottleneck.
#pragma once

#include <cstdint>
#include <limits>

namespace parasim::hardware::detail {

struct RouteLabel {
  std::int32_t transits = std::numeric_limits<std::int32_t>::max();
  std::int32_t hops = std::numeric_limits<std::int32_t>::max();
  double bottleneck = 0.0;

  // True when `this` is a strictly better route than `o`.
  bool better_than(const RouteLabel& o) const {
    if (transits != o.transits) return transits < o.transits;
    if (hops != o.hops) return hops < o.hops;
    return bottleneck > o.bottleneck;
  }
  bool operator==(const RouteLabel&) const = default;
};

}  // namespace parasim::hardware::detail
