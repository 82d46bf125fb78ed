// parasim calibrate --profiles: the kernel factors that generated synthetic measured profiles are
// recovered, leave-one-out uses only the other profiles, and bad profiles are refused by name.
#include "parasim/validation/kernel_fit.hpp"

#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/roofline.hpp"

namespace parasim::validation {
namespace {

constexpr const char* kA100 = "A100-SXM4-80GB";

/// A profile of a zoo model whose every phase took matrix x (GEMM/conv kernels) + memory x
/// (bandwidth-bound kernels) of the kernel model's time: what a GPU whose kernels run at those
/// multiples of the model would measure.
profiler::Profile synthetic_profile(const std::string& model_name, std::int64_t batch, double matrix, double memory) {
  profiler::Profile p;
  p.model = model_name;
  p.batch = batch;
  p.dtype = models::DType::F16;
  p.device.kind = kA100;
  p.source = profiler::CostSource::MeasuredGpu;
  const models::Model model = models::build_zoo_model(model_name, {.batch = batch, .dtype = p.dtype});
  profiler::RooflineCostModel costs;
  const profiler::RooflineDevice& device = costs.device(kA100);
  std::set<std::string> seen;
  for (models::OpId v = 0; v < model.num_ops(); ++v) {
    const models::Op& op = model.op(v);
    if (!seen.insert(op.signature()).second) continue;
    profiler::ProfileEntry e;
    e.names = {op.name};
    e.kind = models::to_string(op.kind);
    e.signature = op.signature();
    for (profiler::Phase phase : profiler::kPhases) {
      if (!profiler::op_has_phase(op, phase)) continue;
      costs.set_kernel_scales(1, 0);
      const double a = static_cast<double>(costs.phase_time(op, phase, device, p.optimizer));
      costs.set_kernel_scales(0, 1);
      const double b = static_cast<double>(costs.phase_time(op, phase, device, p.optimizer));
      const auto t = static_cast<TimeNs>(std::llround(matrix * a + memory * b));
      e.set(phase, {.min_ns = t, .median_ns = t, .max_ns = t, .launches = 1, .reps = 1});
    }
    p.ops.push_back(std::move(e));
  }
  return p;
}

TEST(KernelFit, RecoversTheFactorsThatMadeTheProfiles) {
  const KernelFit fit = fit_kernel_factors({{"cnn.json", synthetic_profile("tiny_cnn", 64, 1.7, 0.6)},
                                            {"lstm.json", synthetic_profile("tiny_lstm", 32, 1.7, 0.6)}});
  EXPECT_TRUE(fit.matrix_fitted);
  EXPECT_TRUE(fit.memory_fitted);
  EXPECT_NEAR(fit.matrix, 1.7, 1e-4);
  EXPECT_NEAR(fit.memory, 0.6, 1e-4);
  ASSERT_EQ(fit.profiles.size(), 2u);
  for (const ProfileScore& p : fit.profiles) {
    EXPECT_EQ(p.unmatched, 0);
    EXPECT_GT(p.phases, 0);
    EXPECT_NEAR(p.error_pct(p.calibrated_ms), 0.0, 0.01);
    // Fitted on the other profile alone, the same truth: the held-out profile is matched too.
    EXPECT_NEAR(p.error_pct(p.leave_one_out_ms), 0.0, 0.01);
    EXPECT_GT(std::fabs(p.error_pct(p.default_ms)), 1.0);  // the default model is off before the fit
  }
  EXPECT_NEAR(fit.matrix_calibrated_ms, fit.matrix_measured_ms, 1e-3 * fit.matrix_measured_ms);
  const nlohmann::json j = kernel_fit_to_json(fit);
  EXPECT_EQ(j.at("profiles").size(), 2u);
  EXPECT_TRUE(j.at("profiles")[0].contains("leave_one_out_ms"));
}

TEST(KernelFit, DefaultModelProfilesGiveFactorsOfOne) {
  const KernelFit fit = fit_kernel_factors({{"cnn.json", synthetic_profile("tiny_cnn", 8, 1.0, 1.0)}});
  EXPECT_NEAR(fit.matrix, 1.0, 1e-6);
  EXPECT_NEAR(fit.memory, 1.0, 1e-6);
  EXPECT_EQ(fit.profiles[0].leave_one_out_ms, 0.0);  // one profile: no leave-one-out
  EXPECT_FALSE(kernel_fit_to_json(fit).at("profiles")[0].contains("leave_one_out_ms"));
}

TEST(KernelFit, FactorsStayWithinTheCalibrationBounds) {
  const KernelFit fit = fit_kernel_factors({{"cnn.json", synthetic_profile("tiny_cnn", 64, 10.0, 10.0)}});
  EXPECT_NEAR(fit.matrix, 3.0, 1e-9);
  EXPECT_NEAR(fit.memory, 3.0, 1e-9);
}

TEST(KernelFit, CountsEntriesThatMatchNoOp) {
  profiler::Profile p = synthetic_profile("tiny_cnn", 8, 1.0, 1.0);
  profiler::ProfileEntry stray = p.ops.front();
  stray.signature = "conv2d|fp16|not an op of this model";
  p.ops.push_back(stray);
  const KernelFit fit = fit_kernel_factors({{"cnn.json", p}});
  EXPECT_EQ(fit.profiles[0].unmatched, 1);
}

std::string error_of(const std::vector<ProfileInput>& in) {
  try {
    (void)fit_kernel_factors(in);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(KernelFit, RefusesProfilesItCannotPrice) {
  EXPECT_EQ(error_of({}), "calibrate: --profiles: expected at least one profile file");
  profiler::Profile unnamed = synthetic_profile("tiny_cnn", 8, 1, 1);
  unnamed.model = "";
  EXPECT_EQ(error_of({{"trace.json", unnamed}}),
            "trace.json: model \"\": kernel factors need the profile of a zoo model (parasim profile --model NAME, "
            "or parasim profile import --model NAME)");
  profiler::Profile alien = synthetic_profile("tiny_cnn", 8, 1, 1);
  alien.device.kind = "TPU-v9";
  EXPECT_NE(error_of({{"tpu.json", alien}}).find("tpu.json: device.kind: roofline: unknown device kind \"TPU-v9\""),
            std::string::npos);
  profiler::Profile other_batch = synthetic_profile("tiny_cnn", 8, 1, 1);
  other_batch.batch = 16;  // every signature names batch 8
  EXPECT_EQ(error_of({{"b16.json", other_batch}}),
            "b16.json: no measured phase matches an op of tiny_cnn at batch 16 fp16 (was it measured at the "
            "model's default sequence length or image size?)");
}

}  // namespace
}  // namespace parasim::validation
