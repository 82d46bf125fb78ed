// The report's tables as plain text cells, built once and rendered twice (HTML and Markdown),
// so both pages always show the same numbers.
#pragma once

#include <string>
#include <vector>

#include "parasim/reports/report_data.hpp"

namespace parasim::reports::detail {

struct TextTable {
  std::string caption;                     // may be empty
  std::vector<std::string> header;
  std::vector<bool> numeric;               // right-aligned columns
  std::vector<std::vector<std::string>> rows;
  std::string note;                        // shown under the table, e.g. "first 200 of 5,000 rows"
};

/// Label/value rows: model, cost source, efficiency model and source, cluster, dataset, extras.
TextTable assumptions_table(const ReportData& d);
/// Per series and GPU count; and, when both exist, DP only against the best hybrid per GPU count.
std::vector<TextTable> scaling_tables(const ReportData& d);
/// Per strategy: GPUs, global batch, step time, samples/s, speed-up over the first row.
std::vector<TextTable> throughput_tables(const ReportData& d);
std::vector<TextTable> breakdown_tables(const ReportData& d);
/// Per device stream: tasks, busy time, share of the step.
std::vector<TextTable> gantt_tables(const ReportData& d);
std::vector<TextTable> validation_tables(const ReportData& d);
std::vector<TextTable> memory_tables(const ReportData& d);
/// The tables belonging to the plot with this stem (speedup has none of its own).
std::vector<TextTable> tables_for(const std::string& stem, const ReportData& d);

}  // namespace parasim::reports::detail
