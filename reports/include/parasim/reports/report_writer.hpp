// Writes a whole report folder from ReportData:
//
//   <stem>.csv + <stem>.gp      data and gnuplot script per plot (always)
//   <stem>.png + <stem>.svg     rendered by gnuplot when it is installed
//   index.html                  one self-contained page: inline SVG, tables, assumptions
//   summary.md                  the tables with links to the PNGs
//   results.json                the data as parasim.results/1 (`parasim report --from` redraws it)
//
// Same data -> same bytes in every file (nothing time-dependent is written; gnuplot's PNG and
// SVG are deterministic for the same script). The folder is written as a temporary sibling
// (".<name>.tmp.<pid>") and renamed into place at the end, replacing an existing one: a failed or
// interrupted (Ctrl-C) report leaves no half folder and the old one untouched.
//
// Example:
//   ReportData d = load_results_file("project.json");
//   ReportOutcome out = write_report(d, "out/report");
//   for (const auto& note : out.notes) std::cerr << note << "\n";   // e.g. gnuplot missing
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "parasim/reports/gnuplot.hpp"
#include "parasim/reports/report_data.hpp"

namespace parasim::reports {

struct ReportOptions {
  GnuplotOptions gnuplot{};
  bool render = true;  // false: never run gnuplot (CSV, scripts and tables only)
};

struct ReportOutcome {
  std::vector<std::filesystem::path> files;  // every file written, in order
  std::vector<std::string> rendered;         // stems rendered to PNG + SVG
  std::vector<std::string> notes;            // for the user: gnuplot missing (with the install
                                             // command), gnuplot warnings, nothing to plot
};

/// RuntimeError when a file cannot be written or gnuplot fails on a script (with its output);
/// Interrupted once Ctrl-C was pressed (nothing is published then).
ReportOutcome write_report(const ReportData& data, const std::filesystem::path& dir, const ReportOptions& options = {});

}  // namespace parasim::reports
