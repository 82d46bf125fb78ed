// Chrome Trace Event JSON shaped like torch.profiler / Kineto output, so Perfetto, chrome://tracing
// and Holistic Trace Analysis open it:
//   {"traceEvents": [...], "displayTimeUnit": "ms"}
//   pid = device ("GPU 0 (V100-SXM2-32GB)"), tid = stream ("compute stream 0", "comm stream 1");
//   one more process "Links" has a track per directed link that carried data;
//   markers sit on a "markers" track of their device (or of a "Host" process).
//   ph "X" complete events with ts/dur in microseconds (3 decimals = exact ns);
//   cat "kernel" (compute), "gpu_memcpy" (transfers, named "Memcpy PtoP (Device -> Device)"),
//   "nccl" (collectives, named like NCCL kernels: "ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
//   "marker", "link"; args carry the task id, op, microbatch, phase and bytes.
// One event per task per track it occupies: a collective appears on the comm stream of every
// member (as every rank's own trace shows its NCCL kernel). Events on one track never overlap.
//
// Example:
//   StepResult r = Engine(cluster, {.record_timeline = true}).run(graph);
//   write_chrome_trace("step.trace.json", graph, cluster, r);   // open in ui.perfetto.dev
#pragma once

#include <filesystem>
#include <string>

#include "parasim/hardware/cluster.hpp"
#include "parasim/simulator/step_result.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::simulator {

/// RuntimeError if `r` has no timeline (run the engine with record_timeline).
std::string chrome_trace_json(const TaskGraph& graph, const hardware::Cluster& cluster, const StepResult& r);
/// Writes atomically (temporary file + rename).
void write_chrome_trace(const std::filesystem::path& path, const TaskGraph& graph, const hardware::Cluster& cluster,
                        const StepResult& r);

/// "ncclDevKernel_AllReduce_Sum_f32_RING_LL" style name for a collective of `bytes`.
std::string nccl_kernel_name(CollectiveOp op, CollectiveAlgorithm algo, Bytes bytes);

}  // namespace parasim::simulator
