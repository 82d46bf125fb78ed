// The backend-independent run loop: plan, set up, warm up, repeat, summarise.
#include "parasim/executor/executor.hpp"

#include <algorithm>

#include "parasim/common/error.hpp"
#include "parasim/common/index.hpp"
#include "parasim/common/interrupt.hpp"
#include "parasim/common/median.hpp"

namespace parasim::executor {

using simulator::TaskKind;

namespace {

// Total length of the union of intervals.
TimeNs union_length(std::vector<std::pair<TimeNs, TimeNs>>& v) {
  std::sort(v.begin(), v.end());
  TimeNs total = 0, cur_start = 0, cur_end = -1;
  for (const auto& [s, e] : v) {
    if (e <= s) continue;
    if (s > cur_end) {
      if (cur_end > cur_start) total += cur_end - cur_start;
      cur_start = s;
      cur_end = e;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  if (cur_end > cur_start) total += cur_end - cur_start;
  return total;
}

// Length of `a` minus its overlap with the union of `b`.
TimeNs exposed_length(std::vector<std::pair<TimeNs, TimeNs>> a, std::vector<std::pair<TimeNs, TimeNs>> b) {
  std::vector<std::pair<TimeNs, int>> edges;  // +1/-1 sweeps
  for (const auto& [s, e] : a)
    if (e > s) edges.push_back({s, +1}), edges.push_back({e, -1});
  for (const auto& [s, e] : b)
    if (e > s) edges.push_back({s, +2}), edges.push_back({e, -2});
  std::sort(edges.begin(), edges.end());
  int comm = 0, compute = 0;
  TimeNs last = 0, exposed = 0;
  for (const auto& [t, d] : edges) {
    if (comm > 0 && compute == 0) exposed += t - last;
    last = t;
    if (d == 1 || d == -1) comm += d;
    else compute += d / 2;
  }
  return exposed;
}

}  // namespace

OpResolver ops_of_model(const models::Model& model) {
  return [&model](const TaskGraph& g, TaskId t) -> const models::Op* {
    const std::int32_t op = g.model_op(t);
    if (op < 0 || ix(op) >= model.num_ops()) return nullptr;
    return &model.op(static_cast<models::OpId>(op));
  };
}

std::vector<DeviceBusy> device_busy(const TaskGraph& graph, const std::vector<TaskTiming>& timeline) {
  const auto D = ix(graph.num_devices());
  std::vector<std::vector<std::pair<TimeNs, TimeNs>>> compute(D), comm(D);
  for (TaskId t = 0; t < static_cast<TaskId>(graph.size()); ++t) {
    const TaskTiming& tt = timeline[ix(t)];
    if (tt.start < 0 || tt.end < tt.start) continue;
    switch (graph.kind(t)) {
      case TaskKind::Compute: compute[ix(graph.device(t))].push_back({tt.start, tt.end}); break;
      case TaskKind::Transfer: comm[ix(graph.src(t))].push_back({tt.start, tt.end}); break;
      case TaskKind::Collective:
        for (simulator::DeviceId d : graph.group_devices(graph.group(t))) comm[ix(d)].push_back({tt.start, tt.end});
        break;
      case TaskKind::Marker: break;
    }
  }
  std::vector<DeviceBusy> out(D);
  for (std::size_t d = 0; d < D; ++d) {
    out[d].exposed_comm = exposed_length(comm[d], compute[d]);
    out[d].compute_busy = union_length(compute[d]);
    out[d].comm_busy = union_length(comm[d]);
  }
  return out;
}

ExecutionResult run_steps(const TaskGraph& graph, StreamRuntime& runtime, const ExecutionOptions& options) {
  if (options.repetitions < 1)
    throw InputError("executor: repetitions must be >= 1, found " + std::to_string(options.repetitions));
  if (options.warmup < 0) throw InputError("executor: warmup must be >= 0, found " + std::to_string(options.warmup));
  const IssuePlan plan = plan_issue(graph, options.order_durations);
  runtime.setup(graph, plan);

  ExecutionResult r;
  r.runtime = runtime.name();
  r.notes = runtime.notes();
  r.stand_in_tasks = runtime.stand_in_tasks();
  r.waits = plan.waits;
  r.events = static_cast<std::int64_t>(plan.events.size());
  std::vector<std::vector<TaskTiming>> timelines;
  std::vector<TimeNs> launches;
  for (int step = 0; step < options.warmup + options.repetitions; ++step) {
    throw_if_interrupted();  // Ctrl-C between steps (validate's repetitions)
    std::vector<TaskTiming> timeline(graph.size());
    runtime.begin_step();
    issue_step(plan, graph, runtime);
    runtime.finish_step(timeline);
    if (step < options.warmup) continue;
    TimeNs first = INT64_MAX, last = 0;
    for (const TaskTiming& t : timeline) {
      if (t.start < 0) continue;
      first = std::min(first, t.start);
      last = std::max(last, t.end);
    }
    if (first == INT64_MAX) first = 0;
    for (TaskTiming& t : timeline) {
      if (t.start < 0) continue;
      t.start -= first;
      t.end -= first;
    }
    fill_marker_times(graph, timeline);
    launches.push_back(first);
    r.step_times.push_back(last - first);
    timelines.push_back(std::move(timeline));
  }
  r.launch_latency_median = lower_median_ns(launches);
  r.step_median = lower_median_ns(r.step_times);
  r.step_min = *std::min_element(r.step_times.begin(), r.step_times.end());
  r.step_max = *std::max_element(r.step_times.begin(), r.step_times.end());

  r.timeline.resize(graph.size());
  std::vector<TimeNs> starts, ends;
  for (std::size_t t = 0; t < graph.size(); ++t) {
    starts.clear();
    ends.clear();
    for (const auto& tl : timelines) {
      starts.push_back(tl[t].start);
      ends.push_back(tl[t].end);
    }
    r.timeline[t] = {lower_median_ns(starts), lower_median_ns(ends)};
  }
  std::vector<std::vector<DeviceBusy>> per_rep;
  for (const auto& tl : timelines) per_rep.push_back(device_busy(graph, tl));
  r.devices.resize(ix(graph.num_devices()));
  for (std::size_t d = 0; d < r.devices.size(); ++d) {
    std::vector<TimeNs> c, m, x;
    for (const auto& rep : per_rep) {
      c.push_back(rep[d].compute_busy);
      m.push_back(rep[d].comm_busy);
      x.push_back(rep[d].exposed_comm);
    }
    r.devices[d] = {lower_median_ns(c), lower_median_ns(m), lower_median_ns(x)};
  }
  if (options.keep_timelines) r.timelines = std::move(timelines);
  return r;
}

nlohmann::json execution_result_to_json(const ExecutionResult& r) {
  nlohmann::json j;
  j["runtime"] = r.runtime;
  j["step_median_ns"] = r.step_median;
  j["step_min_ns"] = r.step_min;
  j["step_max_ns"] = r.step_max;
  j["step_times_ns"] = r.step_times;
  j["launch_latency_median_ns"] = r.launch_latency_median;
  j["waits_per_step"] = r.waits;
  j["events_per_step"] = r.events;
  nlohmann::json devices = nlohmann::json::array();
  for (const DeviceBusy& d : r.devices)
    devices.push_back(
        {{"compute_busy_ns", d.compute_busy}, {"comm_busy_ns", d.comm_busy}, {"exposed_comm_ns", d.exposed_comm}});
  j["devices"] = devices;
  j["notes"] = r.notes;
  return j;
}

}  // namespace parasim::executor
