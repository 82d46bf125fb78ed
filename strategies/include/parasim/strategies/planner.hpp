// The planner: every candidate strategy of a SearchSpace simulated by the event engine, ranked
// by time to train (or step time), with the reasons the others lose. Each candidate is judged
// cheapest test first (memory bound, lowering, static memory, memory dominance, simulation) and
// leaves only its PlanRow; rows are sorted by a total order, so the result does not depend on
// the thread count. docs/projection.md ("How a candidate is judged", "Ranking and determinism").
//
// Example:
//   models::Model model = models::build_zoo_model("gpt2");
//   hardware::Cluster cluster = hardware::make_cluster_preset("dgx-a100", 2);
//   profiler::RooflineCostModel roofline;
//   PlanRequest req{.model = &model, .cluster = &cluster, .costs = &roofline,
//                   .efficiency = default_efficiency("gpt2"),
//                   .dataset_samples = dataset("openwebtext").samples,
//                   .space = SearchSpace{.gpus = 16, .global_batch = 512}};
//   PlanResult plan = run_planner(req);
//   add_details(plan, 3);                             // per-stream times of the top 3
//   std::cout << to_string(plan.rows.front().strategy) << "\n" << explain_plan(plan) << "\n";
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parasim/common/calibration.hpp"
#include "parasim/common/data_loading.hpp"
#include "parasim/common/grad_accumulation.hpp"
#include "parasim/hardware/cluster.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/profiler/cost_model.hpp"
#include "parasim/simulator/collectives.hpp"
#include "parasim/strategies/efficiency.hpp"
#include "parasim/strategies/lowering.hpp"
#include "parasim/strategies/search_space.hpp"
#include "parasim/strategies/step_bound.hpp"

namespace parasim::strategies {

enum class Objective : std::uint8_t { TimeToTrain, StepTime };
std::string to_string(Objective o);                 // "time-to-train" | "step"
Objective parse_objective(const std::string& text);  // InputError otherwise

/// Where a candidate was decided.
enum class Verdict : std::uint8_t {
  Feasible,         // simulated, fits
  MemoryBound,      // rejected by the parameter-memory lower bound before lowering
  Invalid,          // lowering rejected it (the reason says why)
  StaticMemory,     // lowered; weights/gradients/optimizer state alone do not fit; not simulated
  PeakMemory,       // simulated; activations push the peak over capacity
  MemoryDominated,  // not lowered: a candidate of its family needing no more memory did not fit
  Pruned,           // not simulated: a lower bound on its objective is worse than every row asked for
  LessRecompute,    // not lowered: recomputes the fewest layers that fit, where the same configuration
                    // with selective or no recomputation fits (taken to be faster)
};
/// "feasible", "memory-bound", "invalid", "static-memory", "peak-memory", "memory-dominated",
/// "pruned", "less-recompute-fits"
std::string to_string(Verdict v);

struct PlanRow {
  Strategy strategy;
  std::int64_t global_batch = 0;
  std::int64_t devices = 0;  // dp * mp * tp
  Verdict verdict = Verdict::Feasible;
  bool feasible() const { return verdict == Verdict::Feasible; }
  bool simulated() const { return verdict == Verdict::Feasible || verdict == Verdict::PeakMemory; }
  std::string reason;        // why not feasible

  // Simulation (when simulated()).
  TimeNs step_time = 0;
  TimeNs step_bound = 0;         // step_time_lower_bound() when worked out (pruning), else 0
  double throughput = 0;         // samples/s
  double bubble_fraction = 0;
  TimeNs compute = 0;            // the busiest simulated device
  TimeNs exposed_comm = 0;       // the largest over simulated devices
  // Memory: the device closest to (or furthest over) its capacity; for MemoryBound the bound.
  Bytes peak_memory = 0;
  Bytes capacity = 0;
  double memory_ratio() const {
    return capacity > 0 ? static_cast<double>(peak_memory) / static_cast<double>(capacity) : 0;
  }

  // Micro-batch counts actually simulated when the step was extrapolated along the count
  // (PlanRequest::extrapolate); {0, 0}: simulated at `strategy.micro` itself.
  std::array<int, 2> sampled_micro{0, 0};
  /// Event-engine runs this row took (0: decided before simulation; 2: extrapolated from two).
  int simulations = 0;

  /// Model FLOPs utilisation of the step: ModelFacts::matmul_flops_per_sample x global_batch over
  /// devices x ModelFacts::device_peak_flops x step_time (0: not simulated, or mixed device kinds).
  double mfu = 0;

  // Statistical efficiency (when simulated()).
  double epochs = 0;
  std::int64_t steps_per_epoch = 0;
  TimeNs time_to_train = 0;

  // Summed busy time per stream, the most over the simulated devices (DeviceReport::stream_busy;
  // continued along K with the rest of an extrapolated row), for every simulated row; zero for the
  // others. `detailed`: add_details() asked for them to be reported (JSON and explanation).
  bool detailed = false;
  TimeNs dp_comm = 0;        // data-parallel gradient collectives
  TimeNs pipeline_comm = 0;  // activations / gradients between stages
  TimeNs tp_comm = 0;        // tensor-parallel all-reduces / all-gathers / reduce-scatters
};

struct PlanStats {
  std::int64_t candidates = 0;     // enumerated
  std::int64_t memory_bound = 0;   // rejected before lowering
  std::int64_t invalid = 0;
  std::int64_t static_memory = 0;
  std::int64_t simulated = 0;
  std::int64_t peak_memory = 0;
  std::int64_t dominated = 0;      // skipped: a family member needing no more memory did not fit
  std::int64_t feasible = 0;
  std::int64_t simulations = 0;    // event-engine runs (an extrapolated candidate takes two)
  std::int64_t pruned = 0;         // not simulated: bound worse than the rows asked for (PlanRequest::exact_top)
  std::int64_t less_recompute = 0;  // fewest-layers recomputation skipped: selective or none fits
};

/// A sweep split across processes: the memory families (taken in run_planner's cost order) with
/// index % parts == part are this process's; `exchange` gets this process's rows, serialised,
/// and returns every process's, by part (an MPI allgather). The merged rows are the same bytes
/// as one process computing all of them (a family's verdicts stay within one process).
struct PlanSharing {
  int part = 0;
  int parts = 1;
  std::function<std::vector<std::string>(const std::string&)> exchange;
};

struct PlanRequest {
  const models::Model* model = nullptr;
  const hardware::Cluster* cluster = nullptr;
  const profiler::CostModel* costs = nullptr;
  profiler::Optimizer optimizer = profiler::Optimizer::Adam;
  std::optional<models::DType> dtype{};
  StatisticalEfficiency efficiency = StatisticalEfficiency::none(1, "");
  std::int64_t dataset_samples = 1;
  SearchSpace space{};
  Objective objective = Objective::TimeToTrain;
  /// nullopt: Stage for models with transformer layers or more than 2,000 ops, else Op.
  std::optional<Granularity> granularity{};
  simulator::CollectiveMode collectives = simulator::CollectiveMode::Analytic;
  /// NCCL-like collective costs, or the pure link model (tests of planner logic on toy clusters).
  simulator::CollectiveCosts collective_costs = simulator::CollectiveCosts::Nccl;
  /// Communication factors and per-step overhead of a calibration (parasim calibrate).
  Calibration calibration{};
  /// The host data loader (off by default; on, micro-batch extrapolation is off: a step of
  /// max(compute, load) is not affine in the micro-batch count).
  DataLoading data_loading{};
  /// How micro-batch gradients are added up (StepSetup::grad_accumulation).
  GradAccumulation grad_accumulation = GradAccumulation::Auto;
  int threads = 0;  // 0: std::thread::hardware_concurrency()
  /// Large micro-batch counts: simulate two smaller counts of the same micro-batch size and
  /// continue affinely (planner_evaluate.cpp says why that holds); false: simulate every one.
  bool extrapolate = true;
  /// Skip candidates that need at least the memory of one already found not to fit (same
  /// dp/mp/tp/schedule, micro-batches at least as large, no more recompute or ZeRO), and a
  /// fewest-layers recomputation whose configuration fits with selective or none
  /// (Verdict::LessRecompute); false: lower and simulate every candidate.
  bool prune_dominated = true;
  /// > 0: only the first `exact_top` rows and the best rows of the first kExplainedShapes
  /// dp x mp x tp shapes (what `plan` prints and explains) must come out as if every candidate
  /// were simulated. Candidates are then simulated in order of a lower bound on their objective
  /// (step_time_lower_bound: compute and pipeline fill, no communication), and one whose bound
  /// exceeds those rows' worst objective found so far is not simulated (Verdict::Pruned). Not
  /// with `sharing`, nor for models with expert or context parallelism in the space. 0: off.
  int exact_top = 0;
  /// Called once per finished candidate from any worker (a progress bar); may be empty.
  std::function<void()> on_candidate_done{};
  StepCache* cache = nullptr;  // optional: share across planner calls on the same model/costs
  /// Optional: this process evaluates one share of the sweep (MPI ranks, one sharing per rank).
  std::optional<PlanSharing> sharing{};
};

struct PlanResult {
  std::vector<PlanRow> rows;  // ranked: feasible by objective, then the rest (closest to fitting first)
  PlanStats stats;
  std::string cost_source;    // of the first simulated candidate ("roofline", "profile X: ...")
  Granularity granularity = Granularity::Op;
  Objective objective = Objective::TimeToTrain;
};

/// The winner and the runners-up explain_plan() describes by default: rows of this many distinct
/// dp x mp x tp shapes stay exact under PlanRequest::exact_top.
inline constexpr int kExplainedShapes = 4;

/// Simulates every candidate (or, with exact_top, those that can reach the rows asked for).
/// InputError for a malformed request (no model/cluster/costs, a space with more GPUs than the
/// cluster has).
PlanResult run_planner(const PlanRequest& request);

/// Judges one candidate (the building block of run_planner; also used by tests). `collectives`:
/// an optional planner of request.cluster kept across calls by one thread (EngineOptions::planner),
/// so DP/TP collective plans and routes are not worked out again for every candidate.
PlanRow evaluate_candidate(const PlanRequest& request, const ModelFacts& facts, const Candidate& candidate,
                           Granularity granularity, StepCache& cache, std::string* cost_source = nullptr,
                           simulator::CollectivePlanner* collectives = nullptr);

/// The StepSetup the planner simulates `strategy` at `global_batch` with: the request's model,
/// cluster, costs, optimizer, dtype, collective costs, calibration and data loading, one
/// representative replica and TP rank, infeasible steps not simulated.
StepSetup plan_step_setup(const PlanRequest& request, const Strategy& strategy, std::int64_t global_batch,
                          Granularity granularity, StepCache& cache);

/// Whether the parameter-memory bound alone rejects `candidate` (evaluate_candidate()'s first test,
/// Verdict::MemoryBound).
bool parameter_memory_rejects(const PlanRequest& request, const ModelFacts& facts, const Candidate& candidate);

/// The lower bound on `candidate`'s step that exact_top prunes with (step_time_lower_bound() of its
/// StepSetup); 0 when none is worked out, when the parameter-memory bound already rejects it, or
/// when it cannot be lowered (evaluate_candidate() says why). With `bounds`, candidates of one
/// micro-batch size that differ only in dp, the micro-batch count and ZeRO 0/1 share one bound
/// (step_bound_per_micro) on a cluster of one device kind.
class StepBoundCache;
/// What a candidate's shared step bound depends on: its strategy without dp, the micro-batch count
/// and ZeRO 0/1 (which only shard the optimizer's update), and its micro-batch size.
std::string bound_shape_key(const Candidate& candidate);
TimeNs candidate_step_bound(const PlanRequest& request, const ModelFacts& facts, const Candidate& candidate,
                            Granularity granularity, StepCache& cache, StepBoundCache* bounds = nullptr);

/// The per-micro-batch bounds of one sweep, by key; thread-safe.
class StepBoundCache {
 public:
  explicit StepBoundCache(const hardware::Cluster& cluster);
  ~StepBoundCache();
  StepBoundCache(const StepBoundCache&) = delete;
  StepBoundCache& operator=(const StepBoundCache&) = delete;
  bool applies() const { return one_kind_; }
  /// The bound for `key`, worked out by `make` by its first caller (others wait for it); what
  /// `make` throws is rethrown to every caller of the key.
  std::optional<StepBound> get(const std::string& key, const std::function<std::optional<StepBound>()>& make);

 private:
  bool one_kind_ = false;
  struct State;
  std::unique_ptr<State> state_;
};

/// The micro-batch counts evaluate_candidate() simulates to extrapolate a step to `s.micro` (an
/// evenly split batch, PlanRequest::extrapolate on), or {0, 0} when it simulates s.micro itself
/// (long 1F1B: when the two samples would not be fewer micro-batches than K).
std::array<int, 2> extrapolation_points(const Strategy& s);

/// The model facts run_planner enumerates with (devices per node from the cluster's node 0).
ModelFacts planner_model_facts(const PlanRequest& request);

/// The granularity run_planner uses for `request`.
Granularity planner_granularity(const PlanRequest& request);

/// Marks the first `top` feasible rows to report their per-stream times (PlanRow::detailed), which
/// the search's simulations measured (no re-simulation; extrapolated rows continue them along K).
void add_details(PlanResult& plan, int top);
/// The same for the rows at `indices` (feasible ones; others are skipped).
void add_details(PlanResult& plan, const std::vector<std::size_t>& indices);

/// The rows explain_plan() talks about: the winner (index 0) and the best row of each of the next
/// `runners_up` distinct dp x mp x tp shapes.
std::vector<std::size_t> explained_rows(const PlanResult& plan, int runners_up = 3);

/// The objective value of a row (time to train or step time), in ns.
TimeNs objective_value(const PlanRow& row, Objective objective);

/// One paragraph explaining why the winner wins and what limits the runners-up, from the numbers,
/// ending with plan_shortcuts() when a shortcut was taken.
std::string explain_plan(const PlanResult& plan, int runners_up = 3);

/// Which shortcuts this plan took and how to turn them off: how many rows (and whether the
/// winner) were extrapolated along the micro-batch count, how many were skipped by memory
/// dominance; "" when none was (an --exact plan, or one where neither applied).
std::string plan_shortcuts(const PlanResult& plan);

/// Deterministic JSON of one row: strategy, global_batch, devices, feasible, verdict, reason,
/// step_time_ms, throughput_samples_per_s, bubble_fraction, exposed_comm_ms, compute_ms,
/// peak_memory_bytes, capacity_bytes, epochs, steps_per_epoch, time_to_train_s (+ stream times).
nlohmann::json plan_row_to_json(const PlanRow& row);
/// The first `top` rows (0: all) as a JSON array.
nlohmann::json plan_rows_to_json(const PlanResult& plan, std::size_t top);

}  // namespace parasim::strategies
