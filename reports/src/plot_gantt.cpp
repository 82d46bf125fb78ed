// Plot 4: one simulated step as a Gantt chart, one row per device stream.
#include <algorithm>
#include <map>
#include <tuple>

#include "parasim/reports/csv.hpp"
#include "parasim/reports/plots.hpp"
#include "plot_script.hpp"

namespace parasim::reports {

namespace {

using namespace detail;

using Lane = std::pair<int, int>;  // (device, stream)

std::string lane_name(const Lane& l) {
  const std::string stream = l.second == 0 ? "compute" : l.second == 1 ? "comm" : "stream " + std::to_string(l.second);
  return "GPU " + std::to_string(l.first) + " " + stream;
}

struct DrawnBar {
  int row;
  int device;
  int lane;
  TimeNs start;
  TimeNs end;
  GanttCategory category;
  std::int64_t tasks;
};

/// Merges bars of one lane and category whose gaps are at most `tolerance` ns, widening the
/// tolerance until at most `cap` bars remain: a 100k-task step still draws in a second.
std::vector<DrawnBar> merged(std::vector<DrawnBar> bars, std::size_t cap, TimeNs span) {
  std::stable_sort(bars.begin(), bars.end(), [](const DrawnBar& a, const DrawnBar& b) {
    return std::tie(a.row, a.category, a.start, a.end) < std::tie(b.row, b.category, b.start, b.end);
  });
  for (TimeNs tolerance = std::max<TimeNs>(span / 2000, 1); bars.size() > cap; tolerance *= 2) {
    std::vector<DrawnBar> out;
    for (const DrawnBar& b : bars) {
      if (!out.empty() && out.back().row == b.row && out.back().category == b.category &&
          b.start - out.back().end <= tolerance) {
        out.back().end = std::max(out.back().end, b.end);
        out.back().tasks += b.tasks;
      } else {
        out.push_back(b);
      }
    }
    bars = std::move(out);
    if (tolerance > span) break;
  }
  return bars;
}

}  // namespace

std::optional<PlotSpec> gantt_plot(const ReportData& d) {
  if (d.gantt.empty()) return std::nullopt;
  std::map<Lane, int> rows;
  TimeNs t0 = d.gantt.front().start, t1 = d.gantt.front().end;
  bool present[kGanttCategories] = {};
  for (const GanttBar& b : d.gantt) {
    rows.emplace(Lane{b.device, b.lane}, 0);
    t0 = std::min(t0, b.start);
    t1 = std::max(t1, b.end);
    present[static_cast<int>(b.category)] = true;
  }
  int next_row = 0;
  for (auto& [lane, row] : rows) row = next_row++;

  PlotSpec p;
  p.stem = "gantt";
  p.title = "One simulated step";
  p.caption = "Every task of one training step on its device and stream. Gaps on a compute row are idle time; "
              "communication rows show transfers and collectives (a collective appears on every member).";

  CsvTable all({"row", "device", "lane", "start_ns", "end_ns", "category_index", "category", "label"});
  std::vector<DrawnBar> drawn;
  for (const GanttBar& b : d.gantt) {
    const int row = rows.at({b.device, b.lane});
    all.add_row({CsvCell(row), CsvCell(b.device), CsvCell(b.lane), CsvCell(b.start), CsvCell(b.end),
                 CsvCell(static_cast<int>(b.category)), CsvCell(to_string(b.category)), CsvCell(b.label)});
    drawn.push_back({row, b.device, b.lane, b.start, b.end, b.category, 1});
  }
  p.data.push_back({"gantt.csv", all.str()});
  std::string data_file = "gantt.csv";
  if (drawn.size() > kMaxGanttBarsDrawn) {
    drawn = merged(std::move(drawn), kMaxGanttBarsDrawn, std::max<TimeNs>(t1 - t0, 1));
    CsvTable m({"row", "device", "lane", "start_ns", "end_ns", "category_index", "tasks", "category"});
    for (const DrawnBar& b : drawn)
      m.add_row({CsvCell(b.row), CsvCell(b.device), CsvCell(b.lane), CsvCell(b.start), CsvCell(b.end),
                 CsvCell(static_cast<int>(b.category)), CsvCell(b.tasks), CsvCell(to_string(b.category))});
    data_file = "gantt_plot.csv";
    p.data.push_back({data_file, m.str()});
    p.caption += " " + std::to_string(d.gantt.size()) + " tasks are drawn as " + std::to_string(drawn.size()) +
                 " bars (neighbours closer than a pixel merged; gantt.csv has every task).";
  }

  const AxisUnit unit = time_unit_for_ns(static_cast<double>(t1));
  const int n_rows = next_row;
  std::vector<std::string> cat_titles, cat_colours, cat_index;
  static constexpr std::string_view kCategoryColour[kGanttCategories] = {
      colour::kBlue, colour::kOrange, colour::kGreen, colour::kPurple, colour::kVermillion, colour::kGrey};
  for (int c = 0; c < kGanttCategories; ++c) {
    if (!present[c]) continue;
    cat_titles.emplace_back(to_string(static_cast<GanttCategory>(c)));
    cat_colours.emplace_back(kCategoryColour[c]);
    cat_index.push_back(std::to_string(c));
  }

  std::vector<std::string> columns = {
      "gantt.csv: row (y position), device, lane (stream), start_ns, end_ns, category_index, category, label"};
  if (data_file != "gantt.csv")
    columns.push_back("gantt_plot.csv: the same bars merged for drawing (tasks = how many were merged)");
  std::string s = script_preamble({p.stem, "One simulated training step as a Gantt chart", {data_file}, columns});
  s += "\ndata = " + gp_quote(data_file) + "\n";
  s += "unit_ns = " + gp_number(unit.divisor) + "  # ns per " + unit.name + "\n";
  s += "\n# Categories drawn (category_index in the CSV), their legend text and colour.\n";
  s += gp_raw_array("category_index", cat_index);
  s += gp_string_array("category_title", cat_titles);
  s += gp_raw_array("category_colour", cat_colours);
  s += "\nset title " + gp_quote(d.gantt_title.empty() ? "One simulated training step" : "One step: " + d.gantt_title) +
       "\n";
  s += "set xlabel " + gp_quote("time (" + unit.name + ")") + "\n";
  s += "set xrange [" + gp_number(static_cast<double>(t0) / unit.divisor) + ":" +
       gp_number(static_cast<double>(t1) / unit.divisor) + "]\n";
  s += "set yrange [" + gp_number(n_rows - 0.5) + ":-0.5]  # first device at the top\n";
  s += "set grid xtics noytics\n";
  s += "set ytics scale 0 (";
  const int label_every = n_rows > 48 ? (n_rows + 47) / 48 : 1;
  int last_device = -1;
  std::string separators;
  for (const auto& [lane, row] : rows) {
    if (row % label_every == 0) s += std::string(row ? ", " : "") + gp_quote(lane_name(lane)) + " " + std::to_string(row);
    if (last_device >= 0 && lane.first != last_device)
      separators += "set arrow from graph 0, first " + gp_number(row - 0.5) + " to graph 1, first " +
                    gp_number(row - 0.5) + " nohead back lc rgb \"#B0B0B0\" lw 1\n";
    last_device = lane.first;
  }
  s += ")\n";
  s += "# Thin lines between devices.\n" + separators;
  s += "set style fill solid 1.0 noborder\n";
  s += "half_height = 0.38\n";
  const std::string plot =
      "plot for [k=1:|category_index|] data \\\n"
      "     using ((column(\"start_ns\") + column(\"end_ns\")) / 2 / unit_ns) \\\n"
      "          :(column(\"category_index\") == category_index[k] ? column(\"row\") : NaN) \\\n"
      "          :((column(\"end_ns\") - column(\"start_ns\")) / 2 / unit_ns):(half_height) \\\n"
      "     with boxxyerror lc rgb category_colour[k] title category_title[k]";
  const int height = std::clamp(140 + 26 * n_rows, 360, 1800);
  s += script_render(1100, height, plot);
  p.script = std::move(s);
  return p;
}

}  // namespace parasim::reports
