#include "parasim/reports/report_data.hpp"

#include <array>

namespace parasim::reports {

namespace {

constexpr std::array<std::string_view, 4> kSeriesKindNames = {"dp", "best-hybrid", "mp", "other"};
constexpr std::array<std::string_view, kGanttCategories> kCategoryNames = {
    "forward", "backward", "update", "recompute", "communication", "other"};

void take_if_empty(std::string& mine, std::string& theirs) {
  if (mine.empty()) mine = std::move(theirs);
}

template <typename T>
void append(std::vector<T>& to, std::vector<T>& from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

}  // namespace

std::string_view to_string(SeriesKind k) { return kSeriesKindNames[static_cast<std::size_t>(k)]; }

std::optional<SeriesKind> parse_series_kind(std::string_view s) {
  for (std::size_t i = 0; i < kSeriesKindNames.size(); ++i)
    if (kSeriesKindNames[i] == s) return static_cast<SeriesKind>(i);
  return std::nullopt;
}

std::string_view to_string(GanttCategory c) { return kCategoryNames[static_cast<std::size_t>(c)]; }

std::optional<GanttCategory> parse_gantt_category(std::string_view s) {
  for (std::size_t i = 0; i < kCategoryNames.size(); ++i)
    if (kCategoryNames[i] == s) return static_cast<GanttCategory>(i);
  return std::nullopt;
}

std::int64_t fill_speedups(std::vector<ScalingSeries>& series) {
  // The baseline is the fewest-GPU point anywhere; among equals the first one found, so the
  // result does not depend on anything but the input order.
  const ScalingPoint* base = nullptr;
  for (const ScalingSeries& s : series)
    for (const ScalingPoint& p : s.points)
      if (p.gpus > 0 && p.time_to_train_s > 0 && (base == nullptr || p.gpus < base->gpus)) base = &p;
  if (base == nullptr) return 0;
  const double base_work = static_cast<double>(base->gpus) * base->time_to_train_s;
  for (ScalingSeries& s : series)
    for (ScalingPoint& p : s.points)
      if (p.speedup == 0 && p.time_to_train_s > 0) p.speedup = base_work / p.time_to_train_s;
  return base->gpus;
}

bool Assumptions::empty() const {
  return cost_source.empty() && efficiency_model.empty() && efficiency_source.empty() && cluster.empty() &&
         dataset.empty() && extra.empty();
}

bool ReportData::empty() const {
  return scaling.empty() && breakdown.empty() && throughput.empty() && gantt.empty() && validation.empty() &&
         memory.empty();
}

void ReportData::merge(ReportData other) {
  take_if_empty(title, other.title);
  take_if_empty(model, other.model);
  // One chart shows one step: a second timeline would interleave two unrelated runs.
  if (gantt.empty()) {
    gantt = std::move(other.gantt);
    gantt_title = std::move(other.gantt_title);
  }
  take_if_empty(assumptions.cost_source, other.assumptions.cost_source);
  take_if_empty(assumptions.efficiency_model, other.assumptions.efficiency_model);
  take_if_empty(assumptions.efficiency_source, other.assumptions.efficiency_source);
  take_if_empty(assumptions.cluster, other.assumptions.cluster);
  take_if_empty(assumptions.dataset, other.assumptions.dataset);
  for (auto& kv : other.assumptions.extra) {
    bool known = false;
    for (const auto& mine : assumptions.extra) known = known || mine.first == kv.first;
    if (!known) assumptions.extra.push_back(std::move(kv));
  }
  append(scaling, other.scaling);
  append(breakdown, other.breakdown);
  append(throughput, other.throughput);
  append(validation, other.validation);
  append(memory, other.memory);
}

}  // namespace parasim::reports
