// Kernel factors from a GEMM microbenchmark; the method is in docs/fidelity.md.
#include "parasim/validation/gemm_microbench.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "parasim/common/calibration.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/common/median.hpp"
#include "parasim/hardware/cuda_device_name.hpp"
#include "parasim/hardware/kernel_model.hpp"

namespace parasim::validation {

namespace {

// scripts/gpu_microbench.py copies 256 Mi fp32 values (read and written) before it recorded
// copy_bytes: what a file without the field moved.
constexpr double kScriptCopyBytes = 2.0 * 4.0 * 256.0 * 1024 * 1024;

double clamp_factor(double f, bool& at_bound) {
  const double c = std::clamp(f, kMinCalibrationFactor, kMaxCalibrationFactor);
  at_bound = c != f;
  return c;
}

double abs_pct(double model, double measured) { return 100.0 * std::abs(model - measured) / measured; }

}  // namespace

MicrobenchFit fit_gemm_microbench(const std::string& path) {
  const nlohmann::json doc = read_json_file(path);
  const JsonField root{doc, path, "$"};
  root.expect_schema("parasim.microbench/1");
  MicrobenchFit fit;
  fit.path = path;
  fit.gpu = root.at("gpu").as_string();
  fit.device_kind = hardware::device_kind_from_cuda_name(fit.gpu);
  const std::optional<hardware::DeviceSpec> spec = hardware::find_device_spec(fit.device_kind);
  if (!spec)
    throw InputError(path + ": $.gpu: \"" + fit.gpu + "\" is no GPU parasim has a device spec for (read as \"" +
                     fit.device_kind + "\"; `parasim clusters` lists the known ones)");
  for (const char* key : {"torch", "cuda"})
    if (const auto v = root.find(key))
      fit.software += std::string(fit.software.empty() ? "" : ", ") +
                      (std::string(key) == "torch" ? "torch " : "CUDA ") + v->as_string();
  const hardware::KernelModel km = hardware::kernel_model(*spec);

  for (const auto& [key, dtype, name] :
       {std::tuple{"gemm_bf16", DType::BF16, "bf16"}, std::tuple{"gemm_fp16", DType::F16, "fp16"}}) {
    const auto list = root.find(key);
    if (!list) continue;
    for (const JsonField& g : list->items_of_array()) {
      MicrobenchGemm r;
      r.dtype = name;
      r.phase = g.at("phase").as_string();
      r.m = g.at("m").as_int(1, std::int64_t{1} << 32);
      r.n = g.at("n").as_int(1, std::int64_t{1} << 32);
      r.k = g.at("k").as_int(1, std::int64_t{1} << 32);
      r.measured_ns = g.at("ms").as_double(1e-6, 1e9) * 1e6;
      const double flops = 2.0 * static_cast<double>(r.m) * static_cast<double>(r.n) * static_cast<double>(r.k);
      if (r.m % 8 != 0 || r.n % 8 != 0 || r.k % 8 != 0) {
        // Which operand's stride is off depends on how the caller stored it (a transpose): the
        // benchmark does not say, so such a GEMM is neither priced nor used.
        r.why_not = "a dimension off 16 bytes (cuBLAS's fallback kernels; their rate is measured apart)";
        fit.gemms.push_back(std::move(r));
        continue;
      }
      const double bytes = static_cast<double>(r.m * r.k + r.k * r.n + r.m * r.n) * 2.0;
      r.model_ns = km.gemm({.m = r.m, .n = r.n, .k = r.k}, dtype, bytes).time_ns;
      if (flops < kMicrobenchMinFlops) r.why_not = "under 0.1 TFLOP";
      else r.used = true;
      fit.gemms.push_back(std::move(r));
    }
  }
  std::vector<double> ratios;
  for (const MicrobenchGemm& g : fit.gemms)
    if (g.used) ratios.push_back(g.measured_over_model());
  fit.used = ratios.size();
  if (ratios.empty())
    throw InputError(path +
                     ": $.gemm_bf16, $.gemm_fp16: no aligned GEMM of at least 0.1 TFLOP to fit the matrix "
                     "factor on (scripts/gpu_microbench.py writes them)");
  fit.matrix = clamp_factor(median(ratios), fit.matrix_at_bound);

  std::vector<double> before, after;
  for (const MicrobenchGemm& g : fit.gemms)
    if (g.used) {
      before.push_back(abs_pct(g.model_ns, g.measured_ns));
      after.push_back(abs_pct(g.model_ns * fit.matrix, g.measured_ns));
    }
  fit.default_median_abs_pct = median(before);
  fit.default_max_abs_pct = *std::max_element(before.begin(), before.end());
  fit.calibrated_median_abs_pct = median(after);
  fit.calibrated_max_abs_pct = *std::max_element(after.begin(), after.end());

  if (const auto opt = root.find("optimizers"); opt && opt->has("copy_gbps")) {
    fit.copy_gbps = opt->at("copy_gbps").as_double(1e-3, 1e6);
    fit.copy_bytes = opt->has("copy_bytes") ? opt->at("copy_bytes").as_double(1, 1e15) : kScriptCopyBytes;
    fit.model_copy_gbps = fit.copy_bytes / km.memory_time_ns(fit.copy_bytes);  // bytes per ns = GB/s
    fit.memory = clamp_factor(fit.model_copy_gbps / fit.copy_gbps, fit.memory_at_bound);
    fit.memory_fitted = true;
  }
  return fit;
}

nlohmann::json microbench_fit_to_json(const MicrobenchFit& fit) {
  nlohmann::json gemms = nlohmann::json::array();
  for (const MicrobenchGemm& g : fit.gemms) {
    nlohmann::json j{{"dtype", g.dtype}, {"phase", g.phase}, {"m", g.m},
                     {"n", g.n},         {"k", g.k},         {"measured_ns", g.measured_ns},
                     {"used", g.used}};
    if (g.model_ns > 0) j["model_ns"] = g.model_ns;
    if (!g.used) j["why_not"] = g.why_not;
    gemms.push_back(std::move(j));
  }
  nlohmann::json j{{"method",
                    "matrix: median of measured / model time over the aligned GEMMs of >= 0.1 TFLOP; "
                    "memory: the model's rate for the large copy over the measured one"},
                   {"microbench", fit.path},
                   {"gpu", fit.gpu},
                   {"device_kind", fit.device_kind},
                   {"software", fit.software},
                   {"matrix", fit.matrix},
                   {"matrix_at_bound", fit.matrix_at_bound},
                   {"gemms_used", fit.used},
                   {"default_median_abs_error_pct", fit.default_median_abs_pct},
                   {"default_max_abs_error_pct", fit.default_max_abs_pct},
                   {"calibrated_median_abs_error_pct", fit.calibrated_median_abs_pct},
                   {"calibrated_max_abs_error_pct", fit.calibrated_max_abs_pct},
                   {"memory", fit.memory},
                   {"memory_fitted", fit.memory_fitted},
                   {"gemms", gemms}};
  if (fit.memory_fitted) {
    j["memory_at_bound"] = fit.memory_at_bound;
    j["copy"] = {{"bytes", fit.copy_bytes}, {"measured_gbps", fit.copy_gbps}, {"model_gbps", fit.model_copy_gbps}};
  }
  return j;
}

}  // namespace parasim::validation
