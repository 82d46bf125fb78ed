// A StreamRuntime without hardware: it records every call a step issues, checks the recorded
// program against the graph, and "runs" it in virtual time. This is how the stream/event logic
// the CUDA backend relies on is tested on machines without a GPU: the CUDA runtime receives
// exactly these calls (issue_step() is shared), and CUDA's rules are what check_program()
// enforces:
//   * a wait refers to an event already recorded earlier in the step (cudaStreamWaitEvent on an
//     event not yet recorded does not wait at all);
//   * every dependency of every task is honoured, either by stream order (an earlier task of
//     the same stream) or by a chain of event waits (happens-before, computed by replaying the
//     program with vector clocks, independently of the planner's own clocks);
//   * every non-marker task is launched exactly once per step;
//   * the program cannot deadlock (collectives rendezvous on every member stream).
//
// Example:
//   RecordingRuntime fake;
//   ExecutionResult r = run_steps(graph, fake, {.warmup = 0, .repetitions = 1});
//   for (const std::string& v : check_program(graph, fake.calls())) ADD_FAILURE() << v;
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "parasim/executor/issue_plan.hpp"
#include "parasim/executor/stream_runtime.hpp"

namespace parasim::executor {

struct RecordedCall {
  CommandKind kind = CommandKind::Launch;
  std::vector<StreamIndex> streams;  // one stream, or every member stream of a collective
  TaskId task = simulator::kNoTask;
  EventId event = -1;
};

/// The problems of one step's program ("task 7 \"fc2.fwd\" starts before its dependency 3
/// \"x\" ended: no wait on stream 1 after position 0"); empty when it is correct.
std::vector<std::string> check_program(const TaskGraph& graph, const std::vector<RecordedCall>& calls);

class RecordingRuntime final : public StreamRuntime {
 public:
  /// `duration(task)` is a task's virtual run time; by default compute tasks take their graph
  /// duration, transfers and collectives 1 ns per 1000 bytes + 1 us.
  explicit RecordingRuntime(std::function<TimeNs(const TaskGraph&, TaskId)> duration = {});

  std::string name() const override { return "recording (no hardware)"; }
  void setup(const TaskGraph& graph, const IssuePlan& plan) override;
  void begin_step() override;
  void wait_event(StreamIndex stream, EventId event) override;
  void record_event(StreamIndex stream, EventId event) override;
  void launch_compute(StreamIndex stream, TaskId task) override;
  void launch_transfer(StreamIndex stream, TaskId task) override;
  void launch_collective(std::span<const StreamIndex> streams, TaskId task) override;
  /// Runs the recorded program in virtual time (streams in order, waits block until the event
  /// is recorded, collectives start when every member reached them). RuntimeError on deadlock.
  void finish_step(std::vector<TaskTiming>& timeline) override;

  /// The calls of the last step.
  const std::vector<RecordedCall>& calls() const { return calls_; }
  int setups() const { return setups_; }
  int steps() const { return steps_; }

 private:
  std::function<TimeNs(const TaskGraph&, TaskId)> duration_;
  const TaskGraph* graph_ = nullptr;
  int num_streams_ = 0;
  std::vector<RecordedCall> calls_;
  int setups_ = 0;
  int steps_ = 0;
};

}  // namespace parasim::executor
