#include "plot_script.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "parasim/reports/csv.hpp"

namespace parasim::reports::detail {

std::string gp_quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\r': break;
      case '\t': out += ' '; break;
      default: out += c;
    }
  }
  out += '"';
  return out;
}

std::string gp_number(double v) {
  std::string s = format_number(v);
  if (s.find_first_of(".enia") == std::string::npos) s += ".0";  // 3 -> 3.0: no integer division
  return s;
}

std::string gp_raw_array(std::string_view name, const std::vector<std::string>& items) {
  std::string out = "array " + std::string(name) + "[" + std::to_string(items.size()) + "] = [";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + "]\n";
}

std::string gp_string_array(std::string_view name, const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const auto& s : items) quoted.push_back(gp_quote(s));
  return gp_raw_array(name, quoted);
}

std::string script_preamble(const ScriptHeader& h) {
  std::string s;
  s += "# " + h.title + "\n#\n";
  s += "# Written by `parasim report`. Edit freely, then re-render from this folder with\n";
  s += "#   gnuplot " + h.stem + ".gp\n";
  s += "# Reads:";
  for (const auto& f : h.data_files) s += " " + f;
  s += " (next to this script). Writes " + h.stem + ".png and " + h.stem + ".svg.\n";
  for (const auto& c : h.columns) s += "# " + c + "\n";
  s += "if (!exists(\"png_file\")) png_file = " + gp_quote(h.stem + ".png") + "\n";
  s += "if (!exists(\"svg_file\")) svg_file = " + gp_quote(h.stem + ".svg") + "\n\n";
  s += "set encoding utf8\n";
  s += "set datafile separator comma\n";
  s += "set datafile columnheaders\n\n";
  s += "# Okabe & Ito colour-blind-safe palette (Wong, Nature Methods 8:441, 2011)\n";
  s += "black = \"#000000\"; orange = \"#E69F00\"; sky_blue = \"#56B4E9\"; bluish_green = \"#009E73\"\n";
  s += "yellow = \"#F0E442\"; blue = \"#0072B2\"; vermillion = \"#D55E00\"; reddish_purple = \"#CC79A7\"\n";
  s += "grey = \"#7F7F7F\"; light_grey = \"#C8C8C8\"\n\n";
  s += "set border 3 lw 1 lc rgb \"#404040\"\n";
  s += "set tics nomirror out scale 0.6\n";
  s += "set grid back lc rgb \"#E4E4E4\" lw 1 dt 1\n";
  s += "set key outside right top vertical Left reverse samplen 2.5 spacing 1.2 box lc rgb \"#C8C8C8\"\n";
  s += "set title font \",14\"\n";
  return s;
}

std::string script_render(int width, int height, const std::string& plot_command) {
  const std::string size = std::to_string(width) + "," + std::to_string(height);
  std::string s = "\n";
  s += "set terminal pngcairo size " + size + " font \"sans,11\" noenhanced background rgb \"white\"\n";
  s += "set output png_file\n";
  s += plot_command;
  s += "\nset terminal svg size " + size + " dynamic font \"sans,11\" noenhanced background rgb \"white\"\n";
  s += "set output svg_file\n";
  s += "replot\n";
  s += "unset output\n";
  return s;
}

std::string rotated_label(std::string_view label) { return wrap_label(label, 28); }

std::string rotated_label_margins(const std::vector<std::string>& labels) {
  // About 4.2 px across and down per character of a 9 pt label at 45 degrees; the margins
  // count in characters of the 11 pt terminal font (~7 px wide, ~17 px high). Every extra
  // line of a label moves it ~10 px further down and left.
  std::size_t longest = 0;
  int lines = 1;
  for (const std::string& l : labels) {
    lines = std::max(lines, line_count(l));
    std::size_t start = 0;
    while (start <= l.size()) {
      const std::size_t end = std::min(l.find('\n', start), l.size());
      longest = std::max(longest, end - start);
      start = end + 1;
    }
  }
  const std::size_t extra = static_cast<std::size_t>(lines - 1);
  const std::size_t bottom = std::min<std::size_t>(20, 2 + longest * 4 / 10 + extra);
  const std::size_t left = std::clamp<std::size_t>(longest * 6 / 10 + extra, 10, 30);
  return "set bmargin " + std::to_string(bottom) + "\nset lmargin " + std::to_string(left) + "\n";
}

AxisUnit time_unit_for_seconds(double max_seconds) {
  if (max_seconds < 120) return {1, "seconds"};
  if (max_seconds < 2 * 3600) return {60, "minutes"};
  if (max_seconds < 72 * 3600) return {3600, "hours"};
  return {86400, "days"};
}

AxisUnit time_unit_for_ms(double max_ms) {
  if (max_ms < 1) return {1e-3, "µs"};
  if (max_ms < 10'000) return {1, "ms"};
  return {1e3, "s"};
}

AxisUnit time_unit_for_ns(double max_ns) {
  if (max_ns < 1e6) return {1e3, "µs"};
  if (max_ns < 1e10) return {1e6, "ms"};
  return {1e9, "s"};
}

AxisUnit byte_unit_for(double max_bytes) {
  if (max_bytes < 1024.0 * 1024 * 1024) return {1024.0 * 1024, "MiB"};
  return {1024.0 * 1024 * 1024, "GiB"};
}

std::string log_tics(double lo, double hi) {
  std::vector<double> tics;
  for (int e = static_cast<int>(std::floor(std::log10(lo))); e <= static_cast<int>(std::ceil(std::log10(hi))); ++e)
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, e);
      if (v >= lo && v <= hi) tics.push_back(v);
    }
  if (tics.size() > 12)
    std::erase_if(tics, [](double v) { return std::fabs(std::log10(v) - std::round(std::log10(v))) > 1e-9; });
  std::string out = "(";
  for (std::size_t i = 0; i < tics.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", tics[i]);
    out += (i ? ", " : "");
    out += buf;
  }
  return out + ")";
}

std::string wrap_label(std::string_view label, std::size_t width) {
  // Pieces end after a comma or before a space (the space is dropped at a line break).
  std::vector<std::string> pieces;
  std::string piece;
  for (char c : label) {
    if (c == ' ' && !piece.empty()) {
      pieces.push_back(piece);
      piece.assign(1, ' ');  // not `piece = " "`: GCC 12 warns falsely (-Wrestrict)
      continue;
    }
    piece += c;
    if (c == ',') {
      pieces.push_back(piece);
      piece.clear();
    }
  }
  if (!piece.empty()) pieces.push_back(piece);
  std::string out, line;
  for (const std::string& p : pieces) {
    if (!line.empty() && line.size() + p.size() > width) {
      out += line;
      out += '\n';
      line = p.front() == ' ' ? p.substr(1) : p;
    } else {
      line += p;
    }
  }
  return out + line;
}

int line_count(std::string_view text) {
  int n = 1;
  for (char c : text) n += c == '\n';
  return n;
}

std::string short_number(double v) {
  char buf[64];
  if (std::fabs(v) >= 1000 || v == std::floor(v))
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace parasim::reports::detail
