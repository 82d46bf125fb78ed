// The seam between `parasim report --model M --cluster C --gpus RANGE` and whatever computes
// the projection (strategies/: simulate every split per GPU count, apply the statistical
// efficiency, pick the best). reports/ does not compute; it is handed a ProjectionSource.
//
// Example (what cmd_report.cpp does once the projection exists):
//   ProjectionSource source = [](const ProjectionRequest& r) {
//     return projection_to_report(strategies::project(r.model, r.cluster, r.gpus, ...));
//   };
//   ReportData d = source({.model = "inception_v3", .cluster = "dgx1-v100", .gpus = parse_gpu_range("1-64")});
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "parasim/reports/report_data.hpp"

namespace parasim::reports {

struct ProjectionRequest {
  std::string model;                // zoo name or parasim.model/1 file
  std::string cluster;              // preset name or parasim.cluster/1 file
  std::vector<std::int64_t> gpus;   // GPU counts to project, ascending
  std::string efficiency;           // --efficiency spec; empty = the model's default
  std::string dataset;              // empty = the model's default
  std::string profile;              // measured costs (parasim.profile/1); empty = roofline
};

/// Fills scaling (DP only, best hybrid, best per MP degree), breakdown, memory, one Gantt step
/// and the assumptions. Throws InputError / RuntimeError like any command.
using ProjectionSource = std::function<ReportData(const ProjectionRequest&)>;

/// The grammar of `parasim project --gpus`: "8,16,32", "8-1024" (the powers of two in the range),
/// "1-64x2" (1, 2, 4 ... multiplying by the factor while <= the end), mixed with commas.
/// Ascending, unique.
/// InputError naming `origin` for anything else (zero, reversed ranges, more than 4096 counts).
std::vector<std::int64_t> parse_gpu_range(const std::string& text, const std::string& origin = "--gpus");

}  // namespace parasim::reports
