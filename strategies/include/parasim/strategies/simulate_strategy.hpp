// simulate_strategy(): one training step of (model, cluster, strategy, costs) - lowered to a
// TaskGraph and run through the simulator - summarised the way a user (or the planner) asks:
// how long, how many samples per second, does it fit, where do the times and bytes go.
//
// Example:
//   models::Model model = models::build_zoo_model("resnet50");
//   hardware::Cluster cluster = hardware::make_cluster_preset("dgx1-v100");
//   profiler::RooflineCostModel roofline;
//   StepSetup setup{.model = &model, .cluster = &cluster, .strategy = parse_strategy("dp=8"),
//                   .global_batch = 256, .costs = &roofline};
//   StrategyResult r = simulate_strategy(setup);
//   std::cout << format_time(r.step_time) << " " << r.throughput << " samples/s\n";
//   if (!r.feasible) std::cout << r.infeasible_reason << "\n";
//
// For planners: build the model once, keep one StepCache in StepSetup::cache, use
// Granularity::Stage for large models, the default Symmetry::DataAndTensor,
// simulator::CollectiveMode::Analytic, and simulate_infeasible = false.
#pragma once

#include <array>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parasim/simulator/engine.hpp"
#include "parasim/strategies/lowering.hpp"

namespace parasim::strategies {

struct DeviceReport {
  hardware::DeviceId device = 0;
  std::string kind;
  int replica = 0;
  int stage = 0;
  int tp_rank = 0;
  TimeNs compute = 0;       // some compute task was running
  TimeNs comm = 0;          // some transfer or collective was running
  TimeNs exposed_comm = 0;  // communication while no compute ran
  TimeNs idle = 0;          // neither; compute + exposed_comm + idle == step_time
  /// Per stream (kComputeStream, kDataParallelStream, kPipelineStream, kTensorParallelStream): the
  /// summed durations of its tasks, collectives included (StepResult::stream_busy), scaled as above.
  std::array<TimeNs, kStreamsPerDevice> stream_busy{};
  Bytes peak_memory = 0;
  Bytes capacity = 0;
  simulator::MemoryBreakdown breakdown;  // at the peak
};

struct StrategyResult {
  Strategy strategy;
  std::string model;
  std::string cluster;
  int nodes = 1;
  std::int64_t global_batch = 0;
  models::DType dtype = models::DType::F32;
  profiler::Optimizer optimizer = profiler::Optimizer::Adam;
  simulator::CollectiveMode collectives = simulator::CollectiveMode::Expanded;

  bool simulated = false;    // false: skipped (StepSetup::simulate_infeasible = false and it does not fit)
  TimeNs step_time = 0;      // asynchronous schedules: steady-state time per micro-batch x micro
  double throughput = 0;     // samples per second
  TimeNs bubble_time = 0;    // step_time minus the busiest device's compute + exposed comm
  double bubble_fraction = 0;
  bool feasible = true;
  std::string infeasible_reason;  // "needs 41.2 GiB on device 3 (stage 0), device has 32.0 GiB"
  std::string cost_source;
  CostSourceCounts cost_counts;
  TimeNs step_overhead = 0;           // the calibration's per-step overhead included in step_time (0 uncalibrated)
  std::string step_overhead_source;   // Calibration::describe_step_overhead()
  std::string collective_sms;         // describe_collective_sms(): what collectives take from compute
  DataLoading data_loading;           // as simulated (off by default)
  TimeNs data_load_time = 0;          // the loader's time for one step of the largest replica's samples
  GradAccumulation grad_accumulation = GradAccumulation::Auto;  // as asked (describe() says what auto became)
  std::vector<DeviceReport> devices;  // the simulated devices (one replica / TP rank when symmetric)

  LoweredStep lowered;           // the graph, roles, batch split, placement
  simulator::StepResult result;  // the raw simulation (timeline when asked for)
};

StrategyResult simulate_strategy(const StepSetup& setup, const simulator::EngineOptions& options = {});
/// simulate_strategy() of a step lowered already by lower_step() from this setup, or from one that
/// differs only in what the simulation alone reads (the calibration's communication factors and
/// step overhead, EngineOptions): what calibrate's slopes in those factors project. The result's
/// `lowered` is left empty.
StrategyResult simulate_lowered(const StepSetup& setup, const LoweredStep& step,
                                const simulator::EngineOptions& options = {});

/// What the running collectives take from the compute they overlap under `costs` (NCCL: SMs per GPU
/// kind of `cluster`, EngineOptions::collectives_hold_sms), for every output to state.
std::string describe_collective_sms(const hardware::Cluster& cluster,
                                    simulator::CollectiveCosts costs = simulator::CollectiveCosts::Nccl);

/// Deterministic JSON: step_time_ms, throughput_samples_per_s, feasible, cost_source, strategy
/// (canonical), devices [{kind, compute_ms, comm_ms, exposed_comm_ms, idle_ms, peak_memory_bytes, ...}], ...
nlohmann::json strategy_result_to_json(const StrategyResult& r);

}  // namespace parasim::strategies
