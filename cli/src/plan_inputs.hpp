// What `parasim plan` and `parasim project` both take: the model (zoo name or file), its dtype,
// the optimizer, the cost model (roofline or a measured profile), the dataset and statistical
// efficiency, the search-space knobs and the thread count - parsed the same way for both.
//
// Example:
//   auto in = std::make_shared<PlanningInputs>();
//   add_planning_options(cmd, *in);
//   ...
//   const models::Model model = load_planning_model(*in);
//   const CostChoice costs = choose_planning_costs(*in, model);  // .costs, and .note to print
//   const strategies::Dataset data = planning_dataset(*in, model);
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cost_choice.hpp"
#include "fabric_args.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/profiler/cost_model.hpp"
#include "parasim/strategies/efficiency.hpp"
#include "parasim/strategies/lowering.hpp"
#include "parasim/strategies/projection.hpp"
#include "parasim/strategies/search_space.hpp"

namespace parasim::cli {

struct PlanningInputs {
  std::string model;
  std::int64_t seq_len = 0;  // tokens per sample for sequence models and config.json files; 0: the model's
  std::string cluster = "dgx-h100";
  std::string dtype = "fp32";
  std::string optimizer = "adam";
  std::string profile;
  std::string traces = "traces";  // where a default profile is looked for (cost_choice.hpp)
  bool traces_given = false;
  std::string efficiency = "critical-batch";
  std::string dataset;
  std::string granularity = "auto";
  std::string schedules = "all";
  std::string recompute = "all";
  std::string zero = "0,1,3";
  int max_mp = 0;
  int max_tp = 0;
  bool even_stages = false;      // mp divides the transformer layers (Calculon, Megatron-LM)
  int max_micro_per_stage = 8;   // pipelined: K <= this x mp; 0: every divisor of the replica batch
  bool all_mappings = false;
  std::string ep = "on";   // MoE models: search expert parallelism
  double imbalance = 1.0;  // busiest expert-parallel rank's tokens over the mean
  bool exact = false;  // no micro-batch extrapolation, no memory-dominance pruning
  std::string calibration;         // parasim.calibration/2 (or /1) file; empty: none
  std::string data_loading = "off";   // --data-loading (parasim/common/data_loading.hpp)
  std::string grad_accumulation = "auto";  // --grad-accumulation (parasim/common/grad_accumulation.hpp)
  KernelChoice kernels;  // --attention, --fp32-math, --conv-layout, --optimizer-kernels, --mixed-precision
  int threads = 0;
  FabricArgs fabric;  // --fabric, --oversubscription: appended to `cluster` by with_fabric()
};

void add_planning_options(CLI::App* cmd, PlanningInputs& in);

/// The model at batch 1 in the requested dtype (the planner rebuilds it at each micro-batch).
models::Model load_planning_model(const PlanningInputs& in);
models::DType planning_dtype(const PlanningInputs& in);
/// The --calibration file, or the default (no calibration).
Calibration planning_calibration(const PlanningInputs& in);
/// --data-loading parsed (InputError naming the option).
DataLoading planning_data_loading(const PlanningInputs& in);
GradAccumulation planning_grad_accumulation(const PlanningInputs& in);
/// The cost model (cost_choice.hpp: --profile, a matching profile in --traces for the cluster's
/// device kinds, or the labelled roofline; whatever the kernel model prices gets --attention and
/// the calibration's kernel factors) and the line saying which.
CostChoice choose_planning_costs(const PlanningInputs& in, const models::Model& model);
/// --dataset, else the model's default training dataset.
strategies::Dataset planning_dataset(const PlanningInputs& in, const models::Model& model);
strategies::StatisticalEfficiency planning_efficiency(const PlanningInputs& in, const models::Model& model,
                                                      const strategies::Dataset& data);
/// nullopt for "auto".
std::optional<strategies::Granularity> planning_granularity(const PlanningInputs& in);
/// Schedules, recompute, ZeRO, max mp/tp and mappings from the options (batch and GPU fields untouched).
void apply_search_options(const PlanningInputs& in, strategies::SearchSpace& space);
/// Under mpirun with several ranks: the planner's sweep shared across them (this rank's part,
/// rows exchanged with an MPI allgather); nullopt in one process.
std::optional<strategies::PlanSharing> mpi_plan_sharing();

/// `parasim project`'s projection (also what `parasim report --model` draws): `gpus` as --gpus,
/// `per_device_batch` 0 for the model's default, `max_model_parallel` 0 for one node; a progress
/// bar per GPU count on a terminal.
strategies::Projection run_planning_projection(const PlanningInputs& in, const models::Model& model,
                                               const profiler::CostModel& costs, const strategies::Dataset& data,
                                               const std::string& gpus, std::int64_t per_device_batch,
                                               int max_model_parallel);

}  // namespace parasim::cli
