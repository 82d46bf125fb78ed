#include "parasim/reports/results_json.hpp"

namespace parasim::reports {

namespace {

using nlohmann::json;

json point_to_json(const ScalingPoint& p) {
  json j = {{"gpus", p.gpus},
            {"time_to_train_s", p.time_to_train_s},
            {"step_time_ms", p.step_time_ms},
            {"global_batch", p.global_batch},
            {"epochs", p.epochs}};
  if (p.speedup != 0) j["speedup"] = p.speedup;
  if (!p.strategy.empty()) j["strategy"] = p.strategy;
  return j;
}

json assumptions_to_json(const Assumptions& a) {
  json extra = json::array();
  for (const auto& [k, v] : a.extra) extra.push_back({{"name", k}, {"value", v}});
  return {{"cost_source", a.cost_source},
          {"efficiency_model", a.efficiency_model},
          {"efficiency_source", a.efficiency_source},
          {"cluster", a.cluster},
          {"dataset", a.dataset},
          {"extra", extra}};
}

}  // namespace

json results_to_json(const ReportData& d) {
  json j;
  j["schema"] = kResultsSchema;
  j["title"] = d.title;
  j["model"] = d.model;
  j["assumptions"] = assumptions_to_json(d.assumptions);
  json& projection = j["projection"] = json::array();
  for (const ScalingSeries& s : d.scaling) {
    json points = json::array();
    for (const ScalingPoint& p : s.points) points.push_back(point_to_json(p));
    projection.push_back({{"name", s.name}, {"kind", std::string(to_string(s.kind))}, {"points", points}});
  }
  json& breakdown = j["breakdown"] = json::array();
  for (const BreakdownRow& r : d.breakdown)
    breakdown.push_back({{"strategy", r.strategy},
                         {"compute_ms", r.compute_ms},
                         {"exposed_comm_ms", r.exposed_comm_ms},
                         {"bubble_ms", r.bubble_ms},
                         {"idle_ms", r.idle_ms}});
  json& throughput = j["throughput"] = json::array();
  for (const ThroughputRow& r : d.throughput)
    throughput.push_back({{"strategy", r.strategy},
                          {"cluster", r.cluster},
                          {"gpus", r.gpus},
                          {"global_batch", r.global_batch},
                          {"step_time_ms", r.step_time_ms},
                          {"samples_per_s", r.samples_per_s},
                          {"feasible", r.feasible}});
  json bars = json::array();
  for (const GanttBar& b : d.gantt)
    bars.push_back({{"device", b.device},
                    {"lane", b.lane},
                    {"start_ns", b.start},
                    {"end_ns", b.end},
                    {"category", std::string(to_string(b.category))},
                    {"label", b.label}});
  j["timeline"] = {{"title", d.gantt_title}, {"bars", bars}};
  json& validation = j["validation"] = json::array();
  for (const ValidationPoint& v : d.validation) {
    validation.push_back({{"label", v.label}, {"projected_ms", v.projected_ms}, {"measured_ms", v.measured_ms}});
    if (!v.measured) validation.back()["measured"] = false;
  }
  json& memory = j["memory"] = json::array();
  for (const MemoryRow& m : d.memory)
    memory.push_back({{"strategy", m.strategy},
                      {"device", m.device},
                      {"peak_bytes", m.peak},
                      {"capacity_bytes", m.capacity},
                      {"breakdown",
                       {{"params", m.breakdown.params},
                        {"grads", m.breakdown.grads},
                        {"optimizer", m.breakdown.optimizer},
                        {"activations", m.breakdown.activations},
                        {"other", m.breakdown.other}}}});
  return j;
}

}  // namespace parasim::reports
