// `parasim validate`: the projection next to the measurement, for one strategy or a fixed suite.
//
// One validation, in the order validate.cpp runs it (one function per step):
//   1. machine_cluster: this machine as a cluster: cpu -> calibrate_cpu_host() and the
//      "cpu-host" star; cuda -> the GPUs' measured copy/NCCL numbers (profiler::probe_links);
//   2. the strategy lowered once on the roofline to learn the micro-batch sizes (cpu:
//      size_up_cpu_host picks warm or cold profiles and refits the links to the graph's
//      communication), then profile_microbatches on the backend that will execute them;
//   3. project: simulate_strategy() with those costs (HostCostModel on cpu, with contention
//      slowdowns), every device simulated (Symmetry::None), with the timeline;
//   4. measure: run_steps() on the same TaskGraph, stream order fixed by the simulated durations;
//   5. compare: error_pct = (projected - measured) / measured x 100, measured = the median step.
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
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "parasim/common/units.hpp"
#include "parasim/executor/cpu_runtime.hpp"
#include "parasim/executor/host_calibration.hpp"
#include "parasim/mpi/link_probe.hpp"
#include "parasim/mpi/world.hpp"
#include "parasim/profiler/cost_model.hpp"

namespace parasim::validation {

enum class Backend : std::uint8_t { Cpu, Cuda };
std::string to_string(Backend b);  // "cpu", "cuda"
std::optional<Backend> parse_backend(std::string_view s);  // "cpu", "cuda"; nullopt otherwise

struct ValidationRequest {
  Backend backend = Backend::Cpu;
  std::string model = "tiny_cnn";   // a zoo model
  std::int64_t batch = 8;           // global batch (all replicas, all micro-batches)
  std::int64_t seq_len = 0;         // sequence models: tokens per sample (0: the model's default)
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
  executor::CpuRuntimeOptions::Priority priority = executor::CpuRuntimeOptions::Priority::Fifo;
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

/// Where one device ran in a validation on MPI ranks: rank r executes device r.
struct RankPlacement {
  int rank = 0;
  std::string host;
  int local_rank = 0;
  int pid = 0;
};

struct ValidationResult {
  Backend backend = Backend::Cpu;
  std::string model;
  std::int64_t batch = 0;
  std::int64_t seq_len = 0;    // as requested (0: the model's default)
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
  /// cpu, more than one device: the contention model ran (one device has no concurrent threads
  /// to slow it, so it does not apply). Its effect on this row's projection is
  /// simulated - simulated_without_contention.
  bool contention_applied = false;
  TimeNs simulated_without_contention = 0;  // the first round's step, every op at its profiled cost
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
  std::optional<executor::HostCalibration> calibration;  // cpu backend
  /// validate_on_ranks(): the rank of every device, and the MPI probe the cluster's links were
  /// fitted to (it replaces the calibration's thread-to-thread transfers and all-reduces).
  std::vector<RankPlacement> ranks;
  std::optional<mpi::RankLinkProbe> rank_links;
  /// Compute tasks that ran as stand-ins (no runnable kernel: they spin for their projected
  /// duration), so measured equals projected for them by construction. A row with any is
  /// "not measured": error_pct means nothing and the suite leaves it out of its statistics.
  std::int64_t stand_in_tasks = 0;
  std::int64_t compute_tasks = 0;

  bool is_measured() const { return stand_in_tasks == 0; }

  double projected_ms() const { return ns_to_ms(projected); }
  double measured_ms() const { return ns_to_ms(measured); }
};

/// (projected - measured) / measured x 100; 0 when measured is 0.
double error_percent(TimeNs projected, TimeNs measured);

/// Runs one validation. InputError for an unknown model, a bad strategy or one the executor
/// cannot run (asynchronous schedules); RuntimeError for machine failures (no GPU, ...).
ValidationResult validate(const ValidationRequest& request, ValidationCache* cache = nullptr);

/// The same validation as one rank of an MPI job with one rank per device; every rank calls it
/// with the same request. In order: every rank lowers the strategy on the roofline and the ranks
/// compare hashes of their task graphs (a mismatch, or an error on any rank, is an
/// mpi::AgreedError on every rank, exit 2); all probe the links (mpi/link_probe.hpp); rank 0
/// calibrates, profiles and simulates as validate() does, with the probed links, and broadcasts
/// the task graph and its order; every rank executes its device on the MPI runtime
/// (mpi_runtime.hpp). The result is complete on rank 0 (other ranks: only ranks and runtime).
/// CPU backend: MPI probe and runtime, the host calibration's star. CUDA backend: NCCL probe and
/// runtime, one GPU per rank, the cluster mpi::cluster_from_ranks() builds from the probe.
ValidationResult validate_on_ranks(const ValidationRequest& request, mpi::World& world);

/// Fields: backend, model, batch, strategy, devices, projected_ms, measured_ms, measured_min_ms,
/// measured_max_ms, repetitions, error_pct (null when not measured), measured (false when any
/// compute task was a stand-in), stand_in_tasks, compute_tasks, tasks, cost_source, runtime, notes, simulated_ms,
/// rt_throttle_ms, profile_cache ("warm"/"cold"),
/// devices_busy [{device, projected_compute_ms, measured_compute_ms, projected_comm_ms,
/// measured_comm_ms}], calibration (cpu).
nlohmann::json validation_to_json(const ValidationResult& r);

// ------------------------------------------------------------------------------ the CI suite

struct SuiteCase {
  std::string model;
  std::int64_t batch = 8;
  std::string strategy;
  std::int64_t seq_len = 0;  // 0: the model's default
};

/// {tiny_cnn, tiny_lstm, googlenet_cifar} at batch 8 x {dp=1, dp=2, mp=2, mp=2 schedule=1f1b micro=4}.
/// The host model (throttling, cache rule, contention cap, barrier spin) was tuned on these.
std::vector<SuiteCase> ci_suite_cases();
/// Held out: cases the host model was not tuned on, reported apart from the tuning suite
/// (`validate --suite heldout`): other batches and widths (dp=3 over 2 cores), GPipe,
/// interleaved 1F1B, an uneven torch.chunk split (9 over dp=2), tensor parallelism (GPT-2 at 32
/// tokens, tp=2).
std::vector<SuiteCase> heldout_suite_cases();
/// "ci" -> ci_suite_cases(), "heldout" -> heldout_suite_cases(); InputError otherwise.
std::vector<SuiteCase> suite_cases(const std::string& name);
/// The suite's repetitions and budgets (15 timed steps, at most ~4 s of them per case, profiles
/// with 5 repetitions): what keeps the whole suite near a minute on two cores.
ValidationRequest ci_suite_defaults();

struct SuiteResult {
  std::string name = "ci";  // which suite: "ci" (tuning) or "heldout"
  std::string backend = "cpu";
  std::vector<ValidationResult> rows;
  std::vector<std::string> skipped;  // cases not run: "tiny_cnn dp=2: needs 2 GPUs, 1 visible"
  /// Over the measured rows only (ValidationResult::is_measured); 0 when there is none.
  double median_abs_error_pct = 0;
  double max_abs_error_pct = 0;
  std::size_t measured_rows = 0;
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

/// The suite's statistics over the measured rows of `s.rows` (median and max |error|,
/// measured_rows); rows with stand-in kernels are left out.
void summarize_suite(SuiteResult& s);

/// median_abs_error_pct and max_abs_error_pct are null when no row was measured;
/// measured_rows and not_measured_rows count the two kinds.
nlohmann::json suite_to_json(const SuiteResult& s);

}  // namespace parasim::validation
