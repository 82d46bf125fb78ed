#include "parasim/reports/report_writer.hpp"

#include <unistd.h>

#include <algorithm>
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
    out.notes.emplace_back(
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

/// A file a report writes: its pages and results, or a plot's script, data and pictures. Only these
/// are replaced in an existing folder; anything else there (a README, the runs it was made from)
/// stays.
bool is_report_file(const std::string& name) {
  if (name == "results.json" || name == "summary.md" || name == "index.html" || name == "scaling.csv") return true;
  for (const char* stem : kAllStems) {
    const std::string s(stem);
    if (name.rfind(s, 0) != 0) continue;
    const std::string rest = name.substr(s.size());
    if (rest == ".gp" || rest == ".png" || rest == ".svg" || rest == ".csv" || rest == "_plot.csv") return true;
  }
  return false;
}

std::vector<fs::path> report_files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && is_report_file(e.path().filename().string())) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

/// `staging` becomes `dir`. Into an existing `dir` the earlier report's files are moved aside, the
/// new ones renamed in, and the old ones removed: renames only, done in a moment and not
/// interrupted (a Ctrl-C during it takes effect after), undone on a failure.
void publish(const fs::path& staging, const fs::path& dir) {
  throw_if_interrupted();
  std::error_code ec;
  if (!fs::exists(dir)) {
    fs::rename(staging, dir, ec);
    if (ec) throw RuntimeError("cannot move the report into " + dir.string() + ": " + ec.message());
    return;
  }
  const fs::path old = sibling(dir, "old");
  fs::remove_all(old, ec);
  fs::create_directories(old, ec);
  std::vector<std::pair<fs::path, fs::path>> moved;  // (from, to), to undo in reverse
  auto undo = [&] {
    std::error_code ignored;
    for (auto it = moved.rbegin(); it != moved.rend(); ++it) fs::rename(it->second, it->first, ignored);
    fs::remove_all(old, ignored);
  };
  auto move = [&](const fs::path& from, const fs::path& to) {
    fs::rename(from, to, ec);
    if (ec) {
      const std::string why = ec.message();
      undo();
      throw RuntimeError("cannot replace the report in " + dir.string() + " (" + from.string() + "): " + why);
    }
    moved.emplace_back(from, to);
  };
  for (const fs::path& f : report_files_in(dir)) move(f, old / f.filename());
  for (const fs::path& f : report_files_in(staging)) move(f, dir / f.filename());
  fs::remove_all(old, ec);
  fs::remove_all(staging, ec);
}

}  // namespace

ReportOutcome write_report(const ReportData& data, const fs::path& given, const ReportOptions& options) {
  const fs::path dir = fs::absolute(given).lexically_normal();
  std::error_code ec;
  if (fs::exists(dir) && !fs::is_directory(dir))
    throw InputError("report: " + given.string() + " exists and is not a folder; give a new or existing folder");
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
