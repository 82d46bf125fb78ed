// Shared by the component test binaries (tests/support): a cluster whose timings can be worked
// out on paper.
#pragma once

#include <string>

#include "parasim/hardware/cluster.hpp"

namespace parasim::test_support {

/// n devices of `kind` on one switch; every device-switch link has (alpha, bw GB/s), so device
/// to device is 2 alpha. Named "star<n>".
inline hardware::Cluster star_cluster(int n, TimeNs alpha, double bw, const std::string& kind = "V100-SXM2-32GB",
                                      Bytes memory = 32 * GiB) {
  hardware::ClusterSpec s;
  s.name = "star" + std::to_string(n);
  for (int i = 0; i < n; ++i) s.devices.push_back({"gpu" + std::to_string(i), kind, 0, memory});
  s.endpoints.push_back({"switch", hardware::EndpointKind::NvSwitch, 0});
  for (int i = 0; i < n; ++i) s.links.push_back({"", hardware::LinkKind::NVSwitch, i, n, alpha, GBps{bw}});
  return hardware::Cluster(s);
}

}  // namespace parasim::test_support
