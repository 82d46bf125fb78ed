// Orderings of the dataflow graph: topological order, cycle detection, equality.
#include <boost/graph/topological_sort.hpp>

#include "parasim/common/error.hpp"
#include "parasim/models/graph.hpp"

namespace parasim::models {

std::vector<OpId> Model::find_cycle() const {
  // Iterative DFS (deep models would overflow the stack if recursive). A back edge to a vertex
  // still on the DFS stack closes a cycle: the stack from that vertex to the top is the cycle.
  enum class Color : std::uint8_t { White, Gray, Black };
  const std::size_t n = num_ops();
  std::vector<Color> color(n, Color::White);
  struct Frame {
    OpId v;
    Graph::out_edge_iterator next, end;
  };
  std::vector<Frame> stack;
  for (OpId root = 0; root < n; ++root) {
    if (color[root] != Color::White) continue;
    auto [b, e] = boost::out_edges(root, graph());
    stack.push_back({root, b, e});
    color[root] = Color::Gray;
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next == top.end) {
        color[top.v] = Color::Black;
        stack.pop_back();
        continue;
      }
      const OpId w = boost::target(*top.next, graph());
      ++top.next;
      if (color[w] == Color::Gray) {
        std::vector<OpId> cycle;
        std::size_t i = stack.size();
        while (stack[i - 1].v != w) --i;
        for (; i <= stack.size(); ++i) cycle.push_back(stack[i - 1].v);
        return cycle;
      }
      if (color[w] == Color::White) {
        color[w] = Color::Gray;
        auto [wb, we] = boost::out_edges(w, graph());
        stack.push_back({w, wb, we});
      }
    }
  }
  return {};
}

std::vector<OpId> Model::topological_order() const {
  std::vector<OpId> reversed;
  reversed.reserve(num_ops());
  try {
    boost::topological_sort(graph(), std::back_inserter(reversed));
  } catch (const boost::not_a_dag&) {
    std::string msg = "model " + name_ + " has a cycle: ";
    const std::vector<OpId> cycle = find_cycle();
    for (OpId v : cycle) msg += graph()[v].name + " -> ";
    msg += cycle.empty() ? std::string("?") : graph()[cycle.front()].name;
    throw InputError(msg);
  }
  return {reversed.rbegin(), reversed.rend()};
}

bool Model::operator==(const Model& o) const {
  if (name_ != o.name_ || batch_ != o.batch_ || dtype_ != o.dtype_ || dataset_ != o.dataset_) return false;
  if (num_ops() != o.num_ops() || boost::num_edges(graph()) != boost::num_edges(o.graph())) return false;
  for (OpId v = 0; v < num_ops(); ++v) {
    if (!(graph()[v] == o.graph()[v])) return false;
    auto [a, a_end] = boost::out_edges(v, graph());
    auto [b, b_end] = boost::out_edges(v, o.graph());
    for (; a != a_end && b != b_end; ++a, ++b) {
      if (boost::target(*a, graph()) != boost::target(*b, o.graph())) return false;
      if (!(graph()[*a] == o.graph()[*b])) return false;
    }
    if (a != a_end || b != b_end) return false;
  }
  return true;
}

}  // namespace parasim::models
