// The hardware-free runtime: records calls, checks them with CUDA's rules, runs them in
// virtual time (see recording_runtime.hpp).
#include "parasim/executor/recording_runtime.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>

#include "parasim/common/error.hpp"
#include "parasim/common/index.hpp"

namespace parasim::executor {

using simulator::TaskKind;

namespace {

std::string describe(const TaskGraph& g, TaskId t) {
  return "task " + std::to_string(t) + " \"" + std::string(g.name(t)) + "\"";
}

using Clock = std::vector<std::int32_t>;

// Replays a program with vector clocks: vc[s][r] = the last position of stream r that stream
// s knows to have finished before its next task starts.
class ProgramChecker {
 public:
  explicit ProgramChecker(const TaskGraph& g)
      : g_(g), S_(ix(g.num_devices()) * ix(g.streams_per_device())), vc_(S_, Clock(S_, -1)),
        count_(S_, 0), done_(g.size()), launches_(g.size(), 0) {}

  std::vector<std::string> check(const std::vector<RecordedCall>& calls) {
    for (std::size_t i = 0; i < calls.size(); ++i) step(calls[i], i);
    for (TaskId t = 0; t < static_cast<TaskId>(g_.size()); ++t) {
      if (g_.kind(t) == TaskKind::Marker) continue;
      if (launches_[ix(t)] != 1)
        problems_.push_back(describe(g_, t) + " was launched " + std::to_string(launches_[ix(t)]) +
                            " times, expected once");
    }
    check_deadlock_free(calls);
    return std::move(problems_);
  }

 private:
  bool valid_stream(StreamIndex s) const { return s >= 0 && ix(s) < S_; }

  void step(const RecordedCall& c, std::size_t at) {
    for (StreamIndex s : c.streams)
      if (!valid_stream(s)) {
        problems_.push_back("call " + std::to_string(at) + ": stream " + std::to_string(s) + " does not exist");
        return;
      }
    switch (c.kind) {
      case CommandKind::Record: {
        if (c.streams.size() != 1) break;
        const StreamIndex s = c.streams.front();
        if (events_.count(c.event))
          problems_.push_back("event " + std::to_string(c.event) + " recorded twice in one step");
        events_[c.event] = vc_[ix(s)];
        break;
      }
      case CommandKind::Wait: {
        if (c.streams.size() != 1) break;
        auto it = events_.find(c.event);
        if (it == events_.end()) {
          problems_.push_back("call " + std::to_string(at) + ": stream " + std::to_string(c.streams.front()) +
                              " waits for event " + std::to_string(c.event) +
                              " before it was recorded (CUDA would not wait at all)");
          break;
        }
        Clock& k = vc_[ix(c.streams.front())];
        for (std::size_t r = 0; r < S_; ++r) k[r] = std::max(k[r], it->second[r]);
        break;
      }
      case CommandKind::Launch: launch(c); break;
    }
  }

  // What the completion of `t` means in positions; nullopt if some underlying task was not
  // launched yet.
  std::optional<Clock> completion(TaskId t, int depth = 0) {
    if (done_[ix(t)]) return done_[ix(t)];
    if (g_.kind(t) != TaskKind::Marker || depth > 100000) return std::nullopt;
    Clock c(S_, -1);
    for (TaskId d : g_.deps(t)) {
      auto dc = completion(d, depth + 1);
      if (!dc) return std::nullopt;
      for (std::size_t r = 0; r < S_; ++r) c[r] = std::max(c[r], (*dc)[r]);
    }
    done_[ix(t)] = c;
    return c;
  }

  void launch(const RecordedCall& c) {
    const TaskId t = c.task;
    if (t < 0 || ix(t) >= g_.size()) {
      problems_.push_back("launch of unknown task " + std::to_string(t));
      return;
    }
    ++launches_[ix(t)];
    const std::vector<StreamIndex> expected = task_streams(g_, t);
    if (expected != c.streams) problems_.push_back(describe(g_, t) + " launched on the wrong stream(s)");
    for (TaskId d : g_.deps(t)) {
      const auto dc = completion(d);
      if (!dc) {
        problems_.push_back(describe(g_, t) + " launched before its dependency " + describe(g_, d));
        continue;
      }
      for (StreamIndex m : c.streams) {
        const Clock& k = vc_[ix(m)];
        for (std::size_t r = 0; r < S_; ++r) {
          if ((*dc)[r] <= k[r]) continue;
          problems_.push_back(describe(g_, t) + " may start on stream " + std::to_string(m) +
                              " before its dependency " + describe(g_, d) +
                              " ended: nothing orders it after position " + std::to_string((*dc)[r]) + " of stream " +
                              std::to_string(r));
        }
      }
    }
    Clock mine(S_, -1);
    for (StreamIndex m : c.streams) {
      const std::int32_t pos = count_[ix(m)]++;
      vc_[ix(m)][ix(m)] = pos;
      mine[ix(m)] = pos;
    }
    done_[ix(t)] = mine;
  }

  // Runs the per-stream command queues until nothing moves: a wait needs its event recorded,
  // a collective needs every member at it.
  void check_deadlock_free(const std::vector<RecordedCall>& calls) {
    std::vector<std::vector<std::size_t>> per_stream(S_);
    for (std::size_t i = 0; i < calls.size(); ++i)
      for (StreamIndex s : calls[i].streams)
        if (valid_stream(s)) per_stream[ix(s)].push_back(i);
    std::vector<std::size_t> head(S_, 0);
    std::unordered_map<EventId, bool> recorded;
    bool progress = true;
    while (progress) {
      progress = false;
      for (std::size_t s = 0; s < S_; ++s) {
        while (head[s] < per_stream[s].size()) {
          const RecordedCall& c = calls[per_stream[s][head[s]]];
          if (c.kind == CommandKind::Wait && !recorded[c.event]) break;
          if (c.kind == CommandKind::Record) recorded[c.event] = true;
          if (c.kind == CommandKind::Launch && c.streams.size() > 1) {
            const std::size_t me = per_stream[s][head[s]];
            const bool all_there = std::all_of(c.streams.begin(), c.streams.end(), [&](StreamIndex m) {
              return head[ix(m)] < per_stream[ix(m)].size() && per_stream[ix(m)][head[ix(m)]] == me;
            });
            if (!all_there) break;
            for (StreamIndex m : c.streams) ++head[ix(m)];
            progress = true;
            continue;
          }
          ++head[s];
          progress = true;
        }
      }
    }
    for (std::size_t s = 0; s < S_; ++s)
      if (head[s] < per_stream[s].size()) {
        problems_.push_back("stream " + std::to_string(s) + " deadlocks at call " +
                            std::to_string(per_stream[s][head[s]]));
        return;
      }
  }

  const TaskGraph& g_;
  std::size_t S_;
  std::vector<Clock> vc_;
  std::vector<std::int32_t> count_;
  std::vector<std::optional<Clock>> done_;
  std::vector<int> launches_;
  std::unordered_map<EventId, Clock> events_;
  std::vector<std::string> problems_;
};

TimeNs default_duration(const TaskGraph& g, TaskId t) {
  switch (g.kind(t)) {
    case TaskKind::Compute: return g.duration(t);
    case TaskKind::Transfer:
    case TaskKind::Collective: return 1'000 + g.bytes(t) / 1'000;
    case TaskKind::Marker: break;
  }
  return 0;
}

}  // namespace

std::vector<std::string> check_program(const TaskGraph& graph, const std::vector<RecordedCall>& calls) {
  return ProgramChecker(graph).check(calls);
}

RecordingRuntime::RecordingRuntime(std::function<TimeNs(const TaskGraph&, TaskId)> duration)
    : duration_(duration ? std::move(duration) : default_duration) {}

void RecordingRuntime::setup(const TaskGraph& graph, const IssuePlan& plan) {
  graph_ = &graph;
  num_streams_ = plan.num_streams();
  ++setups_;
}

void RecordingRuntime::begin_step() { calls_.clear(); }

void RecordingRuntime::wait_event(StreamIndex stream, EventId event) {
  calls_.push_back({CommandKind::Wait, {stream}, simulator::kNoTask, event});
}
void RecordingRuntime::record_event(StreamIndex stream, EventId event) {
  calls_.push_back({CommandKind::Record, {stream}, simulator::kNoTask, event});
}
void RecordingRuntime::launch_compute(StreamIndex stream, TaskId task) {
  calls_.push_back({CommandKind::Launch, {stream}, task, -1});
}
void RecordingRuntime::launch_transfer(StreamIndex stream, TaskId task) {
  calls_.push_back({CommandKind::Launch, {stream}, task, -1});
}
void RecordingRuntime::launch_collective(std::span<const StreamIndex> streams, TaskId task) {
  calls_.push_back({CommandKind::Launch, std::vector<StreamIndex>(streams.begin(), streams.end()), task, -1});
}

void RecordingRuntime::finish_step(std::vector<TaskTiming>& timeline) {
  if (!graph_) throw RuntimeError("RecordingRuntime: finish_step() before setup()");
  ++steps_;
  const auto S = ix(num_streams_);
  std::vector<std::vector<std::size_t>> per_stream(S);
  for (std::size_t i = 0; i < calls_.size(); ++i)
    for (StreamIndex s : calls_[i].streams) per_stream[ix(s)].push_back(i);
  std::vector<std::size_t> head(S, 0);
  std::vector<TimeNs> clock(S, 0);
  std::unordered_map<EventId, TimeNs> event_time;
  bool progress = true;
  while (progress) {
    progress = false;
    for (std::size_t s = 0; s < S; ++s) {
      while (head[s] < per_stream[s].size()) {
        const std::size_t me = per_stream[s][head[s]];
        const RecordedCall& c = calls_[me];
        if (c.kind == CommandKind::Wait) {
          auto it = event_time.find(c.event);
          if (it == event_time.end()) break;
          clock[s] = std::max(clock[s], it->second);
        } else if (c.kind == CommandKind::Record) {
          event_time[c.event] = clock[s];
        } else {
          const bool ready = std::all_of(c.streams.begin(), c.streams.end(), [&](StreamIndex m) {
            return head[ix(m)] < per_stream[ix(m)].size() && per_stream[ix(m)][head[ix(m)]] == me;
          });
          if (!ready) break;
          TimeNs start = 0;
          for (StreamIndex m : c.streams) start = std::max(start, clock[ix(m)]);
          const TimeNs end = start + duration_(*graph_, c.task);
          timeline[ix(c.task)] = {start, end};
          for (StreamIndex m : c.streams) {
            clock[ix(m)] = end;
            if (ix(m) != s) ++head[ix(m)];
          }
        }
        ++head[s];
        progress = true;
      }
    }
  }
  for (std::size_t s = 0; s < S; ++s)
    if (head[s] < per_stream[s].size())
      throw RuntimeError("RecordingRuntime: the issued program deadlocks on stream " + std::to_string(s));
}

}  // namespace parasim::executor
