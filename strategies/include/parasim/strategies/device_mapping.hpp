// Which cluster device runs which rank of a D x M x T strategy.
//
// A rank is (replica r < D, pipeline stage s < M, tensor-parallel rank t < T). Strategy::mapping
// lists the three axes innermost first ("tp-mp-dp", the default): the device id is the rank's
// mixed-radix index with the innermost axis varying fastest, so with 8 GPUs per node TP groups
// (and then pipeline stages) stay inside a node on NVLink/NVSwitch and data-parallel replicas
// spread across nodes. The strategy uses cluster devices 0 .. D*M*T-1.
//
// Example:
//   DeviceMapping map(parse_strategy("dp=2,mp=2,tp=2"), hardware::make_cluster_preset("dgx-a100"));
//   map.device(/*replica=*/1, /*stage=*/0, /*tp=*/1);   // 5 = 1 + 2 * (0 + 2 * 1)
#pragma once

#include <array>
#include <string>

#include "parasim/hardware/cluster.hpp"
#include "parasim/strategies/strategy.hpp"

namespace parasim::strategies {

struct RankCoords {
  int replica = 0;
  int stage = 0;  // pipeline / model-parallel slot (device index inside the replica)
  int tp = 0;
  int cp = 0;  // context-parallel rank
  bool operator==(const RankCoords&) const = default;
};

class DeviceMapping {
 public:
  /// InputError when the cluster has fewer devices than dp*mp*tp, e.g.
  /// "dp=4,mp=4 needs 16 devices; cluster dgx1-v100 x1 has 8 - add --nodes 2".
  DeviceMapping(const Strategy& strategy, const hardware::Cluster& cluster);

  hardware::DeviceId device(int replica, int stage, int tp, int cp = 0) const;
  RankCoords coords(hardware::DeviceId device) const;
  int devices_used() const { return extent_[0] * extent_[1] * extent_[2]; }

 private:
  // Axis order innermost first; axis ids: 0 = tp, 1 = mp, 2 = dp.
  std::array<int, 3> order_{};
  std::array<int, 3> extent_{};  // by axis id (the tp axis: T x C)
  int tp_ = 1;
};

}  // namespace parasim::strategies
