// The parasim.results/1 bundle, and the dispatcher that recognises every other shape.
#include <algorithm>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/reports/results_json.hpp"
#include "results_json_readers.hpp"

namespace parasim::reports {

namespace detail {

std::optional<JsonField> optional_field(const JsonField& obj, const std::string& key) {
  auto f = obj.find(key);
  if (!f || f->raw().is_null()) return std::nullopt;
  return f;
}

std::string optional_string(const JsonField& obj, const std::string& key) {
  auto f = optional_field(obj, key);
  return f ? f->as_string() : std::string{};
}

double optional_double(const JsonField& obj, const std::string& key, double min) {
  auto f = optional_field(obj, key);
  return f ? f->as_double(min) : 0.0;
}

std::int64_t optional_int(const JsonField& obj, const std::string& key, std::int64_t min, std::int64_t max) {
  auto f = optional_field(obj, key);
  return f ? f->as_int(min, max) : 0;
}

std::string describe_value(const JsonField& f) {
  const nlohmann::json& j = f.raw();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object())
    for (const char* key : {"description", "name", "model"})
      if (j.contains(key) && j[key].is_string()) return j[key].get<std::string>();
  return j.dump();
}

BreakdownRow read_breakdown_row(const JsonField& obj, std::string strategy) {
  BreakdownRow r;
  r.strategy = std::move(strategy);
  r.compute_ms = obj.at("compute_ms").as_double(0);
  r.exposed_comm_ms = obj.at("exposed_comm_ms").as_double(0);
  r.bubble_ms = optional_double(obj, "bubble_ms", 0);
  r.idle_ms = optional_double(obj, "idle_ms", 0);
  return r;
}

MemoryParts read_memory_parts(const JsonField& obj) {
  return {optional_int(obj, "params", 0, kMaxBytes), optional_int(obj, "grads", 0, kMaxBytes),
          optional_int(obj, "optimizer", 0, kMaxBytes), optional_int(obj, "activations", 0, kMaxBytes),
          optional_int(obj, "other", 0, kMaxBytes)};
}

std::vector<GanttBar> read_gantt_bars(const JsonField& array) {
  std::vector<GanttBar> bars;
  for (const JsonField& b : array.items_of_array()) {
    GanttBar bar;
    bar.device = static_cast<int>(b.at("device").as_int(0, kMaxId));
    bar.lane = static_cast<int>(optional_int(b, "lane", 0, kMaxId));
    bar.start = b.at("start_ns").as_int(0, kMaxTimeNs);
    bar.end = b.at("end_ns").as_int(bar.start, kMaxTimeNs);
    const JsonField cat = b.at("category");
    const auto parsed = parse_gantt_category(cat.as_string());
    if (!parsed) cat.fail("one of forward, backward, update, recompute, communication, other");
    bar.category = *parsed;
    bar.label = optional_string(b, "label");
    bars.push_back(std::move(bar));
  }
  return bars;
}

}  // namespace detail

namespace {

using namespace detail;

std::vector<ScalingSeries> read_series(const JsonField& array) {
  std::vector<ScalingSeries> out;
  for (const JsonField& s : array.items_of_array()) {
    ScalingSeries series;
    series.name = s.at("name").as_string();
    if (auto k = optional_field(s, "kind")) {
      const auto kind = parse_series_kind(k->as_string());
      if (!kind) k->fail("one of dp, best-hybrid, mp, other");
      series.kind = *kind;
    }
    for (const JsonField& p : s.at("points").items_of_array()) {
      ScalingPoint pt;
      pt.gpus = p.at("gpus").as_int(1, kMaxId);
      pt.time_to_train_s = p.at("time_to_train_s").as_double(0);
      pt.step_time_ms = optional_double(p, "step_time_ms", 0);
      pt.global_batch = optional_int(p, "global_batch", 0, kMaxBytes);
      pt.epochs = optional_double(p, "epochs", 0);
      pt.speedup = optional_double(p, "speedup", 0);
      pt.strategy = optional_string(p, "strategy");
      series.points.push_back(std::move(pt));
    }
    out.push_back(std::move(series));
  }
  return out;
}

void read_assumptions(const JsonField& a, Assumptions& out) {
  out.cost_source = optional_string(a, "cost_source");
  out.efficiency_model = optional_string(a, "efficiency_model");
  out.efficiency_source = optional_string(a, "efficiency_source");
  out.cluster = optional_string(a, "cluster");
  out.dataset = optional_string(a, "dataset");
  if (auto extra = optional_field(a, "extra"))
    for (const JsonField& e : extra->items_of_array())
      out.extra.emplace_back(e.at("name").as_string(), e.at("value").as_string());
}

ReportData read_bundle(const JsonField& root) {
  root.expect_schema(kResultsSchema);
  ReportData d;
  d.title = optional_string(root, "title");
  d.model = optional_string(root, "model");
  if (auto a = optional_field(root, "assumptions")) read_assumptions(*a, d.assumptions);
  if (auto p = optional_field(root, "projection")) d.scaling = read_series(*p);
  if (auto b = optional_field(root, "breakdown"))
    for (const JsonField& r : b->items_of_array())
      d.breakdown.push_back(read_breakdown_row(r, r.at("strategy").as_string()));
  if (auto t = optional_field(root, "throughput"))
    for (const JsonField& r : t->items_of_array()) {
      ThroughputRow row;
      row.strategy = r.at("strategy").as_string();
      row.cluster = optional_string(r, "cluster");
      row.gpus = optional_int(r, "gpus", 0, kMaxId);
      row.global_batch = optional_int(r, "global_batch", 0, kMaxBytes);
      row.step_time_ms = optional_double(r, "step_time_ms", 0);
      row.samples_per_s = r.at("samples_per_s").as_double(0);
      if (auto f = optional_field(r, "feasible")) row.feasible = f->as_bool();
      d.throughput.push_back(std::move(row));
    }
  if (auto t = optional_field(root, "timeline")) {
    if (t->has("traceEvents")) {
      d.gantt = read_chrome_trace(*t);
    } else {
      d.gantt_title = optional_string(*t, "title");
      d.gantt = read_gantt_bars(t->at("bars"));
    }
  }
  if (auto v = optional_field(root, "validation")) d.validation = read_validation_points(*v);
  if (auto m = optional_field(root, "memory")) {
    for (const JsonField& r : m->items_of_array()) {
      MemoryRow row;
      row.strategy = r.at("strategy").as_string();
      row.device = static_cast<int>(r.at("device").as_int(-1, kMaxId));
      row.peak = r.at("peak_bytes").as_int(0, kMaxBytes);
      row.capacity = optional_int(r, "capacity_bytes", 0, kMaxBytes);
      if (auto parts = optional_field(r, "breakdown")) row.breakdown = read_memory_parts(*parts);
      d.memory.push_back(std::move(row));
    }
  }
  return d;
}

std::string schema_of(const nlohmann::json& j) {
  if (j.is_object() && j.contains("schema") && j["schema"].is_string()) return j["schema"].get<std::string>();
  return {};
}

bool holds_validation_runs(const nlohmann::json& j) {
  if (is_validation_run(j)) return true;
  auto array_of_runs = [](const nlohmann::json& a) {
    return a.is_array() && !a.empty() && std::all_of(a.begin(), a.end(), is_validation_run);
  };
  if (array_of_runs(j)) return true;
  if (j.is_object())
    for (const auto& [key, value] : j.items())
      if (array_of_runs(value)) return true;
  return false;
}

}  // namespace

std::string results_shape(const nlohmann::json& j) {
  const std::string schema = schema_of(j);
  if (schema.starts_with("parasim.results/")) return kResultsSchema;
  if (schema == "parasim.step_result/1") return "parasim.step_result/1 (parasim simulate --taskgraph --json)";
  if (schema == "parasim.simulation/1") return "parasim.simulation/1 (parasim simulate --model --json)";
  if (schema == "parasim.projection/1") return "parasim.projection/1 (parasim project --json)";
  if (j.is_array() && !j.empty() && std::all_of(j.begin(), j.end(), is_plan_row))
    return "plan rows (parasim plan --json)";
  if (j.is_object() && j.contains("traceEvents")) return "Chrome trace (parasim simulate --trace)";
  if (holds_validation_runs(j)) return "validation runs (parasim validate --json)";
  return {};
}

ReportData results_from_json(const nlohmann::json& j, const std::string& file) {
  const JsonField root{j, file, "$"};
  const std::string shape = results_shape(j);
  if (shape == kResultsSchema) return read_bundle(root);
  if (shape.starts_with("parasim.step_result/1")) return read_step_result(root);
  if (shape.starts_with("parasim.simulation/1")) return read_simulation(root);
  if (shape.starts_with("parasim.projection/1")) return read_projection(root);
  if (shape.starts_with("plan rows")) return read_plan(root);
  if (shape.starts_with("Chrome trace")) {
    ReportData d;
    d.gantt = read_chrome_trace(root);
    return d;
  }
  if (shape.starts_with("validation runs")) return read_validation_output(root);

  std::string found = describe_json(j);
  if (j.is_object()) {
    const std::string schema = schema_of(j);
    found = schema.empty() ? "an object with keys" : "schema \"" + schema + "\" with keys";
    int shown = 0;
    for (const auto& [key, value] : j.items()) {
      if (shown++ == 8) {
        found += " ...";
        break;
      }
      found += " " + key;
    }
  }
  throw InputError(file + ": $: expected results parasim report understands (parasim.results/1, "
                          "parasim.step_result/1, parasim.simulation/1, parasim.projection/1, plan rows, a Chrome "
                          "trace with traceEvents, or validate runs with projected_ms and measured_ms), found " +
                   found);
}

ReportData load_results_file(const std::filesystem::path& path) {
  return results_from_json(read_json_file(path), path.string());
}

}  // namespace parasim::reports
