// The discrete-event engine: runs a TaskGraph on a Cluster and returns a StepResult.
//
// Semantics (docs/simulator.md has the long form):
//   * Time is integer nanoseconds. Events sit in a queue ordered by (time, push order), so
//     equal-time events run in the order they were scheduled: same input, same output.
//   * Streams are in-order FIFOs. A task joins its stream's queue when its last dependency ends;
//     tasks that become ready at the same instant join in task-id order (markers complete at once:
//     what they release is ready at the same instant and joins in that order). A task starts when it
//     reaches the head and the stream is free. A collective waits at the head of the stream of
//     every member and starts when all of them are free.
//   * Links are full duplex; each direction carries flows with max-min fair sharing
//     (processor sharing): when a flow starts or ends, the rates of the flows it shares links
//     with are recomputed and their completion events rescheduled. A flow first waits its
//     route's latency (sum of link alphas), then moves its bytes at the smallest share along
//     its route. Two equal transfers starting together on one link both end at
//     alpha + 2 S / beta.
//   * Collectives run as planned steps of flows (CollectiveMode::Expanded) or take the plan's
//     closed-form idle time without loading links (CollectiveMode::Analytic).
//   * With collectives_hold_sms, a member's collective holds NCCL's channels' SMs from when its
//     stream reaches it to its end, and the GPU's compute runs on the other SMs meanwhile.
//
// Example:
//   Cluster cluster = hardware::make_cluster_preset("dgx1-v100");
//   Engine engine(cluster, {.collectives = CollectiveMode::Expanded, .record_timeline = true});
//   StepResult r = engine.run(graph);
//   write_chrome_trace("step.trace.json", graph, cluster, r);
#pragma once

#include <functional>

#include "parasim/hardware/cluster.hpp"
#include "parasim/simulator/collectives.hpp"
#include "parasim/simulator/step_result.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::simulator {

struct EngineOptions {
  CollectiveMode collectives = CollectiveMode::Expanded;
  /// Links: pure alpha-beta steps over the routes; Nccl: NCCL's protocols and latencies (what
  /// `simulate`, `plan` and `project` use; collectives.hpp).
  CollectiveCosts costs = CollectiveCosts::Links;
  /// Calibration of Nccl costs: time multipliers of intra-node and network collective steps.
  double intra_node_comm_scale = 1.0;
  double inter_node_comm_scale = 1.0;
  bool record_timeline = false;  // per-task start/end and link busy intervals (for traces)
  /// Per-task start/end only (StepResult::timeline, 16 bytes a task), without the link intervals,
  /// whose count grows with every message: what a caller measuring between tasks needs.
  bool record_task_times = false;
  /// Expanded collectives by symmetry: each step runs one message per class of equivalent ones
  /// (CollectivePlan::representatives), held to the idle share its class gets, instead of one per
  /// member - what a symmetric lowering (one simulated replica) wants; the others are inferred.
  /// Exact when the step's other messages share no link with other traffic (they belong to
  /// replicas that are not simulated); false runs every message.
  bool symmetric_collectives = false;
  /// Collectives hold SMs: while a collective runs on a GPU its NCCL kernel keeps one SM per channel
  /// (hardware::nccl_channels), and the compute tasks it overlaps there run on the SMs left, at
  /// (SMs - held) / SMs of their rate; their ends move as collectives start and end. Transfers and
  /// DataLoad tasks are not affected. false: compute runs at full rate beside any communication.
  bool collectives_hold_sms = false;
  /// Optional: a CollectivePlanner of the same cluster kept across runs, so that collective plans,
  /// ring orders and routes are worked out once for many task graphs (a planner sweeping thousands
  /// of strategies). Results are identical to a fresh planner's. One run at a time may use it; its
  /// memo is trimmed to about 128 MiB at the start of a run. nullptr: a fresh planner per run.
  CollectivePlanner* planner = nullptr;
  /// Optional: called with (tasks completed, tasks) at the start and about every 65,536
  /// completed tasks, from the thread that runs: a progress bar, and where Ctrl-C stops a long
  /// run (it may throw).
  std::function<void(std::size_t done, std::size_t total)> on_progress{};
};

class Engine {
 public:
  explicit Engine(const hardware::Cluster& cluster, EngineOptions options = {});

  /// InputError when the graph needs more devices than the cluster has; RuntimeError if the
  /// run stalls (which a valid graph cannot do).
  StepResult run(const TaskGraph& graph) const;

  /// Engine-side state per task while running (remaining dependencies + critical-path
  /// predecessor), excluding the optional timeline (16 bytes per task more).
  static constexpr std::size_t state_bytes_per_task() { return 2 * sizeof(std::int32_t); }

 private:
  const hardware::Cluster& cluster_;
  EngineOptions options_;
};

}  // namespace parasim::simulator
