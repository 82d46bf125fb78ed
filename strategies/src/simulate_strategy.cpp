#include "parasim/strategies/simulate_strategy.hpp"

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <optional>

#include "gib.hpp"
#include "parasim/common/error.hpp"
#include "parasim/hardware/device_spec.hpp"

namespace parasim::strategies {

namespace {

using detail::gib;

std::string memory_verdict(const DeviceReport& d) {
  return "needs " + gib(d.peak_memory) + " on device " + std::to_string(d.device) + " (stage " +
         std::to_string(d.stage) + "), device has " + gib(d.capacity);
}

/// The worst device (largest need / capacity), or none.
void judge_memory(StrategyResult& r) {
  const DeviceReport* worst = nullptr;
  for (const DeviceReport& d : r.devices) {
    if (d.peak_memory <= d.capacity) continue;
    if (worst == nullptr || static_cast<double>(d.peak_memory) / static_cast<double>(d.capacity) >
                                static_cast<double>(worst->peak_memory) / static_cast<double>(worst->capacity))
      worst = &d;
  }
  r.feasible = worst == nullptr;
  r.infeasible_reason = worst ? memory_verdict(*worst) : "";
}

DeviceReport base_report(const hardware::Cluster& cluster, const DeviceRole& role) {
  DeviceReport d;
  d.device = role.device;
  d.kind = cluster.device(role.device).kind;
  d.replica = role.replica;
  d.stage = role.stage;
  d.tp_rank = role.tp_rank;
  d.capacity = cluster.device(role.device).memory;
  return d;
}

bool static_memory_fits(const LoweredStep& step, const hardware::Cluster& cluster) {
  for (hardware::DeviceId d : step.simulated_devices)
    if (step.graph.static_memory(d).total() > cluster.device(d).memory) return false;
  return true;
}

}  // namespace

std::string describe_collective_sms(const hardware::Cluster& cluster, simulator::CollectiveCosts costs) {
  if (costs != simulator::CollectiveCosts::Nccl)
    return "none (link costs: compute runs at full rate beside collectives)";
  const std::optional<int> pinned = cluster.spec().nccl_channels;
  if (pinned == 0) return "none (the cluster's nccl_channels=0: compute runs at full rate beside collectives)";
  std::string parts;
  for (const std::string& kind : cluster.device_kinds()) {
    const std::optional<hardware::DeviceSpec> spec = hardware::find_device_spec(kind);
    if (!spec || spec->sm_count <= 1) continue;
    const hardware::NcclChannels ch = hardware::nccl_channels(*spec);
    parts += (parts.empty() ? "" : ", ") + std::to_string(pinned ? *pinned : ch.ring_tree) + " of " +
             std::to_string(spec->sm_count) + " on " + kind +
             (!pinned && ch.nvls > 0 ? " (NVLS " + std::to_string(ch.nvls) + ")" : "");
  }
  if (parts.empty()) return "none (no GPU with a known SM count)";
  return "a running collective holds one SM per NCCL channel, " + parts +
         (pinned ? " (the cluster's nccl_channels)" : "") + "; the compute it overlaps runs on the other SMs";
}

StrategyResult simulate_strategy(const StepSetup& setup, const simulator::EngineOptions& options) {
  LoweredStep step = lower_step(setup);
  StrategyResult r = simulate_lowered(setup, step, options);
  r.lowered = std::move(step);
  return r;
}

StrategyResult simulate_lowered(const StepSetup& setup, const LoweredStep& step,
                                const simulator::EngineOptions& options) {
  StrategyResult r;
  r.strategy = setup.strategy;
  r.model = setup.model->name();
  r.cluster = setup.cluster->name();
  r.nodes = setup.cluster->num_nodes();
  r.global_batch = setup.global_batch;
  r.dtype = setup.dtype.value_or(setup.model->dtype());
  r.optimizer = setup.optimizer;
  r.collectives = options.collectives;
  r.cost_source = step.cost_source;
  if (!setup.calibration.is_default()) r.cost_source += "; calibrated: " + setup.calibration.describe();
  r.cost_counts = step.cost_counts;
  r.data_loading = setup.data_loading;
  r.grad_accumulation = setup.grad_accumulation;
  r.step_overhead_source = setup.calibration.describe_step_overhead();
  r.collective_sms = describe_collective_sms(*setup.cluster, setup.collective_costs);
  for (const std::int64_t samples : step.replica_batch)
    r.data_load_time = std::max(r.data_load_time, setup.data_loading.load_time(samples));
  const hardware::Cluster& cluster = *setup.cluster;

  if (!setup.simulate_infeasible && !static_memory_fits(step, cluster)) {
    for (hardware::DeviceId d : step.simulated_devices) {
      DeviceReport rep = base_report(cluster, step.roles[static_cast<std::size_t>(d)]);
      const simulator::StaticMemory& m = step.graph.static_memory(d);
      rep.peak_memory = m.total();
      rep.breakdown = {m.params, m.grads, m.optimizer, 0, m.other};
      r.devices.push_back(std::move(rep));
    }
    judge_memory(r);
    return r;
  }

  simulator::EngineOptions engine_options = options;
  engine_options.costs = setup.collective_costs;
  engine_options.intra_node_comm_scale = setup.calibration.intra_node_comm;
  engine_options.inter_node_comm_scale = setup.calibration.inter_node_comm;
  // NCCL's kernels hold SMs while they run: the compute they overlap runs on the rest.
  engine_options.collectives_hold_sms = setup.collective_costs == simulator::CollectiveCosts::Nccl;
  // One simulated replica: its collectives' messages by class too (the rest are inferred).
  engine_options.symmetric_collectives = step.symmetry != Symmetry::None;
  const bool async = !step.microbatch_done.empty();
  // The steady state is measured between markers: their end times, not the links' busy intervals
  // (one per message, which at thousands of replicas would not fit in memory).
  if (async) engine_options.record_task_times = true;
  r.result = simulator::Engine(cluster, engine_options).run(step.graph);
  r.simulated = true;

  // Asynchronous pipelines never flush: the step is micro x the steady-state time per
  // micro-batch, measured over `micro` of the micro + 2 mp simulated micro-batches: those after the
  // pipeline's fill (mp) and before its drain (the last mp, where no forwards follow and the
  // streams free up: with communication slower than the compute, the drain's pace is not the
  // pipeline's). Per-device busy times are scaled to `micro` micro-batches.
  const auto k = static_cast<std::size_t>(setup.strategy.micro);
  const auto streams = static_cast<std::size_t>(step.graph.streams_per_device());
  double scale = 1.0;
  auto scaled = [&](TimeNs t) { return static_cast<TimeNs>(static_cast<double>(t) * scale + 0.5); };
  if (async) {
    const auto& done = step.microbatch_done;
    const auto fill = static_cast<std::size_t>(setup.strategy.mp);
    r.step_time = r.result.timeline[static_cast<std::size_t>(done[fill - 1 + k])].end -
                  r.result.timeline[static_cast<std::size_t>(done[fill - 1])].end;
    scale = static_cast<double>(k) / static_cast<double>(step.simulated_microbatches);
    // Every simulated micro-batch puts the same tasks on each in-order stream, so in steady state a
    // stream does one micro-batch's share per period: the step is at least the busiest stream's
    // share of `micro`. A finite run can read faster between its markers: with a communication
    // stream slower than the compute, every micro-batch's reduce-scatter queues before the first
    // all-gather (ZeRO-1), and the markers, which wait for the all-gathers, come at their pace alone.
    for (hardware::DeviceId d : step.simulated_devices)
      for (std::size_t i = 0; i < streams; ++i)
        r.step_time = std::max(r.step_time, scaled(r.result.stream_busy[static_cast<std::size_t>(d) * streams + i]));
    // A loader slower than the pipeline sets its pace: one micro-batch per load. The window can
    // end before its backlog shows (the last micro-batches have no later forwards to wait behind).
    if (setup.data_loading.enabled)
      for (const auto& micro : step.microbatches) {
        TimeNs loads = 0;
        for (std::size_t i = 0; i < k; ++i) loads += setup.data_loading.load_time(micro[i % micro.size()]);
        r.step_time = std::max(r.step_time, loads);
      }
  } else {
    r.step_time = r.result.step_time;
  }
  // A calibrated per-step overhead (framework, launches, logging) idles every device once.
  const TimeNs overhead = setup.calibration.step_overhead_ns();
  r.step_time += overhead;
  r.step_overhead = overhead;
  TimeNs busiest = 0;
  for (hardware::DeviceId d : step.simulated_devices) {
    const simulator::DeviceStats& s = r.result.devices[static_cast<std::size_t>(d)];
    DeviceReport rep = base_report(cluster, step.roles[static_cast<std::size_t>(d)]);
    rep.compute = scaled(s.compute_busy);
    rep.comm = scaled(s.comm_busy);
    rep.exposed_comm = scaled(s.exposed_comm);
    // Asynchronous: the averages above include the fill and the drain, where the collectives run
    // with no compute beside them; in steady state a period holds no more than step - compute.
    if (async) rep.exposed_comm = std::min(rep.exposed_comm, std::max<TimeNs>(0, r.step_time - rep.compute));
    for (std::size_t i = 0; i < rep.stream_busy.size() && i < streams; ++i)
      rep.stream_busy[i] = scaled(r.result.stream_busy[static_cast<std::size_t>(d) * streams + i]);
    rep.idle = async ? std::max<TimeNs>(0, r.step_time - rep.compute - rep.exposed_comm) : s.idle + overhead;
    rep.peak_memory = s.peak_memory;
    rep.breakdown = s.peak_breakdown;
    busiest = std::max(busiest, rep.compute + rep.exposed_comm);
    r.devices.push_back(std::move(rep));
  }
  r.throughput = r.step_time > 0 ? static_cast<double>(setup.global_batch) * 1e9 / static_cast<double>(r.step_time) : 0;
  r.bubble_time = std::max<TimeNs>(0, r.step_time - busiest);
  r.bubble_fraction = r.step_time > 0 ? static_cast<double>(r.bubble_time) / static_cast<double>(r.step_time) : 0;
  judge_memory(r);
  return r;
}

nlohmann::json strategy_result_to_json(const StrategyResult& r) {
  using nlohmann::json;
  json j;
  j["schema"] = "parasim.simulation/1";
  j["model"] = r.model;
  j["cluster"] = r.cluster;
  j["nodes"] = r.nodes;
  j["strategy"] = to_string(r.strategy);
  j["global_batch"] = r.global_batch;
  j["dtype"] = models::to_string(r.dtype);
  j["optimizer"] = parasim::to_string(r.optimizer);
  j["granularity"] = to_string(r.lowered.granularity);
  j["symmetry"] = to_string(r.lowered.symmetry);
  j["collectives"] = std::string(simulator::to_string(r.collectives));
  j["simulated"] = r.simulated;
  j["step_time_ms"] = ns_to_ms(r.step_time);
  j["step_time_ns"] = r.step_time;
  j["throughput_samples_per_s"] = r.throughput;
  j["bubble_ms"] = ns_to_ms(r.bubble_time);
  j["bubble_fraction"] = r.bubble_fraction;
  j["feasible"] = r.feasible;
  if (!r.feasible) j["infeasible_reason"] = r.infeasible_reason;
  j["cost_source"] = r.cost_source;
  // What the step includes besides the simulated kernels and transfers, stated even when off.
  j["step_overhead_ms"] = ns_to_ms(r.step_overhead);
  j["step_overhead"] = r.step_overhead_source;
  j["collective_sms"] = r.collective_sms;
  j["data_loading"] = data_loading_to_json(r.data_loading);
  if (r.data_loading.enabled) j["data_loading"]["load_ms_per_step"] = ns_to_ms(r.data_load_time);
  j["grad_accumulation"] = describe(r.grad_accumulation, r.dtype);
  j["cost_counts"] = {{"measured", r.cost_counts.measured},
                      {"scaled", r.cost_counts.scaled},
                      {"roofline", r.cost_counts.roofline}};
  j["replica_batch"] = r.lowered.replica_batch;
  j["microbatches"] = r.lowered.microbatches;
  j["sequence_parallel"] = r.lowered.sequence_parallel;
  j["tasks"] = r.lowered.graph.size();
  // What was simulated and what was inferred from it by symmetry.
  j["simulated_devices"] = r.devices.size();
  j["inferred_devices"] = r.lowered.roles.size() - std::min(r.lowered.roles.size(), r.devices.size());
  j["collective_messages_simulated"] = r.result.collective_messages;
  j["collective_messages_inferred"] = r.result.collective_messages_inferred;
  json devices = json::array();
  for (const DeviceReport& d : r.devices) {
    devices.push_back({{"device", d.device},
                       {"kind", d.kind},
                       {"replica", d.replica},
                       {"stage", d.stage},
                       {"tp_rank", d.tp_rank},
                       {"compute_ms", ns_to_ms(d.compute)},
                       {"comm_ms", ns_to_ms(d.comm)},
                       {"exposed_comm_ms", ns_to_ms(d.exposed_comm)},
                       {"idle_ms", ns_to_ms(d.idle)},
                       {"peak_memory_bytes", d.peak_memory},
                       {"capacity_bytes", d.capacity},
                       {"breakdown",
                        {{"params", d.breakdown.params},
                         {"grads", d.breakdown.grads},
                         {"optimizer", d.breakdown.optimizer},
                         {"activations", d.breakdown.activations},
                         {"other", d.breakdown.other}}}});
  }
  j["devices"] = std::move(devices);
  return j;
}

}  // namespace parasim::strategies
