// `parasim validate`: profile a model on a real backend, simulate a strategy with those costs,
// execute the very same task graph on the machine and put projection and measurement side by
// side.
//
//   parasim validate --backend cpu --model tiny_cnn --batch 8 --strategy dp=2 [--reps 5] [--warmup 2] [--json]
//   parasim validate --suite ci [--json] [-o FILE]
//   parasim validate --runs FILE | --nccl-tests FILE [--json] [-o FILE]   (nothing executed)
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "cli_output.hpp"
#include "commands.hpp"
#include "enum_args.hpp"
#include "text_table.hpp"
#include "validate_nccl_tests.hpp"
#include "validate_runs.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/interrupt.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/common/progress.hpp"
#include "parasim/executor/cpu_runtime.hpp"
#include "parasim/mpi/link_probe.hpp"
#include "parasim/mpi/world.hpp"
#include "parasim/validation/validate.hpp"
#include "parasim/profiler/cost_model.hpp"

namespace parasim::cli {

namespace {

using namespace parasim::executor;
using namespace parasim::validation;

struct ValidateArgs {
  std::string backend = "cpu";
  std::string model = "tiny_cnn";
  std::int64_t batch = 8;
  std::string strategy = "dp=1";
  int reps = 5;
  int warmup = 2;
  int profile_reps = 10;
  std::string optimizer = "sgd";
  std::string suite;
  bool json = false;
  std::string output;
  std::string trace_dir;
  std::string priority = "fifo";
  bool reps_given = false, warmup_given = false, profile_reps_given = false;
  std::string profile_cache = "auto";
};

std::string pad(const std::string& s, std::size_t w) {
  return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' ');
}
std::string lpad(const std::string& s, std::size_t w) {
  return s.size() >= w ? " " + s : std::string(w - s.size(), ' ') + s;
}

void print_notes(std::ostream& out, const std::vector<std::string>& notes) {
  if (notes.empty()) return;
  out << "notes:\n";
  for (const auto& n : notes) out << "  - " << n << "\n";
}

void print_one(std::ostream& out, const ValidationResult& r) {
  out << "parasim validate: " << r.model << " batch " << r.batch << ", " << r.strategy << " (" << r.devices << " device"
      << (r.devices == 1 ? "" : "s") << ", " << r.tasks << " tasks) on " << r.runtime << "\n";
  out << "  projected  " << lpad(fixed(r.projected_ms(), 3), 10) << " ms   simulated with " << r.cost_source << "\n";
  if (r.rt_throttle > 0)
    out << "                          = " << fixed(ns_to_ms(r.simulated), 3) << " ms simulated + "
        << fixed(ns_to_ms(r.rt_throttle), 3)
        << " ms real-time throttling (SCHED_FIFO workers busy beyond the kernel's rt budget)\n";
  out << "  measured   " << lpad(fixed(r.measured_ms(), 3), 10) << " ms   median of " << r.repetitions << " steps [min "
      << fixed(ns_to_ms(r.measured_min), 3) << ", max " << fixed(ns_to_ms(r.measured_max), 3) << "], first task to last"
      << " (launch latency " << fixed(ns_to_us(r.launch_latency), 1) << " us before it)\n";
  if (r.is_measured())
    out << "  error      " << lpad(fixed(r.error_pct, 1), 10) << " %    (projected - measured) / measured\n";
  else
    out << "  error      " << lpad("-", 10) << "      NOT MEASURED: " << r.stand_in_tasks << " of " << r.compute_tasks
        << " compute tasks ran as stand-ins (spinning for their projected time), so the two agree by construction\n";
  out << "  compute tasks, summed: projected " << fixed(ns_to_ms(r.projected_compute_sum), 3) << " ms, measured "
      << fixed(ns_to_ms(r.measured_compute_sum), 3) << " ms\n\n";
  out << "  device  compute projected  compute measured  comm projected  comm measured   (busy ms)\n";
  for (const auto& d : r.per_device)
    out << "  " << pad(std::to_string(d.device), 6) << lpad(fixed(ns_to_ms(d.projected_compute), 3), 19)
        << lpad(fixed(ns_to_ms(d.measured_compute), 3), 18) << lpad(fixed(ns_to_ms(d.projected_comm), 3), 16)
        << lpad(fixed(ns_to_ms(d.measured_comm), 3), 15) << "\n";
  if (!r.ranks.empty()) {
    out << "\nMPI ranks (one per device):";
    for (const auto& p : r.ranks)
      out << " " << p.rank << "=" << p.host << "/local " << p.local_rank << "/pid " << p.pid;
    out << "\n";
  }
  if (r.rank_links) {
    const auto& l = *r.rank_links;
    out << "MPI links (measured over " << (l.transport == mpi::ProbeTransport::Nccl ? "NCCL" : "MPI")
        << ", one pair per class):";
    for (const auto& p : l.pairs)
      out << " ranks " << p.pair.a << "-" << p.pair.b << " (" << (p.pair.same_host() ? "intra" : "inter")
          << "-host) alpha " << fixed(p.fit.alpha_ns / 1e3, 1) << " us, beta " << fixed(p.fit.beta_gbps, 2) << " GB/s;";
    out << " all-reduce alpha " << fixed(l.allreduce_fit.alpha_ns / 1e3, 1) << " us, beta "
        << fixed(l.allreduce_fit.beta_gbps, 2) << " GB/s (all ranks)\n";
    for (const std::string& n : l.notes) out << "  " << n << "\n";
  }
  if (r.calibration) {
    const HostCalibration& c = *r.calibration;
    const RouteFit route = route_fit(c, r.collective_weight);
    out << "\ncpu-host cluster (measured): transfer alpha " << fixed(c.transfer_fit.alpha_ns / 1e3, 1) << " us, beta "
        << fixed(c.transfer_fit.beta_gbps, 2) << " GB/s";
    if (!c.allreduce.empty())
      out << "; all-reduce alpha " << fixed(c.allreduce_fit.alpha_ns / 1e3, 1) << " us, beta "
          << fixed(c.allreduce_fit.beta_gbps, 2) << " GB/s";
    out << "\n  route used (" << fixed(100 * r.collective_weight, 0) << "% collectives): alpha "
        << fixed(route.alpha_ns / 1e3, 1) << " us, beta " << fixed(route.beta_gbps, 2) << " GB/s; cross-thread wake-up "
        << fixed(ns_to_us(c.wakeup), 1) << " us; dispatch " << fixed(ns_to_us(c.dispatch), 2) << " us/task; step start "
        << fixed(ns_to_us(c.step_start), 1) << " us\n";
    out << "op profiles with " << (r.cold_cache_profile ? "cold" : "warm") << " caches (working set "
        << format_bytes(r.working_set) << ", last-level cache " << format_bytes(r.last_level_cache) << ")";
    if (c.rt_runtime > 0)
      out << "; rt budget " << fixed(ns_to_ms(c.rt_runtime), 0) << " ms of every " << fixed(ns_to_ms(c.rt_period), 0)
          << " ms";
    out << "\n";
    out << "concurrent per-thread speed (1.." << c.speed.size() << " busy threads):";
    for (double v : c.speed) out << " " << fixed(v, 2);
    if (!c.speed_in_cache.empty()) {
      out << " streaming,";
      for (double v : c.speed_in_cache) out << " " << fixed(v, 2);
      out << " in cache (" << (r.cold_cache_profile ? "streaming" : "in cache") << " used)";
    }
    if (r.contention_applied)
      out << "; contention model: mean slowdown x" << fixed(r.contention_slowdown, 3) << " on op costs, step "
          << fixed(ns_to_ms(r.simulated_without_contention), 3) << " -> " << fixed(ns_to_ms(r.simulated), 3) << " ms ("
          << (r.simulated >= r.simulated_without_contention ? "+" : "")
          << fixed(ns_to_ms(r.simulated - r.simulated_without_contention), 3) << " ms)\n";
    else
      out << "; contention model: does not apply (one device, no concurrent threads)\n";
  }
  print_notes(out, r.notes);
}

void print_suite(std::ostream& out, const SuiteResult& s) {
  out << "parasim validate --suite " << s.name << "  (" << s.backend << " backend; " << s.machine << "; " << s.date
      << ")"
      << (s.name == "heldout" ? ": cases the host model was not tuned on" : ": the cases the host model was tuned on")
      << "\n\n";
  out << pad("model, batch", 22) << pad("strategy", 28) << lpad("dev", 3) << lpad("projected ms", 14)
      << lpad("measured ms", 13) << lpad("[min, max]", 20) << lpad("error %", 9) << lpad("rt stall ms", 12)
      << lpad("contention ms", 15) << lpad("profile", 9) << "\n";
  for (const auto& r : s.rows) {
    const std::string range =
        "[" + fixed(ns_to_ms(r.measured_min), 2) + ", " + fixed(ns_to_ms(r.measured_max), 2) + "]";
    const std::string what =
        r.model + " b" + std::to_string(r.batch) + (r.seq_len > 0 ? " s" + std::to_string(r.seq_len) : "");
    out << pad(what, 22) << pad(r.strategy, 28) << lpad(std::to_string(r.devices), 3)
        << lpad(fixed(r.projected_ms(), 3), 14) << lpad(fixed(r.measured_ms(), 3), 13) << lpad(range, 20)
        << lpad(r.is_measured() ? fixed(r.error_pct, 1) : "not measured", r.is_measured() ? 9 : 13)
        << lpad(fixed(ns_to_ms(r.rt_throttle), 1), 12)
        << lpad(r.contention_applied ? (r.simulated >= r.simulated_without_contention ? "+" : "") +
                                           fixed(ns_to_ms(r.simulated - r.simulated_without_contention), 3)
                                     : "n/a",
                15)
        << lpad(r.cold_cache_profile ? "cold" : "warm", 9) << "\n";
  }
  if (s.measured_rows > 0)
    out << "\nmedian |error| " << fixed(s.median_abs_error_pct, 1) << " %, max |error| "
        << fixed(s.max_abs_error_pct, 1) << " % over " << s.measured_rows << " measured cases";
  else
    out << "\nno case was measured: no error statistics";
  if (s.measured_rows < s.rows.size())
    out << "; " << s.rows.size() - s.measured_rows << " of " << s.rows.size()
        << " cases not measured (stand-in kernels; left out of the statistics)";
  out << " (" << fixed(s.seconds, 1) << " s)\n";
  out << "contention ms: what the contention model added to the simulated step (n/a: one device, nothing "
         "runs concurrently); rt stall: real-time throttling of SCHED_FIFO workers\n";
  for (const auto& k : s.skipped) out << "skipped: " << k << "\n";
  std::vector<std::string> notes;
  for (const auto& r : s.rows)
    for (const auto& n : r.notes)
      if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
  print_notes(out, notes);
}

void emit(const ValidateArgs& a, const nlohmann::json& j, const std::string& text) {
  const std::string body = a.json ? dump_json(j) : text;
  if (!a.output.empty()) {
    write_file_atomic(a.output, a.json ? dump_json(j) : text);
    std::cerr << "wrote " << a.output << "\n";
    if (!a.json) std::cout << text;
    return;
  }
  std::cout << body;
}

void run_validate(const ValidateArgs& a) {
  ValidationRequest req;
  req.backend = backend_arg(a.backend);
  req.model = a.model;
  req.batch = a.batch;
  req.strategy = a.strategy;
  req.repetitions = a.reps;
  req.warmup = a.warmup;
  req.profile_repetitions = a.profile_reps;
  req.optimizer = optimizer_arg(a.optimizer);
  req.trace_dir = a.trace_dir;
  if (a.priority == "default") req.priority = CpuRuntimeOptions::Priority::Default;
  else if (a.priority == "boosted") req.priority = CpuRuntimeOptions::Priority::Boosted;
  else if (a.priority == "fifo") req.priority = CpuRuntimeOptions::Priority::Fifo;
  else throw InputError("--priority: " + a.priority + ": expected default, boosted or fifo");
  if (a.profile_cache == "auto") req.profile_cache = ValidationRequest::ProfileCache::Auto;
  else if (a.profile_cache == "warm") req.profile_cache = ValidationRequest::ProfileCache::Warm;
  else if (a.profile_cache == "cold") req.profile_cache = ValidationRequest::ProfileCache::Cold;
  else throw InputError("--profile-cache: " + a.profile_cache + ": expected auto, warm or cold");
  if (!a.suite.empty()) {
    const auto cases = suite_cases(a.suite);
    // The suite's own repetition budgets unless given on the command line.
    ValidationRequest suite = ci_suite_defaults();
    if (a.reps_given) suite.repetitions = a.reps;
    if (a.warmup_given) suite.warmup = a.warmup;
    if (a.profile_reps_given) suite.profile_repetitions = a.profile_reps;
    suite.backend = req.backend;
    suite.optimizer = req.optimizer;
    suite.priority = req.priority;
    suite.profile_cache = req.profile_cache;
    ProgressBar bar("validate suite", cases.size());
    SuiteResult all = run_suite(cases, suite, [&bar](std::size_t, std::size_t) {
      bar.advance();
      throw_if_interrupted();
    });
    all.name = a.suite;
    bar.finish();
    std::ostringstream text;
    print_suite(text, all);
    emit(a, suite_to_json(all), text.str());
    return;
  }
  if (ProgressBar::would_draw()) req.on_stage = [](const std::string& s) { std::cerr << "  " << s << "...\n"; };
  if (mpi::World* world = mpi::World::current(); world != nullptr && world->size() > 1) {
    // One rank per device; rank 0 prints what the single-process run prints, plus the layout.
    const ValidationResult r = validate_on_ranks(req, *world);
    if (!world->root()) return;
    std::ostringstream text;
    print_one(text, r);
    emit(a, validation_to_json(r), text.str());
    return;
  }
  const ValidationResult r = validate(req);
  std::ostringstream text;
  print_one(text, r);
  emit(a, validation_to_json(r), text.str());
}

}  // namespace

void register_validate(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Profile, simulate and execute the same task graph; print projected vs measured step time");
  cmd->add_option("--backend", args->backend, "cpu (oneDNN threads) or cuda (GPUs of this node)")
      ->capture_default_str();
  cmd->add_option("--model", args->model, "Zoo model")->capture_default_str();
  cmd->add_option("--batch", args->batch, "Global batch (all replicas and micro-batches)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30));
  cmd->add_option("--strategy", args->strategy, "Strategy, e.g. dp=2 or mp=2,schedule=1f1b,micro=4")
      ->capture_default_str();
  cmd->add_option("--reps", args->reps, "Timed executor steps")->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", args->warmup, "Untimed executor steps first")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--profile-reps", args->profile_reps, "Profiler repetitions per op phase")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--optimizer", args->optimizer, "sgd, momentum or adam")->capture_default_str();
  cmd->add_option(
      "--suite", args->suite,
      "ci: the fixed CPU matrix the host model was tuned on, {tiny_cnn, tiny_lstm, googlenet_cifar} x {dp=1, "
      "dp=2, mp=2, mp=2 1f1b micro=4}; heldout: 8 cases it was not tuned on (other batches and widths, GPipe, "
      "interleaved, an uneven split, tp=2)");
  cmd->add_flag("--json", args->json, "Print JSON instead of the table");
  cmd->add_option("--priority", args->priority,
                  "cpu: worker/profiler thread priority: default, boosted (nice -20) or fifo (SCHED_FIFO)")
      ->capture_default_str();
  cmd->add_option("--profile-cache", args->profile_cache,
                  "cpu: op profiles with warm caches, cold (evicted before every run), or auto: cold when the step's "
                  "working set exceeds the last-level cache")->capture_default_str();
  cmd->add_option("--trace-dir", args->trace_dir, "Write the projected and measured timelines there (Chrome traces)");
  cmd->add_option("-o,--output", args->output, "Also write the output (table or JSON) to this file");
  auto runs = std::make_shared<ValidateRunsArgs>();
  cmd->add_option("--runs", runs->file,
                  "Recorded runs (published-runs/1 JSON; several files comma-separated): project each and put it next "
                  "to its measured step time; nothing is executed");
  cmd->add_option("--calibration", runs->calibration, "With --runs: a calibration file (parasim calibrate) to apply");
  cmd->add_option("--data-loading", runs->data_loading, std::string("With --runs: the ") + kDataLoadingHelp)
      ->capture_default_str();
  auto nccl = std::make_shared<ValidateNcclTestsArgs>();
  cmd->add_option("--nccl-tests", nccl->file,
                  "Published nccl-tests curves (parasim.nccl_tests/1 JSON, e.g. "
                  "validation/data/nccl_tests_published.json): parasim's bus bandwidth next to each; nothing is "
                  "executed");
  cmd->callback([args, cmd, runs, nccl] {
    if (!nccl->file.empty()) {
      if (const mpi::World* w = mpi::World::current(); w != nullptr && w->size() > 1)
        throw mpi::AgreedError("validate --nccl-tests executes nothing; run it without mpirun", kExitBadInput);
      refuse_options_except(*cmd, {"--nccl-tests", "--json", "--output"},
                            "validate --nccl-tests (each curve names its cluster preset, size and collective)");
      nccl->json = args->json;
      nccl->output = args->output;
      run_validate_nccl_tests(*nccl);
      return;
    }
    if (!runs->file.empty()) {
      if (const mpi::World* w = mpi::World::current(); w != nullptr && w->size() > 1)
        throw mpi::AgreedError("validate --runs executes nothing; run it without mpirun", kExitBadInput);
      refuse_options(*cmd,
                     {"--backend", "--model", "--batch", "--strategy", "--reps", "--warmup", "--profile-reps",
                      "--optimizer", "--suite", "--priority", "--profile-cache", "--trace-dir"},
                     "validate --runs (recorded runs carry their own model, strategy and cluster)");
      runs->json = args->json;
      runs->output = args->output;
      run_validate_runs(*runs);
      return;
    }
    if (!runs->calibration.empty()) throw InputError("validate: --calibration applies only with --runs");
    if (cmd->count("--data-loading") > 0)
      throw InputError("validate: --data-loading applies only with --runs (an executed step loads no data)");
    if (const mpi::World* w = mpi::World::current(); w != nullptr && w->size() > 1 && !args->suite.empty())
      throw mpi::AgreedError("validate --suite runs in one process; run it without mpirun", kExitBadInput);
    // The suite runs its own fixed cases: a model, batch, strategy or trace folder given with it
    // would be ignored.
    if (!args->suite.empty())
      refuse_options(*cmd, {"--model", "--batch", "--strategy", "--trace-dir"},
                     "validate --suite (it runs its own fixed cases)");
    args->reps_given = cmd->count("--reps") > 0;
    args->warmup_given = cmd->count("--warmup") > 0;
    args->profile_reps_given = cmd->count("--profile-reps") > 0;
    run_validate(*args);
  });
}

}  // namespace parasim::cli
