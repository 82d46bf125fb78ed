#include "enum_args.hpp"
#include "plan_inputs.hpp"
#include "cli_output.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "parasim/common/error.hpp"
#include "parasim/common/progress.hpp"
#include "parasim/mpi/world.hpp"
#include "parasim/hardware/cluster_json.hpp"
#include "parasim/models/model_json.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/profile_cost_model.hpp"
#include "parasim/profiler/roofline.hpp"

namespace parasim::cli {

namespace {

bool looks_like_file(const std::string& target) {
  std::error_code ec;
  return target.find('/') != std::string::npos || target.ends_with(".json") || target.ends_with(".onnx") ||
         std::filesystem::exists(target, ec);
}

bool known_dataset(const std::string& name) {
  const auto& all = strategies::datasets();
  return std::any_of(all.begin(), all.end(), [&](const strategies::Dataset& d) { return d.name == name; });
}

bool has_training_defaults(const std::string& model) {
  const auto& all = strategies::model_training_defaults();
  return std::any_of(all.begin(), all.end(), [&](const auto& d) { return d.model == model; });
}

}  // namespace

void add_planning_options(CLI::App* cmd, PlanningInputs& in) {
  cmd->add_option("--model", in.model,
                  "Zoo model (see `parasim models`), parasim.model/1 file, Hugging Face config.json or .onnx graph")
      ->required();
  cmd->add_option("--seq-len", in.seq_len,
                  "Training sequence length of a sequence model or config.json (default: the model's)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
  cmd->add_option("--cluster", in.cluster, "Cluster preset (see `parasim clusters`) or parasim.cluster/1 file")
      ->capture_default_str();
  add_fabric_options(*cmd, in.fabric);
  cmd->add_option("--dtype", in.dtype,
                  "fp32, fp16, bf16 or fp8 (fp16/bf16: mixed precision; fp8: FP8 matmuls on Hopper)")
      ->capture_default_str();
  cmd->add_option("--optimizer", in.optimizer, "sgd, momentum or adam")->capture_default_str();
  cmd->add_option("--profile", in.profile,
                  "parasim.profile/1 file with measured op costs, or none for the roofline (default: a profile in "
                  "--traces measured on the cluster's GPU for this model and dtype, else the roofline)");
  cmd->add_option("--traces", in.traces, "Where default profiles are looked for (traces/<device>/*.json)")
      ->capture_default_str()
      ->each([&in](const std::string&) { in.traces_given = true; });
  cmd->add_option("--efficiency", in.efficiency,
                  "Statistical efficiency: critical-batch, critical-batch:E_MIN:B_CRIT, table:FILE.csv or none")
      ->capture_default_str();
  cmd->add_option("--dataset", in.dataset, "Dataset whose size sets steps per epoch (default: the model's)");
  cmd->add_option("--granularity", in.granularity,
                  "auto (stage for transformers and models with > 2000 ops, else op), op or stage")
      ->capture_default_str();
  cmd->add_option("--schedules", in.schedules,
                  "Pipeline schedules to try: all or a list of none,gpipe,1f1b,interleaved,pipedream,spectrain")
      ->capture_default_str();
  cmd->add_option("--recompute", in.recompute,
                  "Recompute choices: all or a list of none,selective,full,partial (partial: full recomputation "
                  "of the fewest transformer layers of each pipeline chunk that fit, with sequence parallelism)")
      ->capture_default_str();
  cmd->add_option("--zero", in.zero, "ZeRO stages to try: a list of 0, 1, 2, 3 (2: micro=1 only)")
      ->capture_default_str();
  cmd->add_option("--max-mp", in.max_mp,
                  "Most pipeline/model-parallel stages to try (0: as many as the model has units)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--max-tp", in.max_tp, "Widest tensor parallelism to try (0: the GPUs of one node)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_flag("--even-stages", in.even_stages,
                "Only pipeline depths that divide the transformer layers (Calculon, Megatron-LM's even split)");
  cmd->add_option(
         "--max-micro-per-stage", in.max_micro_per_stage,
         "Pipelined schedules try micro-batch counts up to this x stages (0: every divisor of the replica batch)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_flag("--all-mappings", in.all_mappings,
                "Also try every order of the tp/mp/dp axes over the devices (default: tp-mp-dp, TP innermost)");
  cmd->add_option("--ep", in.ep,
                  "MoE models: on tries every expert-parallel width dividing dp and the experts (and, with tp, "
                  "the folded widths tp x a divisor of dp), off only ep=1")
      ->capture_default_str();
  cmd->add_option("--imbalance", in.imbalance,
                  "Expert-parallel load imbalance: the busiest rank's routed tokens over the mean (dropless routing)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 100.0));
  cmd->add_flag("--exact", in.exact,
                "Simulate every micro-batch and every candidate (no extrapolation along the micro-batch count, no "
                "memory-dominance pruning; slower)");
  cmd->add_option("--threads", in.threads, "Worker threads (0: all cores)")->check(CLI::Range(0, 1024));
  cmd->add_option(
      "--calibration", in.calibration,
      "Calibration file from `parasim calibrate` (kernel, link and per-step factors fitted to measured runs)");
  cmd->add_option("--data-loading", in.data_loading, std::string("The ") + kDataLoadingHelp)->capture_default_str();
  cmd->add_option("--grad-accumulation", in.grad_accumulation, kGradAccumulationHelp)->capture_default_str();
  add_kernel_choice_options(*cmd, in.kernels, "");
}

models::DType planning_dtype(const PlanningInputs& in) {
  const auto d = models::parse_dtype(in.dtype);
  if (!d) throw InputError("--dtype: expected fp32, fp16, bf16 or fp8, found \"" + in.dtype + "\"");
  return *d;
}

models::Model load_planning_model(const PlanningInputs& in) {
  const models::DType dtype = planning_dtype(in);
  models::Model model;
  if (!models::is_zoo_model(in.model) && looks_like_file(in.model)) {
    models::LoadOptions load;
    load.batch = 1;
    load.dtype = dtype;
    if (in.seq_len > 0) load.seq_len = in.seq_len;
    model = models::load_model_file(in.model, load);
  } else {
    model = models::build_zoo_model(in.model, models::ModelOptions{.batch = 1, .dtype = dtype, .seq_len = in.seq_len});
  }
  apply_loss_choice(model, in.kernels);
  return model;
}

Calibration planning_calibration(const PlanningInputs& in) { return load_calibration_option(in.calibration); }

DataLoading planning_data_loading(const PlanningInputs& in) { return parse_data_loading(in.data_loading); }

GradAccumulation planning_grad_accumulation(const PlanningInputs& in) {
  return grad_accumulation_arg(in.grad_accumulation);
}

CostChoice choose_planning_costs(const PlanningInputs& in, const models::Model& model) {
  const std::vector<std::string> kinds = hardware::resolve_cluster(in.cluster, 1).device_kinds();
  CostChoice choice = choose_costs(in.profile, in.traces, in.traces_given, model, kinds);
  configure_model_costs(choice, in.kernels, planning_calibration(in), model, kinds);
  return choice;
}

strategies::Dataset planning_dataset(const PlanningInputs& in, const models::Model& model) {
  if (!in.dataset.empty()) return strategies::dataset(in.dataset);
  if (has_training_defaults(model.name()))
    return strategies::dataset(strategies::training_defaults_for(model.name()).dataset);
  if (known_dataset(model.dataset())) return strategies::dataset(model.dataset());
  return strategies::dataset("synthetic");
}

strategies::StatisticalEfficiency planning_efficiency(const PlanningInputs& in, const models::Model& model,
                                                      const strategies::Dataset& data) {
  return strategies::parse_efficiency(in.efficiency, model.name(), data.samples);
}

std::optional<strategies::Granularity> planning_granularity(const PlanningInputs& in) {
  if (in.granularity == "auto") return std::nullopt;
  return granularity_arg(in.granularity);
}

void apply_search_options(const PlanningInputs& in, strategies::SearchSpace& space) {
  space.schedules = strategies::parse_schedule_list(in.schedules, "--schedules");
  strategies::parse_recompute_choices(in.recompute, "--recompute", space);
  space.zeros = strategies::parse_zero_list(in.zero, "--zero");
  space.max_mp = in.max_mp;
  space.max_tp = in.max_tp;
  space.even_stages = in.even_stages;
  space.max_micro_per_stage = in.max_micro_per_stage > 0 ? in.max_micro_per_stage : 1 << 20;
  space.all_mappings = in.all_mappings;
  if (in.ep != "on" && in.ep != "off") throw InputError("--ep: expected on or off, found \"" + in.ep + "\"");
  space.expert_parallel = in.ep == "on";
  if (in.imbalance != 1.0 && !space.expert_parallel)
    throw InputError("--imbalance: needs --ep on (it is the load of the busiest expert-parallel rank)");
  space.imbalance = in.imbalance;
}

std::optional<strategies::PlanSharing> mpi_plan_sharing() {
  mpi::World* world = mpi::World::current();
  if (world == nullptr || world->size() == 1) return std::nullopt;
  strategies::PlanSharing share;
  share.part = world->rank();
  share.parts = world->size();
  // Ranks finish their shares at different times: the wait is long, the heartbeat guards it.
  share.exchange = [world](const std::string& rows) {
    return world->allgather(rows, "the planner rows of every rank", std::chrono::hours(24));
  };
  return share;
}

strategies::Projection run_planning_projection(const PlanningInputs& in, const models::Model& model,
                                               const profiler::CostModel& costs, const strategies::Dataset& data,
                                               const std::string& gpus, std::int64_t per_device_batch,
                                               int max_model_parallel) {
  using namespace strategies;
  const PerDeviceBatch pdb = per_device_batch > 0 ? PerDeviceBatch{per_device_batch, "--per-device-batch"}
                                                  : default_per_device_batch(model.name());
  // Member by member: GCC 12 warns (maybe-uninitialized) on a designated initializer that leaves
  // the SearchSpace's vectors to their defaults.
  ProjectionRequest req;
  req.model = &model;
  req.cluster = in.cluster;
  req.costs = &costs;
  req.optimizer = optimizer_arg(in.optimizer);
  req.dtype = planning_dtype(in);
  req.efficiency = planning_efficiency(in, model, data);
  req.dataset = data;
  req.per_device_batch = pdb.batch;
  req.per_device_batch_source = pdb.source;
  req.gpus = parse_gpu_counts(gpus);
  req.granularity = planning_granularity(in);
  req.threads = in.threads;
  req.calibration = planning_calibration(in);
  req.data_loading = planning_data_loading(in);
  req.grad_accumulation = planning_grad_accumulation(in);
  req.exact = in.exact;
  req.sharing = mpi_plan_sharing();
  apply_search_options(in, req.space);
  req.space.max_model_parallel = max_model_parallel;
  std::unique_ptr<ProgressBar> bar;
  req.on_gpu_count = [&bar](int count, std::size_t candidates) {
    if (bar) bar->finish();
    bar = std::make_unique<ProgressBar>("project " + std::to_string(count) + " GPUs", candidates);
  };
  req.on_candidate_done = [&bar] {
    if (bar) bar->advance();
  };
  Projection p = run_projection(req);
  if (bar) bar->finish();
  return p;
}

}  // namespace parasim::cli
