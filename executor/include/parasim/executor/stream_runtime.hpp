// The seam between the backend-independent scheduling core and a machine: a StreamRuntime is
// a set of in-order streams (per device: compute stream 0, comm stream 1, ... as the TaskGraph
// numbers them) plus events that one stream records and others wait for. It is CUDA's model of
// a GPU, and the CPU backend implements the same model with one worker thread per stream and
// futex-backed events, so both run the very same issue program (issue_plan.hpp).
//
// One step is: begin_step(); then, in the plan's order, wait_event / record_event / launch_*;
// then finish_step(), which runs (CPU) or drains (CUDA) everything issued and returns each
// launched task's start/end in ns since the step started. A RecordingRuntime
// (recording_runtime.hpp) implements the interface without any hardware for tests.
//
// Stream indices are dense: index = device * streams_per_device + stream.
//
// Example (what run_steps() in executor.hpp does):
//   IssuePlan plan = plan_issue(graph);
//   runtime.setup(graph, plan);
//   runtime.begin_step();
//   issue_step(plan, graph, runtime);
//   std::vector<simulator::TaskTiming> timeline(graph.size());
//   runtime.finish_step(timeline);
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "parasim/models/graph.hpp"
#include "parasim/simulator/step_result.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::executor {

using simulator::TaskGraph;
using simulator::TaskId;
using simulator::TaskTiming;

using StreamIndex = std::int32_t;  // device * streams_per_device + stream
using EventId = std::int32_t;      // index into IssuePlan::events

struct IssuePlan;

/// The op a compute task runs (nullptr: none). The lowering builds the model at every
/// micro-batch size it uses, so tasks of one graph may refer to different builds of one model.
using OpResolver = std::function<const models::Op*(const TaskGraph&, TaskId)>;
/// Op index -> `model.op(index)` (out of range or -1: none); `model` must outlive the resolver.
OpResolver ops_of_model(const models::Model& model);

class StreamRuntime {
 public:
  virtual ~StreamRuntime() = default;

  /// "cpu (2 devices x 2 streams on 2 cores)", "cuda (2 x NVIDIA H200)".
  virtual std::string name() const = 0;
  /// Called once before the first step with the graph and the plan every step will issue:
  /// create streams, events and buffers, prepare the kernels of every compute task.
  virtual void setup(const TaskGraph& graph, const IssuePlan& plan) = 0;

  virtual void begin_step() = 0;
  /// `stream` waits (without blocking the caller) until `event` has been recorded in this step.
  virtual void wait_event(StreamIndex stream, EventId event) = 0;
  /// `event` is recorded on `stream` once everything issued to it so far has finished.
  virtual void record_event(StreamIndex stream, EventId event) = 0;
  virtual void launch_compute(StreamIndex stream, TaskId task) = 0;
  virtual void launch_transfer(StreamIndex stream, TaskId task) = 0;
  /// `streams`: the task's stream on every member of its group, in group order.
  virtual void launch_collective(std::span<const StreamIndex> streams, TaskId task) = 0;
  /// Runs / waits for everything issued since begin_step() and writes start/end (ns since the
  /// step started) of every launched task into `timeline` (size graph.size(); markers are
  /// left alone). A collective starts when its last member joined and ends when its work has
  /// completed on every member.
  virtual void finish_step(std::vector<TaskTiming>& timeline) = 0;

  /// Things the user must know about how this runtime maps the graph onto the machine
  /// ("6 worker threads share 2 cores: ..."); filled by setup().
  virtual std::vector<std::string> notes() const { return {}; }
  /// Compute tasks that have no runnable kernel and stand in by waiting (spinning) for their
  /// graph duration; filled by setup(). Their "measured" time is the projection itself.
  virtual std::int64_t stand_in_tasks() const { return 0; }
};

}  // namespace parasim::executor
