// `parasim simulate`: run one training step's task graph on a cluster and report where the time
// goes - step time, and per device compute, communication, exposed communication, idle time
// and peak memory - as a table or as the StepResult JSON, optionally with a Chrome trace.
//
// The flow is: options -> task graph source -> cluster -> engine -> report. The task graph
// source is one function (taskgraph_from_options) so a `--model/--strategy` mode can build the
// graph from a model and a parallelization strategy without touching the rest.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "enum_args.hpp"
#include "simulate_model.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/common/units.hpp"
#include "parasim/hardware/cluster_json.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/simulator/simulator.hpp"
#include "cli_output.hpp"
#include "text_table.hpp"

namespace parasim::cli {

namespace {

using namespace parasim::simulator;

struct SimulateOptions {
  std::string taskgraph;          // parasim.taskgraph/1 file
  std::string cluster;            // preset name or parasim.cluster/1 file; empty = default preset
  int nodes = 0;                  // 0 = as many nodes as the task graph needs
  std::string collectives = "expanded";
  std::string trace;              // Chrome trace output path, empty = none
  bool json = false;
  std::string output;             // -o: the output also written there
  FabricArgs fabric;              // --fabric, --oversubscription
};

constexpr const char* kDefaultPreset = "dgx-h100";

// ------------------------------------------------------------------ inputs

/// Where the task graph comes from. Today only --taskgraph FILE.
TaskGraph taskgraph_from_options(const SimulateOptions& o) {
  if (o.taskgraph.empty())
    throw InputError("simulate: --taskgraph FILE is required (a parasim.taskgraph/1 file)");
  return load_taskgraph_file(o.taskgraph);
}

/// The cluster to run on: --cluster (preset or file) with --nodes, or the default preset with
/// just enough nodes for the graph's devices.
hardware::Cluster cluster_from_options(const SimulateOptions& o, int devices_needed) {
  if (!o.cluster.empty())
    return hardware::resolve_cluster(with_fabric(o.cluster, o.fabric), o.nodes == 0 ? 1 : o.nodes);
  int nodes = o.nodes;
  if (nodes == 0) nodes = std::max(1, (devices_needed + 7) / 8);
  return hardware::make_cluster_preset(with_fabric(kDefaultPreset, o.fabric), nodes);
}

// ------------------------------------------------------------------ report

std::string percent(TimeNs part, TimeNs whole) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%",
                whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return buf;
}

void print_devices(std::ostream& out, const StepResult& r, const hardware::Cluster& cluster) {
  std::vector<std::vector<std::string>> rows{
      {"device", "kind", "compute", "comm", "exposed comm", "idle", "peak memory", "of capacity"}};
  for (std::size_t d = 0; d < r.devices.size(); ++d) {
    const DeviceStats& s = r.devices[d];
    std::string cap = percent(s.peak_memory, s.capacity);
    if (s.peak_memory > s.capacity) cap += " OVER";
    rows.push_back({std::to_string(d) + " " + cluster.device(static_cast<DeviceId>(d)).name,
                    cluster.device(static_cast<DeviceId>(d)).kind, format_time(s.compute_busy),
                    format_time(s.comm_busy), format_time(s.exposed_comm), format_time(s.idle),
                    format_bytes(s.peak_memory), cap});
  }
  print_table(out, rows, {false, false, true, true, true, true, true, true});
}

void print_busiest_links(std::ostream& out, const StepResult& r, const hardware::Cluster& cluster) {
  std::vector<std::size_t> order;
  for (std::size_t l = 0; l < r.links.size(); ++l)
    if (r.links[l].busy > 0) order.push_back(l);
  if (order.empty()) return;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return r.links[a].busy > r.links[b].busy; });
  order.resize(std::min<std::size_t>(order.size(), 5));
  std::vector<std::vector<std::string>> rows{{"busiest links", "busy", "of step", "bytes"}};
  for (std::size_t l : order)
    rows.push_back({cluster.directed_link_name(static_cast<hardware::DirLinkId>(l)), format_time(r.links[l].busy),
                    percent(r.links[l].busy, r.step_time), format_bytes(r.links[l].bytes)});
  out << "\n";
  print_table(out, rows, {false, true, true, true});
}

void print_critical_path(std::ostream& out, const StepResult& r, const TaskGraph& g) {
  if (r.critical_path.empty()) return;
  auto label = [&](TaskId t) {
    const std::string n(g.name(t));
    return n.empty() ? std::string(to_string(g.kind(t))) + " #" + std::to_string(t) : n;
  };
  out << "\ncritical path (" << r.critical_path.size() << " tasks): ";
  const std::size_t n = r.critical_path.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (n > 10 && i == 5) {
      out << "... -> ";
      i = n - 5;
    }
    out << label(r.critical_path[i]) << (i + 1 < n ? " -> " : "\n");
  }
}

void print_report(std::ostream& out, const StepResult& r, const TaskGraph& g, const hardware::Cluster& cluster) {
  out << "cluster      " << cluster.name() << " (" << cluster.num_devices() << " devices, " << cluster.num_nodes()
      << " node" << (cluster.num_nodes() == 1 ? "" : "s") << ")\n"
      << "task graph   " << g.size() << " tasks, " << g.num_dependencies() << " dependencies, " << g.num_devices()
      << " devices\n"
      << "collectives  " << to_string(r.collective_mode) << "\n"
      << "step time    " << format_time(r.step_time) << "   (" << r.events << " events)\n\n";
  print_devices(out, r, cluster);
  print_busiest_links(out, r, cluster);
  print_critical_path(out, r, g);
}

// ------------------------------------------------------------------ the command

void run_simulate(const SimulateOptions& o) {
  const CollectiveMode mode = collective_mode_arg(o.collectives);
  const TaskGraph graph = taskgraph_from_options(o);
  const hardware::Cluster cluster = cluster_from_options(o, graph.num_devices());
  SimulationProgress progress("simulate");
  const Engine engine(
      cluster, {.collectives = mode,
                .record_timeline = !o.trace.empty(),
                .on_progress = [&progress](std::size_t done, std::size_t total) { progress.update(done, total); }});
  const StepResult result = engine.run(graph);
  progress.finish();
  if (!o.trace.empty()) write_chrome_trace(o.trace, graph, cluster, result);
  if (o.json) {
    std::cout << dump_json(step_result_to_json(result, graph, cluster));
    return;
  }
  print_report(std::cout, result, graph, cluster);
  if (!o.trace.empty()) std::cout << "\ntrace written to " << o.trace << " (open in ui.perfetto.dev)\n";
}

}  // namespace

void register_simulate(CLI::App& app) {
  auto opts = std::make_shared<SimulateOptions>();
  auto* cmd = app.add_subcommand("simulate", "Simulate one training step of a task graph on a cluster");
  cmd->add_option("--taskgraph", opts->taskgraph, "parasim.taskgraph/1 file to simulate");
  cmd->add_option("--cluster", opts->cluster,
                  std::string("Cluster preset (see `parasim clusters`) or parasim.cluster/1 file; default ") +
                      kDefaultPreset + " with enough nodes");
  cmd->add_option("--nodes", opts->nodes, "Nodes of the preset, joined by InfiniBand")
      ->check(CLI::Range(1, hardware::kMaxPresetNodes));
  add_fabric_options(*cmd, opts->fabric);
  cmd->add_option("--collectives", opts->collectives,
                  "expanded: collectives run as link-level steps that contend with other traffic; "
                  "analytic: closed-form alpha-beta time (faster)")
      ->capture_default_str();
  cmd->add_option("--trace", opts->trace, "Write a Chrome/Perfetto trace (Kineto-shaped JSON) to this file");
  cmd->add_flag("--json", opts->json, "Print the StepResult as JSON instead of tables");
  auto model_opts = std::make_shared<SimulateModelOptions>();
  add_simulate_model_options(*cmd, *model_opts);
  add_output_option(*cmd, opts->output);
  cmd->callback([opts, model_opts] {
    OutputFile out(opts->output, !opts->json);
    if (simulate_model_requested(*model_opts))
      run_simulate_model(*model_opts, {opts->taskgraph, opts->cluster, opts->nodes, opts->collectives, opts->trace,
                                       opts->json, opts->fabric});
    else if (const char* option = first_changed_pricing_option(model_opts->kernels))
      throw InputError(std::string(option) + ": only used with --model (a task graph carries its own durations)");
    else if (model_opts->data_loading != "off")
      throw InputError("--data-loading: only used with --model (a task graph has no data loader)");
    else if (model_opts->grad_accumulation != "auto")
      throw InputError("--grad-accumulation: only used with --model (a task graph carries its own durations)");
    else if (!model_opts->profile.empty() || model_opts->traces_given)
      throw InputError(std::string(model_opts->traces_given ? "--traces" : "--profile") +
                       ": only used with --model (a task graph carries its own durations)");
    else
      run_simulate(*opts);
    out.commit();
  });
}

}  // namespace parasim::cli
