// Kernel factors from a GEMM microbenchmark: synthetic benchmarks made from the kernel model
// itself at known factors must give those factors back exactly, the committed H200 benchmark
// must give the factor the default was derived from, and bad files name their field.
#include "parasim/validation/gemm_microbench.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "parasim/common/error.hpp"
#include "parasim/hardware/kernel_model.hpp"
#include "support/input_error.hpp"

namespace parasim::validation {
namespace {

using test_support::input_error;

std::string write_bench(const std::string& name, const nlohmann::json& j) {
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "parasim_microbench";
  std::filesystem::create_directories(dir);
  const std::filesystem::path p = dir / name;
  std::ofstream(p) << j.dump();
  return p.string();
}

// The model's time for a bf16 GEMM on an H100, as the fit prices it.
double model_ms(std::int64_t m, std::int64_t n, std::int64_t k) {
  const hardware::KernelModel km = hardware::kernel_model(hardware::device_spec("h100"));
  const double bytes = static_cast<double>(m * k + k * n + m * n) * 2.0;
  return km.gemm({.m = m, .n = n, .k = k}, DType::BF16, bytes).time_ns / 1e6;
}

nlohmann::json gemm(const char* phase, std::int64_t m, std::int64_t n, std::int64_t k, double ms) {
  return {{"phase", phase}, {"m", m}, {"n", n}, {"k", k}, {"ms", ms}};
}

TEST(GemmMicrobench, RecoversTheFactorsThatMadeTheBenchmark) {
  // Three large aligned GEMMs at 1.2, 1.25 and 1.3 times the model (median 1.25); one under 0.1
  // TFLOP and one off 16 bytes, far from the model, are listed and left out. A 2 GiB copy at
  // 0.8 of the model's rate gives memory x1.25.
  const hardware::KernelModel km = hardware::kernel_model(hardware::device_spec("h100"));
  const double copy = 2.0 * 1024 * 1024 * 1024;
  const double model_gbps = copy / km.memory_time_ns(copy);
  const nlohmann::json bench{
      {"schema", "parasim.microbench/1"},
      {"gpu", "NVIDIA H100 80GB HBM3"},
      {"torch", "2.4.0"},
      {"cuda", "12.4"},
      {"optimizers", {{"copy_bytes", copy}, {"copy_gbps", 0.8 * model_gbps}}},
      {"gemm_bf16",
       {gemm("fwd", 8192, 8192, 8192, 1.2 * model_ms(8192, 8192, 8192)),
        gemm("dgrad", 16384, 4096, 4096, 1.3 * model_ms(16384, 4096, 4096)),
        gemm("wgrad", 4096, 4096, 16384, 1.25 * model_ms(4096, 4096, 16384)),
        gemm("fwd", 1024, 1024, 1024, 9.0 * model_ms(1024, 1024, 1024)), gemm("fwd", 8192, 50257, 768, 5.0)}}};
  const MicrobenchFit fit = fit_gemm_microbench(write_bench("known.json", bench));
  EXPECT_EQ(fit.device_kind, "H100-SXM5-80GB");
  EXPECT_EQ(fit.software, "torch 2.4.0, CUDA 12.4");
  ASSERT_EQ(fit.gemms.size(), 5u);
  EXPECT_EQ(fit.used, 3u);
  EXPECT_NEAR(fit.matrix, 1.25, 1e-12);
  EXPECT_FALSE(fit.matrix_at_bound);
  EXPECT_EQ(fit.gemms[3].why_not, "under 0.1 TFLOP");
  EXPECT_EQ(fit.gemms[4].why_not.rfind("a dimension off 16 bytes", 0), 0u);
  EXPECT_EQ(fit.gemms[4].model_ns, 0);  // not priced: which stride is off is not recorded
  // Default: 20%, 30%, 25% slow -> |error| of the model 1/1.2, 1/1.3, 1/1.25 below the measurement.
  EXPECT_NEAR(fit.default_median_abs_pct, 100.0 * (1 - 1 / 1.25), 1e-9);
  EXPECT_NEAR(fit.default_max_abs_pct, 100.0 * (1 - 1 / 1.3), 1e-9);
  // Calibrated: 1.25/1.2 - 1 = 4.2% slow, 1 - 1.25/1.3 = 3.8% fast, and 0: median 3.8%, max 4.2%.
  EXPECT_NEAR(fit.calibrated_median_abs_pct, 100.0 * (1 - 1.25 / 1.3), 1e-9);
  EXPECT_NEAR(fit.calibrated_max_abs_pct, 100.0 * (1.25 / 1.2 - 1), 1e-9);
  EXPECT_TRUE(fit.memory_fitted);
  EXPECT_NEAR(fit.memory, 1.25, 1e-12);
  EXPECT_NEAR(fit.model_copy_gbps, model_gbps, 1e-9);
  const nlohmann::json j = microbench_fit_to_json(fit);
  EXPECT_EQ(j.at("gemms_used"), 3);
  EXPECT_EQ(j.at("gemms").at(4).at("used"), false);
  EXPECT_FALSE(j.at("gemms").at(4).contains("model_ns"));
}

TEST(GemmMicrobench, TheCommittedH200BenchmarkGivesTheDefaultFactor) {
  // The default Hopper fraction is this benchmark's median: calibrating on it changes nothing.
  const MicrobenchFit fit =
      fit_gemm_microbench(std::string(PARASIM_SOURCE_DIR) + "/reports/validation/microbench-h200-sxm-141gb.json");
  EXPECT_EQ(fit.device_kind, "H200-SXM-141GB");
  EXPECT_EQ(fit.used, 44u);
  EXPECT_NEAR(fit.matrix, 1.0, 0.001);
  // The 1 GiB fp32 copy (2 GiB moved) ran 4101 GB/s against the curve's 90% of 4800.
  EXPECT_TRUE(fit.memory_fitted);
  EXPECT_NEAR(fit.copy_bytes, 2.0 * 1024 * 1024 * 1024, 0.5);
  EXPECT_NEAR(fit.model_copy_gbps, 4320.0, 1e-6);
  EXPECT_NEAR(fit.memory, 4320.0 / 4100.880594084571, 1e-9);
}

TEST(GemmMicrobench, BadFilesNameTheFieldAndWhatWasExpected) {
  const nlohmann::json good{{"schema", "parasim.microbench/1"},
                            {"gpu", "NVIDIA A100-SXM4-80GB"},
                            {"gemm_fp16", {gemm("square", 8192, 8192, 8192, 5.0)}}};
  EXPECT_NO_THROW(fit_gemm_microbench(write_bench("good.json", good)));
  nlohmann::json schema = good;
  schema["schema"] = "parasim.profile/1";
  EXPECT_NE(input_error([&] { fit_gemm_microbench(write_bench("schema.json", schema)); }).find("$.schema"),
            std::string::npos);
  nlohmann::json gpu = good;
  gpu["gpu"] = "Imaginary GPU 9000";
  const std::string gpu_path = write_bench("gpu.json", gpu);
  EXPECT_EQ(input_error([&] { fit_gemm_microbench(gpu_path); }),
            gpu_path +
                ": $.gpu: \"Imaginary GPU 9000\" is no GPU parasim has a device spec for (read as "
                "\"cuda-Imaginary-GPU-9000\"; `parasim clusters` lists the known ones)");
  nlohmann::json ms = good;
  ms["gemm_fp16"][0]["ms"] = -1.0;
  EXPECT_NE(input_error([&] { fit_gemm_microbench(write_bench("ms.json", ms)); }).find("$.gemm_fp16[0].ms"),
            std::string::npos);
  nlohmann::json small = good;
  small["gemm_fp16"] = nlohmann::json::array({gemm("fwd", 512, 512, 512, 0.01)});
  const std::string small_path = write_bench("small.json", small);
  EXPECT_EQ(input_error([&] { fit_gemm_microbench(small_path); }),
            small_path +
                ": $.gemm_bf16, $.gemm_fp16: no aligned GEMM of at least 0.1 TFLOP to fit the matrix factor "
                "on (scripts/gpu_microbench.py writes them)");
  // No copy: the memory factor is held at 1.
  const MicrobenchFit fit = fit_gemm_microbench(write_bench("good.json", good));
  EXPECT_FALSE(fit.memory_fitted);
  EXPECT_EQ(fit.memory, 1.0);
}

}  // namespace
}  // namespace parasim::validation
