// index.html: one self-contained page. Well-formed XML as well as HTML5 (every element
// closed, void elements self-closed) so the tests can check it with a plain tag balancer.
#include <string>

#include "parasim/reports/report_pages.hpp"
#include "report_tables.hpp"

namespace parasim::reports {

namespace {

using detail::TextTable;

constexpr std::string_view kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f1f1f;
       max-width: 1150px; margin: 2em auto; padding: 0 1em; line-height: 1.45; }
h1 { font-size: 1.7em; margin-bottom: 0.2em; }
h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
nav a { margin-right: 1em; }
.notes { background: #fff6e0; border: 1px solid #e6c46f; padding: 0.6em 1em; border-radius: 4px; }
.notes li { margin: 0.3em 0; }
figure { margin: 1em 0; }
figure svg.plot { width: 100%; height: auto; display: block; }
figcaption, .note { color: #555; font-size: 0.92em; }
.missing { color: #8a5a00; font-style: italic; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
caption { text-align: left; font-weight: 600; padding: 0.3em 0; }
th, td { border: 1px solid #d0d0d0; padding: 0.25em 0.6em; vertical-align: top; }
th { background: #f2f2f2; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.files { font-size: 0.88em; color: #555; }
code { background: #f4f4f4; padding: 0 0.25em; border-radius: 3px; }
)";

void append_table(std::string& out, const TextTable& t) {
  out += "<table>\n";
  if (!t.caption.empty()) out += "<caption>" + html_escape(t.caption) + "</caption>\n";
  out += "<thead><tr>";
  for (const auto& h : t.header) out += "<th>" + html_escape(h) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (std::size_t c = 0; c < row.size(); ++c)
      out += std::string(t.numeric[c] ? "<td class=\"num\">" : "<td>") + html_escape(row[c]) + "</td>";
    out += "</tr>\n";
  }
  out += "</tbody>\n</table>\n";
  if (!t.note.empty()) out += "<p class=\"note\">" + html_escape(t.note) + "</p>\n";
}

void append_file_links(std::string& out, const ReportFigure& f) {
  out += "<p class=\"files\">Files: ";
  for (const PlotFile& d : f.spec.data)
    out += "<a href=\"" + html_escape(d.name) + "\">" + html_escape(d.name) + "</a>, ";
  out += "<a href=\"" + html_escape(f.spec.stem) + ".gp\">" + html_escape(f.spec.stem) + ".gp</a>";
  if (f.rendered)
    out += ", <a href=\"" + html_escape(f.spec.stem) + ".png\">" + html_escape(f.spec.stem) + ".png</a>, <a href=\"" +
           html_escape(f.spec.stem) + ".svg\">" + html_escape(f.spec.stem) + ".svg</a>";
  out += ". Restyle by editing the script and running <code>gnuplot " + html_escape(f.spec.stem) +
         ".gp</code> in this folder.</p>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_html(const ReportData& data, const std::vector<ReportFigure>& figures,
                        const std::vector<std::string>& notes) {
  const std::string title = data.title.empty() ? "parasim report" : "parasim report: " + data.title;
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n";
  out += "<meta name=\"generator\" content=\"parasim report\"/>\n";
  out += "<title>" + html_escape(title) + "</title>\n<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";
  out += "<h1>" + html_escape(title) + "</h1>\n";
  out += "<p>Projected distributed training: how a split of data, model and pipeline parallelism performs, "
         "and what it rests on. Every plot has its data as CSV and a gnuplot script beside this page.</p>\n";

  out += "<nav><a href=\"#assumptions\">Assumptions</a>";
  for (const ReportFigure& f : figures)
    out += "<a href=\"#" + html_escape(f.spec.stem) + "\">" + html_escape(f.spec.title) + "</a>";
  out += "</nav>\n";

  if (!notes.empty()) {
    out += "<div class=\"notes\"><ul>\n";
    for (const auto& n : notes) out += "<li>" + html_escape(n) + "</li>\n";
    out += "</ul></div>\n";
  }

  out += "<section id=\"assumptions\">\n<h2>Assumptions</h2>\n";
  append_table(out, detail::assumptions_table(data));
  out += "</section>\n";

  if (figures.empty())
    out += "<p class=\"missing\">The results held no data to plot (no projection, throughput, breakdown, "
           "timeline, validation or memory entries).</p>\n";
  for (const ReportFigure& f : figures) {
    out += "<section id=\"" + html_escape(f.spec.stem) + "\">\n<h2>" + html_escape(f.spec.title) + "</h2>\n";
    out += "<figure>\n";
    if (f.rendered && !f.svg.empty())
      out += inline_svg(f.svg, f.spec.stem + "-", f.spec.title) + "\n";
    else
      out += "<p class=\"missing\">Plot not rendered (gnuplot was not available); the table below and the CSV "
             "hold the data.</p>\n";
    out += "<figcaption>" + html_escape(f.spec.caption) + "</figcaption>\n</figure>\n";
    for (const TextTable& t : detail::tables_for(f.spec.stem, data)) append_table(out, t);
    append_file_links(out, f);
    out += "</section>\n";
  }
  out += "<p class=\"note\">Written by parasim report. Machine-readable results: "
         "<a href=\"results.json\">results.json</a> (parasim.results/1); "
         "<code>parasim report --from results.json</code> redraws this page.</p>\n";
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace parasim::reports
