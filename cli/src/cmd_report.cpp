// `parasim report`: a folder with plots (gnuplot PNG + SVG), their CSV data and scripts, one
// self-contained index.html, summary.md and results.json.
//
//   parasim report --from RESULTS.json [--from MORE.json ...] [-o DIR]
//       RESULTS: parasim.results/1, or what simulate/validate/project/plan print with --json, or
//       a Chrome trace; several files merge into one report; "-" reads standard input.
//   parasim report --model NAME --cluster PRESET --gpus RANGE [-o DIR]
//       projects the model itself through a ProjectionSource (reports/projection_source.hpp).
#include <chrono>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/reports/projection_source.hpp"
#include "parasim/reports/report_writer.hpp"
#include "parasim/reports/results_json.hpp"

namespace parasim::cli {

namespace {

using namespace parasim::reports;

struct ReportArgs {
  std::vector<std::string> from;
  std::string model;
  std::string cluster;
  std::string gpus;
  std::string efficiency;
  std::string dataset;
  std::string profile;
  std::string out_dir = "report";
  std::string title;
  std::string gnuplot = "gnuplot";
  double gnuplot_timeout_s = 30;
  bool no_plots = false;
};

/// What computes a projection for --model/--cluster/--gpus. Empty until the projection
/// (issue 5) provides one; wiring it is this one function.
ProjectionSource projection_source() { return {}; }

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
    if (a.model.empty() || a.cluster.empty() || a.gpus.empty())
      throw InputError("parasim report: give --from RESULTS.json, or all of --model, --cluster and --gpus");
    ProjectionRequest request{a.model, a.cluster, parse_gpu_range(a.gpus), a.efficiency, a.dataset, a.profile};
    const ProjectionSource source = projection_source();
    if (!source)
      throw RuntimeError(
          "parasim report --model/--cluster/--gpus needs the projection (issue 5), which this build does not have "
          "yet. Meanwhile write the results with `parasim simulate|validate|project|plan ... --json > r.json` and "
          "run `parasim report --from r.json`.");
    data = source(request);
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
      "report", "Plots (gnuplot PNG + SVG), CSV data, scripts, index.html and summary.md from projection, "
                "simulation, plan or validation results");
  auto* from = cmd->add_option("--from", args->from,
                               "Results to draw: parasim.results/1, or the --json output of simulate, validate, "
                               "project or plan, or a Chrome trace; repeat to combine; - reads stdin");
  auto* model = cmd->add_option("--model", args->model, "Zoo model or parasim.model/1 file to project");
  auto* cluster = cmd->add_option("--cluster", args->cluster, "Cluster preset or parasim.cluster/1 file");
  auto* gpus = cmd->add_option("--gpus", args->gpus, "GPU counts: N, N,M,... or A-B (powers of two from A to B)");
  cmd->add_option("--efficiency", args->efficiency, "Statistical efficiency: critical-batch[:E_MIN:B_CRIT] | none | table:FILE.csv");
  cmd->add_option("--dataset", args->dataset, "Dataset (default: the model's)");
  cmd->add_option("--profile", args->profile, "Measured costs (parasim.profile/1); default: roofline");
  cmd->add_option("-o,--output", args->out_dir, "Report folder (created if missing)")->capture_default_str();
  cmd->add_option("--title", args->title, "Report title (default: from the results)");
  cmd->add_option("--gnuplot", args->gnuplot, "gnuplot executable (name on PATH or a path)")->capture_default_str();
  cmd->add_option("--gnuplot-timeout", args->gnuplot_timeout_s, "Seconds one plot may take before gnuplot is killed")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  cmd->add_flag("--no-plots", args->no_plots, "Do not run gnuplot: CSV, scripts and tables only");
  for (CLI::Option* o : {model, cluster, gpus}) from->excludes(o);
  cmd->callback([args] { run_report(*args); });
}

}  // namespace parasim::cli
