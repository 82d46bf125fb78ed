// Plot 3b: samples per second per strategy (simulated steps side by side), with the speed-up
// over the first row on each bar.
#include <algorithm>

#include "parasim/reports/csv.hpp"
#include "parasim/reports/plots.hpp"
#include "plot_script.hpp"

namespace parasim::reports {

using namespace detail;

double throughput_speedup(const ReportData& d, std::size_t i) {
  if (d.throughput.empty() || i >= d.throughput.size()) return 0;
  const double base = d.throughput.front().samples_per_s;
  return base > 0 ? d.throughput[i].samples_per_s / base : 0;
}

std::optional<PlotSpec> throughput_plot(const ReportData& d) {
  if (d.throughput.empty()) return std::nullopt;
  PlotSpec p;
  p.stem = "throughput";
  p.title = "Training throughput";
  p.caption = "Samples trained per second in one simulated step of each strategy (global batch / step time). "
              "The number over a bar is its speed-up over the first bar (" +
              d.throughput.front().strategy + "). Bars of strategies that do not fit in memory are vermillion.";

  CsvTable t({"index", "samples_per_s", "speedup", "step_time_ms", "gpus", "global_batch", "feasible", "strategy",
              "cluster"});
  double max_tput = 0;
  for (std::size_t i = 0; i < d.throughput.size(); ++i) {
    const ThroughputRow& r = d.throughput[i];
    t.add_row({CsvCell(static_cast<std::int64_t>(i)), CsvCell(r.samples_per_s), CsvCell(throughput_speedup(d, i)),
               CsvCell(r.step_time_ms), CsvCell(r.gpus), CsvCell(r.global_batch),
               CsvCell(static_cast<std::int64_t>(r.feasible ? 1 : 0)), CsvCell(r.strategy), CsvCell(r.cluster)});
    max_tput = std::max(max_tput, r.samples_per_s);
  }
  p.data.push_back({"throughput.csv", t.str()});

  const std::size_t n = d.throughput.size();
  const bool rotate = n > 8;
  int label_lines = 1;
  for (const ThroughputRow& r : d.throughput) label_lines = std::max(label_lines, line_count(wrap_label(r.strategy)));
  std::string s = script_preamble({p.stem,
                                   "Training throughput per strategy",
                                   {"throughput.csv"},
                                   {"throughput.csv: index, samples_per_s, speedup (over the first row), step_time_ms, "
                                    "gpus, global_batch, feasible (1/0), strategy, cluster"}});
  s += "\ndata = \"throughput.csv\"\n";
  s += "set title \"Samples per second, one simulated step per strategy\"\n";
  s += "set ylabel \"samples / s\"\n";
  s += "set xrange [-0.6:" + gp_number(static_cast<double>(n) - 0.4) + "]\n";
  s += "set yrange [0:" + gp_number(max_tput > 0 ? max_tput * 1.15 : 1.0) + "]\n";
  s += "set grid noxtics ytics\n";
  s += "set boxwidth 0.7\n";
  s += "set style fill solid 1.0 border lc rgb \"white\"\n";
  s += "unset key\n";
  s += "set xtics (";
  for (std::size_t i = 0; i < n; ++i)
    s += (i ? ", " : "") +
         gp_quote(rotate ? rotated_label(d.throughput[i].strategy) : wrap_label(d.throughput[i].strategy)) + " " +
         std::to_string(i);
  s += ")" + std::string(rotate ? " rotate by 45 right" : "") + (n > 4 ? " font \",9\"" : "") + "\n";
  std::vector<std::string> turned;
  if (rotate)
    for (const auto& r : d.throughput) turned.push_back(rotated_label(r.strategy));
  s += rotate ? rotated_label_margins(turned) : "set bmargin " + std::to_string(label_lines + 2) + "\n";
  s += "# lc rgb variable takes numbers: vermillion, grey and blue of the palette above.\n";
  s += "colour(f, i) = f == 0 ? 0xD55E00 : (i == 0 ? 0x7F7F7F : 0x0072B2)\n";
  s += "label(x) = sprintf(\"%.2f×\", x)\n";
  const std::string plot =
      "plot data using \"index\":\"samples_per_s\":(colour(column(\"feasible\"), column(\"index\"))) "
      "with boxes lc rgb variable notitle, \\\n"
      "     data using \"index\":\"samples_per_s\":(label(column(\"speedup\"))) with labels offset 0,0.7 notitle";
  s += script_render(1000, rotate ? 700 : 600, plot);
  p.script = std::move(s);
  return p;
}

}  // namespace parasim::reports
