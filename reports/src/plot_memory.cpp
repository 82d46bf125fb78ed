// Plot 6: peak memory per device per strategy, stacked by what holds it, against capacity.
#include <algorithm>

#include "parasim/reports/csv.hpp"
#include "parasim/reports/plots.hpp"
#include "plot_script.hpp"

namespace parasim::reports {

namespace {

using namespace detail;

struct Bar {
  double x = 0;
  int first_device = 0;
  int last_device = 0;
  const MemoryRow* row = nullptr;
};

bool same_memory(const MemoryRow& a, const MemoryRow& b) {
  return a.strategy == b.strategy && a.peak == b.peak && a.capacity == b.capacity && a.breakdown == b.breakdown;
}

std::string devices_text(const Bar& b) {
  if (b.first_device < 0) return "fullest GPU";
  return b.first_device == b.last_device ? "GPU " + std::to_string(b.first_device)
                                         : "GPU " + std::to_string(b.first_device) + "–" + std::to_string(b.last_device);
}

}  // namespace

std::optional<PlotSpec> memory_plot(const ReportData& d) {
  if (d.memory.empty()) return std::nullopt;
  // Data parallelism makes many devices identical: consecutive identical devices of a strategy
  // share one bar ("GPU 0–7"), which loses nothing because their numbers are equal.
  std::vector<Bar> bars;
  int gaps = 0;  // between strategies; counted, not accumulated, so positions are exact decimals
  for (const MemoryRow& r : d.memory) {
    if (!bars.empty()) {
      Bar& last = bars.back();
      if (same_memory(*last.row, r) && r.device == last.last_device + 1) {
        last.last_device = r.device;
        continue;
      }
      if (last.row->strategy != r.strategy) ++gaps;
    }
    const double x = static_cast<double>(10 * static_cast<int>(bars.size()) + 6 * gaps) / 10.0;
    bars.push_back({x, r.device, r.device, &r});
  }

  PlotSpec p;
  p.stem = "memory";
  p.title = "Peak memory per device";
  p.caption = "Peak memory of each device under each strategy, split into what holds it at the peak; the dashed "
              "line over each bar is that device's capacity. A bar above its line does not fit.";
  CsvTable t({"x", "first_device", "last_device", "peak_bytes", "capacity_bytes", "params_bytes", "grads_bytes",
              "optimizer_bytes", "activations_bytes", "other_bytes", "strategy"});
  double max_bytes = 0;
  bool has[6] = {};  // params, grads, optimizer, activations, other, unattributed
  bool has_capacity = false;
  for (const Bar& b : bars) {
    const MemoryRow& r = *b.row;
    const MemoryParts& m = r.breakdown;
    t.add_row({CsvCell(b.x), CsvCell(b.first_device), CsvCell(b.last_device), CsvCell(r.peak), CsvCell(r.capacity),
               CsvCell(m.params), CsvCell(m.grads), CsvCell(m.optimizer), CsvCell(m.activations), CsvCell(m.other),
               CsvCell(r.strategy)});
    max_bytes = std::max({max_bytes, static_cast<double>(r.peak), static_cast<double>(r.capacity),
                          static_cast<double>(m.total())});
    has[0] |= m.params > 0;
    has[1] |= m.grads > 0;
    has[2] |= m.optimizer > 0;
    has[3] |= m.activations > 0;
    has[4] |= m.other > 0;
    has[5] |= r.peak > m.total();
    has_capacity |= r.capacity > 0;
  }
  p.data.push_back({"memory.csv", t.str()});

  const AxisUnit unit = byte_unit_for(max_bytes);
  std::string s = script_preamble(
      {p.stem,
       "Peak memory per device per strategy against device capacity",
       {"memory.csv"},
       {"memory.csv: x (bar position), first_device, last_device (identical neighbours share a bar), peak_bytes,",
        "  capacity_bytes (0 = unknown), params/grads/optimizer/activations/other_bytes at the peak, strategy"}});
  s += "\ndata = \"memory.csv\"\n";
  s += "unit_bytes = " + gp_number(unit.divisor) + "  # bytes per " + unit.name + "\n";
  s += "set title \"Peak memory per device against its capacity\"\n";
  s += "set ylabel " + gp_quote("peak memory (" + unit.name + ")") + "\n";
  s += "set yrange [0:" + gp_number(max_bytes / unit.divisor * 1.12) + "]\n";
  s += "set xrange [-0.7:" + gp_number(bars.back().x + 0.7) + "]\n";
  s += "set grid noxtics ytics\n";
  s += "set boxwidth 0.7\n";
  s += "set style fill solid 1.0 border lc rgb \"white\"\n";
  // Few bars: each bar says which devices it is, and each strategy is named once under its
  // group. Many bars: one turned label per bar saying both.
  const bool rotate = bars.size() > 8;
  s += "set xtics (";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const std::string label = rotate ? bars[i].row->strategy + " " + devices_text(bars[i]) : devices_text(bars[i]);
    s += (i ? ", " : "") + gp_quote(label) + " " + gp_number(bars[i].x);
  }
  s += ")" + std::string(rotate ? " rotate by 30 right" : "") + " font \",9\"\n";
  if (!rotate) {
    s += "# Strategy names under their groups of bars.\n";
    int group_lines = 1, label_id = 1;
    for (std::size_t first = 0; first < bars.size();) {
      std::size_t last = first;
      while (last + 1 < bars.size() && bars[last + 1].row->strategy == bars[first].row->strategy) ++last;
      // Characters that fit under the group: ~700 px of plot over the x range, ~7 px per
      // character at 10 pt.
      const double chars_per_unit = 700.0 / (bars.back().x + 1.4) / 7.0;
      const auto width = static_cast<std::size_t>(std::max(8.0, chars_per_unit * (bars[last].x - bars[first].x + 1.2)));
      const std::string text = wrap_label(bars[first].row->strategy, width);
      group_lines = std::max(group_lines, line_count(text));
      s += "set label " + std::to_string(label_id++) + " " + gp_quote(text) + " at first " +
           gp_number((bars[first].x + bars[last].x) / 2) + ", graph 0 center offset 0,-2.3 font \",10\"\n";
      first = last + 1;
    }
    s += "set bmargin " + std::to_string(group_lines + 4) + "\n";
  }
  s += "\n# Cumulative stacks, drawn tallest first so each shorter one covers the bottom of the previous.\n";
  s += "params(c) = column(\"params_bytes\") / unit_bytes\n";
  s += "grads(c) = params(c) + column(\"grads_bytes\") / unit_bytes\n";
  s += "optimizer(c) = grads(c) + column(\"optimizer_bytes\") / unit_bytes\n";
  s += "activations(c) = optimizer(c) + column(\"activations_bytes\") / unit_bytes\n";
  s += "other(c) = activations(c) + column(\"other_bytes\") / unit_bytes\n";
  s += "peak(c) = column(\"peak_bytes\") / unit_bytes\n";
  s += "capacity(c) = column(\"capacity_bytes\") > 0 ? column(\"capacity_bytes\") / unit_bytes : NaN\n";
  s += "over(c) = column(\"capacity_bytes\") > 0 && column(\"peak_bytes\") > column(\"capacity_bytes\") ? \"over capacity\" : \"\"\n";

  struct Stack {
    int present;
    const char* function;
    std::string_view colour;
    const char* title;
  };
  const Stack stacks[] = {{5, "peak", colour::kLightGrey, "peak (not broken down)"},
                          {4, "other", colour::kGrey, "other"},
                          {3, "activations", colour::kOrange, "activations"},
                          {2, "optimizer", colour::kGreen, "optimizer state"},
                          {1, "grads", colour::kSky, "gradients"},
                          {0, "params", colour::kBlue, "parameters"}};
  std::string plot;
  for (const Stack& st : stacks) {
    if (!has[st.present]) continue;
    plot += std::string(plot.empty() ? "plot " : ", \\\n     ") + "data using \"x\":(" + st.function +
            "(0)) with boxes lc rgb " + std::string(st.colour) + " title \"" + st.title + "\"";
  }
  if (has_capacity)
    plot += std::string(plot.empty() ? "plot " : ", \\\n     ") +
            "data using (column(\"x\") - 0.45):(capacity(0)):(0.9):(0) with vectors nohead lc rgb black dt 2 lw 2 "
            "title \"device capacity\"";
  if (plot.empty()) plot = "plot data using \"x\":(peak(0)) with boxes lc rgb light_grey title \"peak\"";
  if (has_capacity)
    plot += ", \\\n     data using \"x\":(peak(0)):(over(0)) with labels offset 0,0.8 tc rgb vermillion notitle";
  s += script_render(1000, rotate ? 680 : 600, plot);
  p.script = std::move(s);
  return p;
}

}  // namespace parasim::reports
