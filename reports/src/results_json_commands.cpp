// Readers for what the other commands print: simulate (StepResult JSON, Chrome trace),
// validate, project and plan. The shapes are documented in docs/reports.md.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "parasim/common/error.hpp"
#include "parasim/common/units.hpp"
#include "parasim/reports/results_json.hpp"
#include "results_json_readers.hpp"

namespace parasim::reports::detail {

namespace {

GanttCategory category_of_phase(std::string_view phase) {
  if (phase == "forward") return GanttCategory::Forward;
  if (phase == "backward_data" || phase == "backward_weight" || phase == "backward") return GanttCategory::Backward;
  if (phase == "update") return GanttCategory::Update;
  if (phase == "recompute") return GanttCategory::Recompute;
  return GanttCategory::Other;
}

TimeNs us_field_to_ns(const JsonField& f) { return static_cast<TimeNs>(std::llround(f.as_double(0, 1e15) * 1000.0)); }

std::string label_from_file(const std::string& file) {
  const std::string stem = std::filesystem::path(file).stem().string();
  return stem.empty() ? "simulated step" : stem;
}

/// One strategy's per-device rows of a StepResult `devices` array -> breakdown + memory.
void read_step_devices(const JsonField& devices, const std::string& label, double bubble_ms, ReportData& d) {
  double compute = 0, exposed = 0, idle = 0;
  const auto items = devices.items_of_array();
  for (std::size_t i = 0; i < items.size(); ++i) {
    const JsonField& dev = items[i];
    compute += static_cast<double>(dev.at("compute_busy_ns").as_int(0));
    exposed += static_cast<double>(dev.at("exposed_comm_ns").as_int(0));
    idle += static_cast<double>(dev.at("idle_ns").as_int(0));
    MemoryRow m;
    m.strategy = label;
    m.device = dev.has("device") ? static_cast<int>(dev.at("device").as_int(0, 1 << 24)) : static_cast<int>(i);
    m.peak = dev.at("peak_memory_bytes").as_int(0);
    m.capacity = optional_int(dev, "memory_capacity_bytes", 0);
    if (auto parts = optional_field(dev, "peak_breakdown")) m.breakdown = read_memory_parts(*parts);
    d.memory.push_back(std::move(m));
  }
  if (items.empty()) return;
  const double n = static_cast<double>(items.size());
  BreakdownRow r;
  r.strategy = label;
  r.compute_ms = compute / n / 1e6;
  r.exposed_comm_ms = exposed / n / 1e6;
  r.bubble_ms = std::min(bubble_ms, idle / n / 1e6);  // the bubble is part of the idle time
  r.idle_ms = idle / n / 1e6 - r.bubble_ms;
  d.breakdown.push_back(r);
}

ScalingPoint read_projection_point(const JsonField& p, std::int64_t gpus) {
  ScalingPoint pt;
  pt.gpus = gpus;
  pt.time_to_train_s = p.at("time_to_train_s").as_double(0);
  pt.step_time_ms = optional_double(p, "step_time_ms", 0);
  pt.global_batch = optional_int(p, "global_batch", 0);
  pt.epochs = optional_double(p, "epochs", 0);
  pt.speedup = optional_double(p, "speedup", 0);
  if (auto s = optional_field(p, "strategy")) pt.strategy = describe_value(*s);
  return pt;
}

}  // namespace

bool is_validation_run(const nlohmann::json& j) {
  return j.is_object() && j.contains("projected_ms") && j.contains("measured_ms");
}

ValidationPoint read_validation_point(const JsonField& obj) {
  ValidationPoint v;
  v.projected_ms = obj.at("projected_ms").as_double(0);
  v.measured_ms = obj.at("measured_ms").as_double(0);
  for (const char* key : {"label", "name", "case"})
    if (auto f = optional_field(obj, key); f && v.label.empty()) v.label = describe_value(*f);
  if (v.label.empty()) {
    for (const char* key : {"model", "strategy"})
      if (auto f = optional_field(obj, key)) {
        if (!v.label.empty()) v.label += ' ';
        v.label += describe_value(*f);
      }
    if (auto f = optional_field(obj, "backend")) v.label += " (" + describe_value(*f) + ")";
  }
  return v;
}

std::vector<ValidationPoint> read_validation_points(const JsonField& array) {
  std::vector<ValidationPoint> out;
  for (const JsonField& run : array.items_of_array()) {
    // A run that failed before it was measured has nothing to plot; validate reports it itself.
    if (run.is_object() && (run.raw().value("measured_ms", nlohmann::json()).is_null() ||
                            run.raw().value("projected_ms", nlohmann::json()).is_null()))
      continue;
    out.push_back(read_validation_point(run));
  }
  return out;
}

ReportData read_validation_output(const JsonField& root) {
  ReportData d;
  if (is_validation_run(root.raw())) {
    read_context(root, d);
    d.validation.push_back(read_validation_point(root));
  } else if (root.is_array()) {
    d.validation = read_validation_points(root);
  } else {
    for (const auto& [key, value] : root.raw().items())
      if (value.is_array() && !value.empty() && std::all_of(value.begin(), value.end(), is_validation_run)) {
        auto points = read_validation_points(root.at(key));
        d.validation.insert(d.validation.end(), points.begin(), points.end());
      }
  }
  d.model.clear();  // a suite spans models; the label of each point names its own
  return d;
}

std::vector<GanttBar> read_chrome_trace(const JsonField& trace) {
  std::vector<GanttBar> bars;
  for (const JsonField& e : trace.at("traceEvents").items_of_array()) {
    if (!e.is_object()) e.fail("an event object");
    if (optional_string(e, "ph") != "X") continue;
    const std::string cat = optional_string(e, "cat");
    const std::string name = optional_string(e, "name");
    const bool kernel = cat == "kernel";
    const bool comm = cat == "gpu_memcpy" || cat == "nccl" || (kernel && name.starts_with("nccl"));
    if (!kernel && !comm && cat != "gpu_memset") continue;  // host ops, markers, link tracks
    GanttBar b;
    b.device = static_cast<int>(e.at("pid").as_int(0, 1 << 24));
    b.lane = static_cast<int>(e.at("tid").as_int(0, 1 << 24));
    b.start = us_field_to_ns(e.at("ts"));
    b.end = b.start + us_field_to_ns(e.at("dur"));
    std::string phase;
    b.label = name;
    if (auto args = optional_field(e, "args"); args && args->is_object()) {
      phase = optional_field(*args, "phase") ? describe_value(args->at("phase")) : "";
      if (auto task = optional_field(*args, "name")) b.label = describe_value(*task);
    }
    b.category = comm ? GanttCategory::Communication : category_of_phase(phase);
    bars.push_back(std::move(b));
  }
  return bars;
}

ReportData read_step_result(const JsonField& root) {
  ReportData d;
  read_context(root, d);
  const bool wrapped = root.has("step_result");
  const JsonField sr = wrapped ? root.at("step_result") : root;
  sr.expect_schema("parasim.step_result/1");
  if (d.assumptions.cluster.empty()) d.assumptions.cluster = optional_string(sr, "cluster");
  std::string label;
  if (auto s = optional_field(root, "strategy")) label = describe_value(*s);
  if (label.empty()) label = label_from_file(root.file());
  double bubble_ns = optional_double(sr, "pipeline_bubble_ns", 0);
  if (wrapped && bubble_ns == 0) bubble_ns = optional_double(root, "pipeline_bubble_ns", 0);
  read_step_devices(sr.at("devices"), label, bubble_ns / 1e6, d);
  if (wrapped)
    if (auto trace = optional_field(root, "trace")) {
      d.gantt = read_chrome_trace(*trace);
      d.gantt_title = label;
    }
  return d;
}

ReportData read_projection(const JsonField& root) {
  root.expect_schema("parasim.projection/1");
  ReportData d;
  read_context(root, d);
  if (!d.model.empty())
    d.title = d.assumptions.cluster.empty() ? d.model : d.model + " on " + d.assumptions.cluster;
  ScalingSeries dp{"DP only", SeriesKind::DataParallel, {}};
  ScalingSeries hybrid{"best hybrid", SeriesKind::BestHybrid, {}};
  std::map<std::int64_t, ScalingSeries> by_mp;
  for (const JsonField& row : root.at("rows").items_of_array()) {
    const std::int64_t gpus = row.at("gpus").as_int(1, 1 << 24);
    if (auto p = optional_field(row, "dp_only")) dp.points.push_back(read_projection_point(*p, gpus));
    if (auto p = optional_field(row, "best_hybrid")) hybrid.points.push_back(read_projection_point(*p, gpus));
    if (auto list = optional_field(row, "by_mp"))
      for (const JsonField& p : list->items_of_array()) {
        const std::int64_t mp = p.at("mp").as_int(1, 1 << 24);
        ScalingSeries& s = by_mp[mp];
        s.name = "best with MP=" + std::to_string(mp);
        s.kind = SeriesKind::ModelParallel;
        s.points.push_back(read_projection_point(p, gpus));
      }
  }
  for (ScalingSeries* s : {&dp, &hybrid})
    if (!s->points.empty()) d.scaling.push_back(std::move(*s));
  for (auto& [mp, s] : by_mp) d.scaling.push_back(std::move(s));
  return d;
}

ReportData read_plan(const JsonField& root) {
  root.expect_schema("parasim.plan/1");
  ReportData d;
  read_context(root, d);
  const auto candidates = root.at("candidates").items_of_array();
  for (std::size_t i = 0; i < candidates.size() && i < kMaxPlanCandidates; ++i) {
    const JsonField& c = candidates[i];
    std::string label = describe_value(c.at("strategy"));
    if (auto f = optional_field(c, "feasible"); f && !f->as_bool()) label += " (does not fit)";
    if (auto b = optional_field(c, "breakdown")) d.breakdown.push_back(read_breakdown_row(*b, label));
    if (auto devices = optional_field(c, "devices")) {
      ReportData per_device;
      read_step_devices(*devices, label, 0, per_device);
      d.memory.insert(d.memory.end(), per_device.memory.begin(), per_device.memory.end());
    } else if (auto peak = optional_field(c, "peak_memory_bytes")) {
      MemoryRow m;
      m.strategy = label;
      m.device = -1;  // the planner reports its fullest device only
      m.peak = peak->as_int(0);
      m.capacity = optional_int(c, "memory_capacity_bytes", 0);
      if (auto parts = optional_field(c, "peak_breakdown")) m.breakdown = read_memory_parts(*parts);
      d.memory.push_back(std::move(m));
    }
  }
  return d;
}

}  // namespace parasim::reports::detail
