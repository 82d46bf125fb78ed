#include "parasim/common/calibration.hpp"

#include <cstdio>

#include "parasim/common/json_io.hpp"

namespace parasim {

namespace {

std::string factor(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace

bool Calibration::is_default() const {
  for (const auto& [kind, f] : kernels)
    if (f != KernelFactors{}) return false;
  return intra_node_comm == 1.0 && inter_node_comm == 1.0 && step_overhead_ms == 0;
}

KernelFactors Calibration::kernel_factors(std::string_view device_kind) const {
  if (auto it = kernels.find(device_kind); it != kernels.end()) return it->second;
  if (auto it = kernels.find(kAllKinds); it != kernels.end()) return it->second;
  return {};
}

bool Calibration::has_kernel_factors(std::string_view device_kind) const {
  return kernels.contains(device_kind) || kernels.contains(kAllKinds);
}

std::string Calibration::describe() const {
  if (is_default()) return "none";
  std::string out;
  for (const auto& [kind, f] : kernels)
    out += (kind == kAllKinds ? std::string("every GPU kind") : kind) + factor(" matrix x%.3f", f.matrix) +
           factor(" memory x%.3f", f.memory) + "; ";
  if (kernels.empty()) out += "no kernel factors (default kernel model); ";
  else if (!kernels.contains(kAllKinds)) out += "other kinds: default kernel model; ";
  out += factor("intra-node comm x%.3f", intra_node_comm) + factor(", inter-node comm x%.3f", inter_node_comm) +
         factor(", +%.1f ms per step", step_overhead_ms);
  return out + (origin.empty() ? "" : " (" + origin + ")");
}

std::string Calibration::describe_step_overhead() const {
  if (step_overhead_ms == 0)
    return "0 ms (uncalibrated: optimizer.step launches, zero_grad and Python time not modelled)";
  return factor("%.1f ms per step (calibrated", step_overhead_ms) + (origin.empty() ? "" : ", " + origin) + ")";
}

nlohmann::json calibration_to_json(const Calibration& c, const nlohmann::json& extra) {
  nlohmann::json j = extra;
  j["schema"] = "parasim.calibration/2";
  j["kernels"] = nlohmann::json::object();
  for (const auto& [kind, f] : c.kernels) j["kernels"][kind] = {{"matrix", f.matrix}, {"memory", f.memory}};
  j["factors"] = {{"intra_node_comm", c.intra_node_comm},
                  {"inter_node_comm", c.inter_node_comm},
                  {"step_overhead_ms", c.step_overhead_ms}};
  return j;
}

Calibration calibration_from_json(const nlohmann::json& j, const std::string& origin) {
  const JsonField root{j, origin, "$"};
  const bool v1 = j.is_object() && j.contains("schema") && j["schema"] == "parasim.calibration/1";
  if (!v1) root.expect_schema("parasim.calibration/2");
  Calibration c;
  c.origin = origin;
  const JsonField f = root.at("factors");
  if (!f.is_object()) f.fail("an object of factors");
  const char* expected = v1 ? "one of matrix, memory, intra_node_comm, inter_node_comm, step_overhead_ms"
                            : "one of intra_node_comm, inter_node_comm, step_overhead_ms (kernel factors "
                              "go in \"kernels\", per GPU kind)";
  for (const auto& [key, value] : f.raw().items()) {
    const bool kernel = key == "matrix" || key == "memory";
    const bool known = key == "intra_node_comm" || key == "inter_node_comm" || key == "step_overhead_ms";
    if (!known && !(v1 && kernel)) f.at(key).fail(expected);
  }
  if (v1 && (f.has("matrix") || f.has("memory"))) {
    KernelFactors& all = c.kernels[std::string(Calibration::kAllKinds)];
    if (f.has("matrix")) all.matrix = f.at("matrix").as_double(0.01, 100.0);
    if (f.has("memory")) all.memory = f.at("memory").as_double(0.01, 100.0);
  }
  if (f.has("intra_node_comm")) c.intra_node_comm = f.at("intra_node_comm").as_double(0.01, 100.0);
  if (f.has("inter_node_comm")) c.inter_node_comm = f.at("inter_node_comm").as_double(0.01, 100.0);
  if (f.has("step_overhead_ms")) c.step_overhead_ms = f.at("step_overhead_ms").as_double(0.0, 1e6);
  if (!v1 && root.has("kernels")) {
    const JsonField kernels = root.at("kernels");
    if (!kernels.is_object()) kernels.fail("an object of GPU kinds, each {\"matrix\": x, \"memory\": y}");
    for (const auto& [kind, value] : kernels.raw().items()) {
      const JsonField k = kernels.at(kind);
      if (kind.empty()) k.fail("a device kind (\"A100-SXM4-80GB\") or \"*\" as the key");
      if (!k.is_object()) k.fail("{\"matrix\": x, \"memory\": y}");
      for (const auto& [key, v] : k.raw().items())
        if (key != "matrix" && key != "memory") k.at(key).fail("matrix or memory");
      KernelFactors& kf = c.kernels[kind];
      if (k.has("matrix")) kf.matrix = k.at("matrix").as_double(0.01, 100.0);
      if (k.has("memory")) kf.memory = k.at("memory").as_double(0.01, 100.0);
    }
  }
  return c;
}

Calibration load_calibration(const std::string& path) { return calibration_from_json(read_json_file(path), path); }

}  // namespace parasim
