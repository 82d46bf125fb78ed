// `parasim report`: a folder with plots (gnuplot PNG + SVG), their CSV data and scripts, one
// self-contained index.html, summary.md and results.json.
//
//   parasim report --from RESULTS.json [--from MORE.json ...] [-o DIR]
//       RESULTS: parasim.results/1, or what simulate/validate/project/plan print with --json, or
//       a Chrome trace; several files merge into one report; "-" reads standard input.
//   parasim report --model NAME --cluster PRESET --gpus RANGE [project's options] [-o DIR]
//       runs the projection (`parasim project`) and re-simulates each GPU count's DP-only and
//       best-hybrid winners for the per-step breakdown, per-device memory and a Gantt chart.
#include <chrono>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cli_output.hpp"
#include "commands.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/reports/report_writer.hpp"
#include "parasim/reports/results_json.hpp"

// The projection (issue 5: strategies/projection.hpp, cli/src/plan_inputs.hpp) is wired in
// below as soon as it is part of the tree; until then --model says that it needs it.
// TRANSITIONAL: drop the #if and the fallback once the projection is committed.
#if __has_include("parasim/strategies/projection.hpp") && __has_include("plan_inputs.hpp")
#define PARASIM_REPORT_WITH_PROJECTION 1
#include "parasim/common/progress.hpp"
#include "parasim/hardware/cluster_json.hpp"
#include "parasim/reports/step_adapters.hpp"
#include "parasim/strategies/projection.hpp"
#include "parasim/strategies/simulate_strategy.hpp"
#include "enum_args.hpp"
#include "plan_inputs.hpp"
#else
#define PARASIM_REPORT_WITH_PROJECTION 0
#endif

namespace parasim::cli {

namespace {

using namespace parasim::reports;

#if !PARASIM_REPORT_WITH_PROJECTION
struct PlanningInputs {
  std::string model;
  std::string cluster;
};
#endif

struct ReportArgs {
  std::vector<std::string> from;
  PlanningInputs in;  // --model, --cluster and the rest of `parasim project`'s options
  std::string gpus;
  std::int64_t per_device_batch = 0;
  int max_model_parallel = 0;
  std::string out_dir = "report";
  std::string title;
  std::string gnuplot = "gnuplot";
  double gnuplot_timeout_s = 30;
  bool no_plots = false;
  bool no_timeline = false;
};

#if PARASIM_REPORT_WITH_PROJECTION
/// One winner simulated again: exact per-device breakdown and memory (the projection keeps only
/// the fullest device), and the timeline when asked for.
ReportData simulate_winner(const strategies::ProjectionSide& side, const strategies::ProjectionRow& row,
                           const ReportArgs& a, const models::Model& model, const profiler::CostModel& costs,
                           strategies::Granularity granularity, bool timeline) {
  const hardware::Cluster cluster = hardware::resolve_cluster(a.in.cluster, row.nodes);
  const strategies::StepSetup setup{.model = &model,
                                    .cluster = &cluster,
                                    .strategy = side.strategy,
                                    .global_batch = side.global_batch,
                                    .costs = &costs,
                                    .optimizer = optimizer_arg(a.in.optimizer),
                                    .dtype = planning_dtype(a.in),
                                    .granularity = granularity,
                                    .calibration = planning_calibration(a.in),
                                    .data_loading = planning_data_loading(a.in),
                                    .grad_accumulation = planning_grad_accumulation(a.in)};
  const strategies::StrategyResult r = strategies::simulate_strategy(setup, {.record_timeline = timeline});
  ReportData d = results_from_json(strategies::strategy_result_to_json(r), "simulation");
  if (timeline && r.simulated) {
    d.gantt = gantt_from_step(r.lowered.graph, r.result);
    d.gantt_title = to_string(side.strategy) + " on " + a.in.cluster + " (" + std::to_string(row.gpus) + " GPUs)";
  }
  return d;
}

/// `--model`: `parasim project`'s projection, turned into report data
/// through its JSON (so reports/ does not depend on the projection's C++ types), plus the
/// winners simulated once more for the breakdown, memory and Gantt plots.
ReportData project_for_report(const ReportArgs& a) {
  using namespace strategies;
  const models::Model model = load_planning_model(a.in);
  CostChoice choice = choose_planning_costs(a.in, model);
  const auto costs = std::move(choice.costs);
  const Dataset data = planning_dataset(a.in, model);
  const Projection p = run_planning_projection(a.in, model, *costs, data, a.gpus, a.per_device_batch,
                                               a.max_model_parallel);

  ReportData d = results_from_json(projection_to_json(p), "projection");
  // What `project` prints as its cost choice: the profile or model, and the kernels it assumed
  // (attention, optimizer, mixed precision), which the projection's JSON does not carry.
  d.assumptions.extra.emplace_back("cost choice", choice.note);
  // The re-simulated winners carry every device's memory with its breakdown: better than the
  // projection's fullest device alone.
  d.memory.clear();
  const Granularity granularity = granularity_arg(p.assumptions.granularity);
  ProgressBar detail("simulate winners", 2 * p.rows.size());
  for (std::size_t i = 0; i < p.rows.size(); ++i) {
    const ProjectionRow& row = p.rows[i];
    const bool last = i + 1 == p.rows.size();
    for (const ProjectionSide* side : {&row.dp, &row.hybrid}) {
      detail.advance();
      if (!side->feasible) continue;
      // The Gantt chart: the largest GPU count's best hybrid (or DP only where no hybrid fits).
      const bool timeline = !a.no_timeline && last && (side == &row.hybrid || !row.hybrid.feasible);
      ReportData winner = simulate_winner(*side, row, a, model, *costs, granularity, timeline);
      d.breakdown.insert(d.breakdown.end(), winner.breakdown.begin(), winner.breakdown.end());
      d.memory.insert(d.memory.end(), winner.memory.begin(), winner.memory.end());
      if (timeline) {
        d.gantt = std::move(winner.gantt);
        d.gantt_title = std::move(winner.gantt_title);
      }
    }
  }
  detail.finish();
  return d;
}

#else
ReportData project_for_report(const ReportArgs&) {
  throw RuntimeError(
      "parasim report --model/--gpus needs the projection (issue 5), which this build does not have yet. "
      "Meanwhile write results with `parasim simulate|validate ... --json > r.json` and run "
      "`parasim report --from r.json`.");
}
#endif

ReportData read_inputs(const std::vector<std::string>& files) {
  ReportData data;
  for (const std::string& f : files) {
    if (f == "-") {
      const std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
      data.merge(results_from_json(parse_json_text(text, "<stdin>"), "<stdin>"));
    } else {
      data.merge(load_results_file(f));
    }
  }
  return data;
}

void run_report(const ReportArgs& a) {
  ReportData data;
  if (!a.from.empty()) {
    data = read_inputs(a.from);
  } else {
    if (a.in.model.empty() || a.gpus.empty())
      throw InputError("parasim report: give --from RESULTS.json, or --model and --gpus (and --cluster)");
    data = project_for_report(a);
  }
  if (!a.title.empty()) data.title = a.title;

  ReportOptions options;
  options.render = !a.no_plots;
  options.gnuplot.binary = a.gnuplot;
  options.gnuplot.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(a.gnuplot_timeout_s * 1000));
  const ReportOutcome out = write_report(data, a.out_dir, options);

  for (const std::string& note : out.notes) std::cerr << "parasim report: note: " << note << "\n";
  std::cout << "wrote " << out.files.size() << " files to " << a.out_dir << " (" << out.rendered.size()
            << " plots rendered)\n";
  std::cout << "open " << (std::filesystem::path(a.out_dir) / "index.html").string() << "\n";
}

}  // namespace

void register_report(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Plots (gnuplot PNG + SVG), CSV data, scripts, index.html and summary.md: from result files "
                "(--from), or by projecting a model (--model/--cluster/--gpus, as parasim project)");
  auto* from = cmd->add_option("--from", args->from,
                               "Results to draw: parasim.results/1, or the --json output of simulate, validate, "
                               "project or plan, or a Chrome trace; repeat to combine; - reads stdin");
#if PARASIM_REPORT_WITH_PROJECTION
  add_planning_options(cmd, args->in);
  CLI::Option* model = cmd->get_option("--model");
  model->required(false);  // --from needs no model
#else
  CLI::Option* model = cmd->add_option("--model", args->in.model, "Zoo model or parasim.model/1 file to project");
  cmd->add_option("--cluster", args->in.cluster, "Cluster preset or parasim.cluster/1 file");
#endif
  auto* gpus =
      cmd->add_option("--gpus", args->gpus, "GPU counts to project: 8,16,32 or 8-1024 (powers of two) or 1-64x2");
  cmd->add_option("--per-device-batch", args->per_device_batch,
                  "Batch per data-parallel worker (default per model; global = this x number of workers)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--max-model-parallel", args->max_model_parallel,
                  "Widest hybrid worker M = mp x tp (default: the GPUs of one node)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("-o,--output", args->out_dir, "Report folder (created if missing)")->capture_default_str();
  cmd->add_option("--title", args->title, "Report title (default: from the results)");
  cmd->add_option("--gnuplot", args->gnuplot, "gnuplot executable (name on PATH or a path)")->capture_default_str();
  cmd->add_option("--gnuplot-timeout", args->gnuplot_timeout_s, "Seconds one plot may take before gnuplot is killed")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  cmd->add_flag("--no-plots", args->no_plots, "Do not run gnuplot: CSV, scripts and tables only");
  cmd->add_flag("--no-timeline", args->no_timeline,
                "--model: no Gantt chart of the largest GPU count's step (on a thousand GPUs at op granularity its "
                "files take megabytes)");
  from->excludes(model);
  if (CLI::Option* seq = cmd->get_option_no_throw("--seq-len")) from->excludes(seq);
  from->excludes(gpus);
  cmd->callback([args, cmd] {
    // Reading results draws what they hold: planning options would be ignored.
    if (!args->from.empty())
      refuse_options_except(*cmd, {"--from", "--output", "--title", "--gnuplot", "--gnuplot-timeout", "--no-plots"},
                            "report --from (it draws the results as they are; planning options apply to --model)");
    args->in.cluster = with_fabric(args->in.cluster, args->in.fabric);
    run_report(*args);
  });
}

}  // namespace parasim::cli
