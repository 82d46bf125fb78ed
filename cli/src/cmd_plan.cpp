// `parasim plan`: every feasible way to split a training job over N GPUs, simulated and ranked
// by time to train (or step time), the top K with their breakdown and a paragraph saying why the
// winner wins. `--json` prints the top K rows (all with --top 0) deterministically.
//
// Batch: --batch B fixes the global batch of every configuration; without it each data-parallel
// replica keeps the per-device batch (--per-device-batch, default per model), so global batch =
// per-device batch x dp (Pal et al. 2019). --allow-fewer with --max-batch B is the Calculon-style
// search (Isaev et al. SC'23): configurations use at most N GPUs (dp = floor(N / (tp x mp))) and
// the largest global batch <= B that dp divides.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli_output.hpp"
#include "commands.hpp"
#include "parasim/common/allocator.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/common/progress.hpp"
#include "parasim/hardware/cluster_json.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/strategies/planner.hpp"
#include "parasim/strategies/projection.hpp"
#include "parasim/strategies/simulate_strategy.hpp"
#include "enum_args.hpp"
#include "plan_inputs.hpp"
#include "text_table.hpp"

namespace parasim::cli {

namespace {

struct PlanOptions {
  PlanningInputs in;
  int nodes = 0;
  int gpus = 0;
  bool allow_fewer = false;
  std::int64_t batch = 0;
  std::int64_t max_batch = 0;
  std::int64_t per_device_batch = 0;
  int top = 10;
  std::string objective = "time-to-train";
  bool json = false;
  std::string output;
};

std::string pct(double f) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * f);
  return buf;
}

hardware::Cluster plan_cluster(const PlanOptions& o) {
  const std::string base = o.in.cluster.substr(0, o.in.cluster.find(':'));
  const auto presets = hardware::cluster_preset_names();
  const bool preset = std::find(presets.begin(), presets.end(), base) != presets.end();
  if (!preset) {
    if (o.nodes > 1) throw InputError("--nodes applies to presets only; " + o.in.cluster + " lists its own nodes");
    return hardware::resolve_cluster(o.in.cluster, 1);
  }
  int nodes = o.nodes;
  if (nodes == 0) {
    const int per_node = static_cast<int>(hardware::resolve_cluster(o.in.cluster, 1).devices_of_node(0).size());
    nodes = (o.gpus + per_node - 1) / std::max(1, per_node);
  }
  return hardware::resolve_cluster(o.in.cluster, nodes);
}

void print_plan(std::ostream& out, const PlanOptions& o, const strategies::PlanRequest& req,
                const strategies::PlanResult& plan, const std::string& batch_rule, double seconds,
                const std::string& cost_note) {
  using namespace strategies;
  out << "plan: " << req.model->name() << " on " << o.gpus << (o.allow_fewer ? " (at most)" : "") << " GPUs of "
      << req.cluster->name() << " (" << req.cluster->num_nodes() << " node"
      << (req.cluster->num_nodes() == 1 ? "" : "s") << "), objective " << to_string(plan.objective) << "\n"
      << "batch        " << batch_rule << "\n"
      << "costs        " << (plan.cost_source.empty() ? req.costs->describe() : plan.cost_source) << "\n"
      << "cost choice  " << cost_note << "\n"
      << "efficiency   " << req.efficiency.describe() << "\n"
      << "overheads    step overhead " << req.calibration.describe_step_overhead()
      << "; data loading: " << req.data_loading.describe() << "\n"
      << "grad. accum. " << describe(req.grad_accumulation, req.dtype.value_or(req.model->dtype())) << "\n"
      << "comm SMs     " << strategies::describe_collective_sms(*req.cluster, req.collective_costs) << "\n"
      << "simulation   " << to_string(plan.granularity) << " granularity, one replica / TP rank simulated, "
      << simulator::to_string(req.collectives) << " collectives\n\n";
  std::vector<std::vector<std::string>> rows{{"#", "strategy", "batch", "step", "samples/s", "MFU", "bubble",
                                              "exp. comm", "memory", "of cap.", "epochs", "time to train"}};
  const std::size_t n =
      o.top == 0 ? plan.rows.size() : std::min<std::size_t>(static_cast<std::size_t>(o.top), plan.rows.size());
  for (std::size_t i = 0; i < n; ++i) {
    const PlanRow& r = plan.rows[i];
    if (!r.simulated() || r.step_time == 0) {
      rows.push_back({std::to_string(i + 1), to_string(r.strategy), std::to_string(r.global_batch), "-", "-", "-", "-",
                      "-", r.peak_memory > 0 ? format_bytes(r.peak_memory) : "-",
                      r.capacity > 0 ? pct(r.memory_ratio()) : "-", "-", to_string(r.verdict)});
      continue;
    }
    // ~: extrapolated along the micro-batch count (the note under the table says how to turn it off).
    const std::string approx = r.sampled_micro[0] > 0 ? "~" : "";
    rows.push_back({std::to_string(i + 1), to_string(r.strategy), std::to_string(r.global_batch),
                    approx + format_time(r.step_time), fixed(r.throughput, 0), r.mfu > 0 ? pct(r.mfu) : "-",
                    pct(r.bubble_fraction),
                    pct(r.step_time > 0 ? static_cast<double>(r.exposed_comm) / static_cast<double>(r.step_time) : 0),
                    format_bytes(r.peak_memory), pct(r.memory_ratio()) + (r.feasible() ? "" : " OVER"),
                    fixed(r.epochs, 1), approx + format_time(r.time_to_train)});
  }
  std::vector<bool> right(rows.front().size(), true);
  right[1] = false;  // the strategy column left-aligned, numbers right
  print_table(out, rows, right);
  std::size_t shown_extrapolated = 0;
  for (std::size_t i = 0; i < n; ++i) shown_extrapolated += plan.rows[i].sampled_micro[0] > 0 ? 1 : 0;
  if (shown_extrapolated > 0)
    out << "~ extrapolated: " << shown_extrapolated << " of these " << n << " rows were simulated at two smaller "
        << "micro-batch counts and continued to their own (docs/projection.md); --exact simulates them in full\n";
  const PlanStats& s = plan.stats;
  out << "\n"
      << s.candidates << " configurations: " << s.feasible << " feasible, " << s.memory_bound
      << " over memory by parameters alone (not lowered), " << s.static_memory << " over memory after lowering, "
      << s.peak_memory << " over memory at the activation peak, " << s.dominated
      << " skipped because a configuration needing no more memory did not fit, " << s.invalid << " not buildable";
  if (s.pruned > 0) out << ", " << s.pruned << " not simulated (a lower bound on them exceeds every row shown)";
  if (s.less_recompute > 0)
    out << ", " << s.less_recompute << " recomputing fewest layers skipped (the same fits with less recomputation)";
  out << "; " << s.simulated << " simulated (" << s.simulations << " event-engine runs) in " << fixed(seconds, 2)
      << " s";
  if (seconds > 0) out << " (" << fixed(static_cast<double>(s.candidates) / seconds, 0) << " configurations/s)";
  out << ".\n\n" << explain_plan(plan) << "\n";
}

std::string join_ints(const std::vector<int>& v, std::size_t most = 8) {
  std::string s;
  for (std::size_t i = 0; i < v.size() && i < most; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() > most) s += ", ... (" + std::to_string(v.size()) + " in all)";
  return s;
}

/// Why enumerate_candidates() found nothing to try, and what to change: the shape rule
/// (tp x mp x dp = N within the tp/mp limits) or the batch rule (dp divides --batch).
std::string why_nothing_to_try(const PlanOptions& o, const strategies::SearchSpace& space,
                               const strategies::ModelFacts& facts) {
  const std::vector<int> widths = strategies::tensor_parallel_widths(space, facts);
  const int max_mp = std::min(space.max_mp > 0 ? space.max_mp : facts.pipeline_units, facts.pipeline_units);
  std::vector<int> dps;  // data-parallel degrees of the shapes that fit the GPU count
  for (int tp : widths)
    for (int mp = 1; mp <= max_mp && static_cast<std::int64_t>(mp) * tp <= space.gpus; ++mp) {
      const int width = mp * tp;
      if (width < space.min_model_parallel || (space.max_model_parallel > 0 && width > space.max_model_parallel))
        continue;
      if (space.even_stages && facts.layers % mp != 0) continue;
      if (!space.allow_fewer && space.gpus % width != 0) continue;
      dps.push_back(space.gpus / width);
    }
  std::sort(dps.begin(), dps.end());
  dps.erase(std::unique(dps.begin(), dps.end()), dps.end());
  const std::string n = std::to_string(o.gpus);
  std::string why = "plan --gpus " + n + ": nothing to try. ";
  if (dps.empty()) {
    why += "Every configuration uses exactly " + n + " GPUs as tp x mp x dp, with tp one of {" + join_ints(widths) +
           "} and mp at most " + std::to_string(max_mp) + " (" + facts.name + "'s pipeline units" +
           (space.max_mp > 0 ? " or --max-mp" : "") +
           (space.even_stages ? ", dividing its layers (--even-stages)" : "") + "), and no such split gives " + n +
           ". Change one: --allow-fewer (use at most " + n +
           " GPUs), or a GPU count that such a split gives (a multiple of " + std::to_string(widths.back()) + ")";
    return why + ".";
  }
  why += "Splits of " + n + " GPUs leave dp one of {" + join_ints(dps) + "}, and ";
  if (o.batch > 0) {
    const std::int64_t smallest = dps.front();
    const std::int64_t suggestion = (o.batch + smallest - 1) / smallest * smallest;
    why += "none of them divides --batch " + std::to_string(o.batch) +
           " (every replica gets the same batch). Change one: --allow-fewer (use at most " + n +
           " GPUs, so more dp values fit), --max-batch " + std::to_string(o.batch) +
           " instead of --batch (each configuration takes the largest batch <= it that its dp divides), or a --batch "
           "that one of these dp divides (e.g. " + std::to_string(suggestion) + ")";
  } else if (o.max_batch > 0) {
    why += "all of them exceed --max-batch " + std::to_string(o.max_batch) +
           " (each replica needs at least one sample). Change one: a larger --max-batch (at least " +
           std::to_string(dps.front()) + "), or --allow-fewer";
  } else {
    why += "the batch rule leaves no configuration; try --allow-fewer, --batch or --max-batch";
  }
  return why + ".";
}

void run_plan(const PlanOptions& o) {
  using namespace strategies;
  if (o.gpus < 1) throw InputError("--gpus: expected a positive number of GPUs");
  const int given = (o.batch > 0) + (o.max_batch > 0) + (o.per_device_batch > 0);
  if (given > 1) throw InputError("--batch, --max-batch and --per-device-batch exclude each other");
  // The model, the cluster and the cache below are freed by the process's exit, not object by
  // object after the answer (keep_until_exit: that took 6% of a plan of Turing-NLG's).
  const models::Model& model = make_kept_until_exit<models::Model>(load_planning_model(o.in));
  const hardware::Cluster& cluster = make_kept_until_exit<hardware::Cluster>(plan_cluster(o));
  const CostChoice choice = choose_planning_costs(o.in, model);
  const auto& costs = choice.costs;
  const Dataset data = planning_dataset(o.in, model);

  // Member by member: GCC 12 warns (maybe-uninitialized) on a designated initializer that leaves
  // the SearchSpace's vectors to their defaults.
  PlanRequest req;
  req.model = &model;
  req.cluster = &cluster;
  req.costs = costs.get();
  req.optimizer = optimizer_arg(o.in.optimizer);
  req.dtype = planning_dtype(o.in);
  req.efficiency = planning_efficiency(o.in, model, data);
  req.dataset_samples = data.samples;
  req.objective = parse_objective(o.objective);
  req.granularity = planning_granularity(o.in);
  req.threads = o.in.threads;
  req.calibration = planning_calibration(o.in);
  req.data_loading = planning_data_loading(o.in);
  req.grad_accumulation = planning_grad_accumulation(o.in);
  req.extrapolate = !o.in.exact;
  req.prune_dominated = !o.in.exact;
  // Only the printed rows (and the explained ones) need to be exact; --top 0 prints every row.
  req.exact_top = o.in.exact ? 0 : o.top;
  req.sharing = mpi_plan_sharing();
  // The search's cache, freed with the model and the cluster by the process's exit.
  StepCache& cache = make_kept_until_exit<StepCache>();
  req.cache = &cache;
  SearchSpace& space = req.space;
  apply_search_options(o.in, space);
  space.gpus = o.gpus;
  space.allow_fewer = o.allow_fewer;
  std::string batch_rule;
  if (o.batch > 0) {
    space.global_batch = o.batch;
    batch_rule = "global batch " + std::to_string(o.batch) + " for every configuration";
  } else if (o.max_batch > 0) {
    space.max_batch = o.max_batch;
    batch_rule = "the largest global batch <= " + std::to_string(o.max_batch) + " that dp divides";
  } else {
    const PerDeviceBatch pdb = o.per_device_batch > 0 ? PerDeviceBatch{o.per_device_batch, "--per-device-batch"}
                                                      : default_per_device_batch(model.name());
    space.per_device_batch = pdb.batch;
    batch_rule = "per-device batch " + std::to_string(pdb.batch) + " x dp (" + pdb.source + ")";
  }
  if (o.allow_fewer && o.max_batch <= 0 && o.batch <= 0 && o.per_device_batch <= 0)
    batch_rule += "; --allow-fewer usually goes with --max-batch";
  batch_rule += "; " + data.name + " has " + std::to_string(data.samples) + " " + data.unit;

  const ModelFacts facts = model_facts(model, static_cast<int>(cluster.devices_of_node(0).size()));
  const std::size_t candidates = enumerate_candidates(space, facts).size();
  // Nothing to try is not "nothing fits": the request itself rules every configuration out.
  if (candidates == 0) throw InputError(why_nothing_to_try(o, space, facts));
  ProgressBar bar("plan", candidates);
  req.on_candidate_done = [&bar] { bar.advance(); };
  const auto start = std::chrono::steady_clock::now();
  PlanResult plan = run_planner(req);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  bar.finish();
  req.on_candidate_done = nullptr;
  add_details(plan, explained_rows(plan));
  if (o.json) {
    std::cerr << "cost choice: " << choice.note << "\n";
    // Every row states what its step includes besides kernels and transfers.
    nlohmann::json rows = plan_rows_to_json(plan, static_cast<std::size_t>(o.top));
    const std::string collective_sms = strategies::describe_collective_sms(*req.cluster, req.collective_costs);
    for (nlohmann::json& row : rows) {
      row["step_overhead_ms"] = req.calibration.step_overhead_ms;
      row["data_loading"] = req.data_loading.describe();
      row["collective_sms"] = collective_sms;
      row["grad_accumulation"] = describe(req.grad_accumulation, req.dtype.value_or(req.model->dtype()));
    }
    std::cout << dump_json(rows);
    return;
  }
  print_plan(std::cout, o, req, plan, batch_rule, seconds, choice.note);
}

}  // namespace

void register_plan(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  auto* cmd =
      app.add_subcommand("plan", "Find the fastest way to split a training job over N GPUs (simulated, ranked)");
  add_planning_options(cmd, o->in);
  cmd->add_option("--gpus", o->gpus, "Number of GPUs")->required()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--nodes", o->nodes, "Nodes of the preset (default: just enough for --gpus)")
      ->check(CLI::Range(1, hardware::kMaxPresetNodes));
  cmd->add_flag("--allow-fewer", o->allow_fewer,
                "Use at most --gpus GPUs: dp = floor(N / (tp x mp)) (Calculon-style search)");
  cmd->add_option("--batch", o->batch, "Global batch of every configuration")->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--max-batch", o->max_batch,
                  "Largest global batch; each configuration takes the largest multiple of dp")
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--per-device-batch", o->per_device_batch, "Batch per data-parallel replica (global = this x dp)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--top", o->top, "Rows to print (0: every configuration, infeasible ones with their reason)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--objective", o->objective, "time-to-train or step")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print the top rows as a JSON list");
  add_output_option(*cmd, o->output);
  cmd->callback([o] {
    OutputFile out(o->output, !o->json);
    o->in.cluster = with_fabric(o->in.cluster, o->in.fabric);
    run_plan(*o);
    out.commit();
  });
}

}  // namespace parasim::cli
