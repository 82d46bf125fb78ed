// `parasim validate`: the projection next to the measurement, for one strategy or a fixed suite.
//
// One validation:
//   1. the model (zoo) at the global batch; the strategy lowered once on the roofline to learn
//      the micro-batch sizes the lowering uses (its StepCache keeps those model builds);
//   2. every micro-batch build profiled on the same backend that will execute it (the CPU
//      profiler: oneDNN, 1 thread; cuda: the GPU profiler);
//   3. a cluster describing this machine: cpu -> calibrate_cpu_host() and the "cpu-host" star
//      (costs through HostCostModel); cuda -> the GPUs' measured copy/NCCL numbers
//      (profiler::probe_links + cluster_spec_from_probe);
//   4. simulate_strategy() with those costs, every device simulated (Symmetry::None), with the
//      timeline, whose per-task durations fix the executor's stream order;
//   5. run_steps() on the same TaskGraph (warm-up, repetitions) and the comparison:
//      error_pct = (projected - measured) / measured x 100 with measured = the median step.
//
// Example:
//   ValidationRequest req{.backend = Backend::Cpu, .model = "tiny_cnn", .batch = 8, .strategy = "dp=2"};
//   ValidationResult r = validate(req);
//   std::cout << r.projected_ms() << " vs " << r.measured_ms() << " (" << r.error_pct << "%)\n";
//   SuiteResult s = run_ci_suite({});   // the fixed CPU matrix
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parasim/common/units.hpp"
#include "parasim/executor/cpu_runtime.hpp"
#include "parasim/executor/host_calibration.hpp"
#include "parasim/profiler/cost_model.hpp"

namespace parasim::executor {

enum class Backend : std::uint8_t { Cpu, Cuda };
std::string to_string(Backend b);  // "cpu", "cuda"
Backend parse_backend(const std::string& s);  // InputError otherwise

struct ValidationRequest {
  Backend backend = Backend::Cpu;
  std::string model = "tiny_cnn";   // a zoo model
  std::int64_t batch = 8;           // global batch (all replicas, all micro-batches)
  std::string strategy = "dp=1";    // parse_strategy() grammar
  int warmup = 2;                   // executor warm-up steps
  int repetitions = 5;              // executor timed steps
  int profile_repetitions = 10;     // per op phase
  int profile_warmup = 2;           // untimed runs of every op phase first
  /// > 0: fewer timed steps when the projected step is long: repetitions = clamp(budget /
  /// projected step, 3, repetitions), and one warm-up step (the suite keeps CI fast this way).
  double execution_budget_s = 0;
  profiler::Optimizer optimizer = profiler::Optimizer::Sgd;
  /// CPU: the priority of the profiling thread and of the workers (CpuRuntimeOptions::priority),
  /// so that other processes on a shared machine disturb the measurements less; best effort.
  CpuRuntimeOptions::Priority priority = CpuRuntimeOptions::Priority::Fifo;
  /// CPU: profile every op with warm caches (repeated back to back), with caches evicted before
  /// every timed run (cold), or Auto: cold when the step's working set (weights, gradients and
  /// optimizer state of every device plus the activations) exceeds the last-level cache, as
  /// then every op of a step finds its weights in DRAM; warm otherwise (docs/executor.md).
  enum class ProfileCache : std::uint8_t { Auto, Warm, Cold };
  ProfileCache profile_cache = ProfileCache::Auto;
  /// Non-empty: write the projected and the measured (median) timelines there as Chrome traces
  /// (<model>-<strategy>.projected.trace.json / .measured.trace.json), for Perfetto.
  std::string trace_dir;
  /// Progress messages ("profiling googlenet_cifar at batch 4") for the CLI's stderr.
  std::function<void(const std::string&)> on_stage;
};

/// Reused between validations of one run (the suite): calibrations per device count and
/// profiles per (model, micro-batch) are measured once.
struct ValidationCache;
std::shared_ptr<ValidationCache> make_validation_cache();

struct DeviceComparison {
  int device = 0;
  TimeNs projected_compute = 0;
  TimeNs measured_compute = 0;
  TimeNs projected_comm = 0;
  TimeNs measured_comm = 0;
};

struct ValidationResult {
  Backend backend = Backend::Cpu;
  std::string model;
  std::int64_t batch = 0;
  std::string strategy;        // canonical
  int devices = 0;
  TimeNs projected = 0;        // simulated step time
  TimeNs measured = 0;         // median executed step time
  TimeNs measured_min = 0;
  TimeNs measured_max = 0;
  TimeNs launch_latency = 0;   // releasing the runtime -> first task (median; not in measured)
  int repetitions = 0;
  double error_pct = 0;        // error_percent(projected, measured)
  std::vector<DeviceComparison> per_device;
  std::int64_t tasks = 0;
  /// Sums of compute-task durations, projected (op costs) and measured (medians): separates
  /// per-op cost errors from scheduling and communication errors.
  TimeNs projected_compute_sum = 0;
  TimeNs measured_compute_sum = 0;
  std::string cost_source;     // "profile ...: 12 of 12 op costs measured"
  double contention_slowdown = 1.0;  // cpu: mean per-op slowdown applied for concurrent threads
  double collective_weight = 0;      // cpu: share of collectives among the graph's communication tasks (route_fit)
  bool cold_cache_profile = false;   // cpu: the profile evicted the caches before every timed run
  Bytes working_set = 0;             // cpu: what ProfileCache::Auto compared with the last-level cache
  Bytes last_level_cache = 0;        // cpu: 0 when unknown
  /// cpu with SCHED_FIFO workers: real-time throttling stalls in the projected (median) step,
  /// included in `projected` (rt_throttle_stall in contention.hpp).
  TimeNs rt_throttle = 0;
  TimeNs simulated = 0;              // the simulator's step time, before rt_throttle
  std::string runtime;         // the executor runtime's description
  std::vector<std::string> notes;  // oversubscription, unrunnable kernels, calibration caveats
  std::optional<HostCalibration> calibration;  // cpu backend

  double projected_ms() const { return ns_to_ms(projected); }
  double measured_ms() const { return ns_to_ms(measured); }
};

/// (projected - measured) / measured x 100; 0 when measured is 0.
double error_percent(TimeNs projected, TimeNs measured);

/// Runs one validation. InputError for an unknown model, a bad strategy or one the executor
/// cannot run (asynchronous schedules); RuntimeError for machine failures (no GPU, ...).
ValidationResult validate(const ValidationRequest& request, ValidationCache* cache = nullptr);

/// Fields: backend, model, batch, strategy, devices, projected_ms, measured_ms, measured_min_ms,
/// measured_max_ms, repetitions, error_pct, tasks, cost_source, runtime, notes, simulated_ms,
/// rt_throttle_ms, profile_cache ("warm"/"cold"),
/// devices_busy [{device, projected_compute_ms, measured_compute_ms, projected_comm_ms,
/// measured_comm_ms}], calibration (cpu).
nlohmann::json validation_to_json(const ValidationResult& r);

// ------------------------------------------------------------------------------ the CI suite

struct SuiteCase {
  std::string model;
  std::int64_t batch = 8;
  std::string strategy;
};

/// {tiny_cnn, tiny_lstm, googlenet_cifar} at batch 8 x {dp=1, dp=2, mp=2, mp=2 schedule=1f1b micro=4}.
std::vector<SuiteCase> ci_suite_cases();
/// The suite's repetitions and budgets (15 timed steps, at most ~4 s of them per case, profiles
/// with 5 repetitions): what keeps the whole suite near a minute on two cores.
ValidationRequest ci_suite_defaults();

struct SuiteResult {
  std::string backend = "cpu";
  std::vector<ValidationResult> rows;
  std::vector<std::string> skipped;  // cases not run: "tiny_cnn dp=2: needs 2 GPUs, 1 visible"
  double median_abs_error_pct = 0;
  double max_abs_error_pct = 0;
  std::string machine;     // CPU model, cores
  std::string date;        // UTC
  double seconds = 0;      // wall time of the whole suite
};

/// Runs the cases on `base.backend` with shared calibrations and profiles. `base` supplies
/// repetitions, optimizer, budgets and stage messages; its model/batch/strategy are replaced
/// per case. On the cuda backend, cases needing more GPUs than are visible are skipped and
/// listed in `skipped` (the CUDA runtime never puts two graph devices on one GPU).
/// `on_progress(done, total)` is called after each case.
SuiteResult run_suite(const std::vector<SuiteCase>& cases, const ValidationRequest& base,
                      const std::function<void(std::size_t, std::size_t)>& on_progress = {});

nlohmann::json suite_to_json(const SuiteResult& s);

}  // namespace parasim::executor
