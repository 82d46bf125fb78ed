// Plot 4: one simulated step as a Gantt chart, one row per device stream.
//
// Data parallelism makes many devices do exactly the same thing; a 64-GPU step would be 128 rows
// of which 120 repeat. Devices whose streams carry identical bars therefore share rows
// ("GPU 2–62 step 2 comm"), and the chart stays readable without hiding anything.
#include <algorithm>
#include <map>
#include <tuple>

#include "parasim/reports/csv.hpp"
#include "parasim/reports/plots.hpp"
#include "plot_script.hpp"

namespace parasim::reports {

namespace {

using namespace detail;

struct DrawnBar {
  int row;
  int device;
  int lane;
  TimeNs start;
  TimeNs end;
  GanttCategory category;
  std::int64_t tasks;
};

using BarKey = std::tuple<TimeNs, TimeNs, GanttCategory>;
using DeviceSignature = std::map<int, std::vector<BarKey>>;  // lane -> its bars, sorted

std::string lane_name(int lane) {
  return lane == 0 ? "compute" : lane == 1 ? "comm" : "stream " + std::to_string(lane);
}

/// "GPU 3", "GPU 2–7", "GPU 2–62 step 2", "GPU 1, 4, 9 +2 more".
std::string devices_text(const std::vector<int>& devices) {
  if (devices.size() == 1) return "GPU " + std::to_string(devices[0]);
  const int step = devices[1] - devices[0];
  bool arithmetic = true;
  for (std::size_t i = 1; i < devices.size(); ++i) arithmetic = arithmetic && devices[i] - devices[i - 1] == step;
  const std::string range = "GPU " + std::to_string(devices.front()) + "–" + std::to_string(devices.back());
  if (arithmetic) return step == 1 ? range : range + " step " + std::to_string(step);
  std::string out = "GPU " + std::to_string(devices[0]);
  for (std::size_t i = 1; i < 3 && i < devices.size(); ++i) out += ", " + std::to_string(devices[i]);
  if (devices.size() > 3) out += " +" + std::to_string(devices.size() - 3) + " more";
  return out;
}

/// Merges bars of one row and category whose gaps are at most `tolerance` ns, widening the
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

struct RowLayout {
  std::vector<std::string> names;              // by row
  std::vector<int> first_row_of_group;         // where each device group starts
  std::map<std::pair<int, int>, int> row_of;   // (representative device, lane) -> row
  std::map<int, int> representative;           // device -> the first device of its group
};

RowLayout layout_rows(const std::vector<GanttBar>& bars) {
  std::map<int, DeviceSignature> signature;
  for (const GanttBar& b : bars) signature[b.device][b.lane].emplace_back(b.start, b.end, b.category);
  for (auto& [device, lanes] : signature)
    for (auto& [lane, keys] : lanes) std::sort(keys.begin(), keys.end());
  // Groups in order of their first device.
  std::map<DeviceSignature, std::vector<int>> groups;
  std::vector<const DeviceSignature*> order;
  for (const auto& [device, sig] : signature) {
    auto [it, fresh] = groups.try_emplace(sig);
    it->second.push_back(device);
    if (fresh) order.push_back(&it->first);
  }
  RowLayout layout;
  for (const DeviceSignature* sig : order) {
    const std::vector<int>& devices = groups.at(*sig);
    layout.first_row_of_group.push_back(static_cast<int>(layout.names.size()));
    for (int d : devices) layout.representative[d] = devices.front();
    for (const auto& [lane, keys] : *sig) {
      layout.row_of[{devices.front(), lane}] = static_cast<int>(layout.names.size());
      layout.names.push_back(devices_text(devices) + " " + lane_name(lane));
    }
  }
  return layout;
}

}  // namespace

std::optional<PlotSpec> gantt_plot(const ReportData& d) {
  if (d.gantt.empty()) return std::nullopt;
  const RowLayout layout = layout_rows(d.gantt);
  TimeNs t0 = d.gantt.front().start, t1 = d.gantt.front().end;
  bool present[kGanttCategories] = {};
  for (const GanttBar& b : d.gantt) {
    t0 = std::min(t0, b.start);
    t1 = std::max(t1, b.end);
    present[static_cast<int>(b.category)] = true;
  }

  PlotSpec p;
  p.stem = "gantt";
  p.title = "One simulated step";
  p.caption = "Every task of one training step on its device and stream. Gaps on a compute row are idle time; "
              "communication rows show transfers and collectives (a collective appears on every member).";

  // gantt.csv: every bar as given. The drawn bars: the first device of each group only.
  CsvTable all({"device", "lane", "start_ns", "end_ns", "category_index", "category", "label"});
  std::vector<DrawnBar> drawn;
  for (const GanttBar& b : d.gantt) {
    all.add_row({CsvCell(b.device), CsvCell(b.lane), CsvCell(b.start), CsvCell(b.end),
                 CsvCell(static_cast<int>(b.category)), CsvCell(to_string(b.category)), CsvCell(b.label)});
    if (layout.representative.at(b.device) == b.device)
      drawn.push_back({layout.row_of.at({b.device, b.lane}), b.device, b.lane, b.start, b.end, b.category, 1});
  }
  p.data.push_back({"gantt.csv", all.str()});
  const bool shared_rows = drawn.size() < d.gantt.size();
  if (shared_rows)
    p.caption += " Devices whose streams run identical bars share a row.";
  if (drawn.size() > kMaxGanttBarsDrawn) {
    const std::size_t before = drawn.size();
    drawn = merged(std::move(drawn), kMaxGanttBarsDrawn, std::max<TimeNs>(t1 - t0, 1));
    p.caption += " " + std::to_string(before) + " bars are drawn as " + std::to_string(drawn.size()) +
                 " (neighbours closer than a pixel merged; gantt.csv has every task).";
  } else {
    std::stable_sort(drawn.begin(), drawn.end(), [](const DrawnBar& a, const DrawnBar& b) {
      return std::tie(a.row, a.start, a.end) < std::tie(b.row, b.start, b.end);
    });
  }
  CsvTable plotted({"row", "device", "lane", "start_ns", "end_ns", "category_index", "tasks", "category"});
  for (const DrawnBar& b : drawn)
    plotted.add_row({CsvCell(b.row), CsvCell(b.device), CsvCell(b.lane), CsvCell(b.start), CsvCell(b.end),
                     CsvCell(static_cast<int>(b.category)), CsvCell(b.tasks), CsvCell(to_string(b.category))});
  p.data.push_back({"gantt_plot.csv", plotted.str()});

  const AxisUnit unit = time_unit_for_ns(static_cast<double>(t1));
  const int n_rows = static_cast<int>(layout.names.size());
  std::vector<std::string> cat_titles, cat_colours, cat_index;
  static constexpr std::string_view kCategoryColour[kGanttCategories] = {
      colour::kBlue, colour::kOrange, colour::kGreen, colour::kPurple, colour::kVermillion, colour::kGrey};
  for (int c = 0; c < kGanttCategories; ++c) {
    if (!present[c]) continue;
    cat_titles.emplace_back(to_string(static_cast<GanttCategory>(c)));
    cat_colours.emplace_back(kCategoryColour[c]);
    cat_index.push_back(std::to_string(c));
  }

  std::string s = script_preamble(
      {p.stem,
       "One simulated training step as a Gantt chart",
       {"gantt_plot.csv"},
       {"gantt_plot.csv: row (y position), device, lane (stream), start_ns, end_ns, category_index, tasks (bars",
        "  merged into this one), category. Devices with identical rows are drawn once; gantt.csv has every",
        "  task of every device (device, lane, start_ns, end_ns, category_index, category, label)."}});
  s += "\ndata = \"gantt_plot.csv\"\n";
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
  for (int row = 0; row < n_rows; ++row)
    s += std::string(row ? ", " : "") + gp_quote(layout.names[static_cast<std::size_t>(row)]) + " " +
         std::to_string(row);
  s += ")" + std::string(n_rows > 24 ? " font \",9\"" : "") + "\n";
  s += "# Thin lines between devices.\n";
  for (std::size_t g = 1; g < layout.first_row_of_group.size(); ++g) {
    const double y = layout.first_row_of_group[g] - 0.5;
    s += "set arrow from graph 0, first " + gp_number(y) + " to graph 1, first " + gp_number(y) +
         " nohead back lc rgb \"#B0B0B0\" lw 1\n";
  }
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
