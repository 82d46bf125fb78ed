// CSV tables whose numbers read back exactly: doubles are written in their shortest
// round-trip form (std::to_chars), integers as integers, text quoted per RFC 4180.
//
// gnuplot reads these files too, and gnuplot splits quoted fields at commas. The plots
// therefore put every text column after the numeric columns they read.
//
// Example:
//   CsvTable t({"gpus", "time_to_train_s", "series"});
//   t.add_row({CsvCell(8), CsvCell(5400.25), CsvCell("DP only")});
//   std::string text = t.str();   // "gpus,time_to_train_s,series\n8,5400.25,DP only\n"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace parasim::reports {

/// Shortest text that parses back to exactly `v` ("0.1", "1e+21", "-0"); NaN/Inf as "nan"/"inf".
std::string format_number(double v);
/// RFC 4180: quoted (with doubled quotes) when it holds a comma, quote, CR/LF or edge spaces.
std::string csv_escape(std::string_view text);

/// One cell, already formatted.
class CsvCell {
 public:
  CsvCell(double v) : text_(format_number(v)) {}                  // NOLINT: implicit on purpose
  CsvCell(std::int64_t v) : text_(std::to_string(v)) {}           // NOLINT
  CsvCell(int v) : text_(std::to_string(v)) {}                    // NOLINT
  CsvCell(std::string_view s) : text_(csv_escape(s)) {}           // NOLINT
  CsvCell(const char* s) : text_(csv_escape(s)) {}                // NOLINT
  CsvCell(const std::string& s) : text_(csv_escape(s)) {}         // NOLINT
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

class CsvTable {
 public:
  explicit CsvTable(std::vector<std::string> header);
  /// std::logic_error if the row's width differs from the header's (a programming error).
  void add_row(std::vector<CsvCell> cells);
  std::size_t rows() const { return rows_.size(); }
  /// Header line, then one line per row, "\n" line ends.
  std::string str() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<CsvCell>> rows_;
};

/// Splits CSV text into rows of unescaped fields (for tests and tools reading our own files).
std::vector<std::vector<std::string>> parse_csv(std::string_view text);

}  // namespace parasim::reports
