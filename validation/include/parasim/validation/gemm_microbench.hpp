// Kernel factors from a GEMM microbenchmark of the user's own card (scripts/gpu_microbench.py,
// parasim.microbench/1): each large aligned GEMM it timed is priced by the GPU kernel model, and
// the matrix factor is the median of measured / model time; the memory factor is the model's rate
// for the benchmark's large copy over the measured one. This is how a card parasim has not
// measured (a B200, whose GEMM rate is assumed) gets its own rate. docs/fidelity.md.
//
// Example:
//   MicrobenchFit fit = fit_gemm_microbench("mb.json");
//   Calibration c;
//   c.kernels[fit.device_kind] = {fit.matrix, fit.memory};
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace parasim::validation {

/// The GEMMs a factor is taken from: at least this many FLOPs (smaller ones are where the tile
/// model is least exact), and every leading dimension a multiple of 16 bytes (the others run
/// cuBLAS's fallback kernels, priced by their own measured rate).
inline constexpr double kMicrobenchMinFlops = 1e11;

struct MicrobenchGemm {
  std::string dtype;  // "bf16" or "fp16"
  std::string phase;  // the script's label: fwd, dgrad, wgrad, square
  std::int64_t m = 0, n = 0, k = 0;
  double measured_ns = 0;
  double model_ns = 0;  // the default kernel model
  bool used = false;
  std::string why_not;  // when not used
  double measured_over_model() const { return model_ns > 0 ? measured_ns / model_ns : 0; }
};

struct MicrobenchFit {
  std::string path;
  std::string gpu;          // the name the benchmark recorded ("NVIDIA H200")
  std::string device_kind;  // parasim's kind for it ("H200-SXM-141GB")
  std::string software;     // "torch 2.11.0+cu130, CUDA 13.0"
  std::vector<MicrobenchGemm> gemms;
  std::size_t used = 0;
  double matrix = 1.0;  // median of measured / model time over the used GEMMs, within [1/3, 3]
  bool matrix_at_bound = false;
  double copy_bytes = 0;                      // bytes the copy read and wrote
  double copy_gbps = 0, model_copy_gbps = 0;  // 0: the benchmark has no copy
  double memory = 1.0;                        // model_copy_gbps / copy_gbps, within [1/3, 3]
  bool memory_fitted = false, memory_at_bound = false;
  /// |error| of the used GEMMs' times, default model and calibrated (matrix factor applied).
  double default_median_abs_pct = 0, default_max_abs_pct = 0;
  double calibrated_median_abs_pct = 0, calibrated_max_abs_pct = 0;
};

/// Reads a parasim.microbench/1 file and fits the factors. InputError naming the file and field
/// when it is malformed, its GPU has no device spec, or no GEMM qualifies.
MicrobenchFit fit_gemm_microbench(const std::string& path);

/// The fit for the calibration file ("microbench_fit").
nlohmann::json microbench_fit_to_json(const MicrobenchFit& fit);

}  // namespace parasim::validation
