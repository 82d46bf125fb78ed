// Results as JSON: the parasim.results/1 bundle that a report is drawn from (and that every
// report writes back out as results.json), plus readers for what the other commands print,
// recognised by their shape so `parasim report --from FILE` takes any of them:
//
//   parasim.results/1        {"schema", "title", "model", "assumptions": {...}, "projection": [series],
//                             "breakdown": [...], "timeline": {"title", "bars": [...]} | Chrome trace,
//                             "validation": [...], "memory": [...]}        (docs/reports.md has every field)
//   parasim.step_result/1    `parasim simulate --taskgraph --json`: per-device breakdown, peak memory
//   parasim.simulation/1     `parasim simulate --model --json`: the same for a strategy of a model
//   Chrome trace             `parasim simulate --trace` / Kineto: {"traceEvents": [...]} -> Gantt bars
//   validate output          objects with projected_ms + measured_ms (one, an array of them, or an
//                            object holding such an array, e.g. `validate --suite ci --json`)
//   parasim.projection/1     `parasim project --json`: DP-only and best-hybrid series, the fullest
//                            device's memory per side, the projection's assumptions
//   plan rows                `parasim plan --json`: [{strategy, verdict, step_time_ms, compute_ms,
//                            exposed_comm_ms, bubble_fraction, peak_memory_bytes, ...}], best first
//
// Every reader error is an InputError naming the file and the JSON path:
//   "run.json: $.validation[2].measured_ms: expected a number, found string \"12\""
//
// Example:
//   ReportData d = load_results_file("project.json");
//   d.merge(load_results_file("validate.json"));
//   write_file_atomic("results.json", dump_json(results_to_json(d)));
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "parasim/reports/report_data.hpp"

namespace parasim::reports {

inline constexpr const char* kResultsSchema = "parasim.results/1";
/// A plan lists its rows best first; the report shows this many of them.
inline constexpr std::size_t kMaxPlanCandidates = 12;

/// The bundle; deterministic (same data -> same bytes through dump_json).
nlohmann::json results_to_json(const ReportData& d);

/// Reads any of the shapes above. `file` names the source in error messages.
ReportData results_from_json(const nlohmann::json& j, const std::string& file);
/// read_json_file + results_from_json.
ReportData load_results_file(const std::filesystem::path& path);
/// Which of the shapes above `j` is ("parasim.results/1", "Chrome trace", ...), or "" if none.
std::string results_shape(const nlohmann::json& j);

}  // namespace parasim::reports
