#include "parasim/reports/step_adapters.hpp"

#include <algorithm>

#include "parasim/common/error.hpp"

namespace parasim::reports {

namespace {

using namespace parasim::simulator;

GanttCategory category_of(Phase p) {
  switch (p) {
    case Phase::Forward: return GanttCategory::Forward;
    case Phase::BackwardData:
    case Phase::BackwardWeight: return GanttCategory::Backward;
    case Phase::Update: return GanttCategory::Update;
    case Phase::Recompute: return GanttCategory::Recompute;
    case Phase::Other:
    case Phase::DataLoad: return GanttCategory::Other;
  }
  return GanttCategory::Other;
}

}  // namespace

std::vector<GanttBar> gantt_from_step(const TaskGraph& g, const StepResult& r) {
  if (r.timeline.size() != g.size())
    throw RuntimeError("Gantt chart: the step result has no timeline; run the engine with record_timeline = true");
  std::vector<GanttBar> bars;
  bars.reserve(g.size());
  for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t) {
    const TaskTiming& tt = r.timeline[static_cast<std::size_t>(t)];
    const std::string label(g.name(t));
    switch (g.kind(t)) {
      case TaskKind::Compute:
        bars.push_back({g.device(t), g.stream(t), tt.start, tt.end, category_of(g.phase(t)), label});
        break;
      case TaskKind::Transfer:
        bars.push_back({g.src(t), g.stream(t), tt.start, tt.end, GanttCategory::Communication, label});
        break;
      case TaskKind::Collective:
        for (DeviceId d : g.group_devices(g.group(t)))
          bars.push_back({d, g.stream(t), tt.start, tt.end, GanttCategory::Communication, label});
        break;
      case TaskKind::Marker: break;
    }
  }
  return bars;
}

BreakdownRow breakdown_from_step(std::string strategy, const StepResult& r, TimeNs bubble) {
  BreakdownRow row;
  row.strategy = std::move(strategy);
  if (r.devices.empty()) return row;
  double compute = 0, exposed = 0, idle = 0;
  for (const DeviceStats& d : r.devices) {
    compute += static_cast<double>(d.compute_busy);
    exposed += static_cast<double>(d.exposed_comm);
    idle += static_cast<double>(d.idle);
  }
  // The same arithmetic as the StepResult JSON reader, so both paths give identical numbers.
  const double n = static_cast<double>(r.devices.size());
  row.compute_ms = compute / n / 1e6;
  row.exposed_comm_ms = exposed / n / 1e6;
  row.bubble_ms = std::min(static_cast<double>(bubble) / 1e6, idle / n / 1e6);
  row.idle_ms = idle / n / 1e6 - row.bubble_ms;
  return row;
}

std::vector<MemoryRow> memory_from_step(const std::string& strategy, const StepResult& r) {
  std::vector<MemoryRow> rows;
  for (std::size_t i = 0; i < r.devices.size(); ++i) {
    const DeviceStats& d = r.devices[i];
    const MemoryBreakdown& b = d.peak_breakdown;
    rows.push_back({strategy, static_cast<int>(i), d.peak_memory, d.capacity,
                    {b.params, b.grads, b.optimizer, b.activations, b.other}});
  }
  return rows;
}

ReportData report_from_step(const std::string& strategy, const TaskGraph& graph, const StepResult& r, TimeNs bubble) {
  ReportData d;
  d.breakdown.push_back(breakdown_from_step(strategy, r, bubble));
  d.memory = memory_from_step(strategy, r);
  if (r.timeline.size() == graph.size()) {
    d.gantt = gantt_from_step(graph, r);
    d.gantt_title = strategy;
  }
  return d;
}

}  // namespace parasim::reports
