// Running a TaskGraph for real: plan once, then warm-up steps and timed repetitions on a
// StreamRuntime (CPU threads: cpu_runtime.hpp; CUDA streams: cuda_runtime.hpp; no hardware:
// recording_runtime.hpp), reported nccl-tests style as median and spread.
//
// Example:
//   models::Model model = build_zoo_model("tiny_cnn", {.batch = 8});   // what the lowering used
//   auto runtime = make_cpu_runtime(model, {});
//   ExecutionResult r = run_steps(graph, *runtime, {.warmup = 2, .repetitions = 5});
//   std::cout << format_time(r.step_median) << " [" << format_time(r.step_min) << ", "
//             << format_time(r.step_max) << "]\n";
#pragma once

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parasim/common/units.hpp"
#include "parasim/executor/issue_plan.hpp"
#include "parasim/executor/stream_runtime.hpp"

namespace parasim::executor {

struct ExecutionOptions {
  int warmup = 2;        // untimed steps first (first touch, caches, lazy initialisation)
  int repetitions = 5;   // timed steps
  /// Durations that decide each stream's FIFO order (plan_issue); pass the simulator's
  /// projected per-task durations to run the projected schedule. Empty: the graph's own.
  std::span<const TimeNs> order_durations = {};
  bool keep_timelines = false;  // ExecutionResult::timelines: every timed repetition's timeline
};

/// Per device, unions of intervals over its streams (as the simulator's DeviceStats).
struct DeviceBusy {
  TimeNs compute_busy = 0;   // some compute task ran
  TimeNs comm_busy = 0;      // some transfer (as source) or collective (as member) ran
  TimeNs exposed_comm = 0;   // comm_busy while no compute ran
};

struct ExecutionResult {
  std::string runtime;                 // StreamRuntime::name()
  /// A step's time is the span from its first task's start to its last task's end. The time
  /// from releasing the runtime to the first start (waking worker threads; launching on a GPU)
  /// is not part of a training step - consecutive steps follow each other directly - and is
  /// reported apart as launch latency.
  TimeNs step_median = 0;
  TimeNs step_min = 0;
  TimeNs step_max = 0;
  std::vector<TimeNs> step_times;      // every timed repetition, in order
  TimeNs launch_latency_median = 0;
  /// Per task: the median over repetitions of its start and of its end (ns since step start).
  std::vector<TaskTiming> timeline;
  std::vector<DeviceBusy> devices;     // from the per-repetition timelines, medians
  std::int64_t waits = 0;              // event waits per step after pruning
  std::int64_t events = 0;             // events recorded per step
  std::vector<std::string> notes;      // the runtime's notes (oversubscribed cores, ...)
  std::int64_t stand_in_tasks = 0;     // StreamRuntime::stand_in_tasks(): compute tasks not measured
  std::vector<std::vector<TaskTiming>> timelines;  // with ExecutionOptions::keep_timelines
};

/// Plans `graph`, sets `runtime` up, runs options.warmup + options.repetitions steps. Timelines
/// are shifted so that every step's first task starts at 0. InputError for repetitions < 1 or
/// warmup < 0.
ExecutionResult run_steps(const TaskGraph& graph, StreamRuntime& runtime, const ExecutionOptions& options = {});

/// Device busy times of one timeline.
std::vector<DeviceBusy> device_busy(const TaskGraph& graph, const std::vector<TaskTiming>& timeline);

// Medians of the repetitions: parasim::lower_median_ns (parasim/common/median.hpp), the lower
// middle for even sizes, so that each is a measured value.

nlohmann::json execution_result_to_json(const ExecutionResult& r);

}  // namespace parasim::executor
