// Identical nodes: a cluster whose nodes are copies of node 0 (every preset) is mapped onto
// itself by swapping any node with node 0, so routes from node k are node 0's routes swapped back
// (cluster_routing.cpp). Checked here exactly: per node, its endpoints (kind, and for devices the
// kind and memory) in id order, and its links in id order with each end named by its local index
// or, for a shared endpoint, by its id - all equal to node 0's. A link between two different nodes
// rules the symmetry out.
#include <algorithm>
#include <cstdint>
#include <tuple>

#include "parasim/hardware/cluster.hpp"

namespace parasim::hardware {

int Cluster::endpoint_node(EndpointId e) const {
  const auto d = static_cast<EndpointId>(spec_.devices.size());
  return e < d ? spec_.devices[static_cast<std::size_t>(e)].node
               : spec_.endpoints[static_cast<std::size_t>(e - d)].node;
}

void Cluster::index_node_symmetry() {
  identical_nodes_ = false;
  endpoint_local_.clear();
  node_ep_offsets_.clear();
  node_eps_.clear();
  link_node_.clear();
  link_local_.clear();
  node_link_offsets_.clear();
  node_links_.clear();
  window_eps_.clear();
  window_shared_.clear();
  window_adj_offsets_.clear();
  window_adj_.clear();
  window_adj_to_.clear();
  const int nodes = num_nodes();
  if (nodes < 2) return;
  const auto n_ep = static_cast<std::size_t>(num_endpoints());
  // Endpoints per node, in id order.
  std::vector<std::int32_t> count(static_cast<std::size_t>(nodes) + 1, 0);
  for (std::size_t e = 0; e < n_ep; ++e) {
    const int n = endpoint_node(static_cast<EndpointId>(e));
    if (n >= 0) ++count[static_cast<std::size_t>(n) + 1];
  }
  for (std::size_t n = 0; n < static_cast<std::size_t>(nodes); ++n) count[n + 1] += count[n];
  node_ep_offsets_ = count;
  node_eps_.assign(static_cast<std::size_t>(count.back()), 0);
  endpoint_local_.assign(n_ep, -1);
  std::vector<std::int32_t> fill(count.begin(), count.end() - 1);
  for (std::size_t e = 0; e < n_ep; ++e) {
    const int n = endpoint_node(static_cast<EndpointId>(e));
    if (n < 0) continue;
    const auto slot = fill[static_cast<std::size_t>(n)]++;
    node_eps_[static_cast<std::size_t>(slot)] = static_cast<EndpointId>(e);
    endpoint_local_[e] = slot - count[static_cast<std::size_t>(n)];
  }
  // Links per node, in id order; a link between two nodes: no symmetry.
  link_node_.assign(spec_.links.size(), -1);
  std::vector<std::int32_t> lcount(static_cast<std::size_t>(nodes) + 1, 0);
  // A built fabric's links belong to no node: nodes are compared without them, and routes
  // between nodes follow the fabric's structure (cluster_fabric.cpp).
  const std::size_t fabric_links = spec_.fabric ? static_cast<std::size_t>(spec_.fabric->first_link) : SIZE_MAX;
  for (std::size_t i = 0; i < spec_.links.size(); ++i) {
    if (i >= fabric_links) continue;
    const int na = endpoint_node(spec_.links[i].a), nb = endpoint_node(spec_.links[i].b);
    if (na >= 0 && nb >= 0 && na != nb) return;
    link_node_[i] = std::max(na, nb);
    if (link_node_[i] >= 0) ++lcount[static_cast<std::size_t>(link_node_[i]) + 1];
  }
  for (std::size_t n = 0; n < static_cast<std::size_t>(nodes); ++n) lcount[n + 1] += lcount[n];
  node_link_offsets_ = lcount;
  node_links_.assign(static_cast<std::size_t>(lcount.back()), 0);
  link_local_.assign(spec_.links.size(), -1);
  std::vector<std::int32_t> lfill(lcount.begin(), lcount.end() - 1);
  for (std::size_t i = 0; i < spec_.links.size(); ++i) {
    const int n = link_node_[i];
    if (n < 0) continue;
    const auto slot = lfill[static_cast<std::size_t>(n)]++;
    node_links_[static_cast<std::size_t>(slot)] = static_cast<LinkId>(i);
    link_local_[i] = slot - lcount[static_cast<std::size_t>(n)];
  }
  // Compare every node with node 0.
  const auto ep_size = [&](int n) {
    return count[static_cast<std::size_t>(n) + 1] - count[static_cast<std::size_t>(n)];
  };
  const auto link_size = [&](int n) {
    return lcount[static_cast<std::size_t>(n) + 1] - lcount[static_cast<std::size_t>(n)];
  };
  // An end of a link as the swap sees it: local index (>= 0) or a shared endpoint (-1 - id).
  const auto end_key = [&](EndpointId e) {
    return endpoint_local_[static_cast<std::size_t>(e)] >= 0 ? endpoint_local_[static_cast<std::size_t>(e)] : -1 - e;
  };
  for (int n = 1; n < nodes; ++n) {
    if (ep_size(n) != ep_size(0) || link_size(n) != link_size(0)) return;
    for (std::int32_t i = 0; i < ep_size(0); ++i) {
      const EndpointId e0 = node_eps_[static_cast<std::size_t>(count[0] + i)];
      const EndpointId en = node_eps_[static_cast<std::size_t>(count[static_cast<std::size_t>(n)] + i)];
      if (endpoint_kind(e0) != endpoint_kind(en)) return;
      if (e0 < num_devices() &&
          (en >= num_devices() || device(e0).kind != device(en).kind || device(e0).memory != device(en).memory))
        return;
    }
    for (std::int32_t i = 0; i < link_size(0); ++i) {
      const ClusterLink& l0 = link(node_links_[static_cast<std::size_t>(lcount[0] + i)]);
      const ClusterLink& ln = link(node_links_[static_cast<std::size_t>(lcount[static_cast<std::size_t>(n)] + i)]);
      if (std::tie(l0.kind, l0.alpha, l0.bandwidth.value) != std::tie(ln.kind, ln.alpha, ln.bandwidth.value) ||
          end_key(l0.a) != end_key(ln.a) || end_key(l0.b) != end_key(ln.b))
        return;
    }
  }
  identical_nodes_ = true;
  index_window();
}

void Cluster::index_window() {
  const auto per_node = node_ep_offsets_[1];
  window_eps_.assign(node_eps_.begin(), node_eps_.begin() + 2 * per_node);
  for (EndpointId e = 0; e < num_endpoints(); ++e)
    if (endpoint_node(e) < 0) window_shared_.push_back(e);
  window_eps_.insert(window_eps_.end(), window_shared_.begin(), window_shared_.end());
  window_adj_offsets_.assign(1, 0);
  for (const EndpointId u : window_eps_) {
    for (auto i = adj_offsets_[static_cast<std::size_t>(u)]; i < adj_offsets_[static_cast<std::size_t>(u) + 1]; ++i) {
      const DirLinkId dl = adj_[static_cast<std::size_t>(i)];
      const std::int32_t to = window_index(dir_to(dl));
      if (to < 0) continue;
      window_adj_.push_back(dl);
      window_adj_to_.push_back(to);
    }
    window_adj_offsets_.push_back(static_cast<std::int32_t>(window_adj_.size()));
  }
}

std::int32_t Cluster::window_index(EndpointId e) const {
  const int n = endpoint_node(e);
  if (n == 0 || n == 1) return n * node_ep_offsets_[1] + endpoint_local_[static_cast<std::size_t>(e)];
  if (n >= 0) return -1;
  const auto it = std::lower_bound(window_shared_.begin(), window_shared_.end(), e);
  return 2 * node_ep_offsets_[1] + static_cast<std::int32_t>(it - window_shared_.begin());
}

EndpointId Cluster::swap_endpoint(EndpointId e, int a, int b) const {
  const int n = endpoint_node(e);
  if (n < 0 || a == b || (n != a && n != b)) return e;
  const int to = n == a ? b : a;
  return node_eps_[static_cast<std::size_t>(node_ep_offsets_[static_cast<std::size_t>(to)] +
                                            endpoint_local_[static_cast<std::size_t>(e)])];
}

DirLinkId Cluster::swap_link(DirLinkId d, int a, int b) const {
  const LinkId l = link_of(d);
  const int n = link_node_[static_cast<std::size_t>(l)];
  if (n < 0 || a == b || (n != a && n != b)) return d;
  const int to = n == a ? b : a;
  const LinkId image = node_links_[static_cast<std::size_t>(node_link_offsets_[static_cast<std::size_t>(to)] +
                                                            link_local_[static_cast<std::size_t>(l)])];
  return directed(image, (d & 1) != 0);
}

}  // namespace parasim::hardware
