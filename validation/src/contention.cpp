// Busy-thread counts over a simulated timeline and the slowdowns they imply (contention.hpp).
#include "contention.hpp"

#include <algorithm>
#include <cmath>

#include "parasim/common/index.hpp"

namespace parasim::validation::detail {

using simulator::TaskId;
using simulator::TaskKind;

namespace {

// The busy-thread count as a step function: breakpoints and the integral up to each.
class BusyProfile {
 public:
  BusyProfile(const simulator::TaskGraph& g, const std::vector<simulator::TaskTiming>& tl) {
    std::vector<std::pair<TimeNs, int>> edges;
    for (TaskId t = 0; t < static_cast<TaskId>(g.size()); ++t) {
      const auto& tt = tl[ix(t)];
      if (tt.end <= tt.start) continue;
      int w = 0;
      switch (g.kind(t)) {
        case TaskKind::Compute:
        case TaskKind::Transfer: w = 1; break;
        case TaskKind::Collective: w = static_cast<int>(g.group_devices(g.group(t)).size()); break;
        case TaskKind::Marker: break;
      }
      if (w == 0) continue;
      edges.push_back({tt.start, w});
      edges.push_back({tt.end, -w});
    }
    std::sort(edges.begin(), edges.end());
    int level = 0;
    double area = 0;
    for (std::size_t i = 0; i < edges.size(); ++i) {
      if (!at_.empty()) area += static_cast<double>(level) * static_cast<double>(edges[i].first - at_.back());
      level += edges[i].second;
      at_.push_back(edges[i].first);
      area_.push_back(area);
      level_.push_back(level);  // level from this breakpoint on
    }
  }

  /// Integral of the busy count from the first breakpoint to t.
  double integral(TimeNs t) const {
    if (at_.empty() || t <= at_.front()) return 0;
    const auto it = std::upper_bound(at_.begin(), at_.end(), t);
    const std::size_t i = static_cast<std::size_t>(it - at_.begin()) - 1;  // last breakpoint <= t
    return area_[i] + static_cast<double>(level_[i]) * static_cast<double>(t - at_[i]);
  }

 private:
  std::vector<TimeNs> at_;
  std::vector<double> area_;
  std::vector<int> level_;
};

}  // namespace

std::vector<double> busy_threads_during_compute(const simulator::TaskGraph& graph,
                                                const std::vector<simulator::TaskTiming>& timeline) {
  const BusyProfile profile(graph, timeline);
  std::vector<double> busy(graph.size(), 0.0);
  for (TaskId t = 0; t < static_cast<TaskId>(graph.size()); ++t) {
    if (graph.kind(t) != TaskKind::Compute) continue;
    const auto& tt = timeline[ix(t)];
    if (tt.end <= tt.start) {
      busy[ix(t)] = 1.0;
      continue;
    }
    const double avg = (profile.integral(tt.end) - profile.integral(tt.start)) / static_cast<double>(tt.end - tt.start);
    busy[ix(t)] = std::max(1.0, avg);
  }
  return busy;
}

std::map<std::string, double> contention_slowdown(const simulator::TaskGraph& graph,
                                                  const std::vector<simulator::TaskTiming>& timeline,
                                                  const executor::HostCalibration& calibration,
                                                  const std::function<std::string(TaskId)>& op_name) {
  const std::vector<double> busy = busy_threads_during_compute(graph, timeline);
  std::map<std::string, std::pair<double, double>> acc;  // name -> (sum of weight x slowdown, sum of weights)
  for (TaskId t = 0; t < static_cast<TaskId>(graph.size()); ++t) {
    if (graph.kind(t) != TaskKind::Compute || graph.model_op(t) < 0) continue;
    const double w = static_cast<double>(std::max<TimeNs>(timeline[ix(t)].end - timeline[ix(t)].start, 1));
    auto& a = acc[op_name(t)];
    a.first += w / concurrent_speed(calibration, busy[ix(t)]);
    a.second += w;
  }
  std::map<std::string, double> out;
  for (const auto& [name, a] : acc) out[name] = a.first / a.second;
  return out;
}

TimeNs rt_throttle_stall(TimeNs step, const std::vector<TimeNs>& core_busy, TimeNs runtime, TimeNs period) {
  if (runtime <= 0 || period <= runtime || step <= 0) return 0;
  const double budget = static_cast<double>(runtime) / static_cast<double>(period);
  TimeNs worst = 0;
  for (TimeNs busy : core_busy) {
    if (busy <= 0) continue;
    const double b = static_cast<double>(std::min(busy, step));
    const double utilisation = b / static_cast<double>(step);
    if (utilisation <= budget) continue;
    const double stalls = std::round(b / static_cast<double>(runtime));
    const double each = static_cast<double>(period) - static_cast<double>(runtime) / utilisation;
    worst = std::max(worst, static_cast<TimeNs>(stalls * each));
  }
  return worst;
}

}  // namespace parasim::validation::detail
