#include "parasim/common/calibration.hpp"

#include <cstdio>

#include "parasim/common/json_io.hpp"

namespace parasim {

bool Calibration::is_default() const {
  return matrix == 1.0 && memory == 1.0 && intra_node_comm == 1.0 && inter_node_comm == 1.0 && step_overhead_ms == 0;
}

double Calibration::get(std::size_t i) const {
  switch (i) {
    case 0: return matrix;
    case 1: return memory;
    case 2: return intra_node_comm;
    case 3: return inter_node_comm;
    default: return step_overhead_ms;
  }
}

void Calibration::set(std::size_t i, double v) {
  switch (i) {
    case 0: matrix = v; break;
    case 1: memory = v; break;
    case 2: intra_node_comm = v; break;
    case 3: inter_node_comm = v; break;
    default: step_overhead_ms = v; break;
  }
}

std::string Calibration::describe() const {
  if (is_default()) return "none";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "matrix x%.3f, memory x%.3f, intra-node comm x%.3f, inter-node comm x%.3f, +%.1f ms per step", matrix,
                memory, intra_node_comm, inter_node_comm, step_overhead_ms);
  return std::string(buf) + (origin.empty() ? "" : " (" + origin + ")");
}

std::string Calibration::describe_step_overhead() const {
  if (step_overhead_ms == 0)
    return "0 ms (uncalibrated: optimizer.step launches, zero_grad and Python time not modelled)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f ms per step (calibrated", step_overhead_ms);
  return std::string(buf) + (origin.empty() ? "" : ", " + origin) + ")";
}

nlohmann::json calibration_to_json(const Calibration& c, const nlohmann::json& extra) {
  nlohmann::json j = extra;
  j["schema"] = "parasim.calibration/1";
  j["factors"] = {{"matrix", c.matrix},
                  {"memory", c.memory},
                  {"intra_node_comm", c.intra_node_comm},
                  {"inter_node_comm", c.inter_node_comm},
                  {"step_overhead_ms", c.step_overhead_ms}};
  return j;
}

Calibration calibration_from_json(const nlohmann::json& j, const std::string& origin) {
  const JsonField root{j, origin, "$"};
  root.expect_schema("parasim.calibration/1");
  const JsonField f = root.at("factors");
  for (const auto& [key, value] : f.raw().items()) {
    bool known = false;
    for (auto name : Calibration::kNames) known = known || key == name;
    if (!known) f.at(key).fail("one of matrix, memory, intra_node_comm, inter_node_comm, step_overhead_ms");
  }
  Calibration c;
  c.origin = origin;
  for (std::size_t i = 0; i + 1 < Calibration::kNames.size(); ++i) {
    const std::string name(Calibration::kNames[i]);
    if (f.has(name)) c.set(i, f.at(name).as_double(0.01, 100.0));
  }
  if (f.has("step_overhead_ms")) c.step_overhead_ms = f.at("step_overhead_ms").as_double(0.0, 1e6);
  return c;
}

Calibration load_calibration(const std::string& path) { return calibration_from_json(read_json_file(path), path); }

}  // namespace parasim
