// Fitting the kernel factors of a calibration (matrix, memory) to measured per-op profiles: every
// op phase a profile measured is priced by the GPU kernel model (the CPU roofline for a CPU
// profile), and the two multipliers are chosen to minimise the time-weighted sum of squared log
// errors. A phase's model time is linear in the two factors (each kernel is either a GEMM/conv
// kernel or a bandwidth-bound one), so the fit works on two numbers per phase. docs/fidelity.md
// describes the method.
//
// Example:
//   std::vector<ProfileInput> in{{"traces/H100/bert_large-b16-bf16.json", load_profile(...)}};
//   KernelFit fit = fit_kernel_factors(in);
//   // fit.matrix, fit.memory; fit.profiles[i].default_error_pct, calibrated_error_pct
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parasim/profiler/profile.hpp"

namespace parasim::validation {

struct ProfileInput {
  std::string path;  // names the profile in messages and tables
  profiler::Profile profile;
};

/// One measured op phase next to the kernel model's two components.
struct PhaseSample {
  std::size_t profile = 0;  // index into the inputs
  std::string op;           // the first op name of the entry
  std::string phase;        // "fwd", "bwd_data", "bwd_weight", "update"
  double measured_ns = 0;   // the profile's median
  double matrix_ns = 0;     // model time of the GEMM/conv kernels at factor 1
  double memory_ns = 0;     // model time of the bandwidth-bound kernels (and launches) at factor 1
  double model_ns(double matrix, double memory) const { return matrix * matrix_ns + memory * memory_ns; }
  bool matrix_bound() const { return matrix_ns >= memory_ns; }
};

struct ProfileScore {
  std::string path;
  std::string model;
  std::string device;
  std::int64_t phases = 0;      // measured phases used
  std::int64_t unmatched = 0;   // entries whose signature is no op of the rebuilt model
  double measured_ms = 0;       // sum of the medians of the used phases
  double default_ms = 0;        // the kernel model at factors 1
  double calibrated_ms = 0;     // at the fitted factors
  double leave_one_out_ms = 0;  // at factors fitted on the other profiles (0: fewer than 2 profiles)
  double error_pct(double ms) const { return measured_ms > 0 ? 100.0 * (ms - measured_ms) / measured_ms : 0; }
};

struct KernelFit {
  double matrix = 1.0, memory = 1.0;
  bool matrix_fitted = false, memory_fitted = false;  // false: no phase depends on it (held at 1)
  int iterations = 0;
  std::vector<PhaseSample> samples;
  std::vector<ProfileScore> profiles;
  /// Time-weighted error of the matrix-bound and the memory-bound phases, default and calibrated.
  double matrix_measured_ms = 0, matrix_default_ms = 0, matrix_calibrated_ms = 0;
  double memory_measured_ms = 0, memory_default_ms = 0, memory_calibrated_ms = 0;
};

/// Rebuilds each profile's zoo model (its name, batch and dtype; model defaults otherwise), prices
/// every measured phase and fits the two factors within [1/3, 3]. InputError naming the file when
/// a profile names no zoo model, holds no measured phase of it, or no phase was measured at all.
KernelFit fit_kernel_factors(const std::vector<ProfileInput>& inputs);

/// The fit's statistics for the calibration file ("kernel_fit").
nlohmann::json kernel_fit_to_json(const KernelFit& fit);

}  // namespace parasim::validation
