// A calibration: a small, named set of factors fitted to a user's measured runs (parasim
// calibrate) and applied on top of the default model by every command that projects
// (--calibration FILE). It is data, like a profile; every output that used one names it.
//
// Example:
//   Calibration c = load_calibration("cal.json");     // InputError naming the file and field
//   double t = kernel_ns * c.matrix;                    // GEMM/convolution kernels
//   write_calibration("out.json", c);
#pragma once

#include <array>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace parasim {

struct Calibration {
  /// Time multipliers (1 = the default model).
  double matrix = 1.0;           // GEMM and convolution kernels
  double memory = 1.0;           // bandwidth-bound kernels (norms, activations, optimizer, ...)
  double intra_node_comm = 1.0;  // collective steps over NVLink/NVSwitch/PCIe
  double inter_node_comm = 1.0;  // collective steps over the network
  double step_overhead_ms = 0;   // added once per optimizer step (framework, launch, logging)
  std::string origin;            // the file it came from, or "default"

  static constexpr std::array<std::string_view, 5> kNames{"matrix", "memory", "intra_node_comm", "inter_node_comm",
                                                          "step_overhead_ms"};
  bool is_default() const;
  /// Factor by index in kNames order (for fitting).
  double get(std::size_t i) const;
  void set(std::size_t i, double v);
  /// "matrix x1.08, memory x0.97, ..., +12.0 ms per step (cal.json)"; "none" for the default.
  std::string describe() const;
  /// What every output states as the per-step fixed cost: "0 ms (uncalibrated: optimizer.step
  /// launches, zero_grad and Python time not modelled)" or "12.0 ms per step (calibrated, cal.json)".
  std::string describe_step_overhead() const;
};

/// {"schema": "parasim.calibration/1", "factors": {...}} plus whatever fit statistics `extra` holds.
nlohmann::json calibration_to_json(const Calibration& c, const nlohmann::json& extra = nlohmann::json::object());
Calibration calibration_from_json(const nlohmann::json& j, const std::string& origin);
Calibration load_calibration(const std::string& path);

}  // namespace parasim
