#include "parasim/strategies/branch_placement.hpp"

#include <algorithm>
#include <numeric>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dominator_tree.hpp>

namespace parasim::strategies {

namespace {

using models::Model;
using models::OpId;

using ReverseGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
using RVertex = boost::graph_traits<ReverseGraph>::vertex_descriptor;

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

/// Immediate post-dominator of every op and of the virtual entry (index n); kNone for the
/// virtual exit itself.
std::vector<std::size_t> immediate_post_dominators(const Model& m,
                                                   const std::vector<std::vector<std::size_t>>& consumers) {
  const std::size_t n = m.num_ops();
  const std::size_t exit = n + 1;  // reversed graph: exit is the root; entry = n
  ReverseGraph rg(n + 2);
  for (std::size_t v = 0; v < n; ++v) {
    for (std::size_t w : consumers[v]) boost::add_edge(w, v, rg);
    if (consumers[v].empty()) boost::add_edge(exit, v, rg);
    if (boost::in_degree(static_cast<OpId>(v), m.graph()) == 0) boost::add_edge(v, n, rg);
  }
  std::vector<RVertex> idom(n + 2, boost::graph_traits<ReverseGraph>::null_vertex());
  boost::lengauer_tarjan_dominator_tree(
      rg, boost::vertex(exit, rg),
      boost::make_iterator_property_map(idom.begin(), boost::get(boost::vertex_index, rg)));
  std::vector<std::size_t> out(n + 1, kNone);
  for (std::size_t v = 0; v <= n; ++v)
    out[v] = idom[v] == boost::graph_traits<ReverseGraph>::null_vertex() ? kNone : static_cast<std::size_t>(idom[v]);
  return out;
}

/// Ops reachable from `head` without passing the join (the join itself excluded).
std::vector<char> reach(std::size_t head, std::size_t join, const std::vector<std::vector<std::size_t>>& consumers) {
  std::vector<char> seen(consumers.size(), 0);
  if (head == join) return seen;
  std::vector<std::size_t> stack{head};
  seen[head] = 1;
  while (!stack.empty()) {
    const std::size_t v = stack.back();
    stack.pop_back();
    for (std::size_t w : consumers[v])
      if (w != join && !seen[w]) {
        seen[w] = 1;
        stack.push_back(w);
      }
  }
  return seen;
}

class BranchPlacer {
 public:
  BranchPlacer(const Model& m, const std::vector<std::vector<TimeNs>>& cost, int devices)
      : m_(m), cost_(cost), devices_(devices), n_(m.num_ops()), slot_(n_, -1), in_branch_(n_, 0),
        load_(static_cast<std::size_t>(devices), 0), consumers_(n_) {
    for (std::size_t v = 0; v < n_; ++v)
      for (OpId w : m.consumers_of(static_cast<OpId>(v))) consumers_[v].push_back(static_cast<std::size_t>(w));
  }

  std::vector<int> run() {
    const std::vector<std::size_t> ipdom = immediate_post_dominators(m_, consumers_);
    std::vector<std::size_t> sources;
    for (std::size_t v = 0; v < n_; ++v)
      if (boost::in_degree(static_cast<OpId>(v), m_.graph()) == 0) sources.push_back(v);
    split_region(sources, ipdom[n_]);  // the virtual entry
    for (std::size_t v = 0; v < n_; ++v) {
      if (slot_[v] < 0) assign(v, follow_producers(v));
      if (!in_branch_[v] && consumers_[v].size() >= 2) split_region(consumers_[v], ipdom[v]);
    }
    return slot_;
  }

 private:
  void assign(std::size_t v, int d) {
    slot_[v] = d;
    load_[static_cast<std::size_t>(d)] += cost_[static_cast<std::size_t>(d)][v];
  }

  /// The least-loaded device among those of v's producers (all devices when it has none).
  int follow_producers(std::size_t v) const {
    std::vector<int> candidates;
    for (OpId u : m_.inputs_of(static_cast<OpId>(v))) candidates.push_back(slot_[static_cast<std::size_t>(u)]);
    if (candidates.empty()) {
      candidates.resize(static_cast<std::size_t>(devices_));
      std::iota(candidates.begin(), candidates.end(), 0);
    }
    std::sort(candidates.begin(), candidates.end());
    int best = candidates.front();
    for (int d : candidates)
      if (load_[static_cast<std::size_t>(d)] < load_[static_cast<std::size_t>(best)]) best = d;
    return best;
  }

  void split_region(const std::vector<std::size_t>& heads, std::size_t join) {
    if (heads.size() < 2) return;
    std::vector<std::vector<char>> reached;
    for (std::size_t h : heads) reached.push_back(reach(h, join == kNone ? n_ : join, consumers_));
    // Independent heads: reached from no other head.
    std::vector<std::size_t> independent;
    for (std::size_t i = 0; i < heads.size(); ++i) {
      bool reached_by_other = heads[i] == join;
      for (std::size_t j = 0; j < heads.size() && !reached_by_other; ++j)
        reached_by_other = j != i && heads[j] != heads[i] && reached[j][heads[i]];
      if (!reached_by_other) independent.push_back(i);
    }
    struct Branch {
      std::vector<std::size_t> ops;
      TimeNs cost = 0;
    };
    std::vector<Branch> branches;
    for (std::size_t i : independent) {
      Branch b;
      for (std::size_t v = 0; v < n_; ++v) {
        if (!reached[i][v] || slot_[v] >= 0) continue;
        bool exclusive = true;
        for (std::size_t j : independent) exclusive = exclusive && (j == i || !reached[j][v]);
        if (exclusive) b.ops.push_back(v);
      }
      for (std::size_t v : b.ops) b.cost += cost_[0][v];
      if (!b.ops.empty()) branches.push_back(std::move(b));
    }
    if (branches.size() < 2) return;
    std::stable_sort(branches.begin(), branches.end(),
                     [](const Branch& a, const Branch& b) { return a.cost > b.cost; });
    // The region's branches run concurrently: balance them among themselves (region-local load),
    // breaking ties towards the device with less work overall.
    std::vector<TimeNs> region(static_cast<std::size_t>(devices_), 0);
    for (const Branch& b : branches) {
      int best = -1;
      TimeNs best_finish = 0;
      for (int d = 0; d < devices_; ++d) {
        TimeNs finish = region[static_cast<std::size_t>(d)];
        for (std::size_t v : b.ops) finish += cost_[static_cast<std::size_t>(d)][v];
        if (best < 0 || finish < best_finish ||
            (finish == best_finish && load_[static_cast<std::size_t>(d)] < load_[static_cast<std::size_t>(best)])) {
          best = d;
          best_finish = finish;
        }
      }
      region[static_cast<std::size_t>(best)] = best_finish;
      for (std::size_t v : b.ops) {
        assign(v, best);
        in_branch_[v] = 1;
      }
    }
  }

  const Model& m_;
  const std::vector<std::vector<TimeNs>>& cost_;
  int devices_;
  std::size_t n_;
  std::vector<int> slot_;
  std::vector<char> in_branch_;
  std::vector<TimeNs> load_;
  std::vector<std::vector<std::size_t>> consumers_;
};

}  // namespace

std::vector<int> place_branches(const Model& model, const std::vector<std::vector<TimeNs>>& op_cost, int devices) {
  return BranchPlacer(model, op_cost, devices).run();
}

}  // namespace parasim::strategies
