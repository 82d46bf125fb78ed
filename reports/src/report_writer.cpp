#include "parasim/reports/report_writer.hpp"

#include <set>
#include <system_error>

#include "parasim/common/json_io.hpp"
#include "parasim/reports/plots.hpp"
#include "parasim/reports/report_pages.hpp"
#include "parasim/reports/results_json.hpp"

namespace parasim::reports {

namespace {

namespace fs = std::filesystem;

constexpr const char* kAllStems[] = {"time_to_train", "speedup",    "throughput", "breakdown",
                                     "gantt",         "validation", "memory"};

/// Pictures from an earlier run that this run does not redraw would contradict the new data.
void remove_stale_pictures(const fs::path& dir, const std::set<std::string>& rendered) {
  for (const char* stem : kAllStems) {
    if (rendered.contains(stem)) continue;
    std::error_code ec;
    fs::remove(dir / (std::string(stem) + ".png"), ec);
    fs::remove(dir / (std::string(stem) + ".svg"), ec);
  }
}

}  // namespace

ReportOutcome write_report(const ReportData& data, const fs::path& dir, const ReportOptions& options) {
  ReportOutcome out;
  auto write = [&](const std::string& name, std::string_view content) {
    write_file_atomic(dir / name, content);
    out.files.push_back(dir / name);
  };

  std::vector<ReportFigure> figures;
  std::set<std::string> written;
  for (PlotSpec& spec : build_plots(data)) {
    for (const PlotFile& f : spec.data)
      if (written.insert(f.name).second) write(f.name, f.content);  // scaling.csv serves two plots
    write(spec.stem + ".gp", spec.script);
    figures.push_back({std::move(spec), {}, false});
  }
  if (figures.empty())
    out.notes.push_back(
        "The results held nothing to plot (no projection, throughput, breakdown, timeline, validation or memory).");

  fs::path gnuplot;
  if (options.render && !figures.empty()) {
    gnuplot = find_gnuplot(options.gnuplot);
    if (gnuplot.empty()) out.notes.push_back(gnuplot_missing_message(options.gnuplot));
  }
  std::set<std::string> rendered;
  if (!gnuplot.empty()) {
    for (ReportFigure& f : figures) {
      const std::string said = render_plot(gnuplot, dir, f.spec.stem, options.gnuplot.timeout);
      if (!said.empty()) out.notes.push_back("gnuplot on " + f.spec.stem + ".gp: " + said);
      f.svg = read_text_file(dir / (f.spec.stem + ".svg"));
      f.rendered = true;
      rendered.insert(f.spec.stem);
      out.rendered.push_back(f.spec.stem);
      out.files.push_back(dir / (f.spec.stem + ".png"));
      out.files.push_back(dir / (f.spec.stem + ".svg"));
    }
  }
  remove_stale_pictures(dir, rendered);

  write("results.json", dump_json(results_to_json(data)));
  write("summary.md", render_markdown(data, figures, out.notes));
  write("index.html", render_html(data, figures, out.notes));
  return out;
}

}  // namespace parasim::reports
