// What one simulated training step produced.
//
// Per device (times are unions over the device's streams, so they never exceed step_time):
//   compute_busy   some compute task was running
//   comm_busy      some transfer or collective occupied one of its streams
//   exposed_comm   comm_busy while no compute ran (communication that was not hidden)
//   idle           neither; compute_busy + exposed_comm + idle == step_time
//   peak_memory    max over time of static bytes + live task allocations, with its breakdown
//                  at the instant it was first reached (at one instant frees precede allocations)
// Per directed link: busy (some flow was moving data) and bytes carried. Expanded collectives
// and transfers load links; analytic collectives do not.
// critical_path: task ids from the first to the last-finishing task, each entry being the
// dependency or same-stream predecessor that finished last before the next could start.
//
// Example:
//   StepResult r = Engine(cluster).run(graph);
//   std::cout << format_time(r.step_time) << " " << format_bytes(r.devices[0].peak_memory) << "\n";
//   nlohmann::json j = step_result_to_json(r, graph, cluster);
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "parasim/common/units.hpp"
#include "parasim/hardware/cluster.hpp"
#include "parasim/simulator/collectives.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::simulator {

struct MemoryBreakdown {
  Bytes params = 0;
  Bytes grads = 0;
  Bytes optimizer = 0;
  Bytes activations = 0;
  Bytes other = 0;  // static "other" plus live allocations of category Other
  Bytes total() const { return params + grads + optimizer + activations + other; }
  bool operator==(const MemoryBreakdown&) const = default;
};

struct DeviceStats {
  TimeNs compute_busy = 0;
  TimeNs comm_busy = 0;
  TimeNs exposed_comm = 0;
  TimeNs idle = 0;
  Bytes peak_memory = 0;
  TimeNs peak_time = 0;
  MemoryBreakdown peak_breakdown;
  Bytes capacity = 0;  // the cluster device's memory
};

struct LinkStats {
  TimeNs busy = 0;
  Bytes bytes = 0;
};

struct TaskTiming {
  TimeNs start = -1;
  TimeNs end = -1;
};

struct LinkInterval {
  hardware::DirLinkId link = 0;
  TimeNs start = 0;
  TimeNs end = 0;
};

struct StepResult {
  TimeNs step_time = 0;
  std::vector<DeviceStats> devices;     // one per task-graph device
  std::vector<LinkStats> links;         // indexed by directed link id
  std::vector<TaskId> critical_path;
  /// [device * streams_per_device + stream]: the summed durations of the tasks each stream ran, a
  /// collective counted on every member it queued on (a passive member's time is its comm_busy).
  std::vector<TimeNs> stream_busy;
  std::int64_t events = 0;              // heap events processed (task ends, flow phases)
  std::int64_t tasks = 0;
  CollectiveMode collective_mode = CollectiveMode::Expanded;
  /// Expanded collectives: messages simulated, and messages inferred from a simulated one of their
  /// class (EngineOptions::symmetric_collectives).
  std::int64_t collective_messages = 0;
  std::int64_t collective_messages_inferred = 0;
  // Filled only with EngineOptions::record_timeline (timeline and algorithms also with
  // record_task_times):
  std::vector<TaskTiming> timeline;     // indexed by task id
  std::vector<LinkInterval> link_timeline;  // maximal busy intervals per directed link
  std::vector<CollectiveAlgorithm> algorithms;  // per task: what Auto resolved to (collectives)
};

/// The StepResult as JSON (deterministic: same result -> same bytes through dump_json).
nlohmann::json step_result_to_json(const StepResult& r, const TaskGraph& graph, const hardware::Cluster& cluster);

}  // namespace parasim::simulator
