// The fixed validation matrix run by CI (`parasim validate --suite ci`) on the CPU, and by
// scripts/gpu_check.sh on the GPUs of one machine.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "parasim/common/error.hpp"
#include "parasim/executor/cpu_runtime.hpp"
#include "parasim/executor/cuda_runtime.hpp"
#include "parasim/profiler/profile.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/validation/validate.hpp"
#include "parasim/strategies/strategy.hpp"

namespace parasim::validation {

using namespace parasim::executor;  // runtimes, calibration, run_steps

ValidationRequest ci_suite_defaults() {
  ValidationRequest r;
  r.backend = Backend::Cpu;
  r.warmup = 2;
  r.repetitions = 15;         // sub-millisecond steps: many repetitions are cheap
  r.execution_budget_s = 4;   // googlenet_cifar steps take seconds on one core: 3 of them
  r.profile_repetitions = 5;
  r.profile_warmup = 1;
  return r;
}

std::vector<SuiteCase> ci_suite_cases() {
  std::vector<SuiteCase> cases;
  for (const char* model : {"tiny_cnn", "tiny_lstm", "googlenet_cifar"})
    for (const char* strategy : {"dp=1", "dp=2", "mp=2", "mp=2,schedule=1f1b,micro=4"})
      cases.push_back({model, 8, strategy});
  return cases;
}

std::vector<SuiteCase> heldout_suite_cases() {
  return {
      {"tiny_cnn", 16, "dp=2"},
      {"tiny_cnn", 9, "dp=2"},  // torch.chunk: 5 and 4 samples
      {"tiny_cnn", 8, "dp=3"},  // three devices on two cores
      {"tiny_cnn", 16, "mp=2,schedule=gpipe,micro=4"},
      {"tiny_lstm", 16, "mp=2,schedule=gpipe,micro=2"},
      {"tiny_lstm", 16, "mp=2,schedule=interleaved,micro=4,interleave=2"},
      {"googlenet_cifar", 4, "dp=2"},
      {"gpt2", 2, "tp=2", 32},
  };
}

std::vector<SuiteCase> suite_cases(const std::string& name) {
  if (name == "ci") return ci_suite_cases();
  if (name == "heldout") return heldout_suite_cases();
  throw InputError("--suite: " + name + ": expected ci (the cases the host model was tuned on) or heldout");
}

SuiteResult run_suite(const std::vector<SuiteCase>& cases, const ValidationRequest& base,
                      const std::function<void(std::size_t, std::size_t)>& on_progress) {
  const auto t0 = std::chrono::steady_clock::now();
  SuiteResult s;
  const profiler::HostCpu host = profiler::detect_host_cpu();
  s.machine = host.model_name + ", " + std::to_string(allowed_cores().size()) + " cores";
  s.date = profiler::utc_now_iso8601();
  s.backend = to_string(base.backend);
  const int gpus = base.backend == Backend::Cuda ? visible_cuda_devices() : 0;
  auto cache = make_validation_cache();
  for (const SuiteCase& c : cases) {
    if (base.backend == Backend::Cuda) {
      const std::int64_t needed = strategies::parse_strategy(c.strategy).devices();
      // No GPU at all: the first case fails with validate()'s "no CUDA GPU is visible".
      if (gpus > 0 && needed > gpus) {
        s.skipped.push_back(c.model + " " + c.strategy + ": needs " + std::to_string(needed) + " GPUs, " +
                            std::to_string(gpus) + " visible");
        if (on_progress) on_progress(s.rows.size() + s.skipped.size(), cases.size());
        continue;
      }
    }
    ValidationRequest r = base;
    r.model = c.model;
    r.batch = c.batch;
    r.strategy = c.strategy;
    r.seq_len = c.seq_len;
    s.rows.push_back(validate(r, cache.get()));
    if (on_progress) on_progress(s.rows.size() + s.skipped.size(), cases.size());
  }
  summarize_suite(s);
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

void summarize_suite(SuiteResult& s) {
  std::vector<double> sorted;
  for (const ValidationResult& r : s.rows)
    if (r.is_measured()) sorted.push_back(std::abs(r.error_pct));
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  s.measured_rows = n;
  s.median_abs_error_pct = n == 0 ? 0 : n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  s.max_abs_error_pct = n == 0 ? 0 : sorted.back();
}

nlohmann::json suite_to_json(const SuiteResult& s) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : s.rows) rows.push_back(validation_to_json(r));
  return {{"suite", s.name},
          {"backend", s.backend},
          {"skipped", s.skipped},
          {"machine", s.machine},
          {"date", s.date},
          {"seconds", s.seconds},
          {"median_abs_error_pct", s.measured_rows > 0 ? nlohmann::json(s.median_abs_error_pct) : nlohmann::json()},
          {"max_abs_error_pct", s.measured_rows > 0 ? nlohmann::json(s.max_abs_error_pct) : nlohmann::json()},
          {"measured_rows", s.measured_rows},
          {"not_measured_rows", s.rows.size() - s.measured_rows},
          {"rows", rows}};
}

}  // namespace parasim::validation
