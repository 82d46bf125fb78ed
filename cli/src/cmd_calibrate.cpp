// `parasim calibrate`: fits the calibration factors (per op class, per link class, a per-step
// overhead) to measured runs and writes a calibration file that simulate, plan, project, report
// and validate --runs take with --calibration FILE.
//
//   parasim calibrate --runs my_runs.json -o cal.json [--fix step_overhead_ms] [--json]
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/common/progress.hpp"
#include "parasim/validation/calibrate.hpp"
#include "text_table.hpp"

namespace parasim::cli {

namespace {

struct CalibrateArgs {
  std::string runs;
  std::string output;
  std::vector<std::string> fixed;
  bool json = false;
};

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", v);
  return buf;
}

void print_fit(std::ostream& out, const validation::CalibrationFit& f, const std::string& runs) {
  out << "parasim calibrate --runs " << runs << "  (" << f.in_sample.scored << " runs, " << f.iterations
      << " Levenberg-Marquardt iterations" << (f.converged ? "" : ", stopped at the limit while still improving")
      << ")\n\n";
  std::vector<std::vector<std::string>> factors{{"factor", "value", "fitted"}};
  for (std::size_t i = 0; i < Calibration::kNames.size(); ++i)
    factors.push_back({std::string(Calibration::kNames[i]), fixed(f.calibration.get(i), 4),
                       f.fitted[i] ? "yes" : "no (held or no run depends on it)"});
  print_table(out, factors, {false, true, false});
  out << "\n";
  std::vector<std::vector<std::string>> rows{{"run", "measured s", "default", "calibrated", "leave-one-out"}};
  for (std::size_t i = 0; i < f.in_sample.outcomes.size(); ++i) {
    const auto& o = f.in_sample.outcomes[i];
    if (!o.scored) continue;
    rows.push_back({o.run.id, fixed(o.run.measured_step_s, 3), pct(f.default_model.outcomes[i].error_pct),
                    pct(o.error_pct), pct(f.leave_one_out.outcomes[i].error_pct)});
  }
  print_table(out, rows, {false, true, true, true, true});
  auto line = [&](const char* what, const validation::RunsReport& r) {
    out << "  " << what << " median |error| " << fixed(r.median_abs_error_pct, 1) << "%, max "
        << fixed(r.max_abs_error_pct, 1) << "% (" << r.worst_id << ")\n";
  };
  out << "\n";
  line("default model:   ", f.default_model);
  line("calibrated:      ", f.in_sample);
  line("leave-one-out:   ", f.leave_one_out);
}

}  // namespace

void register_calibrate(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Fit calibration factors to measured runs (least squares on log error); write a calibration file");
  cmd->add_option("--runs", args->runs, "Measured runs (published-runs/1 JSON, as validate --runs reads)")->required();
  cmd->add_option("-o,--output", args->output, "Write the calibration (parasim.calibration/1) here")->required();
  cmd->add_option("--fix", args->fixed,
                  "Hold a factor at its default: matrix, memory, intra_node_comm, inter_node_comm, step_overhead_ms");
  cmd->add_flag("--json", args->json, "Print the calibration JSON instead of the table");
  cmd->callback([args] {
    const validation::RunsFile runs = validation::load_runs_file(args->runs);
    const bool talk = ProgressBar::would_draw();
    const validation::CalibrationFit fit = validation::fit_calibration(
        runs, {.fixed = args->fixed, .on_stage = [talk](const std::string& s) {
                 if (talk) std::cerr << "  " << s << "...\n";
               }});
    const nlohmann::json j = validation::calibration_fit_to_json(fit);
    write_file_atomic(args->output, dump_json(j));
    if (args->json) {
      std::cout << dump_json(j);
      return;
    }
    print_fit(std::cout, fit, args->runs);
    std::cout << "\nwrote " << args->output << " (use it with --calibration " << args->output << ")\n";
  });
}

}  // namespace parasim::cli
