// Tiny hand-made clusters whose timings can be computed on paper.
#pragma once

#include <functional>
#include <string>

#include "parasim/common/error.hpp"
#include "parasim/hardware/cluster.hpp"
#include "support/input_error.hpp"
#include "support/star_cluster.hpp"

namespace parasim::simulator::testing {

using hardware::Cluster;
using hardware::ClusterSpec;
using hardware::EndpointKind;
using hardware::LinkKind;

/// n GPUs in a ring of direct links i <-> i+1 (mod n), each with (alpha, bw).
inline Cluster ring_cluster(int n, TimeNs alpha, double bw) {
  ClusterSpec s;
  s.name = "ring" + std::to_string(n);
  for (int i = 0; i < n; ++i) s.devices.push_back({"gpu" + std::to_string(i), "V100-SXM2-32GB", 0, 0});
  for (int i = 0; i < n; ++i) s.links.push_back({"", LinkKind::NVLink, i, (i + 1) % n, alpha, GBps{bw}});
  return Cluster(s);
}

using test_support::star_cluster;

/// `nodes` x `per_node` GPUs: a switch per node (intra alpha/bw per hop) and one IB switch that
/// every GPU links to directly (inter alpha/bw per hop).
inline Cluster two_level_cluster(int nodes, int per_node, TimeNs intra_alpha, double intra_bw, TimeNs inter_alpha,
                                 double inter_bw) {
  ClusterSpec s;
  s.name = "two-level";
  const int d = nodes * per_node;
  for (int i = 0; i < d; ++i) s.devices.push_back({"gpu" + std::to_string(i), "H100", i / per_node, 0});
  for (int k = 0; k < nodes; ++k) s.endpoints.push_back({"sw" + std::to_string(k), EndpointKind::NvSwitch, k});
  s.endpoints.push_back({"ib", EndpointKind::IbSwitch, -1});
  for (int i = 0; i < d; ++i) {
    s.links.push_back({"", LinkKind::NVSwitch, i, d + i / per_node, intra_alpha, GBps{intra_bw}});
    s.links.push_back({"", LinkKind::InfiniBand, i, d + nodes, inter_alpha, GBps{inter_bw}});
  }
  return Cluster(s);
}

using test_support::input_error;

}  // namespace parasim::simulator::testing
