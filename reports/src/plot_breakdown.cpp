// Plot 3: where a step's time goes, as stacked bars per strategy.
#include <algorithm>

#include "parasim/reports/csv.hpp"
#include "parasim/reports/plots.hpp"
#include "plot_script.hpp"

namespace parasim::reports {

using namespace detail;

std::optional<PlotSpec> breakdown_plot(const ReportData& d) {
  if (d.breakdown.empty()) return std::nullopt;
  PlotSpec p;
  p.stem = "breakdown";
  p.title = "Per-step time breakdown";
  p.caption = "One training step per strategy, averaged over its devices: compute, communication that compute "
              "did not hide, pipeline bubble, and other idle time. The bar height is the step time.";

  CsvTable t({"index", "compute_ms", "exposed_comm_ms", "bubble_ms", "idle_ms", "strategy"});
  double max_total = 0;
  for (std::size_t i = 0; i < d.breakdown.size(); ++i) {
    const BreakdownRow& r = d.breakdown[i];
    t.add_row({CsvCell(static_cast<std::int64_t>(i)), CsvCell(r.compute_ms), CsvCell(r.exposed_comm_ms),
               CsvCell(r.bubble_ms), CsvCell(r.idle_ms), CsvCell(r.strategy)});
    max_total = std::max(max_total, r.total_ms());
  }
  p.data.push_back({"breakdown.csv", t.str()});

  const AxisUnit unit = time_unit_for_ms(max_total);
  const std::size_t n = d.breakdown.size();
  // Labels wrap at commas and stay horizontal; only a crowd of bars turns them.
  const bool rotate = n > 8;
  int label_lines = 1;
  for (const BreakdownRow& r : d.breakdown) label_lines = std::max(label_lines, line_count(wrap_label(r.strategy)));
  std::string s = script_preamble({p.stem,
                                   "Per-step time breakdown per strategy",
                                   {"breakdown.csv"},
                                   {"breakdown.csv: index, compute_ms, exposed_comm_ms, bubble_ms, idle_ms, strategy",
                                    "  (per step, averaged over the strategy's devices; the four parts add up to "
                                    "the step time)"}});
  s += "\ndata = \"breakdown.csv\"\n";
  s += "unit_ms = " + gp_number(unit.divisor) + "  # ms per " + unit.name + "\n";
  s += "set title \"Where one training step's time goes\"\n";
  s += "set ylabel " + gp_quote("time per step (" + unit.name + ")") + "\n";
  s += "set xrange [-0.6:" + gp_number(static_cast<double>(n) - 0.4) + "]\n";
  s += "set yrange [0:" + gp_number(max_total / unit.divisor * 1.12) + "]\n";
  s += "set grid noxtics ytics\n";
  s += "set boxwidth 0.7\n";
  s += "set style fill solid 1.0 border lc rgb \"white\"\n";
  s += "set xtics (";
  for (std::size_t i = 0; i < n; ++i)
    s += (i ? ", " : "") +
         gp_quote(rotate ? rotated_label(d.breakdown[i].strategy) : wrap_label(d.breakdown[i].strategy)) + " " +
         std::to_string(i);
  s += ")" + std::string(rotate ? " rotate by 45 right" : "") + (n > 4 ? " font \",9\"" : "") + "\n";
  // Room for the labels: gnuplot's own estimate is short for turned multi-line text.
  std::vector<std::string> turned;
  if (rotate)
    for (const auto& r : d.breakdown) turned.push_back(rotated_label(r.strategy));
  s += rotate ? rotated_label_margins(turned) : "set bmargin " + std::to_string(label_lines + 2) + "\n";
  s += "\n# Stacks are drawn tallest first so each shorter one covers the bottom of the previous.\n";
  s += "compute(c) = column(\"compute_ms\") / unit_ms\n";
  s += "exposed(c) = compute(c) + column(\"exposed_comm_ms\") / unit_ms\n";
  s += "bubble(c) = exposed(c) + column(\"bubble_ms\") / unit_ms\n";
  s += "step(c) = bubble(c) + column(\"idle_ms\") / unit_ms\n";
  s += "label(v) = v >= 100 ? sprintf(\"%.0f\", v) : sprintf(\"%.3g\", v)\n";
  const std::string plot =
      "plot data using \"index\":(step(0)) with boxes lc rgb light_grey title \"idle\", \\\n"
      "     data using \"index\":(bubble(0)) with boxes lc rgb sky_blue title \"pipeline bubble\", \\\n"
      "     data using \"index\":(exposed(0)) with boxes lc rgb vermillion title \"exposed communication\", \\\n"
      "     data using \"index\":(compute(0)) with boxes lc rgb blue title \"compute\", \\\n"
      "     data using \"index\":(step(0)):(label(step(0))) with labels offset 0,0.7 notitle";
  const int height = rotate ? 700 : 600;
  s += script_render(1000, height, plot);
  p.script = std::move(s);
  return p;
}

}  // namespace parasim::reports
