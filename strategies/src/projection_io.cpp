// A projection as JSON (rows + assumptions) and CSV (rows only). One list of columns feeds both,
// so they never disagree.
#include <cstdio>
#include <functional>
#include <sstream>

#include "parasim/strategies/projection.hpp"

namespace parasim::strategies {

namespace {

struct Column {
  std::string name;
  std::function<nlohmann::json(const ProjectionRow&)> value;
};

std::vector<Column> side_columns(const std::string& prefix, const ProjectionSide ProjectionRow::*side) {
  auto get = [side](const ProjectionRow& r) -> const ProjectionSide& { return r.*side; };
  return {
      {prefix + "strategy", [=](const ProjectionRow& r) { return to_string(get(r).strategy); }},
      {prefix + "feasible", [=](const ProjectionRow& r) { return get(r).feasible; }},
      {prefix + "reason", [=](const ProjectionRow& r) { return get(r).reason; }},
      {prefix + "step_time_ms", [=](const ProjectionRow& r) { return ns_to_ms(get(r).step_time); }},
      {prefix + "global_batch", [=](const ProjectionRow& r) { return get(r).global_batch; }},
      {prefix + "epochs", [=](const ProjectionRow& r) { return get(r).epochs; }},
      {prefix + "steps_per_epoch", [=](const ProjectionRow& r) { return get(r).steps_per_epoch; }},
      {prefix + "time_to_train_s", [=](const ProjectionRow& r) { return ns_to_s(get(r).time_to_train); }},
      {prefix + "throughput_samples_per_s", [=](const ProjectionRow& r) { return get(r).throughput; }},
      {prefix + "bubble_fraction", [=](const ProjectionRow& r) { return get(r).bubble_fraction; }},
      {prefix + "exposed_comm_ms", [=](const ProjectionRow& r) { return ns_to_ms(get(r).exposed_comm); }},
      {prefix + "peak_memory_bytes", [=](const ProjectionRow& r) { return get(r).peak_memory; }},
      {prefix + "capacity_bytes", [=](const ProjectionRow& r) { return get(r).capacity; }},
      {prefix + "candidates", [=](const ProjectionRow& r) { return get(r).candidates; }},
  };
}

const std::vector<Column>& columns() {
  static const std::vector<Column> cols = [] {
    std::vector<Column> c{{"gpus", [](const ProjectionRow& r) { return r.gpus; }},
                          {"nodes", [](const ProjectionRow& r) { return r.nodes; }}};
    for (auto& col : side_columns("dp_", &ProjectionRow::dp)) c.push_back(col);
    for (auto& col : side_columns("hybrid_", &ProjectionRow::hybrid)) c.push_back(col);
    c.push_back({"gain_pct", [](const ProjectionRow& r) {
                   return r.gain_pct ? nlohmann::json(*r.gain_pct) : nlohmann::json(nullptr);
                 }});
    return c;
  }();
  return cols;
}

std::string csv_cell(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_float()) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.6g", v.get<double>());
    return buf;
  }
  if (v.is_number()) return v.dump();
  const std::string s = v.get<std::string>();
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

}  // namespace

nlohmann::json projection_to_json(const Projection& p) {
  const ProjectionAssumptions& a = p.assumptions;
  nlohmann::json j;
  j["schema"] = "parasim.projection/1";
  j["assumptions"] = {{"model", a.model},
                      {"cluster", a.cluster},
                      {"cost_source", a.cost_source},
                      {"efficiency", a.efficiency},
                      {"dataset", a.dataset},
                      {"dataset_samples", a.dataset_samples},
                      {"dataset_source", a.dataset_source},
                      {"per_device_batch", a.per_device_batch},
                      {"per_device_batch_source", a.per_device_batch_source},
                      {"batch_convention", a.batch_convention},
                      {"hybrid_rule", a.hybrid_rule},
                      {"dtype", a.dtype},
                      {"optimizer", a.optimizer},
                      {"granularity", a.granularity},
                      {"collectives", a.collectives},
                      {"shortcuts", a.shortcuts},
                      {"step_overhead", a.step_overhead},
                      {"collective_sms", a.collective_sms},
                      {"data_loading", a.data_loading},
                      {"grad_accumulation", a.grad_accumulation}};
  nlohmann::json rows = nlohmann::json::array();
  for (const ProjectionRow& r : p.rows) {
    nlohmann::json row;
    for (const Column& c : columns()) row[c.name] = c.value(r);
    // JSON only, as plan --json: the micro-batch counts an extrapolated winner was simulated at.
    for (const auto& [prefix, side] : {std::pair{"dp_", &r.dp}, std::pair{"hybrid_", &r.hybrid}})
      if (side->sampled_micro[0] > 0)
        row[std::string(prefix) + "simulated_micro"] = {side->sampled_micro[0], side->sampled_micro[1]};
    // The best hybrid of each model-parallel width (JSON only: the CSV keeps one row per N).
    nlohmann::json by_width = nlohmann::json::array();
    for (const auto& [width, side] : r.hybrid_by_width)
      by_width.push_back({{"width", width},
                          {"strategy", to_string(side.strategy)},
                          {"step_time_ms", ns_to_ms(side.step_time)},
                          {"global_batch", side.global_batch},
                          {"epochs", side.epochs},
                          {"time_to_train_s", ns_to_s(side.time_to_train)},
                          {"throughput_samples_per_s", side.throughput},
                          {"peak_memory_bytes", side.peak_memory}});
    row["hybrid_by_width"] = std::move(by_width);
    rows.push_back(std::move(row));
  }
  j["rows"] = std::move(rows);
  return j;
}

std::string projection_to_csv(const Projection& p) {
  std::ostringstream out;
  const auto& cols = columns();
  for (std::size_t i = 0; i < cols.size(); ++i) out << (i ? "," : "") << cols[i].name;
  out << "\n";
  for (const ProjectionRow& r : p.rows) {
    for (std::size_t i = 0; i < cols.size(); ++i) out << (i ? "," : "") << csv_cell(cols[i].value(r));
    out << "\n";
  }
  return out.str();
}

}  // namespace parasim::strategies
