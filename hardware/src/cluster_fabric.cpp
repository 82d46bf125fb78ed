// Routes through a built fabric (fabric.hpp). Between two nodes a message goes
//   source device -> its nearest NIC (inside the node) -> leaf [-> spine | -> aggregation
//   [-> core -> aggregation]] -> leaf -> the destination's nearest NIC -> destination device,
// climbing only as high as the two leaves need. The uplink is chosen by the destination's
// position (D-mod-k): port j = position mod up at the leaf, core (position / up) mod up at the
// aggregation switch, so the hosts of one leaf are reached through distinct spines and the routes
// never depend on the order anything was asked in.
// "Nearest NIC": fewest transit devices, then fewest hops, then highest bottleneck, then the NIC
// first in id order - the rules of Cluster::route inside the node. With identical nodes it is
// computed once for node 0's devices and mapped onto every node by the node swap.
#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <unordered_map>

#include "parasim/common/error.hpp"
#include "parasim/hardware/cluster.hpp"
#include "route_label.hpp"

namespace parasim::hardware {

namespace {

using Label = detail::RouteLabel;

}  // namespace

// Dijkstra from `d` over the links of its node (no fabric link); returns the index of the nearest
// NIC among the node's NICs and its path (device first) in `out`.
int Cluster::exit_path(DeviceId d, std::vector<DirLinkId>& out) const {
  const FabricLayout& f = *spec_.fabric;
  const int node = node_of(d);
  const auto first_nic = static_cast<std::size_t>(node) * static_cast<std::size_t>(f.nics_per_node);
  std::unordered_map<EndpointId, Label> best;
  std::unordered_map<EndpointId, DirLinkId> parent;
  std::unordered_map<EndpointId, bool> done;
  struct Entry {
    Label label;
    std::uint64_t seq;
    EndpointId e;
  };
  const auto worse = [](const Entry& x, const Entry& y) {
    if (x.label.better_than(y.label)) return false;
    if (y.label.better_than(x.label)) return true;
    return x.seq > y.seq;
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(worse)> queue(worse);
  std::uint64_t seq = 0;
  best[d] = Label{0, 0, std::numeric_limits<double>::infinity()};
  queue.push({best[d], seq++, d});
  while (!queue.empty()) {
    const Entry top = queue.top();
    queue.pop();
    if (done[top.e]) continue;
    done[top.e] = true;
    if (endpoint_kind(top.e) == EndpointKind::Nic) continue;  // a NIC is where the way ends
    const std::int32_t transit = (top.e != d && top.e < num_devices()) ? 1 : 0;
    const auto u = static_cast<std::size_t>(top.e);
    for (auto i = adj_offsets_[u]; i < adj_offsets_[u + 1]; ++i) {
      const DirLinkId dl = adj_[static_cast<std::size_t>(i)];
      if (link_of(dl) >= f.first_link) continue;
      const EndpointId v = dir_to(dl);
      if (endpoint_node(v) != node || done[v]) continue;
      const Label cand{top.label.transits + transit, top.label.hops + 1,
                       std::min(top.label.bottleneck, dir_bandwidth(dl).value)};
      auto it = best.find(v);
      if (it == best.end() || cand.better_than(it->second)) {
        best[v] = cand;
        parent[v] = dl;
        queue.push({cand, seq++, v});
      }
    }
  }
  int chosen = -1;
  for (int i = 0; i < f.nics_per_node; ++i) {
    const auto it = best.find(f.nics[first_nic + static_cast<std::size_t>(i)]);
    if (it != best.end() &&
        (chosen < 0 || it->second.better_than(best[f.nics[first_nic + static_cast<std::size_t>(chosen)]])))
      chosen = i;
  }
  if (chosen < 0)
    throw InputError("cluster \"" + name() + "\": device \"" + device(d).name +
                     "\" reaches no NIC of its node, so no fabric route leaves it");
  out.clear();
  for (EndpointId e = f.nics[first_nic + static_cast<std::size_t>(chosen)]; e != d;) {
    const DirLinkId dl = parent[e];
    out.push_back(dl);
    e = dir_from(dl);
  }
  std::reverse(out.begin(), out.end());
  return chosen;
}

void Cluster::index_fabric() {
  exit_offsets_.clear();
  exit_links_.clear();
  exit_nic_.clear();
  if (!spec_.fabric || !identical_nodes_) return;
  exit_offsets_.push_back(0);
  std::vector<DirLinkId> path;
  for (DeviceId d : devices_of_node(0)) {
    exit_nic_.push_back(exit_path(d, path));
    exit_links_.insert(exit_links_.end(), path.begin(), path.end());
    exit_offsets_.push_back(static_cast<std::int32_t>(exit_links_.size()));
  }
}

std::vector<DirLinkId> Cluster::fabric_route(DeviceId src, DeviceId dst) const {
  const FabricLayout& f = *spec_.fabric;
  std::vector<DirLinkId> path, tail;
  // The way from a device to its nearest NIC: node 0's, swapped onto the device's node.
  const auto exit = [&](DeviceId d, std::vector<DirLinkId>& out) {
    if (exit_offsets_.empty()) return exit_path(d, out);
    const int node = node_of(d);
    const auto local = static_cast<std::size_t>(local_index(d));
    out.clear();
    for (auto i = exit_offsets_[local]; i < exit_offsets_[local + 1]; ++i)
      out.push_back(swap_link(exit_links_[static_cast<std::size_t>(i)], 0, node));
    return exit_nic_[local];
  };
  const int na = node_of(src), nb = node_of(dst);
  const int nx = exit(src, path);
  const int ny = exit(dst, tail);
  const LinkId hosts = f.host_ports();
  const auto nic_link = [&](int node, int nic) { return f.first_link + node * f.nics_per_node + nic; };
  const auto leaf_up = [&](int leaf, int j) { return f.first_link + hosts + leaf * f.up + j; };
  const auto agg_up = [&](int agg, int c) { return f.first_link + hosts + f.leaves * f.up + agg * f.up + c; };
  const int lx = f.leaf_of(na, nx), ly = f.leaf_of(nb, ny);
  path.push_back(directed(nic_link(na, nx), false));
  if (lx != ly) {
    const int position = ly * f.down + f.port_of(nb, ny);  // the destination's host port
    const int j = position % f.up;
    path.push_back(directed(leaf_up(lx, j), false));
    if (f.tiers == 3) {
      const int px = lx / f.up, py = ly / f.up;
      if (px != py) {
        const int c = (position / f.up) % f.up;
        path.push_back(directed(agg_up(px * f.up + j, c), false));
        path.push_back(directed(agg_up(py * f.up + j, c), true));
      }
    }
    path.push_back(directed(leaf_up(ly, j), true));
  }
  path.push_back(directed(nic_link(nb, ny), true));
  for (auto it = tail.rbegin(); it != tail.rend(); ++it) path.push_back(*it ^ 1);
  return path;
}

}  // namespace parasim::hardware
