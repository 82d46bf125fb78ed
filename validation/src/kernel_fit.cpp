// Kernel factors from measured per-op profiles; the method is in docs/fidelity.md.
#include "parasim/validation/kernel_fit.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "parasim/common/calibration.hpp"
#include "parasim/common/error.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/roofline.hpp"

namespace parasim::validation {

namespace {

const double kLogMin = std::log(kMinCalibrationFactor), kLogMax = std::log(kMaxCalibrationFactor);

std::vector<PhaseSample> price_profile(const ProfileInput& in, std::size_t index, std::int64_t& unmatched) {
  const profiler::Profile& p = in.profile;
  if (p.model.empty() || !models::is_zoo_model(p.model))
    throw InputError(in.path + ": model \"" + p.model +
                     "\": kernel factors need the profile of a zoo model (parasim profile --model NAME, or "
                     "parasim profile import --model NAME)");
  if (p.batch < 1) throw InputError(in.path + ": batch " + std::to_string(p.batch) + ": expected a batch >= 1");
  const models::Model model = models::build_zoo_model(p.model, {.batch = p.batch, .dtype = p.dtype});
  profiler::RooflineCostModel costs;
  const profiler::RooflineDevice* device = nullptr;
  try {
    device = &costs.device(p.device.kind);
  } catch (const InputError& e) {
    throw InputError(in.path + ": device.kind: " + e.what());
  }
  std::vector<PhaseSample> out;
  std::unordered_set<std::string> used;
  for (models::OpId v = 0; v < model.num_ops(); ++v) {
    const models::Op& op = model.op(v);
    const profiler::ProfileEntry* entry = p.find(op.signature());
    if (!entry) entry = p.find(op.signature_unmasked());  // profiled before attention's `causal`
    if (!entry) continue;
    used.insert(entry->signature);
    for (profiler::Phase phase : profiler::kPhases) {
      if (!entry->has(phase) || !profiler::op_has_phase(op, phase)) continue;
      PhaseSample s{.profile = index,
                    .op = op.name,
                    .phase = profiler::phase_key(phase),
                    .measured_ns = static_cast<double>(entry->phase(phase).median_ns)};
      costs.set_kernel_scales(1.0, 0.0);
      s.matrix_ns = static_cast<double>(costs.phase_time(op, phase, *device, p.optimizer));
      costs.set_kernel_scales(0.0, 1.0);
      s.memory_ns = static_cast<double>(costs.phase_time(op, phase, *device, p.optimizer));
      // Free ops (inputs, reshapes) cost nothing on either side and say nothing about the factors.
      if (s.measured_ns > 0 && s.matrix_ns + s.memory_ns > 0) out.push_back(std::move(s));
    }
  }
  unmatched = 0;
  for (const profiler::ProfileEntry& e : p.ops)
    if (!used.count(e.signature)) ++unmatched;
  if (out.empty())
    throw InputError(in.path + ": no measured phase matches an op of " + p.model + " at batch " +
                     std::to_string(p.batch) + " " + models::to_string(p.dtype) +
                     " (was it measured at the model's default sequence length or image size?)");
  return out;
}

struct Factors {
  double log_matrix = 0, log_memory = 0;
  int iterations = 0;
};

// Gauss-Newton on the time-weighted squared log errors, in log space, within the bounds. Two
// unknowns: the normal equations are solved in closed form; a factor no phase depends on stays 0.
Factors fit(const std::vector<const PhaseSample*>& samples, bool free_matrix, bool free_memory) {
  double total = 0;
  for (const PhaseSample* s : samples) total += s->measured_ns;
  Factors f;
  for (int it = 0; it < 100; ++it) {
    f.iterations = it + 1;
    const double m = std::exp(f.log_matrix), b = std::exp(f.log_memory);
    double a11 = 0, a12 = 0, a22 = 0, g1 = 0, g2 = 0;
    for (const PhaseSample* s : samples) {
      const double model = s->model_ns(m, b), w = s->measured_ns / total;
      const double r = std::log(model / s->measured_ns);
      const double j1 = free_matrix ? m * s->matrix_ns / model : 0.0;
      const double j2 = free_memory ? b * s->memory_ns / model : 0.0;
      a11 += w * j1 * j1, a12 += w * j1 * j2, a22 += w * j2 * j2;
      g1 += w * j1 * r, g2 += w * j2 * r;
    }
    a11 += 1e-12, a22 += 1e-12;  // a factor nothing depends on gets no step
    const double det = a11 * a22 - a12 * a12;
    const double d1 = -(a22 * g1 - a12 * g2) / det, d2 = -(a11 * g2 - a12 * g1) / det;
    const double n1 = std::clamp(f.log_matrix + d1, kLogMin, kLogMax);
    const double n2 = std::clamp(f.log_memory + d2, kLogMin, kLogMax);
    const double moved = std::max(std::fabs(n1 - f.log_matrix), std::fabs(n2 - f.log_memory));
    f.log_matrix = n1, f.log_memory = n2;
    if (moved < 1e-12) break;
  }
  return f;
}

double total_ms(const std::vector<PhaseSample>& samples, std::size_t profile, double m, double b) {
  double ns = 0;
  for (const PhaseSample& s : samples)
    if (s.profile == profile) ns += s.model_ns(m, b);
  return ns * 1e-6;
}

}  // namespace

KernelFit fit_kernel_factors(const std::vector<ProfileInput>& inputs) {
  if (inputs.empty()) throw InputError("calibrate: --profiles: expected at least one profile file");
  KernelFit out;
  std::vector<std::int64_t> unmatched(inputs.size(), 0);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    auto priced = price_profile(inputs[i], i, unmatched[i]);
    out.samples.insert(out.samples.end(), priced.begin(), priced.end());
  }
  std::vector<const PhaseSample*> all;
  for (const PhaseSample& s : out.samples) {
    all.push_back(&s);
    out.matrix_fitted = out.matrix_fitted || s.matrix_ns > 0;
    out.memory_fitted = out.memory_fitted || s.memory_ns > 0;
  }
  const Factors f = fit(all, out.matrix_fitted, out.memory_fitted);
  out.matrix = std::exp(f.log_matrix);
  out.memory = std::exp(f.log_memory);
  out.iterations = f.iterations;

  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ProfileScore score{.path = inputs[i].path,
                       .model = inputs[i].profile.model,
                       .device = inputs[i].profile.device.kind,
                       .unmatched = unmatched[i]};
    for (const PhaseSample& s : out.samples)
      if (s.profile == i) ++score.phases, score.measured_ms += s.measured_ns * 1e-6;
    score.default_ms = total_ms(out.samples, i, 1.0, 1.0);
    score.calibrated_ms = total_ms(out.samples, i, out.matrix, out.memory);
    if (inputs.size() > 1) {
      std::vector<const PhaseSample*> others;
      for (const PhaseSample& s : out.samples)
        if (s.profile != i) others.push_back(&s);
      const Factors held_out = fit(others, out.matrix_fitted, out.memory_fitted);
      score.leave_one_out_ms = total_ms(out.samples, i, std::exp(held_out.log_matrix), std::exp(held_out.log_memory));
    }
    out.profiles.push_back(score);
  }
  for (const PhaseSample& s : out.samples) {
    const bool matrix = s.matrix_bound();
    (matrix ? out.matrix_measured_ms : out.memory_measured_ms) += s.measured_ns * 1e-6;
    (matrix ? out.matrix_default_ms : out.memory_default_ms) += s.model_ns(1, 1) * 1e-6;
    (matrix ? out.matrix_calibrated_ms : out.memory_calibrated_ms) += s.model_ns(out.matrix, out.memory) * 1e-6;
  }
  return out;
}

nlohmann::json kernel_fit_to_json(const KernelFit& fit) {
  nlohmann::json profiles = nlohmann::json::array();
  for (const ProfileScore& p : fit.profiles) {
    nlohmann::json j{{"profile", p.path},
                     {"model", p.model},
                     {"device", p.device},
                     {"phases", p.phases},
                     {"unmatched_entries", p.unmatched},
                     {"measured_ms", p.measured_ms},
                     {"default_ms", p.default_ms},
                     {"calibrated_ms", p.calibrated_ms}};
    if (fit.profiles.size() > 1) j["leave_one_out_ms"] = p.leave_one_out_ms;
    profiles.push_back(std::move(j));
  }
  return {{"method", "time-weighted least squares on log(model / measured) over measured op phases"},
          {"matrix", fit.matrix},
          {"memory", fit.memory},
          {"matrix_fitted", fit.matrix_fitted},
          {"memory_fitted", fit.memory_fitted},
          {"iterations", fit.iterations},
          {"phases", fit.samples.size()},
          {"matrix_bound",
           {{"measured_ms", fit.matrix_measured_ms},
            {"default_ms", fit.matrix_default_ms},
            {"calibrated_ms", fit.matrix_calibrated_ms}}},
          {"memory_bound",
           {{"measured_ms", fit.memory_measured_ms},
            {"default_ms", fit.memory_default_ms},
            {"calibrated_ms", fit.memory_calibrated_ms}}},
          {"profiles", profiles}};
}

}  // namespace parasim::validation
