// Readers shared by the parasim.results/1 bundle and the other commands' outputs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "parasim/common/json_io.hpp"
#include "parasim/reports/report_data.hpp"

namespace parasim::reports::detail {

/// A field that may be missing or null.
std::optional<JsonField> optional_field(const JsonField& obj, const std::string& key);
std::string optional_string(const JsonField& obj, const std::string& key);
double optional_double(const JsonField& obj, const std::string& key, double min = -1e300);
std::int64_t optional_int(const JsonField& obj, const std::string& key, std::int64_t min = INT64_MIN,
                          std::int64_t max = INT64_MAX);

/// Bounds that keep hostile numbers from overflowing sums: a byte count up to 1 EiB (five of
/// them still fit in 64 bits), a time up to ~36 years in ns, a device or stream id up to 2^24.
inline constexpr std::int64_t kMaxBytes = std::int64_t{1} << 60;
inline constexpr std::int64_t kMaxTimeNs = std::int64_t{1} << 60;
inline constexpr std::int64_t kMaxId = std::int64_t{1} << 24;
/// A string as is; an object by its "name" / "description" / "model"; anything else as compact JSON.
std::string describe_value(const JsonField& f);

std::vector<ValidationPoint> read_validation_points(const JsonField& array);
ValidationPoint read_validation_point(const JsonField& obj);
std::vector<GanttBar> read_gantt_bars(const JsonField& array);
std::vector<GanttBar> read_chrome_trace(const JsonField& trace);
BreakdownRow read_breakdown_row(const JsonField& obj, std::string strategy);
MemoryParts read_memory_parts(const JsonField& obj);

/// True for an object that has both projected_ms and measured_ms (one validate run).
bool is_validation_run(const nlohmann::json& j);
/// True for one row of `parasim plan --json` (strategy, verdict, step_time_ms).
bool is_plan_row(const nlohmann::json& j);

ReportData read_step_result(const JsonField& root);   // parasim.step_result/1
ReportData read_simulation(const JsonField& root);    // parasim.simulation/1
ReportData read_projection(const JsonField& root);    // parasim.projection/1
ReportData read_plan(const JsonField& root);          // a list of plan rows
ReportData read_validation_output(const JsonField& root);

}  // namespace parasim::reports::detail
