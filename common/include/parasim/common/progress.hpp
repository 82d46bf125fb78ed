// A progress bar with ETA on stderr, shown only when stderr is a terminal (so logs, pipes and
// CI output stay clean). Thread-safe: workers call advance() from any thread. Redrawn at most
// every 100 ms; finish() (or the destructor) draws the final state and ends the line.
//
//   plan [##########....................] 120/360  33%  0:04 elapsed, ETA 0:08
//
// Example:
//   ProgressBar bar("plan", configs.size());
//   for (...) { ...; bar.advance(); }
//   bar.finish();
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

namespace parasim {

/// Seconds left, extrapolated from the rate so far; negative when nothing is done yet (unknown).
double progress_eta_seconds(std::size_t done, std::size_t total, double elapsed_s);
/// "0:07", "12:34", "1:02:03" (negative: "?").
std::string format_progress_duration(double seconds);
/// One bar line (no '\r', no newline): label, 30-character bar, done/total, percent, elapsed, ETA.
/// done is clamped to total; total 0 reads as complete.
std::string render_progress_line(std::string_view label, std::size_t done, std::size_t total, double elapsed_s);

class ProgressBar {
 public:
  /// Draws on stderr when it is a terminal (and bars are not switched off).
  ProgressBar(std::string label, std::size_t total);
  /// Draws on `out` when it is a terminal (and bars are not switched off); for tests.
  ProgressBar(std::string label, std::size_t total, std::FILE* out);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void advance(std::size_t n = 1);
  void finish();
  bool enabled() const { return enabled_; }
  /// Whether a bar made now on stderr would draw: stderr is a terminal and bars are not off.
  static bool would_draw();
  /// Force on/off (tests; `--no-progress`). By default: on iff the stream is a terminal.
  static void set_global_enabled(bool on);
  /// Back to the default (tests).
  static void reset_global_enabled();

 private:
  void draw(std::size_t done);
  std::string label_;
  std::size_t total_;
  std::FILE* out_;
  std::atomic<std::size_t> done_{0};
  bool enabled_;
  bool finished_ = false;
  std::size_t last_width_ = 0;
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace parasim
