#include "validate_runs.hpp"
#include "cost_choice.hpp"

#include <cstdio>
#include <iostream>
#include <sstream>

#include "parasim/common/calibration.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/common/progress.hpp"
#include "parasim/profiler/roofline.hpp"
#include "parasim/validation/recorded_runs.hpp"
#include "text_table.hpp"

namespace parasim::cli {

namespace {

void print_report(std::ostream& out, const validation::RunsReport& r, const std::string& cost_model) {
  out << "parasim validate --runs " << r.path << "\n"
      << "cost model: " << cost_model << "\n\n";
  std::vector<std::vector<std::string>> rows{{"run", "GPUs", "strategy", "measured s", "projected s", "error",
                                              "compute s", "exposed comm s", "bubble s", "MFU meas / proj",
                                              "attention"}};
  for (const auto& o : r.outcomes) {
    if (!o.scored) continue;
    rows.push_back({o.run.id, std::to_string(o.run.gpus), strategies::to_string(o.run.strategy),
                    fixed(o.run.measured_step_s, 3), fixed(o.projected_step_s, 3), signed_percent(o.error_pct),
                    fixed(o.compute_s, 3), fixed(o.exposed_comm_s, 3), fixed(o.bubble_s, 3),
                    o.measured_mfu_pct > 0 ? fixed(o.measured_mfu_pct, 1) + "% / " + fixed(o.projected_mfu_pct, 1) + "%"
                                           : std::string("-"),
                    profiler::to_string(o.run.attention)});
  }
  print_table(out, rows, {false, true, false, true, true, true, true, true, true, true, false});
  out << "\n" << r.scored << " of " << r.outcomes.size() << " runs scored";
  if (r.scored > 0)
    out << ": median |error| " << fixed(r.median_abs_error_pct, 1) << "%, max " << fixed(r.max_abs_error_pct, 1)
        << "% (" << r.worst_id << ")";
  out << "\n";
  if (r.memory_scored > 0) {
    // Peak memory decides what fits: put it next to the measured peak wherever a row has one.
    std::vector<std::vector<std::string>> memory{{"run", "measured peak GiB", "projected peak GiB", "error"}};
    for (const auto& o : r.outcomes)
      if (o.scored && o.run.measured_peak_gib > 0)
        memory.push_back({o.run.id, fixed(o.run.measured_peak_gib, 2), fixed(o.projected_peak_gib, 2),
                          signed_percent(o.memory_error_pct)});
    out << "\npeak memory (the busiest GPU; measured: torch.cuda.max_memory_allocated):\n";
    print_table(out, memory, {false, true, true, true});
    out << "\n"
        << r.memory_scored << " runs with a measured peak: median |error| " << fixed(r.median_abs_memory_error_pct, 1)
        << "%, max " << fixed(r.max_abs_memory_error_pct, 1) << "% (" << r.worst_memory_id << ")\n";
  }
  bool header = false;
  for (const auto& o : r.outcomes) {
    if (o.note.empty()) continue;
    if (!header) out << "\nnot scored or approximate:\n", header = true;
    out << "  - " << o.run.id << ": " << o.note << "\n";
  }
  header = false;
  for (const auto& o : r.outcomes) {
    if (!o.scored || o.run.caveats.empty()) continue;
    if (!header) out << "\ncaveats (what parasim inferred, and differences it does not model):\n", header = true;
    for (const auto& c : o.run.caveats) out << "  - " << o.run.id << ": " << c << "\n";
  }
}

}  // namespace

void run_validate_runs(const ValidateRunsArgs& args) {
  const validation::RunsFile runs = validation::load_runs_files(args.file);
  const Calibration calibration = load_calibration_option(args.calibration);
  const DataLoading loading = parse_data_loading(args.data_loading);
  const std::string model = profiler::RooflineCostModel::describe_per_run_kernels() +
                            "; NCCL collective costs, running collectives holding one SM per NCCL channel from the "
                            "compute they overlap; calibration: " +
                            calibration.describe() + "; step overhead " + calibration.describe_step_overhead() +
                            "; data loading: " + loading.describe();
  ProgressBar bar("validate runs", runs.runs.size());
  const validation::RunsReport report = validation::evaluate_runs(
      runs, {.calibration = calibration, .data_loading = loading, .progress = [&bar](std::size_t, std::size_t) {
               bar.advance();
             }});
  bar.finish();
  nlohmann::json j = validation::runs_report_to_json(report);
  j["cost_model"] = model;
  j["step_overhead_ms"] = calibration.step_overhead_ms;
  j["data_loading"] = data_loading_to_json(loading);
  std::ostringstream text;
  print_report(text, report, model);
  const std::string body = args.json ? dump_json(j) : text.str();
  if (!args.output.empty()) {
    write_file_atomic(args.output, body);
    std::cerr << "wrote " << args.output << "\n";
  }
  // stdout gets the JSON with --json and no -o; otherwise the table (with -o, the file has the body).
  std::cout << (args.json && args.output.empty() ? body : text.str());
}

}  // namespace parasim::cli
