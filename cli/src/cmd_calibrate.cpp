// `parasim calibrate`: fits the calibration factors (per op class, per link class, a per-step
// overhead) to measured runs and/or measured per-op profiles, and writes a calibration file that
// simulate, plan, project, report and validate --runs take with --calibration FILE.
//
//   parasim calibrate --runs my_runs.json -o cal.json [--fix step_overhead_ms] [--json]
//   parasim calibrate --profiles traces/H100-SXM5-80GB/*.json [--runs my_runs.json] -o cal.json
#include <cstdio>
#include <functional>
#include <optional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/common/progress.hpp"
#include "parasim/hardware/device_spec.hpp"
#include "parasim/profiler/profile.hpp"
#include "parasim/validation/calibrate.hpp"
#include "parasim/validation/kernel_fit.hpp"
#include "text_table.hpp"

namespace parasim::cli {

namespace {

struct CalibrateArgs {
  std::string runs;
  std::vector<std::string> profiles;
  std::string output;
  std::vector<std::string> fixed;
  bool per_gpu_kind = false;
  int max_iterations = validation::FitOptions{}.max_iterations;
  bool json = false;
};

std::string ms(double v) { return fixed(v, 3); }

void print_kernel_fit(std::ostream& out, const validation::KernelFit& f) {
  out << "kernel factors from " << f.profiles.size() << " measured profile(s), " << f.samples.size()
      << " op phases (time-weighted least squares on log error, " << f.iterations << " Gauss-Newton iterations)\n\n";
  const bool loo = f.profiles.size() > 1;
  std::vector<std::vector<std::string>> rows{
      {"profile", "model", "device", "phases", "measured ms", "default", "calibrated"}};
  if (loo) rows[0].push_back("leave-one-out");
  for (const validation::ProfileScore& p : f.profiles) {
    rows.push_back({p.path, p.model, p.device, std::to_string(p.phases), ms(p.measured_ms),
                    signed_percent(p.error_pct(p.default_ms)), signed_percent(p.error_pct(p.calibrated_ms))});
    if (loo) rows.back().push_back(signed_percent(p.error_pct(p.leave_one_out_ms)));
  }
  print_table(out, rows, {false, false, false, true, true, true, true, true});
  auto cls = [&](const char* what, double measured, double def, double cal) {
    if (measured <= 0) return;
    out << "  " << what << ": measured " << ms(measured) << " ms, default "
        << signed_percent(100 * (def - measured) / measured) << ", calibrated "
        << signed_percent(100 * (cal - measured) / measured) << "\n";
  };
  out << "\n";
  cls("GEMM/conv-bound phases  ", f.matrix_measured_ms, f.matrix_default_ms, f.matrix_calibrated_ms);
  cls("bandwidth-bound phases  ", f.memory_measured_ms, f.memory_default_ms, f.memory_calibrated_ms);
  for (const validation::ProfileScore& p : f.profiles)
    if (p.unmatched > 0)
      out << "  " << p.path << ": " << p.unmatched << " entries match no op of " << p.model
          << " at its defaults (not used)\n";
  out << "  matrix x" << fixed(f.matrix, 4) << (f.matrix_fitted ? "" : " (no phase depends on it)") << ", memory x"
      << fixed(f.memory, 4) << (f.memory_fitted ? "" : " (no phase depends on it)") << "\n";
}

void print_fit(std::ostream& out, const validation::CalibrationFit& f, const std::string& runs) {
  out << "parasim calibrate --runs " << runs << "  (" << f.in_sample.scored << " runs, " << f.iterations
      << " Levenberg-Marquardt iteration" << (f.iterations == 1 ? "" : "s")
      << (f.converged ? "" : ", stopped at the limit while still improving") << ")\n\n";
  std::vector<std::vector<std::string>> factors{{"factor", "value", "fitted"}};
  for (const validation::FitFactor& factor : f.factors)
    factors.push_back({factor.name, fixed(factor.value, 4), factor.fitted ? "yes" : "no: " + factor.note});
  print_table(out, factors, {false, true, false});
  out << "\n";
  std::vector<std::vector<std::string>> rows{{"run", "gpu", "measured s", "default", "calibrated", "leave-one-out"}};
  for (std::size_t i = 0; i < f.in_sample.outcomes.size(); ++i) {
    const auto& o = f.in_sample.outcomes[i];
    if (!o.scored) continue;
    rows.push_back({o.run.id, o.device_kind, fixed(o.run.measured_step_s, 3),
                    signed_percent(f.default_model.outcomes[i].error_pct), signed_percent(o.error_pct),
                    signed_percent(f.leave_one_out.outcomes[i].error_pct)});
  }
  print_table(out, rows, {false, false, true, true, true, true});
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
  cmd->add_option("--runs", args->runs,
                  "Measured runs (published-runs/1 JSON, as validate --runs reads; several files comma-separated)");
  cmd->add_option("--profiles", args->profiles,
                  "Measured per-op profiles of zoo models (parasim.profile/1: parasim profile, or a torch.profiler "
                  "trace through parasim profile import --model); fits the matrix and memory factors")
      ->delimiter(',');
  cmd->add_option("-o,--output", args->output, "Write the calibration (parasim.calibration/2) here")->required();
  cmd->add_option("--fix", args->fixed,
                  "Hold a factor at its default: matrix, memory (every GPU kind's), intra_node_comm, inter_node_comm, "
                  "step_overhead_ms");
  cmd->add_flag("--per-gpu-kind", args->per_gpu_kind,
                "With --runs: kernel factors per GPU kind, fitted where the runs file has more runs of that kind "
                "than free kernel factors, the default model for the others (default: one set for every kind)");
  cmd->add_option("--max-iterations", args->max_iterations,
                  "With --runs: Levenberg-Marquardt iterations per fit (the fit and each leave-one-out refit); the "
                  "output says when the last one still improved")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--json", args->json, "Print the calibration JSON instead of the table");
  cmd->callback([args, cmd] {
    if (args->runs.empty() && args->profiles.empty())
      throw InputError(
          "calibrate: give --runs FILE (measured step times), --profiles FILES (measured op times), or both");
    const bool talk = ProgressBar::would_draw();
    if (args->per_gpu_kind && args->runs.empty())
      throw InputError("calibrate: --per-gpu-kind applies only with --runs (profiles fit each GPU kind apart)");
    if (cmd->count("--max-iterations") > 0 && args->runs.empty())
      throw InputError("calibrate: --max-iterations applies only with --runs (a profile fit is closed-form)");
    // Per GPU kind: the kernel factors its profiles measured.
    std::map<std::string, validation::KernelFit> kernels;
    if (!args->profiles.empty()) {
      for (const std::string& name : args->fixed)
        if (name == "matrix" || name == "memory")
          throw InputError("calibrate: --fix " + name + " with --profiles: the profiles are what fits it; drop one");
      std::map<std::string, std::vector<validation::ProfileInput>> by_kind;
      for (const std::string& path : args->profiles) {
        profiler::Profile profile = profiler::load_profile(path);
        const auto spec = hardware::find_device_spec(profile.device.kind);
        by_kind[spec ? spec->kind : profile.device.kind].push_back({path, std::move(profile)});
      }
      for (auto& [kind, inputs] : by_kind) kernels.emplace(kind, validation::fit_kernel_factors(inputs));
    }
    nlohmann::json j;
    std::optional<validation::CalibrationFit> fit;
    if (!args->runs.empty()) {
      const validation::RunsFile runs = validation::load_runs_files(args->runs);
      // Profiles measure each kind's kernel factors: the runs then key them by kind too.
      const bool per_kind = args->per_gpu_kind || !args->profiles.empty();
      validation::FitOptions options{.max_iterations = args->max_iterations,
                                     .fixed = args->fixed,
                                     .per_gpu_kind = per_kind,
                                     .on_stage = [talk](const std::string& s) {
                                       if (talk) std::cerr << "  " << s << "...\n";
                                     }};
      if (!kernels.empty()) {
        // The profiles measured the kernels: hold their factors, fit links and overhead to the runs.
        for (const auto& [kind, k] : kernels) options.start.kernels[kind] = {k.matrix, k.memory};
        options.fixed.push_back("matrix");
        options.fixed.push_back("memory");
      }
      fit = validation::fit_calibration(runs, options);
      j = validation::calibration_fit_to_json(*fit);
    } else {
      Calibration c;
      nlohmann::json fitted = nlohmann::json::array();
      for (const auto& [kind, k] : kernels) {
        c.kernels[kind] = {k.matrix, k.memory};
        fitted.push_back("matrix[" + kind + "]");
        fitted.push_back("memory[" + kind + "]");
      }
      j = calibration_to_json(c, {{"fitted_factors", fitted}});
    }
    for (const auto& [kind, k] : kernels) j["kernel_fit"][kind] = validation::kernel_fit_to_json(k);
    write_file_atomic(args->output, dump_json(j));
    if (args->json) {
      std::cout << dump_json(j);
      return;
    }
    for (const auto& [kind, k] : kernels) {
      std::cout << kind << ": ";
      print_kernel_fit(std::cout, k);
    }
    if (fit) {
      if (!kernels.empty()) std::cout << "\n";
      print_fit(std::cout, *fit, args->runs);
    }
    std::cout << "\nwrote " << args->output << " (use it with --calibration " << args->output << ")\n";
  });
}

}  // namespace parasim::cli
