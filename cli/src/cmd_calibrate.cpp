// `parasim calibrate`: fits the calibration factors (per op class, per link class, a per-step
// overhead) to measured runs, measured per-op profiles and/or a GEMM microbenchmark, and writes a
// calibration file that simulate, plan, project, report and validate --runs take with
// --calibration FILE.
//
//   parasim calibrate --runs my_runs.json -o cal.json [--fix step_overhead_ms] [--json]
//   parasim calibrate --profiles traces/H100-SXM5-80GB/*.json [--runs my_runs.json] -o cal.json
//   parasim calibrate --microbench mb.json [--runs my_runs.json] -o cal.json
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
#include "parasim/validation/gemm_microbench.hpp"
#include "parasim/validation/kernel_fit.hpp"
#include "text_table.hpp"

namespace parasim::cli {

namespace {

struct CalibrateArgs {
  std::string runs;
  std::vector<std::string> profiles;
  std::string microbench;
  std::string output;
  std::vector<std::string> fixed;
  bool per_gpu_kind = false;
  double kind_spread = validation::FitOptions{}.kind_spread;
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

void print_microbench_fit(std::ostream& out, const validation::MicrobenchFit& f) {
  out << f.device_kind << ": kernel factors from a GEMM microbenchmark (" << f.path << ": " << f.gpu
      << (f.software.empty() ? "" : ", " + f.software) << "), " << f.used << " of " << f.gemms.size()
      << " GEMMs used\n\n";
  std::vector<std::vector<std::string>> rows{
      {"dtype", "phase", "m", "n", "k", "measured TFLOP/s", "model TFLOP/s", "measured / model", "used"}};
  for (const validation::MicrobenchGemm& g : f.gemms) {
    const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
    rows.push_back({g.dtype, g.phase, std::to_string(g.m), std::to_string(g.n), std::to_string(g.k),
                    fixed(flops / g.measured_ns / 1e3, 1), g.model_ns > 0 ? fixed(flops / g.model_ns / 1e3, 1) : "-",
                    g.model_ns > 0 ? fixed(g.measured_over_model(), 3) : "-", g.used ? "yes" : "no: " + g.why_not});
  }
  print_table(out, rows, {false, false, true, true, true, true, true, true, false});
  out << "\n  matrix x" << fixed(f.matrix, 4) << " (median of measured / model time over the " << f.used
      << " used GEMMs" << (f.matrix_at_bound ? "; at its bound" : "") << "): their |error| median "
      << fixed(f.default_median_abs_pct, 1) << "%, max " << fixed(f.default_max_abs_pct, 1) << "% by default, "
      << fixed(f.calibrated_median_abs_pct, 1) << "%, max " << fixed(f.calibrated_max_abs_pct, 1) << "% calibrated\n";
  if (f.memory_fitted)
    out << "  memory x" << fixed(f.memory, 4) << " (a copy of " << fixed(f.copy_bytes / 1e9, 2) << " GB ran "
        << fixed(f.copy_gbps, 0) << " GB/s, the model's HBM curve gives " << fixed(f.model_copy_gbps, 0) << " GB/s"
        << (f.memory_at_bound ? "; at its bound" : "") << ")\n";
  else out << "  memory x1 (the benchmark has no copy: held)\n";
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
  cmd->add_option("--microbench", args->microbench,
                  "A GEMM microbenchmark of one GPU (parasim.microbench/1: scripts/gpu_microbench.py); fits that "
                  "GPU kind's matrix factor (median of measured / model time over its large aligned GEMMs) and "
                  "memory factor (its large copy)");
  cmd->add_option("-o,--output", args->output, "Write the calibration (parasim.calibration/2) here")->required();
  cmd->add_option("--fix", args->fixed,
                  "Hold a factor at its default: matrix, memory (every GPU kind's), intra_node_comm, inter_node_comm, "
                  "step_overhead_ms");
  cmd->add_flag("--per-gpu-kind", args->per_gpu_kind,
                "With --runs: kernel factors per GPU kind, fitted where the runs file has more runs of that kind "
                "than free kernel factors, the default model for the others (default: one set for every kind)");
  cmd->add_option("--kind-spread", args->kind_spread,
                  "With --runs and runs of several GPU kinds: kernel factors pooled over the kinds, each kind's "
                  "own allowed to differ from them, a deviation of this fraction costing the fit as much as a 5% "
                  "error on one run (a kind with few runs leans on the pooled factors); 0: one set for every kind")
      ->capture_default_str();
  cmd->add_option("--max-iterations", args->max_iterations,
                  "With --runs: Levenberg-Marquardt iterations per fit (the fit and each leave-one-out refit); the "
                  "output says when the last one still improved")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--json", args->json, "Print the calibration JSON instead of the table");
  cmd->callback([args, cmd] {
    if (args->runs.empty() && args->profiles.empty() && args->microbench.empty())
      throw InputError(
          "calibrate: give --runs FILE (measured step times), --profiles FILES (measured op times), --microbench "
          "FILE (a GEMM microbenchmark), or --runs with one of the others");
    const bool talk = ProgressBar::would_draw();
    if (args->per_gpu_kind && args->runs.empty())
      throw InputError("calibrate: --per-gpu-kind applies only with --runs (profiles fit each GPU kind apart)");
    if (!(args->kind_spread >= 0 && args->kind_spread <= 3))
      throw InputError("calibrate: --kind-spread " + fixed(args->kind_spread, 3) +
                       ": expected a fraction from 0 (one set of kernel factors for every kind) to 3");
    if (cmd->count("--kind-spread") > 0 && args->runs.empty())
      throw InputError("calibrate: --kind-spread applies only with --runs (the runs' kinds are what it pools)");
    if (cmd->count("--kind-spread") > 0 && (args->per_gpu_kind || !args->profiles.empty() || !args->microbench.empty()))
      throw InputError(
          std::string("calibrate: --kind-spread pools kernel factors over GPU kinds; ") +
          (args->per_gpu_kind ? "--per-gpu-kind fits each kind apart" : "measured kernels fix each kind's") +
          ": drop one");
    if (args->runs.empty())
      for (const std::string& name : args->fixed)
        if (name != "matrix" && name != "memory")
          throw InputError("calibrate: --fix " + name + " applies only with --runs (the runs are what fit it)");
    if (!args->microbench.empty() && !args->profiles.empty())
      throw InputError("calibrate: --microbench and --profiles both measure kernel factors; give one of them");
    if (cmd->count("--max-iterations") > 0 && args->runs.empty())
      throw InputError("calibrate: --max-iterations applies only with --runs (a profile fit is closed-form)");
    // Measured kernels (profiles or a microbenchmark) are what fits the kernel factors.
    if (const char* measured = !args->microbench.empty() ? "--microbench"
                               : !args->profiles.empty() ? "--profiles"
                                                         : nullptr)
      for (const std::string& name : args->fixed)
        if (name == "matrix" || name == "memory")
          throw InputError("calibrate: --fix " + name + " with " + measured + ": what it measures fits " + name +
                           "; drop one");
    // Per GPU kind: the kernel factors its profiles measured.
    std::map<std::string, validation::KernelFit> kernels;
    std::optional<validation::MicrobenchFit> bench;
    if (!args->microbench.empty()) bench = validation::fit_gemm_microbench(args->microbench);
    if (!args->profiles.empty()) {
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
      const bool per_kind = args->per_gpu_kind || !args->profiles.empty() || bench.has_value();
      validation::FitOptions options{.max_iterations = args->max_iterations,
                                     .fixed = args->fixed,
                                     .per_gpu_kind = per_kind,
                                     .kind_spread = per_kind ? 0.0 : args->kind_spread,
                                     .on_stage = [talk](const std::string& s) {
                                       if (talk) std::cerr << "  " << s << "...\n";
                                     }};
      if (!kernels.empty()) {
        // The profiles measured the kernels: hold their factors, fit links and overhead to the runs.
        for (const auto& [kind, k] : kernels) options.start.kernels[kind] = {k.matrix, k.memory};
      }
      if (bench) options.start.kernels[bench->device_kind] = {bench->matrix, bench->memory};
      if (!kernels.empty() || bench) {
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
      if (bench) {
        c.kernels[bench->device_kind] = {bench->matrix, bench->memory};
        fitted.push_back("matrix[" + bench->device_kind + "]");
        if (bench->memory_fitted) fitted.push_back("memory[" + bench->device_kind + "]");
      }
      j = calibration_to_json(c, {{"fitted_factors", fitted}});
    }
    for (const auto& [kind, k] : kernels) j["kernel_fit"][kind] = validation::kernel_fit_to_json(k);
    if (bench) j["microbench_fit"] = validation::microbench_fit_to_json(*bench);
    write_file_atomic(args->output, dump_json(j));
    if (args->json) {
      std::cout << dump_json(j);
      return;
    }
    for (const auto& [kind, k] : kernels) {
      std::cout << kind << ": ";
      print_kernel_fit(std::cout, k);
    }
    if (bench) print_microbench_fit(std::cout, *bench);
    if (fit) {
      if (!kernels.empty() || bench) std::cout << "\n";
      print_fit(std::cout, *fit, args->runs);
    }
    std::cout << "\nwrote " << args->output << " (use it with --calibration " << args->output << ")\n";
  });
}

}  // namespace parasim::cli
