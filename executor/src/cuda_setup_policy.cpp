// Stand-in bookkeeping and the per-GPU collective order (no CUDA headers).
#include "parasim/executor/cuda_setup_policy.hpp"

#include "parasim/executor/issue_plan.hpp"

namespace parasim::executor {

void StandInLedger::add(const std::string& op, StandInReason why, const std::string& detail) {
  ++tasks_;
  if (why != StandInReason::NoOp) ops_[{why, detail}].insert(op);
}

std::vector<std::string> StandInLedger::ops(StandInReason why) const {
  std::set<std::string> all;
  for (const auto& [key, names] : ops_)
    if (key.first == why) all.insert(names.begin(), names.end());
  return {all.begin(), all.end()};
}

std::vector<std::string> StandInLedger::notes() const {
  std::vector<std::string> out;
  if (tasks_ == 0) return out;
  out.push_back(std::to_string(tasks_) + " compute task" + (tasks_ == 1 ? "" : "s") +
                " run a timed stand-in (a spin kernel for the task's graph duration; not a measurement)");
  for (const auto& [key, names] : ops_) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    switch (key.first) {
      case StandInReason::MemoryReserve:
        out.push_back("stand-in ops (memory reserve: " + key.second + "): " + list);
        break;
      case StandInReason::PrepareFailed:
        out.push_back("stand-in ops (no kernel: " + key.second + "): " + list);
        break;
      case StandInReason::NoOp: break;
    }
  }
  return out;
}

std::vector<std::vector<CollectiveOrderWait>> collective_order_waits(const TaskGraph& graph, const IssuePlan& plan) {
  std::vector<std::vector<CollectiveOrderWait>> waits(graph.size());
  // Per device: the last collective issued on it and the stream it ran on.
  std::vector<std::pair<TaskId, StreamIndex>> last(static_cast<std::size_t>(graph.num_devices()), {-1, -1});
  const int spd = graph.streams_per_device();
  for (TaskId t : plan.issue_order) {
    if (graph.kind(t) != simulator::TaskKind::Collective) continue;
    for (StreamIndex s : task_streams(graph, t)) {
      auto& [prev, prev_stream] = last[static_cast<std::size_t>(s / spd)];
      // Same stream: FIFO order already holds.
      if (prev >= 0 && prev_stream != s) waits[static_cast<std::size_t>(t)].push_back({s, prev});
      prev = t;
      prev_stream = s;
    }
  }
  return waits;
}

}  // namespace parasim::executor
