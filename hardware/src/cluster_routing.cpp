// Routing: one shortest-path tree per source device, by lexicographic label
// (transit devices, hops, -bottleneck bandwidth). Dijkstra is exact for this label because
// extending two paths by the same link keeps their order: the sums grow by the same amounts
// and min(bottleneck, b) is monotone in the bottleneck.
#include <algorithm>
#include <limits>
#include <queue>

#include "parasim/common/error.hpp"
#include "parasim/hardware/cluster.hpp"
#include "cluster_route_cache.hpp"
#include "route_label.hpp"

namespace parasim::hardware {

namespace {

// Set in a tree entry when the endpoint had two equally good ways in (rule 4 decided).
constexpr DirLinkId kTieBit = DirLinkId{1} << 30;

using Label = detail::RouteLabel;

struct QueueEntry {
  Label label;
  std::uint64_t seq;  // first pushed wins among equal labels: deterministic
  EndpointId endpoint;
};

struct WorseFirst {
  bool operator()(const QueueEntry& x, const QueueEntry& y) const {
    if (x.label.better_than(y.label)) return false;
    if (y.label.better_than(x.label)) return true;
    return x.seq > y.seq;
  }
};

// Dijkstra by label over vertices 0..n-1 from `source`: edges(u, visit) calls visit(v, dl) for each
// directed link dl leaving u, in link-id order (rule 4); transit(u) says whether leaving u forwards
// traffic through a device. Writes each vertex's way in, with kTieBit where another was as good.
template <class Transit, class Edges>
void label_search_on(const Cluster& c, std::size_t n, std::size_t source, DirLinkId* parent, Transit transit,
                     Edges edges) {
  std::vector<Label> best(n);
  std::vector<std::uint8_t> done(n, 0);
  std::fill(parent, parent + n, -1);
  std::priority_queue<QueueEntry, std::vector<QueueEntry>, WorseFirst> queue;
  std::uint64_t seq = 0;
  best[source] = Label{0, 0, std::numeric_limits<double>::infinity()};
  queue.push({best[source], seq++, static_cast<EndpointId>(source)});
  while (!queue.empty()) {
    const QueueEntry top = queue.top();
    queue.pop();
    const auto u = static_cast<std::size_t>(top.endpoint);
    if (done[u]) continue;
    done[u] = 1;
    const std::int32_t through = transit(u) ? 1 : 0;
    edges(u, [&](std::size_t v, DirLinkId dl) {
      if (done[v]) return;
      const Label cand{top.label.transits + through, top.label.hops + 1,
                       std::min(top.label.bottleneck, c.dir_bandwidth(dl).value)};
      if (cand.better_than(best[v])) {
        best[v] = cand;
        parent[v] = dl;
        queue.push({cand, seq++, static_cast<EndpointId>(v)});
      } else if (cand == best[v]) {
        parent[v] |= kTieBit;
      }
    });
  }
}

}  // namespace

void Cluster::shortest_path_tree(DeviceId src, DirLinkId* parent) const {
  label_search_on(
      *this, static_cast<std::size_t>(num_endpoints()), static_cast<std::size_t>(src), parent,
      // Leaving a device other than the source means that device forwards traffic.
      [&](std::size_t u) { return u != static_cast<std::size_t>(src) && u < static_cast<std::size_t>(num_devices()); },
      [&](std::size_t u, auto&& visit) {
        for (auto i = adj_offsets_[u]; i < adj_offsets_[u + 1]; ++i) {
          const DirLinkId dl = adj_[static_cast<std::size_t>(i)];
          visit(static_cast<std::size_t>(dir_to(dl)), dl);
        }
      });
}

// The same search over the window (nodes 0 and 1 and the shared endpoints) alone: the window's
// adjacency keeps adj_'s order, so pushes, sequence numbers and ties are those of the full search
// restricted to the window.
void Cluster::window_tree(DeviceId src, DirLinkId* parent) const {
  const auto s = static_cast<std::size_t>(window_index(src));
  label_search_on(
      *this, window_eps_.size(), s, parent, [&](std::size_t u) { return u != s && window_eps_[u] < num_devices(); },
      [&](std::size_t u, auto&& visit) {
        for (auto i = window_adj_offsets_[u]; i < window_adj_offsets_[u + 1]; ++i)
          visit(static_cast<std::size_t>(window_adj_to_[static_cast<std::size_t>(i)]),
                window_adj_[static_cast<std::size_t>(i)]);
      });
}

// Computed outside the lock like tree_of(); src is a device of node 0.
const DirLinkId* Cluster::window_tree_of(DeviceId src) const {
  auto& c = *cache_;
  auto& slot = c.window[static_cast<std::size_t>(window_index(src))];
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (slot) return slot.get();
  }
  auto tree = std::make_unique<DirLinkId[]>(window_eps_.size());
  window_tree(src, tree.get());
  std::lock_guard<std::mutex> lock(c.mu);
  if (!slot) slot = std::move(tree);
  return slot.get();
}

// Trees are computed outside the lock, so threads asking for different sources (a planner's
// workers on a cold cluster) run their Dijkstras in parallel. A tree depends only on its source,
// so when two threads compute the same one, the first to store it wins and both agree.
const DirLinkId* Cluster::tree_of(DeviceId src, std::vector<DirLinkId>& scratch) const {
  auto& c = *cache_;
  if (!c.enabled) {
    bool full = false;
    {
      std::lock_guard<std::mutex> lock(c.mu);
      if (const auto it = c.sparse.find(src); it != c.sparse.end()) return it->second.get();
      full = static_cast<std::int64_t>((c.sparse.size() + 1) * c.endpoints) > kMaxSparseTreeEntries;
    }
    if (full) {  // never evicted, so the budget only fills up: computed per call from now on
      scratch.resize(c.endpoints);
      shortest_path_tree(src, scratch.data());
      return scratch.data();
    }
    auto tree = std::make_unique<DirLinkId[]>(c.endpoints);
    shortest_path_tree(src, tree.get());
    std::lock_guard<std::mutex> lock(c.mu);
    if (const auto it = c.sparse.find(src); it != c.sparse.end()) return it->second.get();
    if (static_cast<std::int64_t>((c.sparse.size() + 1) * c.endpoints) <= kMaxSparseTreeEntries)
      return c.sparse.emplace(src, std::move(tree)).first->second.get();
    scratch.assign(tree.get(), tree.get() + c.endpoints);  // over budget: not kept
    return scratch.data();
  }
  DirLinkId* tree = c.trees.data() + static_cast<std::size_t>(src) * c.endpoints;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.ready[static_cast<std::size_t>(src)]) return tree;
  }
  scratch.resize(c.endpoints);
  shortest_path_tree(src, scratch.data());
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.ready[static_cast<std::size_t>(src)]) {
    std::copy(scratch.begin(), scratch.end(), tree);
    c.ready[static_cast<std::size_t>(src)] = 1;
  }
  return tree;
}

// Identical nodes: src swapped into node 0 (with its node k), dst then into node 0 or 1 (with j),
// and the way back from there in node 0's window tree, into `path` (destination first). True when
// the swaps map it back exactly: no tie on the way, no fabric, no node entered twice.
bool Cluster::window_path(DeviceId src, DeviceId dst, std::vector<DirLinkId>& path, int& k, int& j) const {
  k = node_of(src);
  const DeviceId from = swap_endpoint(src, 0, k);
  EndpointId to = swap_endpoint(dst, 0, k);
  j = std::max(endpoint_node(to), 1);  // node 0 and 1 stay where they are
  to = swap_endpoint(to, 1, j);
  const DirLinkId* tree = window_tree_of(from);
  bool exact = true;
  int last_node = node_of(to);
  std::uint64_t seen = 0;  // nodes 0 and 1 left behind (a second visit fails)
  for (EndpointId e = to; e != from;) {
    const std::int32_t w = window_index(e);
    const DirLinkId entry = w < 0 ? -1 : tree[static_cast<std::size_t>(w)];
    if (entry < 0)
      throw RuntimeError("cluster \"" + name() + "\": no route from " + device(src).name + " to " + device(dst).name);
    exact = exact && (entry & kTieBit) == 0;
    const DirLinkId dl = entry & ~kTieBit;
    path.push_back(dl);
    e = dir_from(dl);
    const int n = endpoint_node(e);
    if (n < 0 && spec_.fabric) exact = false;  // through the fabric, which no swap maps
    if (n == last_node) continue;
    if (last_node >= 0) seen |= std::uint64_t{1} << last_node;
    if (n >= 0 && (seen >> n & 1)) exact = false;
    last_node = n;
  }
  return exact;
}

bool Cluster::route_follows_node_symmetry(DeviceId src, DeviceId dst) const {
  if (!identical_nodes_ || spec_.fabric || src < 0 || src >= num_devices() || dst < 0 || dst >= num_devices() ||
      src == dst)
    return false;
  std::vector<DirLinkId> path;
  int k = 0, j = 0;
  return window_path(src, dst, path, k, j);
}

std::vector<DirLinkId> Cluster::route(DeviceId src, DeviceId dst) const {
  if (src < 0 || src >= num_devices() || dst < 0 || dst >= num_devices())
    throw InputError("cluster \"" + name() + "\": route between unknown devices " + std::to_string(src) + " and " +
                     std::to_string(dst) + " (the cluster has " + std::to_string(num_devices()) + " devices)");
  std::vector<DirLinkId> path;
  if (src == dst) return path;
  path.reserve(8);  // one allocation for the usual route (GPU, NIC, switch, NIC, GPU)
  if (spec_.fabric && node_of(src) != node_of(dst)) return fabric_route(src, dst);
  std::vector<DirLinkId> scratch;
  if (identical_nodes_) {
    int k = 0, j = 0;
    const bool exact = window_path(src, dst, path, k, j);
    if (exact) {
      for (DirLinkId& dl : path) dl = swap_link(swap_link(dl, 1, j), 0, k);
      std::reverse(path.begin(), path.end());
      return path;
    }
    // Searched directly, over the whole cluster (not kept).
    path.clear();
    scratch.assign(static_cast<std::size_t>(num_endpoints()), -1);
    shortest_path_tree(src, scratch.data());
    for (EndpointId e = dst; e != src;) {
      const DirLinkId dl = scratch[static_cast<std::size_t>(e)] & ~kTieBit;
      path.push_back(dl);
      e = dir_from(dl);
    }
    std::reverse(path.begin(), path.end());
    return path;
  }
  const DirLinkId* tree = tree_of(src, scratch);
  for (EndpointId e = dst; e != src;) {
    const DirLinkId dl = tree[static_cast<std::size_t>(e)] & ~kTieBit;
    if (dl < 0)
      throw RuntimeError("cluster \"" + name() + "\": no route from " + device(src).name + " to " + device(dst).name);
    path.push_back(dl);
    e = dir_from(dl);
  }
  std::reverse(path.begin(), path.end());
  return path;
}

RouteSummary Cluster::route_summary(DeviceId src, DeviceId dst) const {
  RouteSummary s;
  const auto path = route(src, dst);
  s.hops = static_cast<int>(path.size());
  double bottleneck = path.empty() ? 0.0 : std::numeric_limits<double>::infinity();
  for (DirLinkId dl : path) {
    s.latency += dir_alpha(dl);
    bottleneck = std::min(bottleneck, dir_bandwidth(dl).value);
  }
  s.bottleneck = GBps{bottleneck};
  return s;
}

}  // namespace parasim::hardware
