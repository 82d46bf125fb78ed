// Thin adapters from the simulator's results to the report's plain data. The simulator is
// upstream of reports/, so depending on it is fine; nothing here is needed to read JSON.
//
// Example:
//   StepResult r = Engine(cluster, {.record_timeline = true}).run(graph);
//   ReportData d = report_from_step("dp=2,mp=2", graph, r);   // breakdown + memory + Gantt
//   d.gantt_title = "dp=2,mp=2 on " + cluster.name();
//   write_report(d, "out/report");
#pragma once

#include <string>
#include <vector>

#include "parasim/reports/report_data.hpp"
#include "parasim/simulator/step_result.hpp"
#include "parasim/simulator/task_graph.hpp"

namespace parasim::reports {

/// One bar per compute task and transfer, one per member device for a collective (as every
/// rank's own trace shows its NCCL kernel); markers are skipped. Phases map to forward /
/// backward (data and weight) / update / recompute / other; transfers and collectives are
/// communication. RuntimeError if `r` has no timeline (run the engine with record_timeline).
std::vector<GanttBar> gantt_from_step(const simulator::TaskGraph& graph, const simulator::StepResult& r);

/// The step averaged over its devices. `bubble` is the pipeline's share of each device's idle
/// time (the strategy knows it; 0 without pipelining) and is taken out of idle, capped by it.
BreakdownRow breakdown_from_step(std::string strategy, const simulator::StepResult& r, TimeNs bubble = 0);

/// One row per device with its peak, capacity and what held the memory at the peak.
std::vector<MemoryRow> memory_from_step(const std::string& strategy, const simulator::StepResult& r);

/// All three; the Gantt chart only when `r` has a timeline.
ReportData report_from_step(const std::string& strategy, const simulator::TaskGraph& graph,
                            const simulator::StepResult& r, TimeNs bubble = 0);

}  // namespace parasim::reports
