// The fixed validation matrix run by CI (`parasim validate --suite ci`) on the CPU, and by
// scripts/gpu_check.sh on the GPUs of one machine.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "parasim/executor/cpu_runtime.hpp"
#include "parasim/executor/cuda_runtime.hpp"
#include "parasim/executor/validate.hpp"
#include "parasim/profiler/profile.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/strategies/strategy.hpp"

namespace parasim::executor {

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
  std::vector<double> errors;
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
    s.rows.push_back(validate(r, cache.get()));
    errors.push_back(std::abs(s.rows.back().error_pct));
    if (on_progress) on_progress(s.rows.size() + s.skipped.size(), cases.size());
  }
  if (!errors.empty()) {
    std::vector<double> sorted = errors;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    s.median_abs_error_pct = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    s.max_abs_error_pct = sorted.back();
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

nlohmann::json suite_to_json(const SuiteResult& s) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : s.rows) rows.push_back(validation_to_json(r));
  return {{"suite", "ci"},
          {"backend", s.backend},
          {"skipped", s.skipped},
          {"machine", s.machine},
          {"date", s.date},
          {"seconds", s.seconds},
          {"median_abs_error_pct", s.median_abs_error_pct},
          {"max_abs_error_pct", s.max_abs_error_pct},
          {"rows", rows}};
}

}  // namespace parasim::executor
