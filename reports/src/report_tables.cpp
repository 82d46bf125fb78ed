#include "report_tables.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "parasim/common/units.hpp"
#include "parasim/reports/plots.hpp"

namespace parasim::reports::detail {

namespace {

constexpr std::size_t kMaxTableRows = 200;  // a table longer than this helps nobody; the CSV has all

/// 3 significant digits, never scientific for ordinary magnitudes: "0.123", "12.3", "1234".
std::string num(double v) {
  char buf[64];
  const double a = std::fabs(v);
  if (a >= 100 || v == 0)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else if (a >= 10)
    std::snprintf(buf, sizeof buf, "%.1f", v);
  else if (a >= 1)
    std::snprintf(buf, sizeof buf, "%.2f", v);
  else
    std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string percent(double part, double whole) { return whole > 0 ? num(part / whole * 100.0) + " %" : "-"; }

std::string signed_percent(double v) {
  std::string out = v > 0 ? "+" : "";  // not `"+" + std::string`: GCC 12 warns falsely (-Wrestrict)
  out += num(v);
  out += " %";
  return out;
}

std::string seconds_text(double s) { return s > 0 ? format_time(s_to_ns(s)) : "-"; }

std::string bytes_text(Bytes b) { return b > 0 ? format_bytes(b) : "-"; }

std::string given(const std::string& s) { return s.empty() ? "not given" : s; }

void cap_rows(TextTable& t) {
  if (t.rows.size() <= kMaxTableRows) return;
  t.note = "First " + std::to_string(kMaxTableRows) + " of " + std::to_string(t.rows.size()) +
           " rows; the CSV file has all of them.";
  t.rows.resize(kMaxTableRows);
}

}  // namespace

TextTable assumptions_table(const ReportData& d) {
  TextTable t{"What these numbers rest on", {"assumption", "value"}, {false, false}, {}, {}};
  const Assumptions& a = d.assumptions;
  if (!d.model.empty()) t.rows.push_back({"model", d.model});
  t.rows.push_back({"cost source", given(a.cost_source)});
  t.rows.push_back({"statistical efficiency model", given(a.efficiency_model)});
  t.rows.push_back({"efficiency model source", given(a.efficiency_source)});
  t.rows.push_back({"cluster", given(a.cluster)});
  t.rows.push_back({"dataset", given(a.dataset)});
  for (const auto& [k, v] : a.extra) t.rows.push_back({k, v});
  return t;
}

std::vector<TextTable> scaling_tables(const ReportData& d) {
  std::vector<ScalingSeries> series = d.scaling;
  fill_speedups(series);
  TextTable all{"Every projected point",
                {"series", "GPUs", "strategy", "step time (ms)", "global batch", "epochs", "time to train",
                 "speed-up"},
                {false, true, false, true, true, true, true, true},
                {},
                {}};
  for (const ScalingSeries& s : series) {
    std::vector<ScalingPoint> pts = s.points;
    std::stable_sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.gpus < b.gpus; });
    for (const ScalingPoint& p : pts)
      all.rows.push_back({s.name, std::to_string(p.gpus), p.strategy.empty() ? "-" : p.strategy, num(p.step_time_ms),
                          p.global_batch > 0 ? std::to_string(p.global_batch) : "-", num(p.epochs),
                          seconds_text(p.time_to_train_s), p.speedup > 0 ? num(p.speedup) + "×" : "-"});
  }
  cap_rows(all);

  // DP only against the best hybrid: the answer to "is a hybrid split worth it here?"
  std::map<std::int64_t, std::pair<const ScalingPoint*, const ScalingPoint*>> by_gpus;
  for (const ScalingSeries& s : series)
    for (const ScalingPoint& p : s.points) {
      if (s.kind == SeriesKind::DataParallel) by_gpus[p.gpus].first = &p;
      if (s.kind == SeriesKind::BestHybrid) by_gpus[p.gpus].second = &p;
    }
  TextTable gain{"DP only against the best hybrid",
                 {"GPUs", "DP only", "best hybrid", "hybrid strategy", "gain"},
                 {true, true, true, false, true},
                 {},
                 {}};
  for (const auto& [gpus, pair] : by_gpus) {
    const auto [dp, hy] = pair;
    if (dp == nullptr || hy == nullptr) continue;
    gain.rows.push_back({std::to_string(gpus), seconds_text(dp->time_to_train_s), seconds_text(hy->time_to_train_s),
                         hy->strategy.empty() ? "-" : hy->strategy,
                         dp->time_to_train_s > 0
                             ? signed_percent((dp->time_to_train_s - hy->time_to_train_s) / dp->time_to_train_s * 100.0)
                             : "-"});
  }
  std::vector<TextTable> out;
  if (!gain.rows.empty()) {
    gain.note =
        "gain = (T_dp - T_hybrid) / T_dp, as parasim project reports it: positive when the hybrid trains faster.";
    out.push_back(std::move(gain));
  }
  if (!all.rows.empty()) out.push_back(std::move(all));
  return out;
}

std::vector<TextTable> throughput_tables(const ReportData& d) {
  TextTable t{"",
              {"strategy", "cluster", "GPUs", "global batch", "step (ms)", "samples/s", "speed-up", "fits"},
              {false, false, true, true, true, true, true, false},
              {},
              {}};
  for (std::size_t i = 0; i < d.throughput.size(); ++i) {
    const ThroughputRow& r = d.throughput[i];
    const double speedup = throughput_speedup(d, i);
    t.rows.push_back({r.strategy, r.cluster.empty() ? "-" : r.cluster, r.gpus > 0 ? std::to_string(r.gpus) : "-",
                      r.global_batch > 0 ? std::to_string(r.global_batch) : "-", num(r.step_time_ms),
                      num(r.samples_per_s), speedup > 0 ? num(speedup) + "×" : "-", r.feasible ? "yes" : "NO"});
  }
  if (!d.throughput.empty())
    t.note = "speed-up = samples/s over the first row's (" + d.throughput.front().strategy + ").";
  cap_rows(t);
  return {t};
}

std::vector<TextTable> breakdown_tables(const ReportData& d) {
  TextTable t{"",
              {"strategy", "step (ms)", "compute (ms)", "exposed comm (ms)", "pipeline bubble (ms)", "idle (ms)",
               "compute share"},
              {false, true, true, true, true, true, true},
              {},
              {}};
  for (const BreakdownRow& r : d.breakdown)
    t.rows.push_back({r.strategy, num(r.total_ms()), num(r.compute_ms), num(r.exposed_comm_ms), num(r.bubble_ms),
                      num(r.idle_ms), percent(r.compute_ms, r.total_ms())});
  cap_rows(t);
  return {t};
}

std::vector<TextTable> gantt_tables(const ReportData& d) {
  if (d.gantt.empty()) return {};
  struct LaneStats {
    std::int64_t tasks = 0;
    TimeNs busy = 0;
  };
  std::map<std::pair<int, int>, LaneStats> lanes;
  TimeNs t0 = d.gantt.front().start, t1 = d.gantt.front().end;
  for (const GanttBar& b : d.gantt) {
    LaneStats& s = lanes[{b.device, b.lane}];
    ++s.tasks;
    s.busy += b.end - b.start;
    t0 = std::min(t0, b.start);
    t1 = std::max(t1, b.end);
  }
  TextTable t{"", {"device", "stream", "tasks", "busy (ms)", "busy share"}, {true, false, true, true, true}, {}, {}};
  for (const auto& [lane, s] : lanes)
    t.rows.push_back({std::to_string(lane.first),
                      lane.second == 0 ? "compute" : lane.second == 1 ? "comm" : std::to_string(lane.second),
                      std::to_string(s.tasks), num(ns_to_ms(s.busy)),
                      percent(static_cast<double>(s.busy), static_cast<double>(t1 - t0))});
  t.note = "Step span " + format_time(t1 - t0) + ". Busy is the sum of task durations on the stream.";
  cap_rows(t);
  return {t};
}

std::vector<TextTable> validation_tables(const ReportData& d) {
  TextTable t{"", {"run", "projected (ms)", "measured (ms)", "error"}, {false, true, true, true}, {}, {}};
  for (const ValidationPoint& v : d.validation)
    t.rows.push_back({v.label, num(v.projected_ms), num(v.measured_ms),
                      !v.measured ? "not measured" : v.measured_ms != 0 ? signed_percent(v.error_pct()) : "-"});
  t.note = "error = (projected - measured) / measured; positive means the projection was slower than the run. "
           "\"not measured\": the run's kernels were stand-ins spinning for their projected time.";
  cap_rows(t);
  return {t};
}

std::vector<TextTable> memory_tables(const ReportData& d) {
  TextTable t{"",
              {"strategy", "device", "peak", "capacity", "fits", "parameters", "gradients", "optimizer", "activations",
               "other"},
              {false, true, true, true, false, true, true, true, true, true},
              {},
              {}};
  for (const MemoryRow& r : d.memory) {
    const MemoryParts& m = r.breakdown;
    t.rows.push_back({r.strategy, r.device < 0 ? "fullest" : std::to_string(r.device), bytes_text(r.peak),
                      bytes_text(r.capacity),
                      r.capacity <= 0        ? "?"
                      : r.peak <= r.capacity ? "yes"
                                             : "NO",
                      bytes_text(m.params), bytes_text(m.grads), bytes_text(m.optimizer), bytes_text(m.activations),
                      bytes_text(m.other)});
  }
  cap_rows(t);
  return {t};
}

std::vector<TextTable> tables_for(const std::string& stem, const ReportData& d) {
  if (stem == "time_to_train") return scaling_tables(d);
  if (stem == "throughput") return throughput_tables(d);
  if (stem == "breakdown") return breakdown_tables(d);
  if (stem == "gantt") return gantt_tables(d);
  if (stem == "validation") return validation_tables(d);
  if (stem == "memory") return memory_tables(d);
  return {};
}

}  // namespace parasim::reports::detail
