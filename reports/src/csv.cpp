#include "parasim/reports/csv.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace parasim::reports {

std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round trip
  return std::string(buf, r.ptr);
}

std::string csv_escape(std::string_view text) {
  const bool quote = text.find_first_of(",\"\r\n") != std::string_view::npos ||
                     (!text.empty() && (text.front() == ' ' || text.back() == ' '));
  if (!quote) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

CsvTable::CsvTable(std::vector<std::string> header) : header_(std::move(header)) {}

void CsvTable::add_row(std::vector<CsvCell> cells) {
  if (cells.size() != header_.size())
    throw std::logic_error("CsvTable: row of " + std::to_string(cells.size()) + " cells for " +
                           std::to_string(header_.size()) + " columns");
  rows_.push_back(std::move(cells));
}

std::string CsvTable::str() const {
  std::string out;
  for (std::size_t c = 0; c < header_.size(); ++c) {
    if (c) out += ',';
    out += csv_escape(header_[c]);
  }
  out += '\n';
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c) out += ',';
      out += row[c].text();
    }
    out += '\n';
  }
  return out;
}

std::vector<std::vector<std::string>> parse_csv(std::string_view text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = any = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) row.push_back(std::move(field));
      if (!row.empty()) rows.push_back(std::move(row));
      row.clear();
      field.clear();
      any = false;
    } else {
      field += c;
      any = true;
    }
  }
  if (any || !field.empty()) row.push_back(std::move(field));
  if (!row.empty()) rows.push_back(std::move(row));
  return rows;
}

}  // namespace parasim::reports
