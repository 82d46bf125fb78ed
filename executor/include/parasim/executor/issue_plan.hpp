// The scheduling core: turns a TaskGraph into a stream program any StreamRuntime can run.
//
// 1. Stream order. Every (device, stream) is an in-order FIFO with the simulator's semantics:
//    a task joins its stream's queue when its last dependency ends (tasks that become ready at
//    the same instant join in task-id order), starts at the head once the stream is free, and
//    a collective starts when it heads the queue of every member. plan_issue() walks the graph
//    with ready counts from the CSR dependency lists in virtual time, using one duration per
//    task (the simulator's projected durations when given, else the graph's compute durations
//    with zero-time communication). The order in which tasks start is the issue order; a
//    collective therefore has the same relative order on every member, so no runtime can
//    deadlock on it.
// 2. Dependencies. A dependency on an earlier task of the same stream is implied by stream
//    order. Every other one becomes "wait for the event recorded after task X on stream R".
//    Vector clocks (per stream: the last position of every other stream known to have
//    finished) drop the waits that an earlier wait already implies, so a chain of tasks on
//    stream A fed by stream B waits once per new fact, as a hand-written CUDA program would.
//    Markers issue nothing: they merge their dependencies' clocks.
// 3. issue_step() replays the program on a runtime. A collective waits for all of its
//    dependencies on every member stream, and anything depending on a collective waits for
//    every member, so "starts after all its dependencies ended" holds literally.
//
// Example:
//   IssuePlan plan = plan_issue(graph);                  // or plan_issue(graph, durations)
//   runtime.setup(graph, plan);
//   runtime.begin_step();  issue_step(plan, graph, runtime);  runtime.finish_step(timeline);
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "parasim/common/units.hpp"
#include "parasim/executor/stream_runtime.hpp"

namespace parasim::executor {

enum class CommandKind : std::uint8_t { Wait, Launch, Record };

/// One step of the issue program. Launch: `task` on its stream(s) (stream is its first stream);
/// Wait / Record: `stream` waits for / records `event`.
struct Command {
  CommandKind kind = CommandKind::Launch;
  StreamIndex stream = 0;
  TaskId task = simulator::kNoTask;
  EventId event = -1;
};

/// An event: recorded on `stream` right after `task` (its `position`-th task on that stream).
struct EventSite {
  StreamIndex stream = 0;
  std::int32_t position = 0;
  TaskId task = simulator::kNoTask;
};

struct IssuePlan {
  int num_devices = 0;
  int streams_per_device = 0;
  std::vector<Command> commands;                    // in issue order
  std::vector<EventSite> events;                    // indexed by EventId
  std::vector<std::vector<TaskId>> stream_order;    // per stream index: its tasks in order
  std::vector<TaskId> issue_order;                  // every non-marker task, in issue order
  std::int64_t dependencies_by_stream_order = 0;    // cross-task edges implied by FIFO order
  std::int64_t waits = 0;                           // Wait commands (after vector-clock pruning)

  int num_streams() const { return num_devices * streams_per_device; }
  StreamIndex stream_index(simulator::DeviceId device, int stream) const {
    return device * streams_per_device + stream;
  }
};

/// The streams `task` occupies: one for compute and transfers (the source's), every member's
/// for collectives (group order), none for markers.
std::vector<StreamIndex> task_streams(const TaskGraph& graph, TaskId task);

/// The durations plan_issue() orders by when none are given: compute tasks their duration,
/// everything else 0.
std::vector<TimeNs> default_order_durations(const TaskGraph& graph);

/// Builds the issue program. `durations` (one per task) decide the FIFO join order; empty
/// means default_order_durations(). RuntimeError if the virtual run stalls (it cannot for a
/// graph the builder accepted).
IssuePlan plan_issue(const TaskGraph& graph, std::span<const TimeNs> durations = {});

/// Replays `plan` on `runtime` (between begin_step() and finish_step()).
void issue_step(const IssuePlan& plan, const TaskGraph& graph, StreamRuntime& runtime);

/// Markers run no code: their start = end = the latest end among their dependencies (0 with
/// none). Fills them into a timeline whose other tasks are set.
void fill_marker_times(const TaskGraph& graph, std::vector<TaskTiming>& timeline);

}  // namespace parasim::executor
