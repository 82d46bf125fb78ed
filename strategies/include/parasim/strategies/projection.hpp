// Projection: for each GPU count N, the best data-parallel-only strategy against the best hybrid
// (data parallelism over groups of M > 1 GPUs that split the model: pipeline/model or tensor
// parallelism), end to end - step time x steps per epoch x epochs to converge - as in Pal et al.
// 2019 ("Optimizing Multi-GPU Parallelization Strategies for Deep Learning Training", IEEE Micro).
//
// Batch convention (Pal et al.): every data-parallel worker keeps the per-device batch b,
// whatever the number M of GPUs it spans, so
//   DP only:  dp = N,     global batch = N * b
//   hybrid:   dp = N / M, global batch = (N / M) * b
// Hybrid steps are not always faster, but its global batch is M times smaller, so it needs fewer
// epochs (statistical efficiency, efficiency.hpp): that is where hybrid wins at scale.
//   time to train = E(B) * ceil(dataset / B) * step time
//   gain          = (T_dp - T_hybrid) / T_dp, in percent
// Each side is the best of a planner run (planner.hpp) on nodes = ceil(N / devices per node) of
// the cluster preset; the hybrid side only tries M = mp * tp <= SearchSpace::max_model_parallel
// (default: the GPUs of one node, where Pal et al. keep each worker's model-parallel split).
//
// Example:
//   models::Model model = models::build_zoo_model("inception_v3");
//   profiler::RooflineCostModel roofline;
//   const Dataset& data = dataset("imagenet-1k");
//   ProjectionRequest req{.model = &model, .cluster = "dgx1-v100", .costs = &roofline,
//                         .efficiency = default_efficiency("inception_v3"), .dataset = data,
//                         .per_device_batch = 64, .gpus = parse_gpu_counts("8-1024")};
//   Projection p = run_projection(req);
//   for (const ProjectionRow& r : p.rows) std::cout << r.gpus << " " << r.gain_pct.value_or(0) << "%\n";
#pragma once

#include <array>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parasim/strategies/planner.hpp"

namespace parasim::strategies {

/// --gpus: "8,16,32" (a list), "8-1024" (the powers of two in the range), "1-64x2" (1, 2, 4 ... 64:
/// from the start, multiplying by the factor while <= the end); items may be mixed with commas.
/// Sorted ascending, duplicates removed. InputError naming the bad item otherwise.
std::vector<int> parse_gpu_counts(const std::string& text);

/// The per-device batch parasim assumes for a zoo model when none is given, and why.
struct PerDeviceBatch {
  std::int64_t batch = 0;
  std::string source;
};
PerDeviceBatch default_per_device_batch(const std::string& model);

struct ProjectionRequest {
  const models::Model* model = nullptr;
  std::string cluster;  // preset name (":ib=..." allowed) or a parasim.cluster/1 file (fixed size)
  const profiler::CostModel* costs = nullptr;
  profiler::Optimizer optimizer = profiler::Optimizer::Adam;
  std::optional<models::DType> dtype{};
  StatisticalEfficiency efficiency = StatisticalEfficiency::none(1, "");
  Dataset dataset{};
  std::int64_t per_device_batch = 0;
  std::string per_device_batch_source;
  std::vector<int> gpus;
  /// Template for each N's search (gpus and batch fields are overwritten); max_model_parallel 0
  /// means the devices of one node.
  SearchSpace space{};
  std::optional<Granularity> granularity{};
  simulator::CollectiveMode collectives = simulator::CollectiveMode::Analytic;
  Calibration calibration{};  // communication factors and per-step overhead (parasim calibrate)
  DataLoading data_loading{};  // the host data loader (off by default)
  GradAccumulation grad_accumulation = GradAccumulation::Auto;  // StepSetup::grad_accumulation
  int threads = 0;
  bool exact = false;  // PlanRequest::extrapolate and prune_dominated off
  std::function<void()> on_candidate_done{};
  /// Called before each N's search with the number of candidates (progress bars).
  std::function<void(int gpus, std::size_t candidates)> on_gpu_count{};
  std::optional<PlanSharing> sharing{};  // every N's sweep shared across processes (PlanRequest::sharing)
};

/// One side (DP only or hybrid) of a projection row.
struct ProjectionSide {
  bool feasible = false;
  Strategy strategy;         // the best; for an infeasible side the closest candidate
  std::string reason;        // why no candidate of this side is feasible
  TimeNs step_time = 0;
  std::int64_t global_batch = 0;
  double epochs = 0;
  std::int64_t steps_per_epoch = 0;
  TimeNs time_to_train = 0;
  double throughput = 0;
  double bubble_fraction = 0;
  TimeNs exposed_comm = 0;
  Bytes peak_memory = 0;
  Bytes capacity = 0;
  std::int64_t candidates = 0;  // configurations of this side that were tried
  /// PlanRow::sampled_micro of the chosen row: {0, 0} when simulated at its own micro-batch
  /// count, else the two counts its step was extrapolated from.
  std::array<int, 2> sampled_micro{0, 0};
};

struct ProjectionRow {
  int gpus = 0;
  int nodes = 0;
  ProjectionSide dp;
  ProjectionSide hybrid;
  std::optional<double> gain_pct;  // when both sides are feasible
  /// The best feasible hybrid of each model-parallel width M = mp x tp (2, 4, 8, ...): the
  /// "each MP degree" lines of Pal et al.'s figure. Widths with no feasible candidate are absent.
  std::map<std::int64_t, ProjectionSide> hybrid_by_width;
  /// Fewest-layers recomputations the plan did not simulate because less recomputation fitted
  /// (PlanStats::less_recompute): said in the shortcuts.
  std::int64_t less_recompute = 0;
};

struct ProjectionAssumptions {
  std::string model;
  std::string cluster;
  std::string cost_source;
  std::string efficiency;  // StatisticalEfficiency::describe()
  std::string dataset;
  std::int64_t dataset_samples = 0;
  std::string dataset_source;
  std::int64_t per_device_batch = 0;
  std::string per_device_batch_source;
  std::string batch_convention;
  std::string hybrid_rule;
  std::string dtype;
  std::string optimizer;
  std::string granularity;
  std::string collectives;
  /// Which shown rows took a shortcut and how to turn it off ("none (--exact)" when exact).
  std::string shortcuts;
  std::string step_overhead;  // Calibration::describe_step_overhead()
  std::string collective_sms;  // describe_collective_sms()
  std::string data_loading;   // DataLoading::describe()
  std::string grad_accumulation;  // describe(GradAccumulation, dtype)
};

struct Projection {
  std::vector<ProjectionRow> rows;
  ProjectionAssumptions assumptions;
};

/// ProjectionAssumptions::shortcuts for `p`: the shown rows (each side's winner) that were
/// extrapolated, or that none was, and how to turn the shortcuts off.
std::string projection_shortcuts(const Projection& p, bool exact);

/// Runs the planner for every N. InputError for bad input (no GPU counts, a count larger than a
/// cluster file holds, no per-device batch).
Projection run_projection(const ProjectionRequest& request);

/// Picks the DP-only and hybrid sides out of a plan for N GPUs (exposed for tests).
ProjectionRow projection_row_from_plan(int gpus, int nodes, const PlanResult& plan);

/// {"schema": "parasim.projection/1", "assumptions": {...}, "rows": [{gpus, nodes, dp_strategy,
/// dp_feasible, dp_step_time_ms, dp_global_batch, dp_epochs, dp_time_to_train_s, ..., hybrid_...,
/// gain_pct}]}; deterministic.
nlohmann::json projection_to_json(const Projection& p);
/// One header line and one line per N with the row fields of the JSON (no assumptions).
std::string projection_to_csv(const Projection& p);

}  // namespace parasim::strategies
