// summary.md: the report's tables in GitHub-flavoured Markdown, with the PNGs linked.
#include <string>

#include "parasim/reports/report_pages.hpp"
#include "report_tables.hpp"

namespace parasim::reports {

namespace {

using detail::TextTable;

/// Table cells cannot hold '|' or line breaks.
std::string md_cell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out.empty() ? " " : out;
}

void append_table(std::string& out, const TextTable& t) {
  // Appended piece by piece: `"x" + std::string&&` trips a false GCC 12 -Wrestrict warning.
  if (!t.caption.empty()) {
    out += "**";
    out += md_cell(t.caption);
    out += "**\n\n";
  }
  out += "|";
  for (const auto& h : t.header) {
    out += ' ';
    out += md_cell(h);
    out += " |";
  }
  out += "\n|";
  for (bool right : t.numeric) out += right ? "---:|" : "---|";
  out += "\n";
  for (const auto& row : t.rows) {
    out += "|";
    for (const auto& cell : row) {
      out += ' ';
      out += md_cell(cell);
      out += " |";
    }
    out += "\n";
  }
  out += "\n";
  if (!t.note.empty()) {
    out += '_';
    out += md_cell(t.note);
    out += "_\n\n";
  }
}

}  // namespace

std::string render_markdown(const ReportData& data, const std::vector<ReportFigure>& figures,
                            const std::vector<std::string>& notes) {
  std::string out =
      "# " + (data.title.empty() ? std::string("parasim report") : "parasim report: " + data.title) + "\n\n";
  out += "The full report with inline plots is [index.html](index.html); data: [results.json](results.json).\n\n";
  for (const auto& n : notes) out += "> " + md_cell(n) + "\n\n";
  out += "## Assumptions\n\n";
  append_table(out, detail::assumptions_table(data));
  for (const ReportFigure& f : figures) {
    out += "## " + f.spec.title + "\n\n";
    if (f.rendered) out += "![" + f.spec.title + "](" + f.spec.stem + ".png)\n\n";
    out += f.spec.caption + "\n\n";
    for (const TextTable& t : detail::tables_for(f.spec.stem, data)) append_table(out, t);
    out += "Data: ";
    for (const PlotFile& d : f.spec.data) out += "[" + d.name + "](" + d.name + "), ";
    out += "script: [" + f.spec.stem + ".gp](" + f.spec.stem + ".gp)\n\n";
  }
  return out;
}

}  // namespace parasim::reports
