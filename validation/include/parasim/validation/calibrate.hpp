// Fitting a calibration to measured runs: the five factors of parasim::Calibration are chosen to
// minimise the sum of squared log errors of the projected step times (Gauss-Newton with
// finite-difference Jacobians, each point a full projection of every run). Leave-one-out error:
// each run projected with the factors fitted on the others (the fit re-solved on the Jacobian at
// the full fit, then that run simulated in full). docs/fidelity.md describes the method.
//
// Example:
//   RunsFile runs = load_runs_file("my_runs.json");
//   CalibrationFit fit = fit_calibration(runs, {});
//   write_file_atomic("cal.json", dump_json(calibration_fit_to_json(fit)));
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parasim/common/calibration.hpp"
#include "parasim/validation/recorded_runs.hpp"

namespace parasim::validation {

struct FitOptions {
  int max_iterations = 20;
  /// Factors held (by Calibration::kNames), e.g. {"step_overhead_ms"}: at their value in `start`.
  std::vector<std::string> fixed;
  /// Where the fit starts, and the value of every held factor (the kernel factors that
  /// fit_kernel_factors() found in measured profiles, for example). Default: the model's defaults.
  Calibration start{};
  std::function<void(const std::string& stage)> on_stage;
  /// Projections run in parallel over runs (and leave-one-out refits over held-out runs);
  /// 0: one per hardware thread. The fit does not depend on it.
  int threads = 0;
};

struct CalibrationFit {
  Calibration calibration;
  std::vector<bool> fitted;          // per factor: false when held fixed or no run depends on it
  int iterations = 0;
  bool converged = false;            // false: stopped at max_iterations, still improving
  RunsReport default_model;          // every run with the default model
  RunsReport in_sample;              // every run with the fitted calibration
  RunsReport leave_one_out;          // each run with factors fitted without it
};

/// InputError when fewer scored runs than free factors remain.
CalibrationFit fit_calibration(const RunsFile& runs, const FitOptions& options);

/// parasim.calibration/1 with the fit's statistics (runs file, rows, default / in-sample /
/// leave-one-out median and max |error|).
nlohmann::json calibration_fit_to_json(const CalibrationFit& fit);

}  // namespace parasim::validation
