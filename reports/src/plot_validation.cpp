// Plot 5: projected against measured step time, with the y = x line and error bands.
#include <algorithm>
#include <cmath>
#include <vector>

#include "parasim/reports/csv.hpp"
#include "parasim/reports/plots.hpp"
#include "plot_script.hpp"

namespace parasim::reports {

using namespace detail;

std::optional<PlotSpec> validation_plot(const ReportData& d) {
  double lo = 0, hi = 0, abs_error_max = 0;
  std::vector<double> abs_errors;
  std::size_t n = 0;
  CsvTable t({"projected_ms", "measured_ms", "error_pct", "label"});
  for (const ValidationPoint& v : d.validation) {
    t.add_row({CsvCell(v.projected_ms), CsvCell(v.measured_ms), CsvCell(v.error_pct()),
               CsvCell(v.measured ? v.label : v.label + " (not measured)")});
    if (v.projected_ms <= 0 || v.measured_ms <= 0) continue;  // kept in the CSV, not drawable on log axes
    if (!v.measured) continue;  // stand-in kernels: agrees by construction, not a point of the comparison
    const double a = std::min(v.projected_ms, v.measured_ms), b = std::max(v.projected_ms, v.measured_ms);
    lo = n == 0 ? a : std::min(lo, a);
    hi = n == 0 ? b : std::max(hi, b);
    abs_errors.push_back(std::fabs(v.error_pct()));
    abs_error_max = std::max(abs_error_max, std::fabs(v.error_pct()));
    ++n;
  }
  if (n == 0) return std::nullopt;
  // The median, as `parasim validate --suite` reports it (one noisy run should not move the summary).
  std::sort(abs_errors.begin(), abs_errors.end());
  const double abs_error_median =
      n % 2 == 1 ? abs_errors[n / 2] : (abs_errors[n / 2 - 1] + abs_errors[n / 2]) / 2.0;

  PlotSpec p;
  p.stem = "validation";
  p.title = "Projected vs measured";
  p.caption = "Each point is one run: the simulator's projected step time against the measured one. Points on the "
              "dashed line are exact; the shaded bands are ±10 % and ±20 %.";
  p.data.push_back({"validation.csv", t.str()});

  const bool log_axes = hi / lo > 20;
  double axis_lo = log_axes ? lo / 1.5 : 0;
  double axis_hi = hi * (log_axes ? 1.5 : 1.15);
  std::string s = script_preamble({p.stem,
                                   "Projected vs measured step time",
                                   {"validation.csv"},
                                   {"validation.csv: projected_ms, measured_ms, error_pct ((projected - measured) / "
                                    "measured x 100), label"}});
  s += "\ndata = \"validation.csv\"\n";
  s += "set title " +
       gp_quote("Projected vs measured step time\n" + std::to_string(n) + (n == 1 ? " run" : " runs") +
                ", median |error| " + short_number(abs_error_median) + " %, max " +
                short_number(abs_error_max) + " %") +
       "\n";
  s += "set xlabel " + gp_quote(std::string("measured step time (ms") + (log_axes ? ", log scale)" : ")")) + "\n";
  s += "set ylabel " + gp_quote(std::string("projected step time (ms") + (log_axes ? ", log scale)" : ")")) + "\n";
  if (log_axes) s += "set logscale xy 10\n";
  s += "set xrange [" + gp_number(axis_lo) + ":" + gp_number(axis_hi) + "]\n";
  s += "set yrange [" + gp_number(axis_lo) + ":" + gp_number(axis_hi) + "]\n";
  s += "set size square\n";
  s += "set samples 200\n";
  s += "set style fill solid 1.0 noborder\n";
  s += "set key inside top left opaque box\n";  // above the bands and points, not tangled in them
  if (n <= 8) {  // beyond that the labels pile up; the CSV and the HTML table name every point
    s += "\n# Point labels (kept here rather than read from the CSV: gnuplot splits quoted fields at commas).\n";
    int k = 1;
    for (const ValidationPoint& v : d.validation) {
      if (v.projected_ms <= 0 || v.measured_ms <= 0) continue;
      s += "set label " + std::to_string(k++) + " " + gp_quote(v.label) + " at " + gp_number(v.measured_ms) + ", " +
           gp_number(v.projected_ms) + " offset 0.8,0.6 font \",9\" front\n";
    }
  }
  const std::string plot =
      "plot '+' using 1:(0.8 * $1):(1.2 * $1) with filledcurves fc rgb \"#DCEBF7\" title \"±20 %\", \\\n"
      "     '+' using 1:(0.9 * $1):(1.1 * $1) with filledcurves fc rgb \"#A9CCEB\" title \"±10 %\", \\\n"
      "     x with lines lc rgb black dt 2 lw 1.5 title \"projected = measured\", \\\n"
      "     data using \"measured_ms\":\"projected_ms\" with points pt 7 ps 1.4 lc rgb vermillion title \"runs\"";
  s += script_render(900, 700, plot);
  p.script = std::move(s);
  return p;
}

}  // namespace parasim::reports
