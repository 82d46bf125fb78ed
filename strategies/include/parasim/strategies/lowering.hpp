// Lowering: (model, cluster, strategy, per-op costs) -> the TaskGraph of one training step.
//
// What the graph holds (docs/strategies.md has the long form):
//   * compute tasks per op (Granularity::Op) or per pipeline chunk and micro-batch
//     (Granularity::Stage) in forward, recompute, backward-data, backward-weight and update
//     phases, on stream 0 of their device, ordered by the pipeline schedule;
//   * pipeline transfers of activations (forward) and their gradients (backward) between the
//     devices of consecutive chunks, on stream 2 of the sender;
//   * tensor-parallel collectives (stream 3) and data-parallel gradient collectives in DDP-style
//     buckets (stream 1) over the real cluster devices;
//   * memory: activations allocated by a forward, freed by the matching backward; weights,
//     gradients, optimizer state and stashed weight versions as static memory.
//
// Symmetry: replicas of a homogeneous data-parallel job do the same thing at the same time, so
// Symmetry::DataParallel simulates the tasks of replica 0 only; each gradient bucket is still
// ONE collective over the devices of every replica (the real DP group), so its ring/tree crosses
// the real intra- and inter-node links, and the idle peers' comm streams join it at once.
// Symmetry::DataAndTensor also simulates TP rank 0 only (TP collectives still span the whole TP
// group). What the symmetric graph leaves out is contention between replicas (or TP ranks)
// sharing a link - e.g. two GPUs behind one NIC on a DGX-1 - so use Symmetry::None to check that.
// Heterogeneous jobs (device kinds differ, or split=speed gives replicas different batches)
// always simulate every replica.
//
// Example:
//   models::Model model = models::build_zoo_model("resnet50");
//   hardware::Cluster cluster = hardware::make_cluster_preset("dgx1-v100");
//   profiler::RooflineCostModel roofline;
//   StepSetup setup{.model = &model, .cluster = &cluster, .strategy = parse_strategy("dp=8"),
//                   .global_batch = 256, .costs = &roofline};
//   LoweredStep step = lower_step(setup);
//   simulator::StepResult r = simulator::Engine(cluster).run(step.graph);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parasim/common/calibration.hpp"
#include "parasim/common/data_loading.hpp"
#include "parasim/common/grad_accumulation.hpp"
#include "parasim/hardware/cluster.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/profiler/cost_model.hpp"
#include "parasim/simulator/collectives.hpp"
#include "parasim/simulator/task_graph.hpp"
#include "parasim/strategies/step_cache.hpp"
#include "parasim/strategies/strategy.hpp"

namespace parasim::strategies {

enum class Granularity : std::uint8_t {
  Op,     // every op phase is a task (validation, traces, small models; the default)
  Stage,  // one task per pipeline chunk per micro-batch and phase (large models: thousands of tasks)
};
enum class Symmetry : std::uint8_t {
  None,           // every device's tasks (what the executor runs)
  DataParallel,   // replica 0 only; DP collectives over the real DP groups
  DataAndTensor,  // replica 0, TP rank 0 only; TP collectives over the real TP groups
};
std::string to_string(Granularity g);
std::optional<Granularity> parse_granularity(std::string_view s);  // "op" | "stage"; nullopt otherwise
std::string to_string(Symmetry s);

/// Streams of every device in the lowered graph. Compute and the first communication stream are
/// the simulator's (kComputeStream 0, kCommStream 1): data-parallel gradients travel on stream 1,
/// as a hand-written parasim.taskgraph/1 file's transfers and collectives do by default.
using simulator::kComputeStream;
inline constexpr int kDataParallelStream = simulator::kCommStream;
inline constexpr int kPipelineStream = 2;
inline constexpr int kTensorParallelStream = 3;
inline constexpr int kStreamsPerDevice = 4;
/// Context parallelism's ring transfers: a fifth stream, only in graphs of strategies with cp > 1.
inline constexpr int kContextParallelStream = 4;

struct StepSetup {
  const models::Model* model = nullptr;       // at any batch size; rebuilt at each micro-batch size
  const hardware::Cluster* cluster = nullptr;
  Strategy strategy{};
  std::int64_t global_batch = 0;              // samples per optimizer step, all replicas together
  const profiler::CostModel* costs = nullptr;
  profiler::Optimizer optimizer = profiler::Optimizer::Adam;
  std::optional<models::DType> dtype{};       // default: the model's dtype
  Granularity granularity = Granularity::Op;
  Symmetry symmetry = Symmetry::DataAndTensor;
  StepCache* cache = nullptr;                 // optional; share one across calls for speed
  /// simulate_strategy(): false skips the simulation when some device's static memory (weights,
  /// gradients, optimizer state) alone exceeds its capacity - the answer is "infeasible" anyway.
  bool simulate_infeasible = true;
  /// How collectives are priced (simulator/collectives.hpp): NCCL's protocols and latencies by
  /// default; Links for the pure alpha-beta link model.
  simulator::CollectiveCosts collective_costs = simulator::CollectiveCosts::Nccl;
  /// Communication factors and the per-step overhead of a calibration (parasim calibrate); its
  /// kernel factors belong to the cost model (RooflineCostModel::set_kernel_scales).
  Calibration calibration{};
  /// The host data loader (off by default): see parasim/common/data_loading.hpp.
  DataLoading data_loading{};
  /// How each micro-batch's weight gradients are added up (parasim/common/grad_accumulation.hpp):
  /// a bandwidth-bound pass charged to each op's weight-gradient phase.
  GradAccumulation grad_accumulation = GradAccumulation::Auto;
};

/// One rank of the strategy and where it runs.
struct DeviceRole {
  hardware::DeviceId device = 0;
  int replica = 0;
  int stage = 0;      // pipeline / model-parallel slot
  int tp_rank = 0;
  bool simulated = false;  // its tasks are in the graph (otherwise it only joins collectives)
  int cp_rank = 0;         // context-parallel rank
};

/// How many op costs came from where (each distinct (micro-batch, op, device kind) once).
struct CostSourceCounts {
  std::int64_t measured = 0;  // measured-gpu, measured-cpu, imported
  std::int64_t scaled = 0;    // measured at another batch size
  std::int64_t roofline = 0;
  std::int64_t total() const { return measured + scaled + roofline; }
};

struct LoweredStep {
  simulator::TaskGraph graph;
  std::vector<DeviceRole> roles;                       // all dp*mp*tp ranks, by device id
  std::vector<hardware::DeviceId> simulated_devices;   // in rank order (replica, stage, tp)
  std::vector<std::int64_t> replica_batch;             // samples per replica
  std::vector<std::vector<std::int64_t>> microbatches; // per replica: samples per micro-batch
  std::vector<int> op_stage;                           // by op id: device slot (stage) it runs on
  std::vector<int> op_chunk;                           // by op id: pipeline chunk (== stage unless interleaved)
  std::vector<std::int64_t> stage_params;              // parameters held by each stage (one TP rank)
  CostSourceCounts cost_counts;
  std::string cost_source;  // "roofline" or "profile X: 412 of 430 ops measured, 18 roofline"
  /// Asynchronous schedules (pipedream, spectrain) simulate micro + 2 mp micro-batches without a
  /// flush; the step is the time between the ends of markers [mp-1] and [micro+mp-1] (after the
  /// fill, before the drain), or the busiest stream's share of micro micro-batches if longer.
  std::vector<simulator::TaskId> microbatch_done;
  int simulated_microbatches = 0;
  bool sequence_parallel = false;
  Granularity granularity = Granularity::Op;
  Symmetry symmetry = Symmetry::None;                  // what was actually used
};

/// InputError (exit 2) naming why when the strategy cannot run: too few devices, a batch that does
/// not divide, tensor parallelism on a model without transformer layers, more stages than layers...
LoweredStep lower_step(const StepSetup& setup);

}  // namespace parasim::strategies
