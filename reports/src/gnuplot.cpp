#include "parasim/reports/gnuplot.hpp"

#include <system_error>

#include "parasim/common/error.hpp"
#include "subprocess.hpp"

namespace parasim::reports {

namespace {

namespace fs = std::filesystem;

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove(p, ec);
}

bool non_empty_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && fs::file_size(p, ec) > 0;
}

}  // namespace

fs::path find_gnuplot(const GnuplotOptions& options) { return detail::find_executable(options.binary); }

std::string gnuplot_missing_message(const GnuplotOptions& options) {
  const bool is_path = options.binary.find('/') != std::string::npos;
  return "gnuplot not found (" + std::string(is_path ? "no executable at " : "looked for ") + "\"" + options.binary +
         "\"" + (is_path ? "" : " on PATH") +
         "): wrote the CSV data, the gnuplot scripts and the HTML/Markdown tables, but no PNG/SVG plots. "
         "Install gnuplot to render them (Debian/Ubuntu: apt-get install gnuplot-nox), then rerun "
         "`parasim report` or run `gnuplot NAME.gp` in the report folder.";
}

std::string render_plot(const fs::path& gnuplot, const fs::path& dir, const std::string& stem,
                        std::chrono::milliseconds timeout) {
  const std::string script = stem + ".gp";
  const std::string png_tmp = "." + stem + ".png.tmp";
  const std::string svg_tmp = "." + stem + ".svg.tmp";
  const std::string where = (dir / script).string();
  auto cleanup = [&] {
    remove_quietly(dir / png_tmp);
    remove_quietly(dir / svg_tmp);
  };
  cleanup();  // leftovers of a killed run would otherwise pass the "output exists" check

  const detail::ProcessResult r = detail::run_process(
      {gnuplot.string(), "-e", "png_file='" + png_tmp + "'; svg_file='" + svg_tmp + "'", script}, dir, timeout);
  const std::string said = trimmed(r.output);
  const std::string quoted = said.empty() ? "" : ":\n" + said;
  std::string failure;
  if (r.timed_out) {
    failure = "gnuplot did not finish " + where + " within " + std::to_string(timeout.count()) + " ms (killed)";
  } else if (r.signal != 0) {
    failure = "gnuplot crashed on " + where + " (signal " + std::to_string(r.signal) + ")";
  } else if (r.exit_code != 0) {
    failure = "gnuplot failed on " + where + " (exit status " + std::to_string(r.exit_code) + ")";
  } else if (!non_empty_file(dir / png_tmp) || !non_empty_file(dir / svg_tmp)) {
    failure = "gnuplot ran " + where + " but did not write both the PNG and the SVG";
  }
  if (!failure.empty()) {
    cleanup();
    throw RuntimeError(failure + quoted);
  }
  std::error_code ec;
  fs::rename(dir / png_tmp, dir / (stem + ".png"), ec);
  if (!ec) fs::rename(dir / svg_tmp, dir / (stem + ".svg"), ec);
  if (ec) {
    cleanup();
    throw RuntimeError("cannot move gnuplot's output into place in " + dir.string() + ": " + ec.message());
  }
  return said;
}

}  // namespace parasim::reports
