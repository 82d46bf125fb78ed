// The plain data a report is drawn from. Nothing here knows how the numbers were computed:
// the projection, the planner, the simulator, `parasim validate` and hand-written JSON all
// fill the same structs (see step_adapters.hpp and results_json.hpp), so reports/ never
// reaches back upstream.
//
// Units are in the field names: *_ms and *_s are doubles, *_bytes / Bytes are exact integers,
// Gantt times are the simulator's integer nanoseconds. CSV files repeat these numbers exactly.
//
// Example:
//   using namespace parasim::reports;
//   ReportData d;
//   d.title = "Inception-V3 on dgx1-v100";
//   d.assumptions.cluster = "dgx1-v100 (8 x V100-SXM2-32GB per node)";
//   d.scaling.push_back({.name = "DP only", .kind = SeriesKind::DataParallel,
//                        .points = {{.gpus = 1, .time_to_train_s = 36'000, .step_time_ms = 120},
//                                   {.gpus = 8, .time_to_train_s = 5'400, .step_time_ms = 140}}});
//   d.breakdown.push_back({.strategy = "dp=8", .compute_ms = 100, .exposed_comm_ms = 30, .idle_ms = 10});
//   write_report(d, "out/report");   // report_writer.hpp
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parasim/common/units.hpp"

namespace parasim::reports {

// ------------------------------------------------------------------ scaling (plots 1 and 2)

/// What a series stands for; decides its emphasis and colour in the plots.
enum class SeriesKind : std::uint8_t { DataParallel, BestHybrid, ModelParallel, Other };
std::string_view to_string(SeriesKind k);  // "dp", "best-hybrid", "mp", "other"
std::optional<SeriesKind> parse_series_kind(std::string_view s);

struct ScalingPoint {
  std::int64_t gpus = 0;
  double time_to_train_s = 0;
  double step_time_ms = 0;
  std::int64_t global_batch = 0;
  double epochs = 0;
  double speedup = 0;    // time-to-train speed-up over one GPU; 0 = not given (filled in, see below)
  std::string strategy{};  // the split used at this GPU count, e.g. "dp=4,mp=2" (may be empty)
};

struct ScalingSeries {
  std::string name{};  // legend text: "DP only", "best hybrid", "MP=2"
  SeriesKind kind = SeriesKind::Other;
  std::vector<ScalingPoint> points{};  // any order; plots sort by gpus
};

/// Fills every speedup that is 0 from the time to train of the smallest-GPU point over all
/// series (one GPU trains the same whatever the split): speedup = base_gpus * T_base / T.
/// Returns base_gpus (1 when a one-GPU point exists), or 0 when there is no usable point.
std::int64_t fill_speedups(std::vector<ScalingSeries>& series);

// ------------------------------------------------------------------ per-step breakdown (plot 3)

/// Where one step's time goes, averaged over the devices, so the four parts add up to the step
/// time: compute + exposed_comm + bubble + idle. The bubble is the pipeline's share of idle.
struct BreakdownRow {
  std::string strategy{};
  double compute_ms = 0;
  double exposed_comm_ms = 0;
  double bubble_ms = 0;
  double idle_ms = 0;
  double total_ms() const { return compute_ms + exposed_comm_ms + bubble_ms + idle_ms; }
};

// ------------------------------------------------------------------ throughput per strategy (plot 3b)

/// One simulated step of one strategy: how many samples per second it trains. Rows compare
/// strategies (or clusters) for the same model; speed-ups are over the first row.
struct ThroughputRow {
  std::string strategy{};
  std::string cluster{};          // may be empty
  std::int64_t gpus = 0;          // devices the strategy uses; 0 = not given
  std::int64_t global_batch = 0;  // samples per optimizer step; 0 = not given
  double step_time_ms = 0;
  double samples_per_s = 0;
  bool feasible = true;           // false: does not fit in memory (still drawn, labelled)
};

// ------------------------------------------------------------------ one step's timeline (plot 4)

enum class GanttCategory : std::uint8_t { Forward, Backward, Update, Recompute, Communication, Other };
inline constexpr int kGanttCategories = 6;
std::string_view to_string(GanttCategory c);  // "forward", "backward", ..., "communication", "other"
std::optional<GanttCategory> parse_gantt_category(std::string_view s);

struct GanttBar {
  int device = 0;
  int lane = 0;  // the device's stream: 0 compute, 1 communication, more if the graph uses them
  TimeNs start = 0;
  TimeNs end = 0;
  GanttCategory category = GanttCategory::Other;
  std::string label{};  // task name
};

// ------------------------------------------------------------------ projected vs measured (plot 5)

struct ValidationPoint {
  std::string label{};  // "resnet50 dp=2 (cuda)"
  double projected_ms = 0;
  double measured_ms = 0;
  /// false: the run's kernels were stand-ins (validate's "measured": false), so measured equals
  /// projected by construction; shown as "not measured" and left out of the error statistics.
  bool measured = true;
  /// (projected - measured) / measured in percent: positive = the projection was too slow.
  double error_pct() const { return measured_ms != 0 ? (projected_ms - measured_ms) / measured_ms * 100.0 : 0.0; }
};

// ------------------------------------------------------------------ peak memory (plot 6)

struct MemoryParts {
  Bytes params = 0;
  Bytes grads = 0;
  Bytes optimizer = 0;
  Bytes activations = 0;
  Bytes other = 0;
  Bytes total() const { return params + grads + optimizer + activations + other; }
  bool operator==(const MemoryParts&) const = default;
};

struct MemoryRow {
  std::string strategy{};
  int device = 0;          // -1: the strategy's fullest device (a source that only knows that one)
  Bytes peak = 0;
  Bytes capacity = 0;      // 0 = unknown
  MemoryParts breakdown{};   // at the peak; may be all zero when the source only knows the peak
};

// ------------------------------------------------------------------ what the numbers rest on

/// Printed as a table at the top of the report. Empty fields are shown as "not given".
struct Assumptions {
  std::string cost_source{};        // "roofline (V100 spec sheet)" / "measured: profile.json (cuda)"
  std::string efficiency_model{};   // "critical-batch E_min=... B_crit=..."
  std::string efficiency_source{};  // the paper or file it comes from
  std::string cluster{};
  std::string dataset{};
  std::vector<std::pair<std::string, std::string>> extra{};  // anything else worth stating, in order
  bool empty() const;
};

struct ReportData {
  std::string title{};  // "Inception-V3 on dgx1-v100"; the report falls back to "parasim report"
  std::string model{};
  Assumptions assumptions{};
  std::vector<ScalingSeries> scaling{};
  std::vector<BreakdownRow> breakdown{};
  std::vector<ThroughputRow> throughput{};
  std::string gantt_title{};  // what step the Gantt chart shows, e.g. "dp=2,mp=2 on dgx1-v100"
  std::vector<GanttBar> gantt{};
  std::vector<ValidationPoint> validation{};
  std::vector<MemoryRow> memory{};

  bool empty() const;
  /// Appends `other`'s rows; scalar fields (title, model, assumptions) are taken from `other`
  /// where this one has none, so several result files combine into one report. The Gantt
  /// chart shows one step, so `other`'s timeline is taken only if this one has none.
  void merge(ReportData other);
};

}  // namespace parasim::reports
