// The seven plots of a report, each as data (CSV) plus a gnuplot script that reads it. Building
// a PlotSpec runs nothing and writes nothing: report_writer.hpp writes the files and asks
// gnuplot.hpp to render them, and tests inspect the CSV text directly.
//
//   stem            data                          what it shows
//   time_to_train   scaling.csv                   time to train vs GPUs (log2), one line per series
//                                                 (DP only, best hybrid, each MP degree) - the
//                                                 figure of Pal et al. 2019
//   speedup         scaling.csv                   time-to-train speed-up over one GPU, ideal line
//   throughput      throughput.csv                samples/s per simulated strategy, speed-up over
//                                                 the first one (simulate --json inputs)
//   breakdown       breakdown.csv                 per-step time as stacked bars per strategy
//   gantt           gantt.csv                     one simulated step: devices x streams over time
//   validation      validation.csv                projected vs measured, y = x, +-10 % / +-20 % bands
//   memory          memory.csv                    peak memory per device per strategy vs capacity
//
// Example:
//   ReportData d = ...;
//   for (const PlotSpec& p : build_plots(d)) std::cout << p.stem << ": " << p.title << "\n";
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "parasim/reports/report_data.hpp"

namespace parasim::reports {

struct PlotFile {
  std::string name;     // file name inside the report folder
  std::string content;
};

struct PlotSpec {
  std::string stem;                // <stem>.gp writes <stem>.png and <stem>.svg
  std::string title;               // heading in the HTML/Markdown report
  std::string caption;             // one or two sentences on how to read it
  std::vector<PlotFile> data;      // the CSV files the script reads
  std::string script;              // the gnuplot script (<stem>.gp)
};

/// Bars beyond this many are merged (same device, stream and category, gaps below a pixel)
/// in the file the Gantt script reads, gantt_plot.csv; gantt.csv always keeps every bar.
inline constexpr std::size_t kMaxGanttBarsDrawn = 6'000;

std::optional<PlotSpec> time_to_train_plot(const ReportData& d);
std::optional<PlotSpec> speedup_plot(const ReportData& d);
std::optional<PlotSpec> throughput_plot(const ReportData& d);
/// d.throughput[i]'s samples/s over the first row's (0 when either is missing or zero).
double throughput_speedup(const ReportData& d, std::size_t i);
std::optional<PlotSpec> breakdown_plot(const ReportData& d);
std::optional<PlotSpec> gantt_plot(const ReportData& d);
std::optional<PlotSpec> validation_plot(const ReportData& d);
std::optional<PlotSpec> memory_plot(const ReportData& d);

/// The plots that have data, in the order above.
std::vector<PlotSpec> build_plots(const ReportData& d);

}  // namespace parasim::reports
