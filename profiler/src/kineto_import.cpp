// torch.profiler / Kineto Chrome trace -> parasim profile (see kineto_import.hpp for the rules).
#include "parasim/profiler/kineto_import.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/hardware/device_spec.hpp"

namespace parasim::profiler {

namespace {

enum class EventKind { CpuOp, Runtime, Gpu, FlowStart, Other };

EventKind classify(const std::string& cat, const std::string& ph) {
  if (cat == "ac2g") return ph == "s" ? EventKind::FlowStart : EventKind::Other;
  if (ph != "X") return EventKind::Other;
  if (cat == "cpu_op" || cat == "operator" || cat == "Operator") return EventKind::CpuOp;
  if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime") return EventKind::Runtime;
  if (cat == "kernel" || cat == "Kernel" || cat == "gpu_memcpy" || cat == "Memcpy" || cat == "gpu_memset" ||
      cat == "Memset")
    return EventKind::Gpu;
  return EventKind::Other;
}

struct CpuOp {
  std::string name;
  std::string dims;  // compact JSON of args "Input Dims", "" if absent
  std::string thread;
  TimeNs start = 0, end = 0;
  std::size_t parent = SIZE_MAX;
  std::size_t order = 0;  // position in the trace
};

struct Launch {
  std::string thread;
  TimeNs ts = 0;
};

struct GpuEvent {
  TimeNs dur = 0;
  std::optional<std::int64_t> external_id, correlation;
};

/// Chrome-trace times are microseconds (floating point); durations must not be negative.
/// Bounded so that nanoseconds, start + duration and the sums below stay inside int64: time
/// stamps up to 4e15 us (Kineto may use microseconds since 1970, about 1.7e15 today), single
/// durations up to 1e12 us (11.6 days).
TimeNs us_field_to_ns(const JsonField& f, bool duration) {
  const double us = f.as_double();
  if (duration && us < 0) f.fail("a non-negative duration in microseconds");
  if (duration && us > 1e12) f.fail("a duration of at most 1e12 microseconds (11.6 days)");
  if (!duration && std::abs(us) > 4e15) f.fail("a time stamp within 4e15 microseconds of zero");
  return static_cast<TimeNs>(std::llround(us * 1e3));
}

/// total += part, refusing traces whose GPU time adds up past 2^62 ns (146 years).
void add_gpu_time(TimeNs& total, TimeNs part, const std::string& origin) {
  constexpr TimeNs kMaxTotal = TimeNs{1} << 62;
  if (part > kMaxTotal - total)
    throw InputError(origin +
                     ": $.traceEvents: GPU event durations add up past 2^62 ns (146 years); expected a real trace");
  total += part;
}

std::string id_string(const JsonField& f) {
  if (f.raw().is_string()) return f.raw().get<std::string>();
  if (f.raw().is_number_integer() || f.raw().is_number_unsigned()) return f.raw().dump();
  f.fail("a process or thread id (integer or string)");
}

std::optional<std::int64_t> optional_id(const std::optional<JsonField>& args, const char* key) {
  if (!args) return std::nullopt;
  auto v = args->find(key);
  if (!v || v->raw().is_null()) return std::nullopt;
  return v->as_int();
}

Phase phase_of(const std::string& name) {
  if (name.find("Backward") != std::string::npos || name.rfind("autograd::", 0) == 0) return Phase::BackwardData;
  if (name.rfind("Optimizer.", 0) == 0 || name.find("_foreach_") != std::string::npos ||
      name.find("optimizer") != std::string::npos)
    return Phase::Update;
  return Phase::Forward;
}

/// Parent links by a sweep over each thread's ops sorted by (start, longest first).
void link_parents(std::vector<CpuOp>& ops, std::unordered_map<std::string, std::vector<std::size_t>>& by_thread) {
  for (std::size_t i = 0; i < ops.size(); ++i) by_thread[ops[i].thread].push_back(i);
  for (auto& [thread, idx] : by_thread) {
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
      if (ops[a].start != ops[b].start) return ops[a].start < ops[b].start;
      if (ops[a].end != ops[b].end) return ops[a].end > ops[b].end;
      return ops[a].order < ops[b].order;
    });
    std::vector<std::size_t> stack;
    for (std::size_t i : idx) {
      while (!stack.empty() && ops[stack.back()].end < ops[i].end) stack.pop_back();
      if (!stack.empty()) ops[i].parent = stack.back();
      stack.push_back(i);
    }
  }
}

/// Innermost op on `thread` whose interval contains `t`.
std::optional<std::size_t> innermost_at(const std::vector<CpuOp>& ops,
                                        const std::unordered_map<std::string, std::vector<std::size_t>>& by_thread,
                                        const std::string& thread, TimeNs t) {
  auto it = by_thread.find(thread);
  if (it == by_thread.end()) return std::nullopt;
  const auto& idx = it->second;
  // Last op (in sweep order) starting at or before t, then up the parents until one contains t.
  auto pos = std::upper_bound(idx.begin(), idx.end(), t, [&](TimeNs v, std::size_t i) { return v < ops[i].start; });
  if (pos == idx.begin()) return std::nullopt;
  std::size_t cur = *std::prev(pos);
  while (true) {
    if (ops[cur].start <= t && t <= ops[cur].end) return cur;
    if (ops[cur].parent == SIZE_MAX) break;
    cur = ops[cur].parent;
  }
  // A sibling earlier in the sweep may still contain t if the last one started after it ended.
  for (auto r = std::make_reverse_iterator(pos); r != idx.rend(); ++r)
    if (ops[*r].start <= t && t <= ops[*r].end) return *r;
  return std::nullopt;
}

DeviceInfo device_from_trace(const JsonField& root) {
  DeviceInfo d;
  d.name = "unknown GPU";
  d.kind = "unknown-gpu";
  auto props = root.find("deviceProperties");
  if (!props || !props->is_array() || props->array_size() == 0) return d;
  const JsonField first = props->at(0);
  if (!first.is_object()) return d;
  if (auto name = first.find("name")) {
    d.name = name->as_string();
    std::string stripped = d.name;
    if (stripped.rfind("NVIDIA ", 0) == 0) stripped = stripped.substr(7);
    const auto spec = hardware::find_device_spec(stripped);
    d.kind = spec ? spec->kind : stripped;
  }
  auto major = first.find("computeMajor");
  auto minor = first.find("computeMinor");
  if (major && minor)
    d.compute_capability = std::to_string(major->as_int(0, 100)) + "." + std::to_string(minor->as_int(0, 100));
  return d;
}

}  // namespace

Profile import_kineto_json(const nlohmann::json& doc, const std::string& origin, const KinetoImportOptions& options) {
  const JsonField root(doc, origin, "$");
  if (!root.is_object()) root.fail("a Chrome trace object with \"traceEvents\"");
  const JsonField events = root.at("traceEvents");

  std::vector<CpuOp> ops;
  std::unordered_map<std::int64_t, std::size_t> op_by_external_id;
  std::unordered_map<std::int64_t, Launch> launch_by_correlation;
  std::unordered_map<std::int64_t, Launch> flow_by_correlation;
  std::vector<GpuEvent> gpu;

  for (const JsonField& ev : events.items_of_array()) {
    if (!ev.is_object()) ev.fail("a trace event object");
    auto ph_field = ev.find("ph");
    auto cat_field = ev.find("cat");
    if (!ph_field) continue;  // metadata-free oddities: ignore
    const std::string ph = ph_field->as_string();
    const std::string cat = cat_field ? cat_field->as_string() : std::string();
    const EventKind kind = classify(cat, ph);
    if (kind == EventKind::Other) continue;
    const auto args = ev.find("args");
    if (args && !args->is_object()) args->fail("an object");
    if (kind == EventKind::FlowStart) {
      const std::int64_t id = ev.at("id").as_int();
      flow_by_correlation[id] =
          Launch{id_string(ev.at("pid")) + "/" + id_string(ev.at("tid")), us_field_to_ns(ev.at("ts"), false)};
      continue;
    }
    const TimeNs ts = us_field_to_ns(ev.at("ts"), false);
    const TimeNs dur = us_field_to_ns(ev.at("dur"), true);
    const std::string thread = id_string(ev.at("pid")) + "/" + id_string(ev.at("tid"));
    if (kind == EventKind::CpuOp) {
      const std::string name = ev.at("name").as_string();
      if (name.rfind("ProfilerStep#", 0) == 0) continue;  // the step annotation is not an op
      CpuOp op{name, "", thread, ts, ts + dur, SIZE_MAX, ops.size()};
      if (args)
        if (auto dims = args->find("Input Dims")) op.dims = dims->raw().dump();
      if (auto ext = optional_id(args, "External id")) op_by_external_id.emplace(*ext, ops.size());
      ops.push_back(std::move(op));
    } else if (kind == EventKind::Runtime) {
      if (auto corr = optional_id(args, "correlation")) launch_by_correlation[*corr] = Launch{thread, ts};
    } else {
      gpu.push_back(GpuEvent{dur, optional_id(args, "External id"), optional_id(args, "correlation")});
    }
  }

  std::unordered_map<std::string, std::vector<std::size_t>> by_thread;
  link_parents(ops, by_thread);
  auto top_level = [&](std::size_t i) {
    while (ops[i].parent != SIZE_MAX) i = ops[i].parent;
    return i;
  };

  // GPU time and event count per top-level op instance.
  std::map<std::size_t, std::pair<TimeNs, std::int64_t>> per_instance;
  TimeNs unattributed = 0;
  std::int64_t unattributed_events = 0;
  for (const GpuEvent& g : gpu) {
    std::optional<std::size_t> owner;
    if (g.external_id)
      if (auto it = op_by_external_id.find(*g.external_id); it != op_by_external_id.end()) owner = it->second;
    if (!owner && g.correlation) {
      const Launch* launch = nullptr;
      if (auto it = launch_by_correlation.find(*g.correlation); it != launch_by_correlation.end()) launch = &it->second;
      else if (auto f = flow_by_correlation.find(*g.correlation); f != flow_by_correlation.end()) launch = &f->second;
      if (launch) owner = innermost_at(ops, by_thread, launch->thread, launch->ts);
    }
    if (!owner) {
      add_gpu_time(unattributed, g.dur, origin);
      ++unattributed_events;
      continue;
    }
    auto& slot = per_instance[top_level(*owner)];
    add_gpu_time(slot.first, g.dur, origin);
    slot.second += 1;
  }

  // Group instances by (name, input dims) in order of first appearance.
  struct Group {
    std::string name, dims;
    std::vector<TimeNs> times;
    std::int64_t max_launches = 0;
    std::size_t first_order = SIZE_MAX;
  };
  std::map<std::pair<std::string, std::string>, Group> groups;
  for (const auto& [i, tl] : per_instance) {
    Group& g = groups[{ops[i].name, ops[i].dims}];
    g.name = ops[i].name;
    g.dims = ops[i].dims;
    g.times.push_back(tl.first);
    g.max_launches = std::max(g.max_launches, tl.second);
    g.first_order = std::min(g.first_order, ops[i].order);
  }
  std::vector<const Group*> ordered;
  for (const auto& [key, g] : groups) ordered.push_back(&g);
  std::sort(ordered.begin(), ordered.end(),
            [](const Group* a, const Group* b) { return a->first_order < b->first_order; });

  Profile p;
  p.created = utc_now_iso8601();
  p.command = options.command;
  p.backend = "kineto";
  p.source = CostSource::Imported;
  p.device = device_from_trace(root);
  p.model = options.model;
  p.batch = options.batch;
  p.dtype = options.dtype;
  p.optimizer = Optimizer::Sgd;
  for (const Group* g : ordered) {
    ProfileEntry e;
    e.names = {g->name};
    e.kind = g->name;
    e.signature = "kineto:" + g->name + (g->dims.empty() ? "" : " " + g->dims);
    e.set(phase_of(g->name), summarize(g->times, g->max_launches));
    p.repetitions = std::max<std::int64_t>(p.repetitions, static_cast<std::int64_t>(g->times.size()));
    p.ops.push_back(std::move(e));
  }
  if (unattributed_events > 0) {
    ProfileEntry e;
    e.names = {"(GPU work without a CPU op)"};
    e.kind = "unattributed";
    e.signature = "kineto:unattributed";
    e.set(Phase::Forward, summarize({unattributed}, unattributed_events));
    e.note = "kernels whose launch could not be matched to a cpu_op";
    p.ops.push_back(std::move(e));
  }
  return p;
}

Profile import_kineto_trace(const std::filesystem::path& trace, const KinetoImportOptions& options) {
  return import_kineto_json(read_json_file(trace), trace.string(), options);
}

}  // namespace parasim::profiler
