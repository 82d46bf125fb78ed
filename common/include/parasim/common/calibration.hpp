// A calibration: a small, named set of factors fitted to a user's measured runs (parasim
// calibrate) and applied on top of the default model by every command that projects
// (--calibration FILE). It is data, like a profile; every output that used one names it.
//
// Kernel factors belong to the GPU kind they were fitted on: kernel efficiency is a property of
// the card and its libraries, so factors fitted on A100 runs say nothing about an H100. A kind the
// calibration has no factors for runs the default kernel model, and outputs say so. Communication
// factors (per link class) and the per-step overhead apply everywhere.
//
// Example:
//   Calibration c = load_calibration("cal.json");     // InputError naming the file and field
//   double t = kernel_ns * c.kernel_factors("A100-SXM4-80GB").matrix;
//   write_file_atomic("out.json", dump_json(calibration_to_json(c)));
#pragma once

#include <array>
#include <cmath>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "parasim/common/units.hpp"

namespace parasim {

/// Time multipliers of one device kind's kernels (1 = the default model).
struct KernelFactors {
  double matrix = 1.0;  // GEMM and convolution kernels
  double memory = 1.0;  // bandwidth-bound kernels (norms, activations, optimizer, ...)
  bool operator==(const KernelFactors&) const = default;
};

/// Every fitted kernel and link factor stays within these: a calibration corrects the model, it
/// does not replace it (parasim calibrate's runs, profile and microbenchmark fits alike).
inline constexpr double kMinCalibrationFactor = 1.0 / 3.0, kMaxCalibrationFactor = 3.0;

struct Calibration {
  /// By device kind ("A100-SXM4-80GB"). The key "*" (parasim.calibration/1 files, fitted before
  /// factors were per kind) applies to every kind without an entry of its own.
  std::map<std::string, KernelFactors, std::less<>> kernels;
  double intra_node_comm = 1.0;  // collective steps over NVLink/NVSwitch/PCIe
  double inter_node_comm = 1.0;  // collective steps over the network
  double step_overhead_ms = 0;   // added once per optimizer step (framework, launch, logging)
  std::string origin;            // the file it came from, or "default"

  static constexpr std::string_view kAllKinds = "*";
  /// The global factors by name (kernel factors are per kind: matrix[KIND], memory[KIND]).
  static constexpr std::array<std::string_view, 5> kNames{"matrix", "memory", "intra_node_comm", "inter_node_comm",
                                                          "step_overhead_ms"};
  bool is_default() const;
  /// The kind's factors, else those for every kind ("*"), else 1 and 1.
  KernelFactors kernel_factors(std::string_view device_kind) const;
  bool has_kernel_factors(std::string_view device_kind) const;
  /// "A100-SXM4-80GB matrix x1.080 memory x0.970; intra-node comm x1.000, ...; +12.0 ms per step
  /// (cal.json)"; "none" for the default.
  std::string describe() const;
  /// What every output states as the per-step fixed cost: "0 ms (uncalibrated: optimizer.step
  /// launches, zero_grad and Python time not modelled)" or "12.0 ms per step (calibrated, cal.json)".
  std::string describe_step_overhead() const;
  /// A per-step overhead of `ms` in the whole nanoseconds every projection adds (what calibrate's
  /// slope in it computes without projecting again must round the same way).
  static TimeNs overhead_ns(double ms) { return static_cast<TimeNs>(std::llround(ms * 1e6)); }
  TimeNs step_overhead_ns() const { return overhead_ns(step_overhead_ms); }
};

/// {"schema": "parasim.calibration/2", "kernels": {KIND: {"matrix", "memory"}}, "factors":
/// {"intra_node_comm", "inter_node_comm", "step_overhead_ms"}} plus whatever `extra` holds.
nlohmann::json calibration_to_json(const Calibration& c, const nlohmann::json& extra = nlohmann::json::object());
/// Reads parasim.calibration/2, and /1 (global matrix and memory factors: kind "*").
Calibration calibration_from_json(const nlohmann::json& j, const std::string& origin);
Calibration load_calibration(const std::string& path);

}  // namespace parasim
