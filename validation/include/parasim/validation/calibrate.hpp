// Fitting a calibration to measured runs: the factors of parasim::Calibration are chosen to
// minimise the sum of squared log errors of the projected step times (Levenberg-Marquardt with
// finite-difference Jacobians, each point a full projection of every run). Kernel factors are per
// GPU kind, fitted only for a kind with more runs than its free kernel factors; the others keep the
// default kernel model. Leave-one-out error: each run projected with the factors refitted on the
// others (a kind left with too few runs falls back to the default kernel model there, as it
// would in a calibration that never saw it). docs/fidelity.md describes the method.
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
  /// Factors held, by Calibration::kNames: "matrix" and "memory" hold every kind's.
  std::vector<std::string> fixed;
  /// Where the fit starts, and the value of every held factor (the kernel factors that
  /// fit_kernel_factors() found in measured profiles, for example). Default: the model's defaults.
  Calibration start{};
  /// Kernel factors per GPU kind, fitted where a kind has more runs than free kernel factors (the
  /// others keep the default model). Default: one set for every kind (key "*"), which generalises
  /// better out of sample on the published runs (docs/fidelity.md).
  bool per_gpu_kind = false;
  /// Pooled kernel factors (per_gpu_kind false) with each GPU kind's own allowed to stray from
  /// them: a kind's deviation d (log of its factor over the pooled one) costs (d / kind_spread)^2
  /// against (log error / kRunSpread)^2 per run, so a kind with few runs leans on the pooled
  /// factors and one with many fits its own (partial pooling). 0: one set for every kind.
  double kind_spread = 0;
  std::function<void(const std::string& stage)> on_stage;
  /// Projections run in parallel over runs (and leave-one-out refits over held-out runs);
  /// 0: one per hardware thread. The fit does not depend on it.
  int threads = 0;
};

/// The error of one run that costs as much as a kind's deviation of kind_spread (a log scale).
inline constexpr double kRunSpread = 0.05;

/// One factor the fit considered.
struct FitFactor {
  std::string name;  // "matrix[A100-SXM4-80GB]", "memory[*]", "intra_node_comm", ...
  double value = 1.0;
  bool fitted = false;
  std::string note;  // why not fitted: "held (--fix)", "no run depends on it", "2 runs of this kind: ..."
};

struct CalibrationFit {
  Calibration calibration;
  std::vector<FitFactor> factors;
  int iterations = 0;
  bool converged = false;            // false: stopped at max_iterations, still improving
  RunsReport default_model;          // every run with the default model
  RunsReport in_sample;              // every run with the fitted calibration
  RunsReport leave_one_out;          // each run with factors fitted without it
  double kind_spread = 0;            // FitOptions::kind_spread, when the runs had two kinds or more
  bool fitted(const std::string& name) const;
};

/// InputError when fewer scored runs than free factors remain, or for an unknown --fix name.
CalibrationFit fit_calibration(const RunsFile& runs, const FitOptions& options);

/// parasim.calibration/2 with the fit's statistics (runs file, rows, factors, default / in-sample
/// / leave-one-out median and max |error|).
nlohmann::json calibration_fit_to_json(const CalibrationFit& fit);

}  // namespace parasim::validation
