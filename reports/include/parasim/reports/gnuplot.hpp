// Drives gnuplot: every plot is a CSV file plus a self-contained `<stem>.gp` script beside it
// that a user can edit and re-run by hand (`cd report && gnuplot time_to_train.gp`). The
// script writes `<stem>.png` (pngcairo) and `<stem>.svg`; parasim runs it with the output
// names pointed at temporary files (`-e "png_file='...'; svg_file='...'"`) and renames them
// into place only when gnuplot succeeded, so a failed run never leaves half a picture.
//
// gnuplot is found on PATH (or at the path given). When it is missing, callers still write
// CSV, scripts and HTML tables and print gnuplot_missing_message().
//
// Example:
//   GnuplotOptions opts;                                   // "gnuplot" on PATH, 30 s per plot
//   if (auto gp = find_gnuplot(opts); !gp.empty())
//     render_plot(gp, "out/report", "time_to_train", opts.timeout);  // RuntimeError with stderr
//   else
//     std::cerr << gnuplot_missing_message(opts) << "\n";
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

namespace parasim::reports {

struct GnuplotOptions {
  std::string binary = "gnuplot";              // a name searched on PATH, or a path
  std::chrono::milliseconds timeout{30'000};   // per script; a hung gnuplot is killed
};

/// The gnuplot executable, or an empty path when there is none.
std::filesystem::path find_gnuplot(const GnuplotOptions& options);

/// What to tell the user when gnuplot is missing: where we looked and how to install it.
std::string gnuplot_missing_message(const GnuplotOptions& options);

/// Runs `<dir>/<stem>.gp` with `dir` as the working directory and renames its outputs to
/// `<dir>/<stem>.png` and `<dir>/<stem>.svg`. Returns what gnuplot printed (warnings) on success.
/// RuntimeError naming the script and quoting gnuplot's output on a non-zero exit, a crash,
/// the timeout, or a missing/empty output file.
std::string render_plot(const std::filesystem::path& gnuplot, const std::filesystem::path& dir, const std::string& stem,
                        std::chrono::milliseconds timeout);

}  // namespace parasim::reports
