#include "enum_args.hpp"
#include "simulate_model.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <vector>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/common/units.hpp"
#include "parasim/hardware/cluster_json.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/models/model_json.hpp"
#include "parasim/models/onnx_import.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/profile_cost_model.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/simulator/chrome_trace.hpp"
#include "parasim/strategies/simulate_strategy.hpp"
#include "cli_output.hpp"
#include "cost_choice.hpp"
#include "text_table.hpp"

namespace parasim::cli {

namespace {

using strategies::StrategyResult;

constexpr const char* kDefaultPreset = "dgx-h100";

models::Model load_model(const std::string& name_or_file, std::optional<models::DType> dtype, std::int64_t seq_len) {
  if (!models::is_zoo_model(name_or_file) &&
      (std::filesystem::exists(name_or_file) || models::is_onnx_path(name_or_file))) {
    models::LoadOptions load;
    load.dtype = dtype;
    if (seq_len > 0) load.seq_len = seq_len;  // config.json only: the loader rejects it for model files
    return models::load_model_file(name_or_file, load);
  }
  // Unknown names get build_zoo_model's error, which lists the known models.
  return models::build_zoo_model(name_or_file,
                                 {.batch = 1, .dtype = dtype.value_or(models::DType::F32), .seq_len = seq_len});
}

hardware::Cluster load_cluster(const SimulateCommonOptions& c, std::int64_t devices_needed) {
  if (!c.cluster.empty())
    return hardware::resolve_cluster(with_fabric(c.cluster, c.fabric), c.nodes == 0 ? 1 : c.nodes);
  const int nodes = c.nodes > 0 ? c.nodes : static_cast<int>(std::max<std::int64_t>(1, (devices_needed + 7) / 8));
  return hardware::make_cluster_preset(with_fabric(kDefaultPreset, c.fabric), nodes);
}

std::string percent(double x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * x);
  return buf;
}

std::string batch_split(const StrategyResult& r) {
  const auto& per = r.lowered.replica_batch;
  const auto& micro = r.lowered.microbatches.front();
  const bool even = std::all_of(per.begin(), per.end(), [&](std::int64_t b) { return b == per.front(); });
  std::string s;
  if (even) {
    s = std::to_string(per.front()) + " per replica";
  } else {
    for (std::size_t i = 0; i < per.size(); ++i) s += (i ? "/" : "") + std::to_string(per[i]);
    s += " per replica";
  }
  const bool equal_micro = std::all_of(micro.begin(), micro.end(), [&](std::int64_t m) { return m == micro.front(); });
  s += ", " + std::to_string(micro.size()) + " micro-batch" + (micro.size() == 1 ? "" : "es") + " of " +
       std::to_string(micro.front()) + (equal_micro ? "" : " (replica 0; sizes differ by one)");
  return s;
}

void print_report(std::ostream& out, const StrategyResult& r, const hardware::Cluster& cluster) {
  const std::size_t used = r.lowered.roles.size();
  out << "model        " << r.model << " (" << models::to_string(r.dtype) << ", " << parasim::to_string(r.optimizer)
      << "), global batch " << r.global_batch << "\n"
      << "cluster      " << cluster.name() << " x" << cluster.num_nodes() << " (" << cluster.num_devices()
      << " devices, " << used << " used)\n"
      << "strategy     " << strategies::to_string(r.strategy) << "\n"
      << "lowering     " << strategies::to_string(r.lowered.granularity) << " granularity, " << r.lowered.graph.size()
      << " tasks, " << r.devices.size() << " of " << used << " devices simulated"
      << (r.devices.size() < used ? " (the others are symmetric)" : "")
      << (r.lowered.sequence_parallel ? ", sequence parallel" : "") << "\n"
      << "symmetry     " << r.devices.size() << " of " << used << " devices simulated, "
      << (used - std::min(used, r.devices.size())) << " inferred; collective messages " << r.result.collective_messages
      << " simulated, " << r.result.collective_messages_inferred << " inferred\n"
      << "batch        " << batch_split(r) << "\n"
      << "cost source  " << r.cost_source << "\n"
      << "overheads    step overhead " << r.step_overhead_source << "; data loading: " << r.data_loading.describe()
      << (r.data_loading.enabled ? ", " + format_time(r.data_load_time) + " per step" : "") << "\n"
      << "grad. accum. " << describe(r.grad_accumulation, r.dtype) << "\n"
      << "comm SMs     " << r.collective_sms << "\n";
  if (r.simulated) {
    out << "step time    " << format_time(r.step_time) << "   throughput " << fixed(r.throughput, 1)
        << " samples/s   pipeline bubble " << format_time(r.bubble_time) << " (" << percent(r.bubble_fraction)
        << ")   [" << simulator::to_string(r.collectives) << " collectives]\n";
  } else {
    out << "step time    not simulated (static memory alone does not fit)\n";
  }
  out << "memory       " << (r.feasible ? "fits" : "INFEASIBLE: " + r.infeasible_reason) << "\n\n";
  std::vector<std::vector<std::string>> rows{{"device", "kind", "replica", "stage", "tp", "compute ms", "comm ms",
                                              "exposed comm ms", "idle ms", "peak memory", "capacity"}};
  for (const auto& d : r.devices) {
    std::string peak = format_bytes(d.peak_memory);
    if (d.peak_memory > d.capacity) peak += " OVER";
    rows.push_back({std::to_string(d.device), d.kind, std::to_string(d.replica), std::to_string(d.stage),
                    std::to_string(d.tp_rank), fixed(ns_to_ms(d.compute), 3), fixed(ns_to_ms(d.comm), 3),
                    fixed(ns_to_ms(d.exposed_comm), 3), fixed(ns_to_ms(d.idle), 3), peak, format_bytes(d.capacity)});
  }
  print_table(out, rows, {true, false, true, true, true, true, true, true, true, true, true});
}

}  // namespace

void add_simulate_model_options(CLI::App& cmd, SimulateModelOptions& o) {
  cmd.add_option("--model", o.model,
                 "Model mode: a zoo model (`parasim models`), a parasim.model/1 file, a Hugging Face config.json or an "
                 ".onnx graph");
  cmd.add_option("--strategy", o.strategy,
                 "Model mode: dp=,mp=,tp=,cp=,ep=,etp=,imbalance=,schedule=,micro=,interleave=,placement=,recompute=,"
                 "recompute_layers=,sp=,zero=,bucket_mb=,split=,overlap=,tp_overlap=,ep_overlap=,mapping= (or a "
                 "parasim.strategy/1 file)")
      ->capture_default_str();
  cmd.add_option("--batch", o.batch, "Model mode: global batch (samples per optimizer step, all replicas)");
  cmd.add_option("--seq-len", o.seq_len,
                 "Model mode: training sequence length of a sequence model or config.json (default: the model's)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
  cmd.add_option("--dtype", o.dtype,
                 "Model mode: fp32, fp16, bf16 or fp8 (FP8 matmuls on Hopper; default: the model's)");
  cmd.add_option("--optimizer", o.optimizer, "Model mode: sgd, momentum or adam")->capture_default_str();
  cmd.add_option("--profile", o.profile,
                 "Model mode: measured per-op costs (parasim.profile/1), or none for the roofline (default: a profile "
                 "in --traces measured on the cluster's GPU for this model and dtype, else the roofline)");
  cmd.add_option("--traces", o.traces, "Model mode: where default profiles are looked for (traces/<device>/*.json)")
      ->capture_default_str()
      ->each([&o](const std::string&) { o.traces_given = true; });
  cmd.add_option("--granularity", o.granularity,
                 "Model mode: op (every op a task) or stage (one task per pipeline chunk and micro-batch)")
      ->capture_default_str();
  cmd.add_option("--calibration", o.calibration, "Model mode: a calibration file from `parasim calibrate`");
  cmd.add_option("--data-loading", o.data_loading, std::string("Model mode: ") + kDataLoadingHelp)
      ->capture_default_str();
  cmd.add_option("--grad-accumulation", o.grad_accumulation, std::string("Model mode: ") + kGradAccumulationHelp)
      ->capture_default_str();
  add_kernel_choice_options(cmd, o.kernels, "Model mode: ");
  cmd.add_flag("--all-devices", o.all_devices,
               "Model mode: simulate every replica and TP rank instead of one representative");
}

void run_simulate_model(const SimulateModelOptions& o, const SimulateCommonOptions& common) {
  if (!common.taskgraph.empty()) throw InputError("simulate: give either --taskgraph or --model, not both");
  if (o.model.empty()) throw InputError("simulate: --seq-len needs --model (a task graph has its own sizes)");
  if (o.batch < 1) throw InputError("simulate --model: --batch GLOBAL is required (a positive number of samples)");
  std::optional<models::DType> dtype;
  if (!o.dtype.empty()) {
    dtype = models::parse_dtype(o.dtype);
    if (!dtype) throw InputError("--dtype: expected fp32, fp16, bf16 or fp8, found \"" + o.dtype + "\"");
  }
  const simulator::CollectiveMode mode = collective_mode_arg(common.collectives);
  // A grammar string may end in ".json" itself (placement=FILE.json): only a bare path is a file.
  const strategies::Strategy strategy = o.strategy.find('=') != std::string::npos
                                            ? strategies::parse_strategy(o.strategy)
                                            : strategies::load_strategy(o.strategy);
  models::Model model = load_model(o.model, dtype, o.seq_len);
  apply_loss_choice(model, o.kernels);
  const hardware::Cluster cluster = load_cluster(common, strategy.devices());
  const profiler::Optimizer optimizer = optimizer_arg(o.optimizer);

  const Calibration calibration = load_calibration_option(o.calibration);
  CostChoice choice = choose_costs(o.profile, o.traces, o.traces_given, model, cluster.device_kinds());
  configure_model_costs(choice, o.kernels, calibration, model, cluster.device_kinds());
  std::unique_ptr<profiler::CostModel> costs = std::move(choice.costs);
  strategies::StepSetup setup{
      .model = &model,
      .cluster = &cluster,
      .strategy = strategy,
      .global_batch = o.batch,
      .costs = costs.get(),
      .optimizer = optimizer,
      .dtype = dtype,
      .granularity = granularity_arg(o.granularity),
      .symmetry = o.all_devices ? strategies::Symmetry::None : strategies::Symmetry::DataAndTensor,
      .calibration = calibration,
      .data_loading = parse_data_loading(o.data_loading),
      .grad_accumulation = grad_accumulation_arg(o.grad_accumulation)};
  SimulationProgress progress("simulate");
  const StrategyResult r = strategies::simulate_strategy(
      setup, {.collectives = mode,
              .record_timeline = !common.trace.empty(),
              .on_progress = [&progress](std::size_t done, std::size_t total) { progress.update(done, total); }});
  progress.finish();
  if (!common.trace.empty() && r.simulated)
    simulator::write_chrome_trace(common.trace, r.lowered.graph, cluster, r.result);
  if (common.json) {
    std::cerr << "cost choice: " << choice.note << "\n";
    std::cout << dump_json(strategies::strategy_result_to_json(r));
    return;
  }
  std::cout << "cost choice  " << choice.note << "\n";
  print_report(std::cout, r, cluster);
  if (!common.trace.empty() && r.simulated)
    std::cout << "\ntrace written to " << common.trace << " (open in ui.perfetto.dev)\n";
}

}  // namespace parasim::cli
