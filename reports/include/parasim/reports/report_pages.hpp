// The two pages of a report: index.html (one self-contained file: inline SVG plots, tables,
// the assumptions; no external CSS, JS or images, so it opens offline and can be mailed) and
// summary.md (the same tables, with links to the PNGs, for a pull request or a wiki).
//
// Example:
//   std::vector<ReportFigure> figs;
//   for (PlotSpec& p : build_plots(data)) {
//     std::string svg = read_text_file(dir / (p.stem + ".svg"));   // rendered by render_plot()
//     figs.push_back({std::move(p), std::move(svg), true});
//   }
//   write_file_atomic(dir / "index.html", render_html(data, figs, notes));
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "parasim/reports/plots.hpp"
#include "parasim/reports/report_data.hpp"

namespace parasim::reports {

struct ReportFigure {
  PlotSpec spec;
  std::string svg;        // gnuplot's SVG text; empty when the plot was not rendered
  bool rendered = false;  // <stem>.png and <stem>.svg exist beside the page
};

/// `notes` are shown in a box at the top (e.g. "gnuplot not found ... apt-get install gnuplot-nox").
std::string render_html(const ReportData& data, const std::vector<ReportFigure>& figures,
                        const std::vector<std::string>& notes);
std::string render_markdown(const ReportData& data, const std::vector<ReportFigure>& figures,
                            const std::vector<std::string>& notes);

/// Escapes & < > " ' for HTML text and attribute values.
std::string html_escape(std::string_view text);
/// gnuplot's SVG made fit to sit inline in an HTML page next to others: the XML prolog dropped,
/// every id (and reference to it) prefixed with `id_prefix` so figures cannot capture each
/// other's definitions, and the <title> replaced by `title`.
std::string inline_svg(std::string_view svg, std::string_view id_prefix, std::string_view title);

}  // namespace parasim::reports
