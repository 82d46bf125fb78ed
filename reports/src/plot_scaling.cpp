// Plots 1 and 2: time to train and speed-up against the number of GPUs, one line per series.
#include <algorithm>
#include <set>

#include "parasim/reports/csv.hpp"
#include "parasim/reports/plots.hpp"
#include "plot_script.hpp"

namespace parasim::reports {

namespace {

using namespace detail;

struct SeriesStyle {
  std::string_view colour;
  double width;
  int dash;
  int point;  // gnuplot point type: 7 circle, 5 square, 9 triangle, 11 down triangle, 13 diamond
};

/// DP and the best hybrid are the story (thick, solid); MP degrees are context (thin, dashed).
std::vector<SeriesStyle> styles_for(const std::vector<ScalingSeries>& series) {
  static constexpr std::string_view kCycle[] = {colour::kOrange, colour::kGreen, colour::kPurple, colour::kSky,
                                                colour::kBlack, colour::kGrey};
  static constexpr int kPoints[] = {9, 11, 13, 15, 4, 6};
  std::vector<SeriesStyle> out;
  std::size_t next = 0;
  for (const ScalingSeries& s : series) {
    if (s.kind == SeriesKind::DataParallel) {
      out.push_back({colour::kVermillion, 2.5, 1, 7});
    } else if (s.kind == SeriesKind::BestHybrid) {
      out.push_back({colour::kBlue, 2.5, 1, 5});
    } else {
      const std::size_t k = next++ % std::size(kCycle);
      out.push_back({kCycle[k], 1.5, 2, kPoints[k]});
    }
  }
  return out;
}

/// Series with their points sorted by GPU count; series without points dropped.
std::vector<ScalingSeries> drawable_series(const ReportData& d) {
  std::vector<ScalingSeries> out;
  for (const ScalingSeries& s : d.scaling) {
    if (s.points.empty()) continue;
    ScalingSeries copy = s;
    std::stable_sort(copy.points.begin(), copy.points.end(),
                     [](const ScalingPoint& a, const ScalingPoint& b) { return a.gpus < b.gpus; });
    out.push_back(std::move(copy));
  }
  return out;
}

std::string scaling_csv(const std::vector<ScalingSeries>& series) {
  CsvTable t({"series_index", "gpus", "time_to_train_s", "step_time_ms", "global_batch", "epochs", "speedup", "series",
              "strategy"});
  for (std::size_t i = 0; i < series.size(); ++i)
    for (const ScalingPoint& p : series[i].points)
      t.add_row({CsvCell(static_cast<std::int64_t>(i)), CsvCell(p.gpus), CsvCell(p.time_to_train_s),
                 CsvCell(p.step_time_ms), CsvCell(p.global_batch), CsvCell(p.epochs), CsvCell(p.speedup),
                 CsvCell(series[i].name), CsvCell(p.strategy)});
  return t.str();
}

const std::vector<std::string> kScalingColumns = {
    "scaling.csv: series_index, gpus, time_to_train_s, step_time_ms, global_batch, epochs, speedup (time-to-train",
    "  speed-up over one GPU), series (name), strategy (the split used at that GPU count)"};

/// Series arrays (titles and styles) shared by both scaling scripts.
std::string series_arrays(const std::vector<ScalingSeries>& series) {
  const auto styles = styles_for(series);
  std::vector<std::string> titles, colours, widths, dashes, points;
  for (std::size_t i = 0; i < series.size(); ++i) {
    titles.push_back(series[i].name);
    colours.emplace_back(styles[i].colour);
    widths.push_back(gp_number(styles[i].width));
    dashes.push_back(std::to_string(styles[i].dash));
    points.push_back(std::to_string(styles[i].point));
  }
  std::string s = "\n# One entry per series; series_index in the CSV selects the entry.\n";
  s += gp_string_array("series_title", titles);
  s += gp_raw_array("series_colour", colours);
  s += gp_raw_array("series_width", widths);
  s += gp_raw_array("series_dash", dashes);
  s += gp_raw_array("series_point", points);
  return s;
}

/// log2 GPU axis with a tic at every GPU count present (up to 16 of them) and some padding.
std::string gpu_axis(const std::vector<ScalingSeries>& series) {
  std::set<std::int64_t> counts;
  for (const auto& s : series)
    for (const auto& p : s.points)
      if (p.gpus > 0) counts.insert(p.gpus);
  std::string s = "set logscale x 2\nset xlabel \"GPUs (log scale)\"\n";
  if (counts.empty()) return s;
  if (counts.size() <= 16) {
    s += "set xtics (";
    bool first = true;
    for (std::int64_t c : counts) {
      s += (first ? "" : ", ") + std::to_string(c);
      first = false;
    }
    s += ")\n";
  }
  s += "set xrange [" + gp_number(static_cast<double>(*counts.begin()) / 1.3) + ":" +
       gp_number(static_cast<double>(*counts.rbegin()) * 1.3) + "]\n";
  return s;
}

std::string series_plot_command(std::string_view y_expression) {
  return "plot for [i=1:|series_title|] data using \"gpus\":(column(\"series_index\") == i - 1 ? " +
         std::string(y_expression) +
         " : NaN) \\\n"
         "     with linespoints lc rgb series_colour[i] lw series_width[i] dt series_dash[i] \\\n"
         "     pt series_point[i] ps 1.3 title series_title[i]";
}

}  // namespace

std::optional<PlotSpec> time_to_train_plot(const ReportData& d) {
  const auto series = drawable_series(d);
  double lo = 0, hi = 0;
  for (const auto& s : series)
    for (const auto& p : s.points)
      if (p.time_to_train_s > 0) {
        lo = lo == 0 ? p.time_to_train_s : std::min(lo, p.time_to_train_s);
        hi = std::max(hi, p.time_to_train_s);
      }
  if (hi <= 0) return std::nullopt;

  std::vector<ScalingSeries> filled = series;
  fill_speedups(filled);
  PlotSpec p;
  p.stem = "time_to_train";
  p.title = "Time to train vs number of GPUs";
  p.caption = "End-to-end time to reach the target quality (statistical efficiency included) for each "
              "series; lower is better. Both axes are logarithmic when the times span more than a decade.";
  p.data.push_back({"scaling.csv", scaling_csv(filled)});

  const AxisUnit unit = time_unit_for_seconds(hi);
  const bool log_y = hi / lo > 8;
  std::string s = script_preamble({p.stem, "Time to train vs number of GPUs", {"scaling.csv"}, kScalingColumns});
  s += "\ndata = \"scaling.csv\"\n";
  s += series_arrays(series);
  s += "\nunit_s = " + gp_number(unit.divisor) + "  # seconds per " + unit.name + "\n";
  s += "set title " + gp_quote(d.model.empty() ? "Time to train vs number of GPUs"
                                                 : "Time to train " + d.model + " vs number of GPUs") + "\n";
  s += gpu_axis(series);
  s += "set ylabel " + gp_quote("time to train (" + unit.name + (log_y ? ", log scale)" : ")")) + "\n";
  if (log_y)
    s += "set logscale y 10\nset yrange [" + gp_number(lo / unit.divisor / 1.4) + ":" +
         gp_number(hi / unit.divisor * 1.4) + "]\nset ytics " +
         log_tics(lo / unit.divisor / 1.4, hi / unit.divisor * 1.4) + "\n";
  else
    s += "set yrange [0:" + gp_number(hi / unit.divisor * 1.1) + "]\n";
  s += script_render(1000, 600, series_plot_command("column(\"time_to_train_s\") / unit_s"));
  p.script = std::move(s);
  return p;
}

std::optional<PlotSpec> speedup_plot(const ReportData& d) {
  std::vector<ScalingSeries> series = drawable_series(d);
  const std::int64_t base_gpus = fill_speedups(series);
  bool any = false;
  for (const auto& s : series)
    for (const auto& p : s.points) any = any || p.speedup > 0;
  if (!any) return std::nullopt;

  PlotSpec p;
  p.stem = "speedup";
  p.title = "Speed-up over one GPU";
  p.caption = "Time-to-train speed-up over one GPU; the dotted line is perfect linear scaling. Where no one-GPU "
              "point was given, the smallest GPU count is the baseline and is assumed to scale linearly.";
  p.data.push_back({"scaling.csv", scaling_csv(series)});

  std::string s =
      script_preamble({p.stem, "Speed-up over one GPU vs number of GPUs", {"scaling.csv"}, kScalingColumns});
  s += "\ndata = \"scaling.csv\"\n";
  s += series_arrays(series);
  s += "\nset title " +
       gp_quote(d.model.empty() ? "Speed-up over one GPU" : "Speed-up of " + d.model + " over one GPU") + "\n";
  s += gpu_axis(series);
  s += "set logscale y 2\n";
  s += "set ylabel " +
       gp_quote(base_gpus <= 1 ? "speed-up in time to train (log scale)"
                               : "speed-up in time to train (log scale; baseline " + std::to_string(base_gpus) +
                                     " GPUs assumed linear)") +
       "\n";
  s += "set samples 200\n";
  const std::string plot = "plot x with lines lc rgb black dt 3 lw 1.5 title \"ideal (linear)\", \\\n     " +
                           series_plot_command("column(\"speedup\")").substr(5);
  s += script_render(1000, 600, plot);
  p.script = std::move(s);
  return p;
}

}  // namespace parasim::reports
