// Readers for what the other commands print: `simulate --json` (parasim.step_result/1 for a raw
// task graph, parasim.simulation/1 for a model), `simulate --trace` (Chrome trace), `validate
// --json` (one run or a suite), `project --json` (parasim.projection/1) and `plan --json` (a list
// of plan rows). The shapes are documented in docs/reports.md.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <tuple>
#include <utility>

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

TimeNs us_field_to_ns(const JsonField& f) {
  return static_cast<TimeNs>(std::llround(f.as_double(0, 1e15) * 1000.0));
}  // <= 1e18 ns

std::string label_from_file(const std::string& file) {
  const std::string stem = std::filesystem::path(file).stem().string();
  return stem.empty() || stem == "<stdin>" ? "simulated step" : stem;
}

/// One device's share of a step in whatever unit the source uses; `scale` turns it into ms.
struct DeviceTimes {
  double compute = 0;
  double exposed = 0;
  double idle = 0;
};

/// Devices averaged into one breakdown row; the bubble is taken out of the average idle time.
/// Sums first, then one division: the same arithmetic as breakdown_from_step(), so JSON and
/// C++ paths agree to the last bit.
BreakdownRow average_breakdown(const std::vector<DeviceTimes>& devices, double to_ms, double bubble_ms,
                               std::string label) {
  double compute = 0, exposed = 0, idle = 0;
  for (const DeviceTimes& t : devices) {
    compute += t.compute;
    exposed += t.exposed;
    idle += t.idle;
  }
  const double n = static_cast<double>(devices.size());
  BreakdownRow r;
  r.strategy = std::move(label);
  r.compute_ms = compute / n / to_ms;
  r.exposed_comm_ms = exposed / n / to_ms;
  r.bubble_ms = std::min(bubble_ms, idle / n / to_ms);
  r.idle_ms = idle / n / to_ms - r.bubble_ms;
  return r;
}

MemoryRow memory_row(const JsonField& dev, std::size_t index, const std::string& label, const char* capacity_key,
                     const char* breakdown_key) {
  MemoryRow m;
  m.strategy = label;
  m.device = dev.has("device") ? static_cast<int>(dev.at("device").as_int(0, kMaxId)) : static_cast<int>(index);
  m.peak = dev.at("peak_memory_bytes").as_int(0, kMaxBytes);
  m.capacity = optional_int(dev, capacity_key, 0, kMaxBytes);
  if (auto parts = optional_field(dev, breakdown_key)) m.breakdown = read_memory_parts(*parts);
  return m;
}

/// GPUs a strategy string uses: the product of its dp=, mp= and tp= degrees (1 when absent), 0
/// when a degree is not a plain positive number. The simulation JSON lists only the devices it
/// simulated (one replica when the rest are symmetric), so the count comes from the strategy.
std::int64_t gpus_of_strategy(std::string_view strategy) {
  std::int64_t gpus = 1;
  while (!strategy.empty()) {
    const std::size_t comma = strategy.find(',');
    const std::string_view item = strategy.substr(0, comma);
    strategy = comma == std::string_view::npos ? std::string_view{} : strategy.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key != "dp" && key != "mp" && key != "tp") continue;
    std::int64_t v = 0;
    for (char c : value) {
      if (c < '0' || c > '9' || v > kMaxId) return 0;
      v = v * 10 + (c - '0');
    }
    if (v <= 0 || value.empty()) return 0;
    gpus *= v;
    if (gpus > kMaxId) return 0;
  }
  return gpus;
}

ScalingPoint projection_point(const JsonField& row, const std::string& side, std::int64_t gpus) {
  ScalingPoint p;
  p.gpus = gpus;
  p.strategy = optional_string(row, side + "strategy");
  p.time_to_train_s = row.at(side + "time_to_train_s").as_double(0);
  p.step_time_ms = optional_double(row, side + "step_time_ms", 0);
  p.global_batch = optional_int(row, side + "global_batch", 0, kMaxBytes);
  p.epochs = optional_double(row, side + "epochs", 0);
  return p;
}

/// "critical-batch E_min=88.6 B_crit=16384 [Goyal et al. 2017]" (or "(...)") -> model and source.
void split_efficiency(const std::string& text, Assumptions& a) {
  for (const auto& [open_text, close] : {std::pair{" [", ']'}, std::pair{" (", ')'}}) {
    const std::size_t open = text.find(open_text);
    if (open != std::string::npos && !text.empty() && text.back() == close) {
      a.efficiency_model = text.substr(0, open);
      a.efficiency_source = text.substr(open + 2, text.size() - open - 3);
      return;
    }
  }
  a.efficiency_model = text;
}

void read_projection_assumptions(const JsonField& a, ReportData& d) {
  d.model = optional_string(a, "model");
  d.assumptions.cluster = optional_string(a, "cluster");
  d.assumptions.cost_source = optional_string(a, "cost_source");
  split_efficiency(optional_string(a, "efficiency"), d.assumptions);
  d.assumptions.dataset = optional_string(a, "dataset");
  if (const std::int64_t samples = optional_int(a, "dataset_samples", 0); samples > 0)
    d.assumptions.dataset += " (" + std::to_string(samples) + " samples)";
  auto extra = [&](const char* name, std::string value) {
    if (!value.empty()) d.assumptions.extra.emplace_back(name, std::move(value));
  };
  extra("dataset source", optional_string(a, "dataset_source"));
  if (const std::int64_t b = optional_int(a, "per_device_batch", 0); b > 0) {
    const std::string source = optional_string(a, "per_device_batch_source");
    extra("per-device batch", std::to_string(b) + (source.empty() ? "" : " (" + source + ")"));
  }
  extra("batch convention", optional_string(a, "batch_convention"));
  extra("hybrid rule", optional_string(a, "hybrid_rule"));
  extra("precision", optional_string(a, "dtype"));
  extra("optimizer", optional_string(a, "optimizer"));
  extra("granularity", optional_string(a, "granularity"));
  extra("collectives", optional_string(a, "collectives"));
  extra("shortcuts", optional_string(a, "shortcuts"));
  extra("step overhead", optional_string(a, "step_overhead"));
  extra("comm SMs", optional_string(a, "collective_sms"));
  extra("data loading", optional_string(a, "data_loading"));
}

}  // namespace

bool is_validation_run(const nlohmann::json& j) {
  return j.is_object() && j.contains("projected_ms") && j.contains("measured_ms");
}

bool is_plan_row(const nlohmann::json& j) {
  return j.is_object() && j.contains("strategy") && j.contains("verdict") && j.contains("step_time_ms");
}

ValidationPoint read_validation_point(const JsonField& obj) {
  ValidationPoint v;
  v.projected_ms = obj.at("projected_ms").as_double(0);
  v.measured_ms = obj.at("measured_ms").as_double(0);
  if (obj.has("measured")) v.measured = obj.at("measured").as_bool();
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
    d.assumptions.cost_source = optional_field(root, "cost_source") ? describe_value(root.at("cost_source")) : "";
    d.validation.push_back(read_validation_point(root));
  } else if (root.is_array()) {
    d.validation = read_validation_points(root);
  } else {
    for (const auto& [key, value] : root.raw().items())
      if (value.is_array() && !value.empty() && std::all_of(value.begin(), value.end(), is_validation_run)) {
        auto points = read_validation_points(root.at(key));
        d.validation.insert(d.validation.end(), points.begin(), points.end());
      }
    if (auto machine = optional_field(root, "machine"))
      d.assumptions.extra.emplace_back("measured on", describe_value(*machine));
  }
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
    b.device = static_cast<int>(e.at("pid").as_int(0, kMaxId));
    b.lane = static_cast<int>(e.at("tid").as_int(0, kMaxId));
    b.start = us_field_to_ns(e.at("ts"));
    b.end = b.start + us_field_to_ns(e.at("dur"));
    std::string phase;
    b.label = name;
    if (auto args = optional_field(e, "args"); args && args->is_object()) {
      if (auto p = optional_field(*args, "phase")) phase = describe_value(*p);
      if (auto task = optional_field(*args, "name")) b.label = describe_value(*task);
    }
    b.category = comm ? GanttCategory::Communication : category_of_phase(phase);
    bars.push_back(std::move(b));
  }
  return bars;
}

ReportData read_step_result(const JsonField& root) {
  root.expect_schema("parasim.step_result/1");
  ReportData d;
  d.assumptions.cluster = optional_string(root, "cluster");
  const std::string label = label_from_file(root.file());
  std::vector<DeviceTimes> times;
  const auto devices = root.at("devices").items_of_array();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const JsonField& dev = devices[i];
    times.push_back({static_cast<double>(dev.at("compute_busy_ns").as_int(0, kMaxTimeNs)),
                     static_cast<double>(dev.at("exposed_comm_ns").as_int(0, kMaxTimeNs)),
                     static_cast<double>(dev.at("idle_ns").as_int(0, kMaxTimeNs))});
    d.memory.push_back(memory_row(dev, i, label, "memory_capacity_bytes", "peak_breakdown"));
  }
  if (!times.empty()) d.breakdown.push_back(average_breakdown(times, 1e6, 0, label));
  return d;
}

ReportData read_simulation(const JsonField& root) {
  root.expect_schema("parasim.simulation/1");
  ReportData d;
  d.model = optional_string(root, "model");
  d.assumptions.cluster = optional_string(root, "cluster");
  d.assumptions.cost_source = optional_string(root, "cost_source");
  // What the step includes besides kernels and transfers (simulations since the data-loading option).
  if (auto said = optional_field(root, "step_overhead"))
    d.assumptions.extra.emplace_back("step overhead", said->as_string());
  else if (auto overhead = optional_field(root, "step_overhead_ms"))
    d.assumptions.extra.emplace_back("step overhead", describe_value(*overhead) + " ms per step");
  if (auto sms = optional_field(root, "collective_sms")) d.assumptions.extra.emplace_back("comm SMs", sms->as_string());
  if (auto loading = optional_field(root, "data_loading"))
    if (auto text = optional_field(*loading, "description"))
      d.assumptions.extra.emplace_back("data loading", text->as_string());
  std::string label = root.at("strategy").as_string();
  if (auto f = optional_field(root, "feasible"); f && !f->as_bool()) label += " (does not fit)";
  std::vector<DeviceTimes> times;
  const auto devices = root.at("devices").items_of_array();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const JsonField& dev = devices[i];
    times.push_back({dev.at("compute_ms").as_double(0), dev.at("exposed_comm_ms").as_double(0),
                     dev.at("idle_ms").as_double(0)});
    d.memory.push_back(memory_row(dev, i, label, "capacity_bytes", "breakdown"));
  }
  const bool simulated = !optional_field(root, "simulated") || root.at("simulated").as_bool();
  if (simulated && !times.empty())
    d.breakdown.push_back(average_breakdown(times, 1.0, optional_double(root, "bubble_ms", 0), label));
  if (simulated && optional_field(root, "throughput_samples_per_s")) {
    ThroughputRow t;
    t.strategy = label;
    t.cluster = d.assumptions.cluster;
    t.gpus = gpus_of_strategy(root.at("strategy").as_string());
    t.global_batch = optional_int(root, "global_batch", 0, kMaxBytes);
    t.step_time_ms = optional_double(root, "step_time_ms", 0);
    t.samples_per_s = root.at("throughput_samples_per_s").as_double(0);
    if (auto f = optional_field(root, "feasible")) t.feasible = f->as_bool();
    d.throughput.push_back(std::move(t));
  }
  return d;
}

ReportData read_projection(const JsonField& root) {
  root.expect_schema("parasim.projection/1");
  ReportData d;
  if (auto a = optional_field(root, "assumptions")) read_projection_assumptions(*a, d);
  // "dgx1-v100 (8 GPUs of ... per node)" -> "dgx1-v100" for the title; the table keeps it all.
  const std::string cluster_name = d.assumptions.cluster.substr(0, d.assumptions.cluster.find(" ("));
  if (!d.model.empty()) d.title = cluster_name.empty() ? d.model : d.model + " on " + cluster_name;
  ScalingSeries dp{"DP only", SeriesKind::DataParallel, {}};
  ScalingSeries hybrid{"best hybrid", SeriesKind::BestHybrid, {}};
  for (const JsonField& row : root.at("rows").items_of_array()) {
    const std::int64_t gpus = row.at("gpus").as_int(1, kMaxId);
    for (const auto& [prefix, series, name] :
         {std::tuple{"dp_", &dp, "DP only"}, std::tuple{"hybrid_", &hybrid, "best hybrid"}}) {
      const std::string side = prefix;
      if (!row.at(side + "feasible").as_bool()) {
        // Said once per GPU count and side, so the report shows why a point is missing.
        const std::string reason = optional_string(row, side + "reason");
        d.assumptions.extra.emplace_back(std::to_string(gpus) + (gpus == 1 ? " GPU, " : " GPUs, ") + name,
                                         "no feasible split" + (reason.empty() ? "" : ": " + reason));
        continue;
      }
      series->points.push_back(projection_point(row, side, gpus));
      MemoryRow m;
      m.strategy = series->points.back().strategy;
      m.device = -1;  // the projection keeps the fullest device only
      m.peak = optional_int(row, side + "peak_memory_bytes", 0, kMaxBytes);
      m.capacity = optional_int(row, side + "capacity_bytes", 0, kMaxBytes);
      if (m.peak > 0 && (d.memory.empty() || d.memory.back().strategy != m.strategy)) d.memory.push_back(std::move(m));
    }
  }
  // The best hybrid of each model-parallel width: thin context lines beside DP and the best hybrid.
  std::map<std::int64_t, ScalingSeries> by_width;
  for (const JsonField& row : root.at("rows").items_of_array()) {
    const auto widths = optional_field(row, "hybrid_by_width");
    if (!widths) continue;
    const std::int64_t gpus = row.at("gpus").as_int(1, kMaxId);
    for (const JsonField& w : widths->items_of_array()) {
      const std::int64_t width = w.at("width").as_int(2, kMaxId);
      auto [it, added] = by_width.try_emplace(width);
      if (added) it->second = {"M = " + std::to_string(width) + " GPUs per worker", SeriesKind::ModelParallel, {}};
      ScalingPoint p;
      p.gpus = gpus;
      p.strategy = optional_string(w, "strategy");
      p.time_to_train_s = w.at("time_to_train_s").as_double(0);
      p.step_time_ms = optional_double(w, "step_time_ms", 0);
      p.global_batch = optional_int(w, "global_batch", 0, kMaxBytes);
      p.epochs = optional_double(w, "epochs", 0);
      it->second.points.push_back(std::move(p));
    }
  }
  for (ScalingSeries* s : {&dp, &hybrid})
    if (!s->points.empty()) d.scaling.push_back(std::move(*s));
  for (auto& [width, series] : by_width) d.scaling.push_back(std::move(series));
  return d;
}

ReportData read_plan(const JsonField& root) {
  ReportData d;
  const auto rows = root.items_of_array();
  for (std::size_t i = 0; i < rows.size() && i < kMaxPlanCandidates; ++i) {
    const JsonField& r = rows[i];
    std::string label = r.at("strategy").as_string();
    if (auto f = optional_field(r, "feasible"); f && !f->as_bool())
      label +=
          " (" + (optional_field(r, "verdict") ? describe_value(r.at("verdict")) : std::string("infeasible")) + ")";
    const bool simulated = !optional_field(r, "simulated") || r.at("simulated").as_bool();
    if (simulated) {
      // A plan row describes its busiest device: compute + exposed + bubble + idle = step.
      BreakdownRow b;
      b.strategy = label;
      const double step = r.at("step_time_ms").as_double(0);
      b.compute_ms = r.at("compute_ms").as_double(0);
      b.exposed_comm_ms = r.at("exposed_comm_ms").as_double(0);
      b.bubble_ms = optional_double(r, "bubble_fraction", 0) * step;
      b.idle_ms = std::max(0.0, step - b.compute_ms - b.exposed_comm_ms - b.bubble_ms);
      d.breakdown.push_back(b);
    }
    if (auto peak = optional_field(r, "peak_memory_bytes"); peak && peak->as_int(0, kMaxBytes) > 0) {
      MemoryRow m;
      m.strategy = label;
      m.device = -1;  // the plan keeps the device closest to (or furthest over) its capacity
      m.peak = peak->as_int(0, kMaxBytes);
      m.capacity = optional_int(r, "capacity_bytes", 0, kMaxBytes);
      d.memory.push_back(std::move(m));
    }
  }
  return d;
}

}  // namespace parasim::reports::detail
