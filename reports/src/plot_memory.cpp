// Plot 6: peak memory per device per strategy, stacked by what holds it, against capacity.
#include <algorithm>

#include "parasim/reports/csv.hpp"
#include "parasim/reports/plots.hpp"
#include "plot_script.hpp"

namespace parasim::reports {

namespace {

using namespace detail;

/// More bars than this and each strategy is drawn by its fullest device only.
constexpr std::size_t kMaxMemoryBars = 12;

struct Bar {
  double x = 0;
  int first_device = 0;
  int last_device = 0;
  const MemoryRow* row = nullptr;
  int of_bars = 0;  // > 0: the fullest of this many bars of its strategy
};

bool same_memory(const MemoryRow& a, const MemoryRow& b) {
  return a.strategy == b.strategy && a.peak == b.peak && a.capacity == b.capacity && a.breakdown == b.breakdown;
}

double fullness(const MemoryRow& r) {
  return r.capacity > 0 ? static_cast<double>(r.peak) / static_cast<double>(r.capacity) : static_cast<double>(r.peak);
}

std::string devices_text(const Bar& b) {
  const std::string devices = b.first_device < 0 ? "fullest GPU"
                              : b.first_device == b.last_device
                                  ? "GPU " + std::to_string(b.first_device)
                                  : "GPU " + std::to_string(b.first_device) + "–" + std::to_string(b.last_device);
  return b.of_bars > 1 ? devices + " (fullest)" : devices;
}

/// Data parallelism makes many devices identical: consecutive identical devices of a strategy
/// share one bar ("GPU 0–7"), which loses nothing because their numbers are equal.
std::vector<Bar> collapse_identical(const std::vector<MemoryRow>& rows) {
  std::vector<Bar> bars;
  for (const MemoryRow& r : rows) {
    if (!bars.empty() && same_memory(*bars.back().row, r) && r.device == bars.back().last_device + 1) {
      bars.back().last_device = r.device;
      continue;
    }
    bars.push_back({0, r.device, r.device, &r, 0});
  }
  return bars;
}

/// Each strategy's fullest bar (closest to, or furthest over, its capacity).
std::vector<Bar> fullest_per_strategy(const std::vector<Bar>& bars) {
  std::vector<Bar> out;
  for (const Bar& b : bars) {
    if (!out.empty() && out.back().row->strategy == b.row->strategy) {
      const int count = out.back().of_bars + 1;
      if (fullness(*b.row) > fullness(*out.back().row)) out.back() = b;
      out.back().of_bars = count;
      continue;
    }
    out.push_back(b);
    out.back().of_bars = 1;
  }
  return out;
}

/// x positions: one unit per bar, 0.6 more between strategies; computed from counts, not
/// accumulated, so positions are exact decimals.
std::vector<Bar> place(std::vector<Bar> bars) {
  int gaps = 0;
  for (std::size_t i = 0; i < bars.size(); ++i) {
    if (i > 0 && bars[i].row->strategy != bars[i - 1].row->strategy) ++gaps;
    bars[i].x = static_cast<double>(10 * static_cast<int>(i) + 6 * gaps) / 10.0;
  }
  return bars;
}

std::string memory_csv(const std::vector<Bar>& bars) {
  CsvTable t({"x", "first_device", "last_device", "peak_bytes", "capacity_bytes", "params_bytes", "grads_bytes",
              "optimizer_bytes", "activations_bytes", "other_bytes", "strategy"});
  for (const Bar& b : bars) {
    const MemoryRow& r = *b.row;
    const MemoryParts& m = r.breakdown;
    t.add_row({CsvCell(b.x), CsvCell(b.first_device), CsvCell(b.last_device), CsvCell(r.peak), CsvCell(r.capacity),
               CsvCell(m.params), CsvCell(m.grads), CsvCell(m.optimizer), CsvCell(m.activations), CsvCell(m.other),
               CsvCell(r.strategy)});
  }
  return t.str();
}

/// x tics: few bars say which devices they are, with each strategy named once under its
/// group; many bars get one turned label each saying both.
std::string x_axis(const std::vector<Bar>& bars, bool rotate) {
  std::string s = "set xtics (";
  std::vector<std::string> turned;
  for (std::size_t i = 0; i < bars.size(); ++i) {
    // Turned labels name the strategy; the devices only where a strategy has several bars.
    const bool several = (i > 0 && bars[i - 1].row->strategy == bars[i].row->strategy) ||
                         (i + 1 < bars.size() && bars[i + 1].row->strategy == bars[i].row->strategy);
    const std::string label = !rotate ? devices_text(bars[i])
                              : several ? rotated_label(bars[i].row->strategy + " " + devices_text(bars[i]))
                                        : rotated_label(bars[i].row->strategy);
    if (rotate) turned.push_back(label);
    s += (i ? ", " : "") + gp_quote(label) + " " + gp_number(bars[i].x);
  }
  s += ")" + std::string(rotate ? " rotate by 45 right" : "") + " font \",9\"\n";
  if (rotate) {
    return s + rotated_label_margins(turned);  // gnuplot's own estimate comes out short
  }
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
  return s + "set bmargin " + std::to_string(group_lines + 4) + "\n";
}

}  // namespace

std::optional<PlotSpec> memory_plot(const ReportData& d) {
  if (d.memory.empty()) return std::nullopt;
  const std::vector<Bar> all_bars = place(collapse_identical(d.memory));
  const bool reduced = all_bars.size() > kMaxMemoryBars;
  const std::vector<Bar> bars = reduced ? place(fullest_per_strategy(all_bars)) : all_bars;

  PlotSpec p;
  p.stem = "memory";
  p.title = "Peak memory per device";
  p.caption = "Peak memory of each device under each strategy, split into what holds it at the peak; the black "
              "line over each bar is that device's capacity. A bar above its line does not fit.";
  p.data.push_back({"memory.csv", memory_csv(all_bars)});
  const std::string data_file = reduced ? "memory_plot.csv" : "memory.csv";
  if (reduced) {
    p.data.push_back({data_file, memory_csv(bars)});
    p.caption += " With " + std::to_string(all_bars.size()) +
                 " bars to draw, each strategy shows its fullest device; memory.csv and the table have every device.";
  }

  double max_bytes = 0;
  bool has[6] = {};  // params, grads, optimizer, activations, other, not broken down
  bool has_capacity = false;
  for (const Bar& b : bars) {
    const MemoryRow& r = *b.row;
    const MemoryParts& m = r.breakdown;
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

  const AxisUnit unit = byte_unit_for(max_bytes);
  std::string s = script_preamble(
      {p.stem,
       "Peak memory per device per strategy against device capacity",
       {data_file},
       {data_file + ": x (bar position), first_device, last_device (identical neighbours share a bar),",
        "  peak_bytes, capacity_bytes (0 = unknown), params/grads/optimizer/activations/other_bytes at the peak,",
        "  strategy"}});
  s += "\ndata = " + gp_quote(data_file) + "\n";
  s += "unit_bytes = " + gp_number(unit.divisor) + "  # bytes per " + unit.name + "\n";
  s += "set title \"Peak memory per device against its capacity\"\n";
  s += "set ylabel " + gp_quote("peak memory (" + unit.name + ")") + "\n";
  s += "set yrange [0:" + gp_number(max_bytes / unit.divisor * 1.12) + "]\n";
  s += "set xrange [-0.7:" + gp_number(bars.back().x + 0.7) + "]\n";
  s += "set grid noxtics ytics\n";
  s += "set boxwidth 0.7\n";
  s += "set style fill solid 1.0 border lc rgb \"white\"\n";
  const bool rotate = bars.size() > 8;
  s += x_axis(bars, rotate);
  s += "\n# Cumulative stacks, drawn tallest first so each shorter one covers the bottom of the previous.\n";
  s += "params(c) = column(\"params_bytes\") / unit_bytes\n";
  s += "grads(c) = params(c) + column(\"grads_bytes\") / unit_bytes\n";
  s += "optimizer(c) = grads(c) + column(\"optimizer_bytes\") / unit_bytes\n";
  s += "activations(c) = optimizer(c) + column(\"activations_bytes\") / unit_bytes\n";
  s += "other(c) = activations(c) + column(\"other_bytes\") / unit_bytes\n";
  s += "peak(c) = column(\"peak_bytes\") / unit_bytes\n";
  s += "capacity(c) = column(\"capacity_bytes\") > 0 ? column(\"capacity_bytes\") / unit_bytes : NaN\n";
  s += "over(c) = column(\"capacity_bytes\") > 0 && column(\"peak_bytes\") > column(\"capacity_bytes\") ? \"over "
       "capacity\" : \"\"\n";

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
  if (plot.empty()) plot = "plot data using \"x\":(peak(0)) with boxes lc rgb light_grey title \"peak\"";
  if (has_capacity) {
    plot +=
        ", \\\n     data using (column(\"x\") - 0.45):(capacity(0)):(0.9):(0) with vectors nohead lc rgb black dt 1 "
        "lw 2.5 title \"device capacity\"";
    plot += ", \\\n     data using \"x\":(peak(0)):(over(0)) with labels offset 0,0.8 tc rgb vermillion notitle";
  }
  s += script_render(1000, rotate ? 700 : 600, plot);
  p.script = std::move(s);
  return p;
}

}  // namespace parasim::reports
