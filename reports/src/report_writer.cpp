#include "parasim/reports/report_writer.hpp"

#include <unistd.h>

#include <set>
#include <system_error>

#include "parasim/common/error.hpp"
#include "parasim/common/interrupt.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/reports/plots.hpp"
#include "parasim/reports/report_pages.hpp"
#include "parasim/reports/results_json.hpp"

namespace parasim::reports {

namespace {

namespace fs = std::filesystem;

constexpr const char* kAllStems[] = {"time_to_train", "speedup",    "throughput", "breakdown",
                                     "gantt",         "validation", "memory"};

/// A sibling of `dir` that no other run uses: ".<name>.<suffix>.<pid>".
fs::path sibling(const fs::path& dir, const char* suffix) {
  const fs::path clean = dir.has_filename() ? dir : dir.parent_path();
  std::string name = ".";  // appended piece by piece: GCC 12 warns (-Wrestrict) on the chained operator+
  name.append(clean.filename().string()).append(".").append(suffix).append(".");
  name.append(std::to_string(::getpid()));
  return clean.parent_path() / name;
}

/// Everything is written into a temporary sibling folder that replaces `dir` only once complete,
/// so a failed or interrupted report leaves neither a half folder nor a half-replaced old one.
ReportOutcome write_into(const ReportData& data, const fs::path& staging, const fs::path& dir,
                         const ReportOptions& options) {
  ReportOutcome out;
  auto write = [&](const std::string& name, std::string_view content) {
    write_file_atomic(staging / name, content);
    out.files.push_back(dir / name);
    interrupt_test_hook();  // tests: Ctrl-C after the first file (interrupt.hpp)
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
  if (!gnuplot.empty()) {
    for (ReportFigure& f : figures) {
      throw_if_interrupted();
      const std::string said = render_plot(gnuplot, staging, f.spec.stem, options.gnuplot.timeout);
      if (!said.empty()) out.notes.push_back("gnuplot on " + f.spec.stem + ".gp: " + said);
      f.svg = read_text_file(staging / (f.spec.stem + ".svg"));
      f.rendered = true;
      out.rendered.push_back(f.spec.stem);
      out.files.push_back(dir / (f.spec.stem + ".png"));
      out.files.push_back(dir / (f.spec.stem + ".svg"));
    }
  }

  write("results.json", dump_json(results_to_json(data)));
  write("summary.md", render_markdown(data, figures, out.notes));
  write("index.html", render_html(data, figures, out.notes));
  return out;
}

/// `staging` becomes `dir`; an existing `dir` is moved aside first and removed after.
void publish(const fs::path& staging, const fs::path& dir) {
  throw_if_interrupted();
  std::error_code ec;
  const fs::path old = sibling(dir, "old");
  const bool replacing = fs::exists(dir);
  if (replacing) {
    fs::remove_all(old, ec);
    fs::rename(dir, old, ec);
    if (ec) throw RuntimeError("cannot replace the report folder " + dir.string() + ": " + ec.message());
  }
  fs::rename(staging, dir, ec);
  if (ec) {
    std::error_code back;
    if (replacing) fs::rename(old, dir, back);
    throw RuntimeError("cannot move the report into " + dir.string() + ": " + ec.message());
  }
  if (replacing) fs::remove_all(old, ec);
}

}  // namespace

ReportOutcome write_report(const ReportData& data, const fs::path& given, const ReportOptions& options) {
  const fs::path dir = fs::absolute(given).lexically_normal();
  std::error_code ec;
  // The folder is replaced whole: only an empty one or an earlier report, never a folder of other files.
  if (fs::exists(dir) && (!fs::is_directory(dir) || (!fs::is_empty(dir) && !fs::exists(dir / "results.json"))))
    throw InputError("report: " + given.string() +
                     " exists and is not a parasim report folder (no results.json); "
                     "give a new or empty folder");
  const fs::path staging = sibling(dir, "tmp");
  if (!staging.parent_path().empty()) fs::create_directories(staging.parent_path(), ec);
  fs::remove_all(staging, ec);
  if (!fs::create_directories(staging, ec) || ec)
    throw RuntimeError("cannot create the report folder " + staging.string() + ": " + ec.message());
  try {
    ReportOutcome out = write_into(data, staging, dir, options);
    publish(staging, dir);
    return out;
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
}

}  // namespace parasim::reports
