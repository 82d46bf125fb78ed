#include "text_table.hpp"

#include <cstdio>

#include <algorithm>
#include <ostream>

namespace parasim::cli {

void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  std::size_t columns = right.size();
  for (const auto& r : rows) columns = std::max(columns, r.size());
  std::vector<std::size_t> width(columns, 0);
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t c = 0; c < r.size(); ++c) {
      const std::string pad(width[c] - r[c].size(), ' ');
      const bool last = c + 1 == r.size();
      const bool right_aligned = c < right.size() && right[c];
      line += right_aligned ? pad + r[c] : (last ? r[c] : r[c] + pad);
      if (!last) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();  // an empty last cell pads nothing
    out << line << "\n";
  }
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string signed_percent(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.1f%%", v);
  return buf;
}

}  // namespace parasim::cli
