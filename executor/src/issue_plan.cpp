// The scheduling core (see issue_plan.hpp): a virtual-time walk with the simulator's FIFO
// semantics decides each stream's order; vector clocks turn cross-stream dependencies into
// the fewest event waits.
#include "parasim/executor/issue_plan.hpp"

#include <algorithm>
#include <deque>
#include <queue>
#include <string>
#include <tuple>

#include "parasim/common/error.hpp"
#include "parasim/common/index.hpp"

namespace parasim::executor {

using simulator::TaskKind;

std::vector<StreamIndex> task_streams(const TaskGraph& graph, TaskId task) {
  const int spd = graph.streams_per_device();
  switch (graph.kind(task)) {
    case TaskKind::Compute:
    case TaskKind::Transfer: return {graph.device(task) * spd + graph.stream(task)};
    case TaskKind::Collective: {
      std::vector<StreamIndex> out;
      for (simulator::DeviceId d : graph.group_devices(graph.group(task))) out.push_back(d * spd + graph.stream(task));
      return out;
    }
    case TaskKind::Marker: break;
  }
  return {};
}

std::vector<TimeNs> default_order_durations(const TaskGraph& graph) {
  std::vector<TimeNs> d(graph.size(), 0);
  for (TaskId t = 0; t < static_cast<TaskId>(graph.size()); ++t)
    if (graph.kind(t) == TaskKind::Compute) d[static_cast<std::size_t>(t)] = graph.duration(t);
  return d;
}

namespace {

// ---------------------------------------------------------------------------- stream order
// Virtual-time list scheduling with the engine's rules; returns tasks (markers included) in the
// order they start.
class VirtualRun {
 public:
  VirtualRun(const TaskGraph& g, std::span<const TimeNs> durations)
      : g_(g), dur_(durations), remaining_(g.size()),
        queues_(static_cast<std::size_t>(g.num_devices() * g.streams_per_device())),
        running_(queues_.size(), simulator::kNoTask) {}

  std::vector<TaskId> run() {
    for (TaskId t = 0; t < static_cast<TaskId>(g_.size()); ++t) {
      remaining_[ix(t)] = static_cast<std::int32_t>(g_.deps(t).size());
      if (remaining_[ix(t)] == 0) ready_.push_back(t);
    }
    dispatch();
    while (!ends_.empty()) {
      now_ = std::get<0>(ends_.top());
      while (!ends_.empty() && std::get<0>(ends_.top()) == now_) {
        const TaskId t = std::get<2>(ends_.top());
        ends_.pop();
        for (StreamIndex s : task_streams(g_, t)) {
          running_[static_cast<std::size_t>(s)] = simulator::kNoTask;
          dirty_.push_back(s);
        }
        complete(t);
      }
      dispatch();
    }
    if (order_.size() != g_.size())
      throw RuntimeError("executor: planning stalled after " + std::to_string(order_.size()) + " of " +
                         std::to_string(g_.size()) + " tasks (a collective order conflict or a dependency cycle)");
    return std::move(order_);
  }

 private:
  void complete(TaskId t) {
    for (TaskId s : g_.successors(t))
      if (--remaining_[ix(s)] == 0) ready_.push_back(s);
  }

  void dispatch() {
    while (!ready_.empty()) {
      std::sort(ready_.begin(), ready_.end());  // same-instant joins in task-id order
      std::vector<TaskId> batch;
      batch.swap(ready_);
      for (TaskId t : batch) {
        if (g_.kind(t) == TaskKind::Marker) {
          order_.push_back(t);
          complete(t);
          continue;
        }
        for (StreamIndex s : task_streams(g_, t)) {
          queues_[static_cast<std::size_t>(s)].push_back(t);
          dirty_.push_back(s);
        }
      }
    }
    std::sort(dirty_.begin(), dirty_.end());
    dirty_.erase(std::unique(dirty_.begin(), dirty_.end()), dirty_.end());
    std::vector<StreamIndex> streams;
    streams.swap(dirty_);
    for (StreamIndex s : streams) try_start(s);
    if (!ready_.empty()) dispatch();  // zero-time markers released more work
  }

  void try_start(StreamIndex s) {
    auto& q = queues_[static_cast<std::size_t>(s)];
    if (running_[static_cast<std::size_t>(s)] != simulator::kNoTask || q.empty()) return;
    const TaskId t = q.front();
    const std::vector<StreamIndex> streams = task_streams(g_, t);
    if (g_.kind(t) == TaskKind::Collective) {
      // Starts when it heads every member's queue and every member stream is free.
      for (StreamIndex m : streams) {
        const auto& mq = queues_[static_cast<std::size_t>(m)];
        if (running_[static_cast<std::size_t>(m)] != simulator::kNoTask || mq.empty() || mq.front() != t) return;
      }
    }
    for (StreamIndex m : streams) {
      queues_[static_cast<std::size_t>(m)].pop_front();
      running_[static_cast<std::size_t>(m)] = t;
    }
    order_.push_back(t);
    const TimeNs d = dur_.empty() ? 0 : std::max<TimeNs>(dur_[ix(t)], 0);
    ends_.emplace(now_ + d, seq_++, t);
  }

  const TaskGraph& g_;
  std::span<const TimeNs> dur_;
  std::vector<std::int32_t> remaining_;
  std::vector<std::deque<TaskId>> queues_;
  std::vector<TaskId> running_;
  std::vector<TaskId> ready_;
  std::vector<StreamIndex> dirty_;
  std::vector<TaskId> order_;
  using End = std::tuple<TimeNs, std::int64_t, TaskId>;
  std::priority_queue<End, std::vector<End>, std::greater<>> ends_;
  TimeNs now_ = 0;
  std::int64_t seq_ = 0;
};

// ---------------------------------------------------------------------------- waits
// A wait `waiter` issues for the task at `position` on stream `source`.
struct Wait {
  StreamIndex waiter;
  StreamIndex source;
  std::int32_t position;
};

using Clock = std::vector<std::int32_t>;  // per stream: last position known finished, -1 none

void merge(Clock& into, const Clock& from) {
  for (std::size_t r = 0; r < into.size(); ++r) into[r] = std::max(into[r], from[r]);
}

}  // namespace

IssuePlan plan_issue(const TaskGraph& graph, std::span<const TimeNs> durations) {
  if (!durations.empty() && durations.size() != graph.size())
    throw InputError("executor: " + std::to_string(durations.size()) + " order durations for a graph of " +
                     std::to_string(graph.size()) + " tasks");
  const std::vector<TimeNs> defaults = durations.empty() ? default_order_durations(graph) : std::vector<TimeNs>{};
  const std::vector<TaskId> start_order =
      VirtualRun(graph, durations.empty() ? std::span<const TimeNs>(defaults) : durations).run();

  IssuePlan plan;
  plan.num_devices = graph.num_devices();
  plan.streams_per_device = graph.streams_per_device();
  const auto S = static_cast<std::size_t>(plan.num_streams());
  plan.stream_order.resize(S);

  // Pass 1: positions, the waits each launch needs (as (stream, position) facts) and clocks.
  std::vector<Clock> known(S, Clock(S, -1));   // what each stream has already waited for
  std::vector<Clock> done(graph.size());        // what a task's completion implies
  std::vector<std::vector<Clock>> after(S);     // per stream and position: its clock right after
  std::vector<std::vector<Wait>> waits(graph.size());
  std::vector<std::vector<std::int32_t>> needs_event(S);  // positions after which an event is recorded
  for (TaskId t : start_order) {
    const std::vector<StreamIndex> streams = task_streams(graph, t);
    Clock required(S, -1);
    for (TaskId d : graph.deps(t)) {
      merge(required, done[ix(d)]);
      const std::vector<StreamIndex> dep_streams = task_streams(graph, d);
      for (StreamIndex m : streams)
        if (std::find(dep_streams.begin(), dep_streams.end(), m) != dep_streams.end()) {
          ++plan.dependencies_by_stream_order;  // same stream: FIFO order implies it
          break;
        }
    }
    if (graph.kind(t) == TaskKind::Marker) {
      done[ix(t)] = std::move(required);
      continue;
    }
    Clock completion(S, -1);
    for (StreamIndex m : streams) {
      Clock& k = known[static_cast<std::size_t>(m)];
      // Candidates: streams with a required position this stream does not know about yet.
      std::vector<std::size_t> candidates;
      for (std::size_t r = 0; r < S; ++r)
        if (static_cast<StreamIndex>(r) != m && required[r] > k[r]) candidates.push_back(r);
      // Drop a candidate that another candidate's event already implies (happens-before is
      // transitive and acyclic, so the survivors imply all the dropped ones).
      auto implied = [&](std::size_t r) {
        for (std::size_t q : candidates)
          if (q != r && after[q][static_cast<std::size_t>(required[q])][r] >= required[r]) return true;
        return false;
      };
      std::vector<std::size_t> chosen;
      for (std::size_t r : candidates)
        if (!implied(r)) chosen.push_back(r);
      for (std::size_t r : chosen) {
        const std::int32_t pos = required[r];
        waits[ix(t)].push_back({m, static_cast<StreamIndex>(r), pos});
        needs_event[r].push_back(pos);
        // The event on stream r tells what stream r knew right after that task (for a
        // collective: its own member's part, not the other members').
        merge(k, after[r][static_cast<std::size_t>(pos)]);
      }
      const auto position = static_cast<std::int32_t>(plan.stream_order[static_cast<std::size_t>(m)].size());
      plan.stream_order[static_cast<std::size_t>(m)].push_back(t);
      k[static_cast<std::size_t>(m)] = position;
      after[static_cast<std::size_t>(m)].push_back(k);
      merge(completion, k);
    }
    done[ix(t)] = std::move(completion);
    plan.issue_order.push_back(t);
  }

  // Event ids, one per (stream, position) that anyone waits for.
  std::vector<std::vector<EventId>> event_at(S);
  for (std::size_t r = 0; r < S; ++r) {
    auto& v = needs_event[r];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    event_at[r].assign(plan.stream_order[r].size(), -1);
    for (std::int32_t pos : v) {
      event_at[r][static_cast<std::size_t>(pos)] = static_cast<EventId>(plan.events.size());
      plan.events.push_back({static_cast<StreamIndex>(r), pos, plan.stream_order[r][static_cast<std::size_t>(pos)]});
    }
  }

  // Pass 2: the command list: a launch's waits, the launch, then the events recorded after it.
  std::vector<std::int32_t> next_position(S, 0);
  for (TaskId t : plan.issue_order) {
    const std::vector<StreamIndex> streams = task_streams(graph, t);
    for (const Wait& w : waits[ix(t)]) {
      const EventId e = event_at[static_cast<std::size_t>(w.source)][static_cast<std::size_t>(w.position)];
      plan.commands.push_back({CommandKind::Wait, w.waiter, simulator::kNoTask, e});
      ++plan.waits;
    }
    plan.commands.push_back({CommandKind::Launch, streams.front(), t, -1});
    for (StreamIndex m : streams) {
      const std::int32_t pos = next_position[static_cast<std::size_t>(m)]++;
      const EventId e = event_at[static_cast<std::size_t>(m)][static_cast<std::size_t>(pos)];
      if (e >= 0) plan.commands.push_back({CommandKind::Record, m, t, e});
    }
  }
  return plan;
}

void issue_step(const IssuePlan& plan, const TaskGraph& graph, StreamRuntime& runtime) {
  std::vector<StreamIndex> streams;
  for (const Command& c : plan.commands) {
    switch (c.kind) {
      case CommandKind::Wait: runtime.wait_event(c.stream, c.event); break;
      case CommandKind::Record: runtime.record_event(c.stream, c.event); break;
      case CommandKind::Launch:
        switch (graph.kind(c.task)) {
          case TaskKind::Compute: runtime.launch_compute(c.stream, c.task); break;
          case TaskKind::Transfer: runtime.launch_transfer(c.stream, c.task); break;
          case TaskKind::Collective:
            streams = task_streams(graph, c.task);
            runtime.launch_collective(streams, c.task);
            break;
          case TaskKind::Marker: break;
        }
        break;
    }
  }
}

void fill_marker_times(const TaskGraph& graph, std::vector<TaskTiming>& timeline) {
  // Kahn's order: dependencies may have larger ids than their dependents.
  std::vector<std::int32_t> remaining(graph.size());
  std::vector<TaskId> stack;
  for (TaskId t = 0; t < static_cast<TaskId>(graph.size()); ++t) {
    remaining[ix(t)] = static_cast<std::int32_t>(graph.deps(t).size());
    if (remaining[ix(t)] == 0) stack.push_back(t);
  }
  while (!stack.empty()) {
    const TaskId t = stack.back();
    stack.pop_back();
    if (graph.kind(t) == TaskKind::Marker) {
      TimeNs at = 0;
      for (TaskId d : graph.deps(t)) at = std::max(at, timeline[ix(d)].end);
      timeline[ix(t)] = {at, at};
    }
    for (TaskId s : graph.successors(t))
      if (--remaining[ix(s)] == 0) stack.push_back(s);
  }
}

}  // namespace parasim::executor
