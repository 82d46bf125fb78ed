// `parasim project`: for each GPU count, the best data-parallel-only strategy against the best
// hybrid (DP over groups of M > 1 GPUs that split the model), end to end: step time, global
// batch, epochs to converge, time to train, and hybrid's gain - Pal et al. 2019's experiment.
// Each DP worker keeps the per-device batch (global batch = N x b for DP, (N / M) x b hybrid).
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli_output.hpp"
#include "commands.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/strategies/projection.hpp"
#include "plan_inputs.hpp"
#include "text_table.hpp"

namespace parasim::cli {

namespace {

struct ProjectOptions {
  PlanningInputs in;
  std::string gpus;
  std::int64_t per_device_batch = 0;
  int max_model_parallel = 0;
  bool json = false;
  bool csv = false;
  std::string output;
};

std::vector<std::string> side_cells(const strategies::ProjectionSide& s) {
  if (!s.feasible) return {to_string(s.strategy) + " (infeasible)", "-", "-", "-", "-"};
  const std::string approx = s.sampled_micro[0] > 0 ? "~" : "";  // extrapolated: see "shortcuts" below
  return {to_string(s.strategy), approx + format_time(s.step_time), std::to_string(s.global_batch), fixed(s.epochs, 1),
          approx + format_time(s.time_to_train)};
}

void print_projection(std::ostream& out, const strategies::Projection& p, const std::string& cost_note) {
  using namespace strategies;
  const ProjectionAssumptions& a = p.assumptions;
  std::vector<std::vector<std::string>> rows{{"GPUs", "nodes", "DP only", "step", "batch", "epochs", "time to train",
                                              "hybrid", "step", "batch", "epochs", "time to train", "gain"}};
  for (const ProjectionRow& r : p.rows) {
    std::vector<std::string> row{std::to_string(r.gpus), std::to_string(r.nodes)};
    for (auto& c : side_cells(r.dp)) row.push_back(c);
    for (auto& c : side_cells(r.hybrid)) row.push_back(c);
    row.push_back(r.gain_pct ? fixed(*r.gain_pct, 1) + "%" : "-");
    rows.push_back(std::move(row));
  }
  out << "projection: " << a.model << " on " << a.cluster << "\n\n";
  // Numbers right-aligned; the two strategy columns left-aligned.
  print_table(out, rows, {true, true, false, true, true, true, true, false, true, true, true, true, true});
  bool any_infeasible = false;
  for (const ProjectionRow& r : p.rows)
    for (const ProjectionSide* s : {&r.dp, &r.hybrid})
      if (!s->feasible) {
        if (!any_infeasible) out << "\n";
        any_infeasible = true;
        out << r.gpus << " GPUs, " << (s == &r.dp ? "DP only" : "hybrid") << ": " << s->reason << "\n";
      }
  out << "\nassumptions\n"
      << "  costs            " << a.cost_source << "\n"
      << "  cost choice      " << cost_note << "\n"
      << "  efficiency       " << a.efficiency << "\n"
      << "  dataset          " << a.dataset << ", " << a.dataset_samples << " samples (" << a.dataset_source << ")\n"
      << "  per-device batch " << a.per_device_batch << " (" << a.per_device_batch_source << ")\n"
      << "  batch convention " << a.batch_convention << "\n"
      << "  hybrid           " << a.hybrid_rule << "\n"
      << "  training         " << a.dtype << ", " << a.optimizer << "; " << a.granularity << " granularity, "
      << a.collectives << " collectives\n"
      << "  time to train    E(B) x ceil(dataset / B) x step time; gain = (T_dp - T_hybrid) / T_dp\n"
      << "  step overhead    " << a.step_overhead << "\n"
      << "  comm SMs         " << a.collective_sms << "\n"
      << "  data loading     " << a.data_loading << "\n"
      << "  grad. accum.     " << a.grad_accumulation << "\n"
      << "  shortcuts        " << a.shortcuts << (a.shortcuts.rfind("extrapolated", 0) == 0 ? " (marked ~)" : "")
      << "\n";
}

void run_project(const ProjectOptions& o) {
  using namespace strategies;
  if (o.json && o.csv) throw InputError("--json and --csv exclude each other");
  const models::Model model = load_planning_model(o.in);
  const CostChoice choice = choose_planning_costs(o.in, model);
  const Dataset data = planning_dataset(o.in, model);
  const Projection p = run_planning_projection(o.in, model, *choice.costs, data, o.gpus, o.per_device_batch,
                                               o.max_model_parallel);
  if (o.json || o.csv) std::cerr << "cost choice: " << choice.note << "\n";
  if (o.json) std::cout << dump_json(projection_to_json(p));
  else if (o.csv) std::cout << projection_to_csv(p);
  else print_projection(std::cout, p, choice.note);
}

}  // namespace

void register_project(CLI::App& app) {
  auto o = std::make_shared<ProjectOptions>();
  auto* cmd = app.add_subcommand(
      "project",
      "Project time to train for DP only vs hybrid DP x model parallelism across GPU counts (Pal et al. 2019)");
  add_planning_options(cmd, o->in);
  cmd->add_option("--gpus", o->gpus, "GPU counts: 8,16,32 or 8-1024 (powers of two) or 1-64x2")->required();
  cmd->add_option("--per-device-batch", o->per_device_batch,
                  "Batch per data-parallel worker (default per model; global = this x number of workers)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--max-model-parallel", o->max_model_parallel,
                  "Widest hybrid worker M = mp x tp (default: the GPUs of one node)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_flag("--json", o->json, "Print rows and assumptions as JSON");
  cmd->add_flag("--csv", o->csv, "Print the rows as CSV");
  add_output_option(*cmd, o->output);
  cmd->callback([o] {
    OutputFile out(o->output, !o->json && !o->csv);
    o->in.cluster = with_fabric(o->in.cluster, o->in.fabric);
    run_project(*o);
    out.commit();
  });
}

}  // namespace parasim::cli
